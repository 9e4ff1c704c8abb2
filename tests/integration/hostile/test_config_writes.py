"""Config changes are written off the event loop but answered only once durable (issue 13).

Topic and group create/delete rewrite topics.json / subscriptionGroup.json on the broker's writer thread;
the request is answered after that write. So a broker killed (SIGKILL, no shutdown persist) right after
the answers has every acknowledged change in its files.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from orbitmq.broker.config_files import read_json_file
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_serve
from orbitmq.transport import RemotingClient

GROUP_CONFIG = {
    "consumeEnable": True,
    "consumeFromMinEnable": True,
    "consumeBroadcastEnable": True,
    "retryQueueNums": 1,
    "retryMaxTimes": 16,
    "brokerId": 0,
    "whichBrokerWhenConsumeSlowly": 1,
    "notifyConsumerIdsChangedEnable": True,
}


def topic_request(topic: str) -> RemotingCommand:
    create = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": "2",
        "writeQueueNums": "2",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
    }
    return RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create)


async def test_acknowledged_config_changes_survive_a_kill(tmp_path: Path) -> None:
    client = RemotingClient()
    try:
        with start_serve(tmp_path) as serve:
            addr = serve.broker_addr
            for i in range(5):
                assert (await client.invoke(addr, topic_request(f"Kept{i}"), 10)).code == ResponseCode.SUCCESS
            assert (await client.invoke(addr, topic_request("Gone"), 10)).code == ResponseCode.SUCCESS
            gone = RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "Gone"})
            assert (await client.invoke(addr, gone, 10)).code == ResponseCode.SUCCESS
            for i in range(20):
                body = orjson.dumps({**GROUP_CONFIG, "groupName": f"G{i}"})
                request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, body)
                assert (await client.invoke(addr, request, 10)).code == ResponseCode.SUCCESS
            serve.popen.kill()  # no shutdown persist: only what was written before the answers
            serve.popen.wait(10)
    finally:
        await client.close()
    config_dir = tmp_path / "store" / "config"
    topics = read_json_file(config_dir / "topics.json")
    groups = read_json_file(config_dir / "subscriptionGroup.json")
    assert topics is not None and groups is not None
    assert {f"Kept{i}" for i in range(5)} <= set(topics["topicConfigTable"])
    assert "Gone" not in topics["topicConfigTable"]
    assert {f"G{i}" for i in range(20)} <= set(groups["subscriptionGroupTable"])
