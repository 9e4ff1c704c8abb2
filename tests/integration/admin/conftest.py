"""One real `orbitmq serve` process (namesrv + broker) shared by the admin CLI tests of a module, and
a helper that runs `orbitmq admin` in-process and captures what it prints."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from orbitmq.admin.cli import main
from orbitmq.testing import ServerProcess, start_serve

_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir: Path = tmp_path_factory.mktemp("admin-serve")
    with start_serve(workdir) as proc:
        yield proc


class AdminRun:
    """`admin("topicList")` runs `orbitmq admin topicList -n <namesrv>` and returns (rc, out, err)."""

    def __init__(self, serve: ServerProcess, capsys: pytest.CaptureFixture[str]) -> None:
        self.namesrv = serve.addresses["namesrv"]
        self.broker = serve.addresses["broker"]
        self.capsys = capsys

    def __call__(self, subcommand: str, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        rc = main([subcommand, "-n", self.namesrv, *args])
        captured = self.capsys.readouterr()
        return rc, captured.out, captured.err

    def ok(self, subcommand: str, *args: str) -> str:
        rc, out, err = self(subcommand, *args)
        assert rc == 0, f"{subcommand} {args} failed: {err}"
        assert err == ""
        return out

    def json(self, subcommand: str, *args: str) -> Any:
        return orjson.loads(self.ok(subcommand, *args, "--json"))

    def fails(self, subcommand: str, *args: str) -> str:
        """Run a subcommand that must fail with one clear line; returns that line."""
        rc, out, err = self(subcommand, *args)
        assert rc == 1, f"{subcommand} {args} should have failed: {out}"
        assert out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith(f"orbitmq admin {subcommand}: error: ")
        assert "Traceback" not in err
        return lines[0]


@pytest.fixture
def admin(serve: ServerProcess, capsys: pytest.CaptureFixture[str]) -> AdminRun:
    return AdminRun(serve, capsys)


def table_rows(text: str) -> list[list[str]]:
    """The data rows of the first table in `text` (split on runs of 2+ spaces), header dropped."""
    import re

    lines = text.strip().split("\n\n")[0].splitlines()
    return [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]
