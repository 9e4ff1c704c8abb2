"""AdminClient decisions that need no server: bad ids are refused before anything is dialled."""

from __future__ import annotations

import pytest

from orbitmq.admin import AdminClient, AdminError, BlockingAdminClient
from orbitmq.admin.api import group_config
from orbitmq.admin.base import valid_address
from orbitmq.common.errors import ClientError


def test_a_name_server_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)
    with pytest.raises(ClientError, match="no name server address"):
        AdminClient()
    monkeypatch.setenv("NAMESRV_ADDR", "10.0.0.1:9876;10.0.0.2:9876")
    with BlockingAdminClient() as admin:
        assert admin.aio.namesrv_addrs == ["10.0.0.1:9876", "10.0.0.2:9876"]


async def test_an_id_that_is_no_offset_id_needs_a_topic() -> None:
    async with AdminClient("127.0.0.1:9") as admin:
        with pytest.raises(AdminError, match="give -t TOPIC"):
            await admin.query_message_by_id("not-hex")


async def test_an_offset_id_with_an_impossible_port_is_not_dialled() -> None:
    # 127.0.0.1, port 0x00FFFFFF, offset 0: what a UNIQ_KEY can decode to
    msg_id = "7F000001" + "00FFFFFF" + "0" * 16
    async with AdminClient("127.0.0.1:9") as admin:
        with pytest.raises(ClientError, match="out of range"):
            await admin.view_message(msg_id)
        assert admin.remoting.connections == {}


def test_valid_address() -> None:
    assert valid_address("127.0.0.1:10911")
    assert not valid_address("127.0.0.1:0")
    assert not valid_address("127.0.0.1:70000")
    assert not valid_address("noport")


def test_group_config_keeps_defaults_for_unset_fields() -> None:
    config = group_config("G", retry_max_times=3, consume_enable=None)
    assert (config.group_name, config.retry_max_times, config.consume_enable, config.retry_queue_nums) == (
        "G",
        3,
        True,
        1,
    )
