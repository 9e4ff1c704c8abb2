"""docs/configuration.md is generated from the config classes' attribute docstrings and kept current:
every setting of every registered class is on the page, described exactly once where it is written."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from orbitmq.config_doc import SECTIONS, Documented, Section, problems, render, settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_every_setting_has_one_description() -> None:
    assert problems() == []


def test_committed_page_is_the_generators_output() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/configuration.md is stale: run python -m orbitmq.config_doc > docs/configuration.md"
    )


def table_keys(text: str) -> dict[str, list[str]]:
    """Section title -> the keys of its table rows, in order."""
    keys: dict[str, list[str]] = {}
    title = ""
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:]
            keys[title] = []
        elif (row := re.match(r"\| `([^`]+)` \|", line)) and title:
            keys[title].append(row.group(1))
    return keys


def test_every_key_of_every_registered_class_is_on_the_page() -> None:
    on_page = table_keys(DOC.read_text(encoding="utf-8"))
    listed = {(section, key) for section, keys in on_page.items() for key in keys}
    for setting in settings():
        scopes = [s.title for s in SECTIONS if s.scope & setting.section.scope]
        assert any((title, setting.key) in listed for title in scopes), f"{setting.key} is not on the page"
    for section, keys in on_page.items():
        assert len(keys) == len(set(keys)), f"{section}: a key is listed twice"
    # The registry covers the big classes whole: e.g. every BrokerConfig setting.
    assert len(on_page["Broker (broker.conf)"]) > 60 and len(on_page["Store (broker.conf)"]) > 40


def test_the_page_names_rocketmq_keys_and_minimums() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "| `flushDiskType` | `str` | `ASYNC_FLUSH` | same |" in text
    assert "| `sendGatherMinRequests` | `int` | `8` | — |" in text and "At least 0." in text
    assert "| `poll_namesrv_interval` | `float` | `30.0` | `pollNameServerInterval` |" in text


# Classes the checker must find fault with: one field without a docstring, one key described twice.
@dataclass
class _Undescribed:
    described: int = 1
    """A described setting."""
    undescribed: int = 2


@dataclass
class _SameKey:
    described: int = 3
    """The same key again, in the same file."""


@dataclass
class _Derived(_Undescribed):
    undescribed: int = 4
    """Described where the subclass declares it again."""


def _section(*classes: type) -> Section:
    return Section(
        "probe",
        "",
        frozenset({"probe.conf"}),
        tuple(Documented(cls, lambda name: name) for cls in classes),
        lambda _key, _doc: None,
    )


def test_checker_finds_a_missing_and_a_doubled_description() -> None:
    found = problems([_section(_Undescribed, _SameKey)])
    assert any("undescribed: no description" in p for p in found), found
    assert any("described: described twice (_Undescribed.described, _SameKey.described)" in p for p in found)
    assert problems([_section(_SameKey)]) == []  # positive control


def test_inherited_fields_keep_their_docstrings() -> None:
    """Option classes derive from shared ones (the consumers' options): a field declared in a base
    class is described by the base's docstring, one declared again by its own."""
    assert problems([_section(_Derived)]) == []
    docs = {s.attr: s.doc for s in settings([_section(_Derived)])}
    assert docs == {
        "described": "A described setting.",
        "undescribed": "Described where the subclass declares it again.",
    }


def test_a_key_described_elsewhere_in_the_same_file_is_fine_once() -> None:
    """BrokerConfig and StoreConfig share broker.conf keys: the docstring sits on one of them only."""
    store_keys = {s.key for s in settings() if s.cls.__name__ == "StoreConfig" and s.doc}
    broker_keys = {s.key for s in settings() if s.cls.__name__ == "BrokerConfig" and s.doc}
    assert "storePathRootDir" in broker_keys and "storePathRootDir" not in store_keys
    assert not store_keys & broker_keys


def test_every_row_has_the_headers_five_cells() -> None:
    """Pipes inside a cell (`str | None`, PUB|SUB) are escaped, so no row splits into more cells."""
    rows = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    assert rows
    for row in rows:
        assert len(re.findall(r"(?<!\\)\|", row)) == 6, row
