"""The Spark source and sink against a broker with ACL on: options accessKey/secretKey sign every request
(driver planning and executor pulls/sends); without them the broker refuses."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.testing import ServerProcess, start_serve

KEY, SECRET = "sparkaccount", "sparksecret"


@pytest.fixture(scope="module")
def acl_serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir: Path = tmp_path_factory.mktemp("orbitmq-spark-acl")
    accounts = [{"accessKey": KEY, "secretKey": SECRET, "admin": True}]
    (workdir / "plain_acl.yml").write_text(yaml.safe_dump({"accounts": accounts}))
    with start_serve(workdir, aclEnable=True, mappedFileSizeCommitLog=1024 * 1024) as proc:
        access = BrokerAccess([proc.address], credentials=(KEY, SECRET))
        try:
            access.run(
                access.api.create_topic(proc.broker_addr, "secured", read_queue_nums=2, write_queue_nums=2)
            )
            deadline = time.monotonic() + 15
            while "secured" not in access.topic_queues(["secured"]) and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            access.close()
        yield proc


def test_write_and_read_with_credentials(spark: Any, acl_serve: ServerProcess) -> None:
    df = spark.createDataFrame([(f"secret-{i}",) for i in range(20)], "body string").repartition(2)
    creds = {"namesrv": acl_serve.address, "topic": "secured", "accessKey": KEY, "secretKey": SECRET}
    df.write.format("orbitmq").options(**creds).mode("append").save()
    rows = spark.read.format("orbitmq").options(**creds).load().collect()
    assert sorted(bytes(r.body).decode() for r in rows) == sorted(f"secret-{i}" for i in range(20))
    with pytest.raises(Exception, match="No accessKey is configured"):
        spark.read.format("orbitmq").option("namesrv", acl_serve.address).option(
            "topic", "secured"
        ).load().collect()
