"""TLS against real processes, with certificates the test makes (openssl CLI):

- enforcing refuses a plain client and serves a TLS one;
- permissive (one port) serves both, as RocketMQ's first-byte sniffing does;
- a producer and a consumer with tls=True send and consume end to end through a broker in
  enforcing mode that registers over TLS with its nameserver (tls.enable in broker.conf);
- need.client.auth=require refuses a client without a certificate and serves one with it.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.admin.api import AdminClient
from orbitmq.client.aio import LitePullConsumer, Message, Producer
from orbitmq.client.config import ClientConfig
from orbitmq.common.errors import ConnectError, RequestTimeoutError
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing import ServerProcess, start_broker, start_namesrv
from orbitmq.transport import RemotingClient
from orbitmq.transport.tls import TlsClientSettings

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")


def make_cert(directory: Path, name: str) -> tuple[Path, Path]:
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            f"/CN={name}",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("certs")
    server_cert, server_key = make_cert(d, "server")
    client_cert, client_key = make_cert(d, "client")
    return {
        "server_cert": server_cert,
        "server_key": server_key,
        "client_cert": client_cert,
        "client_key": client_key,
        "dir": d,
    }


def server_tls(certs: dict[str, Path], mode: str, **more: str) -> dict[str, str]:
    return {
        "tls.server.mode": mode,
        "tls.server.certPath": str(certs["server_cert"]),
        "tls.server.keyPath": str(certs["server_key"]),
        **more,
    }


def verifying(certs: dict[str, Path], *, with_cert: bool = False) -> TlsClientSettings:
    return TlsClientSettings(
        enable=True,
        auth_server=True,
        trust_cert_path=str(certs["server_cert"]),
        cert_path=str(certs["client_cert"]) if with_cert else None,
        key_path=str(certs["client_key"]) if with_cert else None,
    )


async def cluster_info(addr: str, tls: TlsClientSettings | None) -> RemotingCommand:
    client = RemotingClient(ssl_context=tls.context() if tls else None, connect_timeout=3.0)
    try:
        return await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 3.0)
    finally:
        await client.close()


@pytest.fixture(scope="module")
def enforcing_namesrv(
    tmp_path_factory: pytest.TempPathFactory, certs: dict[str, Path]
) -> Iterator[ServerProcess]:
    with start_namesrv(tmp_path_factory.mktemp("ns-enf"), **server_tls(certs, "enforcing")) as proc:
        yield proc


async def test_enforcing_refuses_plain_and_serves_tls(
    enforcing_namesrv: ServerProcess, certs: dict[str, Path]
) -> None:
    with pytest.raises((ConnectError, RequestTimeoutError)):
        await cluster_info(enforcing_namesrv.address, None)
    answer = await cluster_info(enforcing_namesrv.address, verifying(certs))
    assert answer.code == ResponseCode.SUCCESS
    # A client that checks the server against another certificate refuses to talk.
    wrong_trust = TlsClientSettings(enable=True, auth_server=True, trust_cert_path=str(certs["client_cert"]))
    with pytest.raises(ConnectError):
        await cluster_info(enforcing_namesrv.address, wrong_trust)


async def test_permissive_serves_plain_and_tls_on_one_port(tmp_path: Path, certs: dict[str, Path]) -> None:
    with start_namesrv(tmp_path, **server_tls(certs, "permissive")) as ns:
        for _ in range(2):
            assert (await cluster_info(ns.address, None)).code == ResponseCode.SUCCESS
            assert (await cluster_info(ns.address, verifying(certs))).code == ResponseCode.SUCCESS
            assert (
                await cluster_info(ns.address, TlsClientSettings(enable=True))
            ).code == ResponseCode.SUCCESS


async def test_clients_send_and_consume_over_tls(tmp_path: Path, certs: dict[str, Path]) -> None:
    client_tls = {
        "tls.enable": "true",
        "tls.client.authServer": "true",
        "tls.client.trustCertPath": str(certs["server_cert"]),
    }
    with (
        start_namesrv(tmp_path, **server_tls(certs, "enforcing")) as ns,
        start_broker(
            tmp_path,
            ns.address,
            **server_tls(certs, "enforcing"),
            **client_tls,
            mappedFileSizeCommitLog=16 * 1024 * 1024,
            mappedFileSizeConsumeQueue=20 * 6000,
        ) as broker,
    ):
        cfg = {"namesrv_addrs": [ns.address], "rebalance_interval": 1.0}
        topic = "TlsTopic"
        async with AdminClient(ns.address, tls=verifying(certs)) as admin:
            deadline = time.monotonic() + 15
            while True:  # the broker registers over TLS
                try:
                    await admin.update_topic(
                        topic, cluster="DefaultCluster", read_queue_nums=2, write_queue_nums=2
                    )
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)
        async with Producer("TlsProducer", config=ClientConfig(**cfg), tls=verifying(certs)) as producer:
            for i in range(5):
                await producer.send(Message.create(topic, f"tls{i}"))
        consumer = LitePullConsumer(
            "TlsGroup", config=ClientConfig(**cfg), tls=True, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
        )
        consumer.subscribe(topic, "*")
        await consumer.start()
        try:
            got: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(got) < 5 and time.monotonic() < deadline:
                got += [m.body for m in await consumer.poll(0.2)]
            assert sorted(got) == [f"tls{i}".encode() for i in range(5)]
        finally:
            await consumer.shutdown()
        # The broker port itself speaks TLS only.
        with pytest.raises((ConnectError, RequestTimeoutError)):
            await cluster_info(broker.address, None)


async def test_mutual_auth(tmp_path: Path, certs: dict[str, Path]) -> None:
    conf = server_tls(
        certs,
        "enforcing",
        **{"tls.server.need.client.auth": "require", "tls.server.trustCertPath": str(certs["client_cert"])},
    )
    with start_namesrv(tmp_path, **conf) as ns:
        with pytest.raises((ConnectError, RequestTimeoutError)):
            await cluster_info(ns.address, verifying(certs))
        answer = await cluster_info(ns.address, verifying(certs, with_cert=True))
        assert answer.code == ResponseCode.SUCCESS
