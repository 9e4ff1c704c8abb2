"""`orbitmq admin` for a newcomer: a mistyped subcommand gets a "did you mean", every option has help."""

from __future__ import annotations

import argparse

import pytest

from orbitmq.admin.cli import build_parser, did_you_mean, main


def test_mistyped_subcommand_suggests_the_close_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["updatetopik"]) == 2
    err = capsys.readouterr().err
    assert "unknown subcommand 'updatetopik' (did you mean 'updateTopic'" in err
    assert did_you_mean("topicLst").startswith(" (did you mean 'topicList'")
    assert did_you_mean("zzzzzz") == ""


def test_every_option_of_every_subcommand_has_help() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [
        (name, action.option_strings or action.dest)
        for name, sp in sub.choices.items()
        for action in sp._actions
        if not action.help and not isinstance(action, argparse._HelpAction)
    ]
    assert not missing
