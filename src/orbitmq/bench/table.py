"""Rendering measurements as a fixed-width text table (and the `--json` document). Pure.

Rows are grouped by (workload, case); the first orbitmq row of a group is the reference and each peer
row shows the ratio "orbitmq ×" (> 1 = orbitmq better).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from typing import Any

from orbitmq.bench.result import Measurement, ratio

COLUMNS = (
    "workload",
    "case",
    "system",
    "msgs/s",
    "MB/s",
    "p50 µs",
    "p99 µs",
    "max µs",
    "orbitmq ×",
    "srv cores",
    "cli cores",
    "srv µs/msg",
    "rq wait %",
)
RIGHT_ALIGNED = frozenset(COLUMNS[3:])


def fmt_number(value: float | None, *, digits: int = 0) -> str:
    """Thousands separators; '-' for missing or NaN."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return f"{value:,.{digits}f}"


def fmt_wait(m: Measurement) -> str:
    """Run-queue wait, server/bench process, in % of the window; "!" marks a starved run (> 10 %)."""
    if m.server_wait is None and m.client_wait is None:
        return "-"
    cells = ["-" if w is None else f"{w * 100:.0f}" for w in (m.server_wait, m.client_wait)]
    return "/".join(cells) + (" !" if m.starved else "")


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def is_orbitmq(system: str) -> bool:
    return system.startswith("orbitmq")


def group_rows(measurements: Sequence[Measurement]) -> list[list[Measurement]]:
    """Measurements grouped by (workload, case) in first-seen order, orbitmq systems first in a group."""
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in measurements:
        groups.setdefault((m.workload, m.case), []).append(m)
    ordered = []
    for group in groups.values():
        ordered.append(sorted(group, key=lambda m: (not is_orbitmq(m.system), group.index(m))))
    return ordered


def short_note(note: str, limit: int = 160) -> str:
    """One line for the table: a multi-line note (a server's traceback) becomes its first and last
    lines; the JSON output keeps the whole note."""
    lines = [line.strip() for line in note.splitlines() if line.strip()]
    if not lines:
        return ""
    text = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def row_cells(m: Measurement, reference: Measurement | None) -> list[str]:
    if m.skipped:
        return [m.workload, m.case, m.system, "skipped: " + short_note(m.note)] + [""] * (len(COLUMNS) - 4)
    if m.messages == 0 and m.extra:
        # A server workload (W8, W10): its figures are seconds and MiB, said in words.
        return [m.workload, m.case, m.system, "= " + short_note(m.note)] + [""] * (len(COLUMNS) - 4)
    r = None if reference is None or is_orbitmq(m.system) else ratio(reference, m)
    return [
        m.workload,
        m.case,
        m.system,
        fmt_number(m.msgs_per_s),
        fmt_number(m.mb_per_s, digits=1),
        fmt_number(m.latency.p50_us),
        fmt_number(m.latency.p99_us),
        fmt_number(m.latency.max_us),
        fmt_ratio(r),
        fmt_number(m.server_cores, digits=2),
        fmt_number(m.client_cores, digits=2),
        fmt_number(m.server_us_per_msg),
        fmt_wait(m),
    ]


def render_table(measurements: Sequence[Measurement]) -> str:
    rows: list[list[str]] = []
    notes: list[str] = []
    for group in group_rows(measurements):
        reference = next((m for m in group if is_orbitmq(m.system) and not m.skipped), None)
        for m in group:
            rows.append(row_cells(m, reference))
            if m.note and not m.skipped and not (m.messages == 0 and m.extra):
                notes.append(f"{m.workload} {m.case} {m.system}: {short_note(m.note, 300)}")
            if m.errors:
                notes.append(f"{m.workload} {m.case} {m.system}: {m.errors} errors")
    widths = [len(c) for c in COLUMNS]
    for row in rows:
        for i, cell in enumerate(row):
            # A "skipped: ..." cell spans the figure columns; it must not widen the msgs/s column.
            if not (i == 3 and cell.startswith(("skipped", "= "))):
                widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        out: list[str] = []
        for i, cell in enumerate(cells):
            if i == 3 and cell.startswith(("skipped", "= ")):
                return "  ".join([*out, cell]).rstrip()
            out.append(cell.rjust(widths[i]) if COLUMNS[i] in RIGHT_ALIGNED else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    lines = [line(COLUMNS), "  ".join("-" * w for w in widths)]
    lines += [line(row) for row in rows]
    lines.append("orbitmq × : > 1 means orbitmq is better (msgs/s ratio; for W4 the p99 latency ratio).")
    lines.append("cores: CPU used (user+system) per wall-clock second, server processes and bench process.")
    lines.append("srv µs/msg: server CPU per message, the figure least disturbed by a busy box.")
    lines.append(
        "rq wait %: share of the window the most-waiting server process / the bench process sat runnable "
        "in the run queue (/proc/PID/schedstat); '!' = over 10 %, a starved run."
    )
    workloads = {m.workload for m in measurements}
    if "W6" in workloads:
        lines.append("W6: replication lag (bytes and ms behind the master) is in the notes below.")
    if "W7" in workloads:
        lines.append("W7: msgs/s = rows/s; each note gives the row's ratio to the run's Arrow ceiling.")
    lines += notes
    return "\n".join(lines)


def render(measurements: Sequence[Measurement]) -> str:
    """A rich table on a terminal, else the plain layout (what scripts and bench/README.md quote)."""
    if sys.stdout.isatty() and "NO_COLOR" not in os.environ:
        return render_rich_table(measurements)
    return render_table(measurements)


def render_rich_table(measurements: Sequence[Measurement], width: int | None = None) -> str:
    """The same rows and notes as `render_table`, drawn by rich (orbitmq rows bold, ratios colored)."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    plain = render_table(measurements).splitlines()
    table = Table(header_style="bold cyan")
    for column in COLUMNS:
        table.add_column(column, justify="right" if column in RIGHT_ALIGNED else "left")
    for group in group_rows(measurements):
        reference = next((m for m in group if is_orbitmq(m.system) and not m.skipped), None)
        for m in group:
            cells = row_cells(m, reference)
            style = "bold" if is_orbitmq(m.system) else ("dim" if m.skipped else None)
            texts = [Text(c) for c in cells]
            ratio_text = cells[COLUMNS.index("orbitmq ×")]
            if ratio_text not in ("", "-"):
                texts[COLUMNS.index("orbitmq ×")].stylize("green" if float(ratio_text) >= 1 else "red")
            table.add_row(*texts, style=style)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=width or Console().width)
    console.print(table)
    # The legend and notes: everything after the plain table's rows.
    rows = sum(len(g) for g in group_rows(measurements))
    for line in plain[2 + rows :]:
        console.print(Text(line))
    return out.getvalue().rstrip("\n")


def json_document(measurements: Sequence[Measurement], meta: dict[str, Any]) -> dict[str, Any]:
    results = []
    for group in group_rows(measurements):
        reference = next((m for m in group if is_orbitmq(m.system) and not m.skipped), None)
        for m in group:
            d = m.to_dict()
            d["orbitmq_ratio"] = None if reference is None or is_orbitmq(m.system) else ratio(reference, m)
            results.append(d)
    return {"meta": meta, "results": results}
