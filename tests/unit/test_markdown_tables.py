"""Every Markdown table in the repository renders as written, and the user documents stay short.

A renderer (GitHub's, CommonMark with the table extension) splits a table row on every `|` that is not
escaped as `\\|`, inside backtick code spans too, and keeps as many cells as the header has: a row with
an extra pipe loses its last cells without a word. So each row must have its header's cell count, and
the delimiter row must match the header or the block is no table at all.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {"node_modules", ".venv", ".git", "build"}
DELIMITER_CELL = re.compile(r"^:?-+:?$")
FENCE = re.compile(r"^\s*(```|~~~)")

README_MAX_LINES = 200
BENCHMARKS_MAX_LINES = 300


def markdown_files() -> list[Path]:
    """The *.md files git tracks (a source tree without git: every *.md outside the skipped dirs)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "*.md"], cwd=ROOT, check=True, capture_output=True, timeout=30
        ).stdout.decode()
        paths = [ROOT / name for name in listed.split("\0") if name]
    except (OSError, subprocess.CalledProcessError):
        paths = list(ROOT.rglob("*.md"))
    return sorted(
        p for p in paths if p.is_file() and not SKIPPED_DIRS.intersection(p.relative_to(ROOT).parts)
    )


def split_cells(line: str) -> list[str]:
    """A row's cells as a renderer splits them: on every `|` not preceded by a backslash."""
    text = line.strip()
    pieces: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            current.append(char)
            escaped = True
        elif char == "|":
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
    pieces.append("".join(current))
    # a leading and a trailing pipe open and close the row; they do not make empty cells
    if text.startswith("|"):
        pieces = pieces[1:]
    if text.endswith("|") and not text.endswith("\\|") and len(pieces) > 0:
        pieces = pieces[:-1]
    return [piece.strip() for piece in pieces]


def is_delimiter_row(line: str) -> bool:
    if "-" not in line:
        return False
    cells = split_cells(line)
    return bool(cells) and all(DELIMITER_CELL.match(cell) for cell in cells)


def table_problems(text: str, name: str = "<text>") -> list[str]:
    """One message per table row (or delimiter row) whose cell count differs from its header's."""
    lines = text.splitlines()
    problems: list[str] = []
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if FENCE.match(line):
            in_fence = not in_fence
            i += 1
            continue
        if in_fence or "|" not in line or i + 1 >= len(lines) or not is_delimiter_row(lines[i + 1]):
            i += 1
            continue
        header = len(split_cells(line))
        delimiter = len(split_cells(lines[i + 1]))
        if delimiter != header:
            problems.append(f"{name}:{i + 2}: delimiter row has {delimiter} cells, header {header}")
        i += 2
        while i < len(lines) and lines[i].strip() and "|" in lines[i] and not FENCE.match(lines[i]):
            cells = len(split_cells(lines[i]))
            if cells != header:
                problems.append(f"{name}:{i + 1}: row has {cells} cells, header {header}")
            i += 1
    return problems


def test_every_markdown_table_has_its_headers_column_count() -> None:
    files = markdown_files()
    assert ROOT / "README.md" in files
    problems = [
        problem
        for path in files
        for problem in table_problems(path.read_text("utf-8"), str(path.relative_to(ROOT)))
    ]
    assert problems == [], "\n".join(problems)


def test_a_pipe_inside_a_code_span_splits_the_row() -> None:
    # the shape of the row that once broke the README's feature table
    broken = (
        "| area | works | not yet |\n"
        "|---|---|---|\n"
        "| Benchmarks | `orbitmq bench codec|store|spark` for components | see BENCHMARKS.md |\n"
    )
    assert table_problems(broken) == ["<text>:3: row has 5 cells, header 3"]
    assert table_problems(broken.replace("codec|store|spark", r"codec\|store\|spark")) == []


def test_header_and_delimiter_must_agree_and_fences_are_not_tables() -> None:
    mismatched = table_problems("| a | b |\n|---|\n| 1 | 2 |\n")
    assert mismatched == ["<text>:2: delimiter row has 1 cells, header 2"]
    assert table_problems("```\n| a | b |\n|---|---|\n| 1 |\n```\n") == []
    assert table_problems("a | b\n:--|--:\n1 | 2\n\n| 3 |\n") == []  # no outer pipes; a blank line ends it
    assert table_problems("| a | b |\n|---|---|\n| 1 |\n") == ["<text>:3: row has 1 cells, header 2"]


def test_the_user_documents_stay_short() -> None:
    readme = (ROOT / "README.md").read_text("utf-8").splitlines()
    benchmarks = (ROOT / "BENCHMARKS.md").read_text("utf-8").splitlines()
    assert len(readme) <= README_MAX_LINES, f"README.md has {len(readme)} lines"
    assert len(benchmarks) <= BENCHMARKS_MAX_LINES, f"BENCHMARKS.md has {len(benchmarks)} lines"
