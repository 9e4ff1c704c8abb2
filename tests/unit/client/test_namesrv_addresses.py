"""Nameserver addresses are checked when a client is constructed, with an error naming the bad part."""

from __future__ import annotations

import re

import pytest

from orbitmq.admin.base import AdminBase
from orbitmq.client.aio import LitePullConsumer, Producer, PushConsumer
from orbitmq.client.config import address_problem, parse_namesrv_addrs
from orbitmq.common.errors import ClientError


@pytest.mark.parametrize(
    ("addrs", "expected"),
    [
        ("127.0.0.1:9876", ["127.0.0.1:9876"]),
        ("a:1;b:2", ["a:1", "b:2"]),
        (" a:1 ; b:2 ;", ["a:1", "b:2"]),
        ("[::1]:9876", ["[::1]:9876"]),
        (["ns1:9876", "ns2:9877"], ["ns1:9876", "ns2:9877"]),
    ],
)
def test_valid_lists(addrs: str | list[str], expected: list[str]) -> None:
    assert parse_namesrv_addrs(addrs) == expected


@pytest.mark.parametrize(
    ("addrs", "bad_part", "why"),
    [
        ("127.0.0.1;9876", "'127.0.0.1'", "did you mean '127.0.0.1:9876'?"),
        ("http://127.0.0.1:9876", "'http://127.0.0.1:9876'", "no URL scheme"),
        ("127.0.0.1", "'127.0.0.1'", "no port"),
        ("127.0.0.1:70000", "'127.0.0.1:70000'", "port 70000 is out of range"),
        ("127.0.0.1:0", "'127.0.0.1:0'", "out of range"),
        ("127.0.0.1:98x6", "'127.0.0.1:98x6'", "not a number"),
        ("127.0.0.1:٩٨٧٦", "'127.0.0.1:٩٨٧٦'", "not a number"),
        ("good:1;:9876", "':9876'", "no host"),
        ("::1:9876", "'::1:9876'", "[addr]:port"),
    ],
)
def test_invalid_entries_name_the_bad_part(addrs: str, bad_part: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_namesrv_addrs(addrs)
    assert bad_part in str(info.value) and why in str(info.value)


def test_environment_variable_is_checked_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", "127.0.0.1")
    with pytest.raises(ClientError, match=re.escape("NAMESRV_ADDR '127.0.0.1': no port")):
        parse_namesrv_addrs(None)


def test_address_problem_accepts_host_names() -> None:
    assert address_problem("broker-host.example:9876") is None


@pytest.mark.parametrize("factory", [Producer, PushConsumer, LitePullConsumer])
def test_clients_refuse_bad_addresses_at_construction(factory: type) -> None:
    with pytest.raises(ValueError, match=re.escape("'127.0.0.1:70000': port 70000 is out of range")):
        factory("group", "127.0.0.1:70000")


def test_admin_refuses_bad_addresses_at_construction() -> None:
    with pytest.raises(ValueError, match="no URL scheme"):
        AdminBase("http://127.0.0.1:9876")
