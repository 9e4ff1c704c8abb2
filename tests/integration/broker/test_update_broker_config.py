"""UPDATE_BROKER_CONFIG against a real `orbitmq serve -c FILE`: black-listed keys refused (NO_PERMISSION),
values parsed as strictly as the file is (the remark names the key, nothing is applied), accepted
changes written back into the file (comments kept) so they survive a restart."""

from __future__ import annotations

from pathlib import Path

from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.protocol.properties_text import decode_properties_text, encode_properties_text
from orbitmq.testing import ServerProcess, start_process, write_properties
from orbitmq.transport import RemotingClient


async def update(client: RemotingClient, addr: str, props: dict[str, str]) -> RemotingCommand:
    request = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=encode_properties_text(props))
    return await client.invoke(addr, request, 5.0)


async def broker_config(client: RemotingClient, addr: str) -> dict[str, str]:
    resp = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG), 5.0)
    assert resp.code == ResponseCode.SUCCESS
    return decode_properties_text(resp.body_bytes())


def start(conf: Path, workdir: Path, name: str) -> ServerProcess:
    return start_process(
        "serve",
        ["-c", str(conf), "--namesrv-port", "0"],
        workdir,
        name=name,
        expect=("namesrv", "broker"),
        primary="namesrv",
    )


async def test_update_is_checked_and_survives_a_restart(tmp_path: Path) -> None:
    conf = write_properties(
        tmp_path / "broker.conf",
        {
            "brokerName": "broker-a",
            "listenPort": 0,
            "storePathRootDir": tmp_path / "store",
            "defaultTopicQueueNums": 8,
        },
    )
    conf.write_text("# my broker, keep this comment\n" + conf.read_text(encoding="utf-8"), encoding="utf-8")
    server = start(conf, tmp_path, "first")
    client = RemotingClient()
    try:
        addr = server.broker_addr
        for key in ("storePathRootDir", "brokerConfigPath", "storePathCommitLog", "configBlackList"):
            refused = await update(client, addr, {key: "/tmp/elsewhere", "defaultTopicQueueNums": "3"})
            assert refused.code == ResponseCode.NO_PERMISSION, refused.remark
            assert key in (refused.remark or "")
        bad = await update(client, addr, {"defaultTopicQueueNums": "3", "flushDiskType": "SYNCFLUSH"})
        assert bad.code == ResponseCode.SYSTEM_ERROR
        assert "flushDiskType='SYNCFLUSH': not one of ASYNC_FLUSH, SYNC_FLUSH" in (bad.remark or "")
        bad = await update(client, addr, {"defaultTopicQueueNums": "1_0"})
        assert bad.code == ResponseCode.SYSTEM_ERROR and "defaultTopicQueueNums" in (bad.remark or "")
        config = await broker_config(client, addr)
        assert config["defaultTopicQueueNums"] == "8" and config["storePathRootDir"] == str(
            tmp_path / "store"
        )

        ok = await update(client, addr, {"defaultTopicQueueNums": " 5 ", "autoCreateTopicEnable": "false"})
        assert ok.code == ResponseCode.SUCCESS, ok.remark
        assert (await broker_config(client, addr))["defaultTopicQueueNums"] == "5"
    finally:
        await client.close()
        assert server.stop() == 0

    text = conf.read_text(encoding="utf-8")
    assert text.startswith("# my broker, keep this comment\n")
    assert decode_properties_text(text)["defaultTopicQueueNums"] == "5"
    assert "/tmp/elsewhere" not in text

    again = start(conf, tmp_path, "second")
    client = RemotingClient()
    try:
        config = await broker_config(client, again.broker_addr)
        assert config["defaultTopicQueueNums"] == "5" and config["autoCreateTopicEnable"] == "false"
    finally:
        await client.close()
        assert again.stop() == 0
