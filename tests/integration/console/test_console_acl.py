"""The console's admin actions against a cluster with ACL on (real nameserver + broker with aclEnable):
the console signs with the account it was given, so an admin account may create topics and send, a
publish-only account may send but not create topics, and no account may do neither."""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from orbitmq.testing import ServerProcess, start_broker, start_namesrv
from orbitmq.testing.console import console_process

ADMIN = ("consoleadmin", "consoleadminsecret")
PUBLISHER = ("consolepub", "consolepubsecret")
TOPIC = "AclConsoleT"


def write_acl(path: Path, content: object) -> None:
    path.write_text(yaml.safe_dump(content))
    stamp = time.time_ns() + 1_000_000_000  # a distinct mtime even within one clock tick
    os.utime(path, ns=(stamp, stamp))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("console-acl")
    write_acl(
        workdir / "namesrv_acl.yml",
        {"accounts": [{"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True}]},
    )
    write_acl(
        workdir / "broker_acl.yml",
        {
            "globalWhiteRemoteAddresses": [],
            "accounts": [
                {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
                {
                    "accessKey": PUBLISHER[0],
                    "secretKey": PUBLISHER[1],
                    "defaultTopicPerm": "DENY",
                    "defaultGroupPerm": "SUB",
                    "topicPerms": [f"{TOPIC}=PUB", "TBW102=PUB"],
                },
            ],
        },
    )
    with (
        start_namesrv(workdir, aclEnable=True, aclFile="namesrv_acl.yml") as namesrv,
        start_broker(
            workdir,
            namesrv.address,
            aclEnable=True,
            aclFile="broker_acl.yml",
            accessKey=ADMIN[0],
            secretKey=ADMIN[1],
            mappedFileSizeCommitLog=16 * 1024 * 1024,
        ),
    ):
        yield namesrv


def call(url: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    data = None if body is None else orjson.dumps(body)
    request = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, orjson.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, orjson.loads(error.read())


def test_console_actions_follow_the_account_it_signs_with(cluster: ServerProcess) -> None:
    namesrv = cluster.address
    with console_process(
        namesrv, env={"ORBITMQ_ACCESS_KEY": ADMIN[0], "ORBITMQ_SECRET_KEY": ADMIN[1]}
    ) as url:
        status, created = call(url + "api/topics", {"topic": TOPIC})
        assert status == 200, created
        status, sent = call(url + "api/messages", {"topic": TOPIC, "keys": "acl-key", "body": "signed"})
        assert (status, sent.get("status")) == (200, "SEND_OK"), sent
        status, found = call(url + f"api/messages?topic={TOPIC}&key=acl-key")
        assert status == 200 and [m["body"] for m in found["messages"]] == ["signed"]

    with console_process(
        namesrv, env={"ORBITMQ_ACCESS_KEY": PUBLISHER[0], "ORBITMQ_SECRET_KEY": PUBLISHER[1]}
    ) as url:
        status, refused = call(url + "api/topics", {"topic": "NotAllowedT"})
        assert status == 400 and "permission" in refused["error"].lower(), refused
        status, sent = call(url + "api/messages", {"topic": TOPIC, "body": "published"})
        assert (status, sent.get("status")) == (200, "SEND_OK"), sent

    env = {"ORBITMQ_ACCESS_KEY": "", "ORBITMQ_SECRET_KEY": ""}
    with console_process(namesrv, env=env) as url:
        status, refused = call(url + "api/topics", {"topic": "AnonymousT"})
        assert status == 400, refused
        status, refused = call(url + "api/messages", {"topic": TOPIC, "body": "anonymous"})
        assert status == 400, refused
