"""Text output of `orbitmq admin`: aligned tables as mqadmin prints them, key/value blocks, times.

String functions, nothing about RocketMQ beyond how mqadmin lays its output out. When stdout is a
terminal (and NO_COLOR is unset), `format_table` draws the same cells as a rich table; piped or captured
output keeps mqadmin's plain layout byte for byte, which is what scripts parse.
"""

from __future__ import annotations

import datetime
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence

import orjson

COLUMN_GAP = "  "
# Cells a narrow terminal must never cut or wrap: addresses (host:port), times (format_timestamp's
# form) and numbers.
_WHOLE_CELL = re.compile(r"\S+:\d+|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}|-?\d+(\.\d+)?")
_NO_VALUE = ("-", "N/A")


def cell(value: object) -> str:
    """A value as a table cell: None and "" as "-", booleans lowercase (as Java prints them)."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value).replace("\n", "\\n")


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Columns left-aligned to the widest cell, two spaces apart; the last column is not padded.

    An empty `rows` still prints the header line, so scripts can tell "nothing" from "failed"."""
    text_rows = [[cell(v) for v in row] for row in rows]
    for row in text_rows:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} cells, the table has {len(headers)} columns")
    widths = [len(h) for h in headers]
    for row in text_rows:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    if _rich_terminal():
        return rich_table(headers, text_rows)
    lines = []
    for row in [list(headers), *text_rows]:
        padded = [text.ljust(widths[i]) for i, text in enumerate(row[:-1])]
        lines.append(COLUMN_GAP.join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)


def _rich_terminal() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def whole_columns(rows: Sequence[Sequence[str]]) -> set[int]:
    """The columns whose cells are all addresses, times or numbers (or empty): cut to "127.0…" they
    would mislead, so a narrow terminal narrows and wraps the other columns instead."""
    found: set[int] = set()
    for i in range(len(rows[0]) if rows else 0):
        cells = [row[i] for row in rows if row[i] not in _NO_VALUE]
        if cells and all(_WHOLE_CELL.fullmatch(c) for c in cells):
            found.add(i)
    return found


def rich_table(headers: Sequence[str], rows: list[list[str]], width: int | None = None) -> str:
    """The cells as a rich table, rendered for the terminal's width (or `width`). Too narrow for the
    boxed table, the rules go; too narrow even then, the columns of addresses, times and numbers keep
    the width of their cells and the others wrap (fold); no cell is cut to "…"."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    width = width or Console().width
    titles = [header.lstrip("#") for header in headers]
    natural = [max([len(title), *(len(row[i]) for row in rows)]) for i, title in enumerate(titles)]
    boxed = sum(natural) + 3 * len(titles) + 1 <= width  # cells, padding and rules on one line each
    narrow = sum(natural) + len(COLUMN_GAP) * (len(titles) - 1) > width
    whole = whole_columns(rows) if narrow else set()
    # Too narrow for the box: no rules, two spaces between columns (mqadmin's gap) leave the most room.
    table = (
        Table(header_style="bold cyan")
        if boxed
        else Table(header_style="bold cyan", box=None, pad_edge=False)
    )
    for i, title in enumerate(titles):
        # A fixed width holds every cell (rich narrows only the other columns); the header wraps.
        fixed = max(len(word) for word in [*title.split(), *(row[i] for row in rows)]) if i in whole else None
        table.add_column(title, width=fixed, overflow="fold")
    for row in rows:
        table.add_row(*(Text(c) for c in row))  # Text: a "[...]" in a cell is not rich markup
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=width).print(table)
    return out.getvalue().rstrip("\n")


def format_pairs(pairs: Mapping[str, object] | Iterable[tuple[str, object]], *, sep: str = ": ") -> str:
    """`key<pad>: value` lines with the separators aligned (brokerStatus, message details)."""
    items = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
    if not items:
        return ""
    width = max(len(k) for k, _ in items)
    return "\n".join(f"{k.ljust(width)}{sep}{cell(v)}".rstrip() for k, v in items)


def format_timestamp(ms: int) -> str:
    """Epoch ms as local `yyyy-MM-dd HH:mm:ss,SSS` (mqadmin's UtilAll.formatDate); 0 or less as "-"."""
    if ms <= 0:
        return "-"
    try:
        dt = datetime.datetime.fromtimestamp(ms / 1000)
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return dt.strftime("%Y-%m-%d %H:%M:%S,") + f"{ms % 1000:03d}"


def parse_time(text: str, *, now_ms: int) -> int:
    """A time argument: epoch ms, `now`, or mqadmin's `yyyy-MM-dd#HH:mm:ss:SSS` (local time;
    `yyyy-MM-dd#HH:mm:ss` and `yyyy-MM-dd` also accepted). ValueError with the accepted forms."""
    text = text.strip()
    if text == "now":
        return now_ms
    if text.lstrip("-").isdigit():
        return int(text)
    for fmt in ("%Y-%m-%d#%H:%M:%S:%f", "%Y-%m-%d#%H:%M:%S", "%Y-%m-%d"):
        try:
            dt = datetime.datetime.strptime(text, fmt)
        except ValueError:
            continue
        return int(dt.timestamp() * 1000)
    raise ValueError(f"bad time {text!r}: use epoch milliseconds, 'now' or yyyy-MM-dd#HH:mm:ss:SSS")


def to_json_text(data: object) -> str:
    """Indented JSON for `--json` (non-string keys stringified)."""
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
