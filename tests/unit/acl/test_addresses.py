"""plain_acl.yml address patterns (RemoteAddressStrategyFactory's kinds)."""

from __future__ import annotations

import pytest

from orbitmq.acl import AclError
from orbitmq.acl.addresses import compile_pattern, host_of


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("", [], ["127.0.0.1"]),
        (None, [], ["127.0.0.1"]),
        ("*", ["1.2.3.4", "::1"], []),
        ("*.*.*.*", ["1.2.3.4"], []),
        ("192.168.0.{1,2,3}", ["192.168.0.1", "192.168.0.3"], ["192.168.0.4", "192.168.1.1"]),
        ("10.0.0.1,10.0.0.2", ["10.0.0.2"], ["10.0.0.3"]),
        ("192.168.*.*", ["192.168.9.200"], ["192.169.0.1"]),
        ("192.168.1.*", ["192.168.1.7"], ["192.168.2.7"]),
        ("192.168.1.10-20", ["192.168.1.10", "192.168.1.20"], ["192.168.1.9", "192.168.1.21"]),
        ("192.168.10-20.*", ["192.168.15.3"], ["192.168.21.3"]),
        ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
        ("::1", ["::1", "0:0:0:0:0:0:0:1"], ["::2"]),
        ("1050:0:0:0:5:600:300c:*", ["1050::5:600:300c:326b"], ["1050::5:600:300d:1"]),
    ],
)
def test_patterns(pattern: str | None, yes: list[str], no: list[str]) -> None:
    match = compile_pattern(pattern)
    for address in yes:
        assert match(address), (pattern, address)
    for address in no:
        assert not match(address), (pattern, address)


@pytest.mark.parametrize("pattern", ["256.1.1.1", "192.168.1.30-20", "*.168.1.1", "192.168.*.5", "abc"])
def test_bad_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(AclError):
        compile_pattern(pattern)


def test_host_of_cuts_the_port() -> None:
    assert host_of("127.0.0.1:5555") == "127.0.0.1"
    assert host_of("[::1]:5555") == "::1"
