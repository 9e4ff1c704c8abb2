"""Host fields, offset message ids (5.5) and UNIQ_KEY (5.6)."""

from __future__ import annotations

import re
import threading
from datetime import datetime

import pytest

from orbitmq.common.errors import ClientError
from orbitmq.message.codec import (
    UniqueIdGenerator,
    configure_unique_ids,
    decode_offset_msg_id,
    host_string,
    new_unique_id,
    offset_msg_id,
    pack_address,
    pack_host,
    parse_unique_id,
    split_address,
    unpack_host,
)


def test_pack_host_is_ip_bytes_then_port_int() -> None:
    assert pack_host("192.168.0.1", 10911) == bytes([192, 168, 0, 1, 0, 0, 0x2A, 0x9F])
    assert pack_host("::1", 9876) == bytes(15) + b"\x01" + (9876).to_bytes(4, "big")
    assert pack_host("[::1]", 1) == pack_host("::1", 1)
    assert unpack_host(pack_host("10.1.2.3", 65535)) == ("10.1.2.3", 65535)
    assert unpack_host(memoryview(pack_host("2001:db8::5", 80))) == ("2001:db8::5", 80)
    assert host_string(pack_host("10.1.2.3", 7)) == "10.1.2.3:7"
    assert host_string(pack_host("2001:db8::5", 80)) == "[2001:db8::5]:80"
    assert pack_address("127.0.0.1:10911") == pack_host("127.0.0.1", 10911)
    assert split_address("[::1]:9876") == ("::1", 9876)


@pytest.mark.parametrize("bad", ["localhost", "1.2.3", "", "1.2.3.4.5"])
def test_pack_host_rejects_non_ip_text(bad: str) -> None:
    with pytest.raises(ClientError):
        pack_host(bad, 1)


def test_bad_host_fields_and_addresses_are_client_errors() -> None:
    with pytest.raises(ClientError):
        pack_host("1.2.3.4", 70000)
    with pytest.raises(ClientError):
        unpack_host(b"\0" * 9)
    with pytest.raises(ClientError):
        split_address("no-port")


def test_offset_msg_id_golden_values() -> None:
    assert offset_msg_id(pack_host("192.168.1.2", 10911), 4) == "C0A8010200002A9F0000000000000004"
    assert offset_msg_id(pack_host("172.17.0.1", 10911), 0) == "AC11000100002A9F0000000000000000"
    assert offset_msg_id(pack_host("10.0.0.1", 10911), 0x123456789) == "0A00000100002A9F0000000123456789"
    v6 = offset_msg_id(pack_host("fe80::2", 10911), 1_073_741_824)
    assert v6 == "FE80000000000000000000000000000200002A9F0000000040000000"
    assert len(v6) == 56
    # a negative offset (a damaged record's field) as Java's long in two's complement, as Java writes it
    assert offset_msg_id(pack_host("10.0.0.1", 10911), -2) == "0A00000100002A9FFFFFFFFFFFFFFFFE"


def test_offset_msg_id_decodes_back() -> None:
    assert decode_offset_msg_id("C0A8010200002A9F0000000000000004") == ("192.168.1.2", 10911, 4)
    assert decode_offset_msg_id("c0a8010200002a9f0000000000000004") == ("192.168.1.2", 10911, 4)
    assert decode_offset_msg_id("FE80000000000000000000000000000200002A9F0000000040000000") == (
        "fe80::2",
        10911,
        1_073_741_824,
    )


@pytest.mark.parametrize("bad", ["", "C0A80102", "Z" * 32, "C0A8010200002A9F000000000000000", "0" * 40])
def test_malformed_offset_msg_id_is_a_client_error(bad: str) -> None:
    with pytest.raises(ClientError):
        decode_offset_msg_id(bad)


def test_unique_id_shape() -> None:
    gen = UniqueIdGenerator("10.1.2.3", pid=0x12345, salt=0xDEADBEEF)
    assert gen.prefix == "0A010203" + "2345" + "DEADBEEF"
    first, second = gen.next(), gen.next()
    for uid in (first, second):
        assert re.fullmatch(r"[0-9A-F]{32}", uid)
        assert uid.startswith(gen.prefix)
    assert first[-4:] == "0000" and second[-4:] == "0001"
    assert re.fullmatch(r"[0-9A-F]{32}", new_unique_id())
    assert new_unique_id() != new_unique_id()


def test_unique_id_time_is_ms_since_the_start_of_the_local_month() -> None:
    gen = UniqueIdGenerator(salt=1)
    month_start = datetime(2026, 3, 1)
    now = datetime(2026, 3, 2, 0, 0, 1)
    now_ms = int(now.timestamp() * 1000)
    info = parse_unique_id(gen.next(now_ms))
    assert info.elapsed_ms == now_ms - int(month_start.timestamp() * 1000)
    assert info.ip == "127.0.0.1" and info.counter == 0
    # A new month restarts the time part.
    april = int(datetime(2026, 4, 1, 0, 0, 0, 5000).timestamp() * 1000)
    assert parse_unique_id(gen.next(april)).elapsed_ms == 5


def test_unique_id_counter_is_thread_safe_and_wraps_at_16_bits() -> None:
    gen = UniqueIdGenerator(salt=1)
    seen: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        ids = [gen.next(1_700_000_000_000) for _ in range(2000)]
        with lock:
            seen.extend(ids)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 8000
    for _ in range(65536 - 8000):
        gen.next(1_700_000_000_000)
    assert gen.next(1_700_000_000_000)[-4:] == "0000"


def test_parse_unique_id_rejects_garbage() -> None:
    with pytest.raises(ClientError):
        parse_unique_id("xyz")
    with pytest.raises(ClientError):
        parse_unique_id("G" * 32)


def test_configured_ip_goes_into_new_ids() -> None:
    configure_unique_ids("10.9.8.7")
    try:
        assert new_unique_id().startswith("0A090807")
        assert parse_unique_id(new_unique_id()).ip == "10.9.8.7"
    finally:
        configure_unique_ids("127.0.0.1")
