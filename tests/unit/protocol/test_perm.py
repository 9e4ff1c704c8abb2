"""Permission bits (RocketMQ's PermName): values, tests of a bit, and mqadmin's text for them."""

from __future__ import annotations

from orbitmq.protocol.perm import (
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_READ_WRITE,
    PERM_WRITE,
    is_inherited,
    is_readable,
    is_writeable,
    perm_text,
)


def test_bits_are_rocketmq_s() -> None:
    assert (PERM_PRIORITY, PERM_READ, PERM_WRITE, PERM_INHERIT) == (8, 4, 2, 1)
    assert PERM_READ_WRITE == PERM_READ | PERM_WRITE


def test_each_test_reads_its_own_bit() -> None:
    assert [is_readable(p) for p in (0, 2, 4, 6, 7)] == [False, False, True, True, True]
    assert [is_writeable(p) for p in (0, 2, 4, 6, 7)] == [False, True, False, True, True]
    assert [is_inherited(p) for p in (0, 1, 6, 7)] == [False, True, False, True]


def test_perm_text() -> None:
    assert perm_text(6) == "RW-"
    assert perm_text(4) == "R--"
    assert perm_text(7) == "RWX"
    assert perm_text(0) == "---"
