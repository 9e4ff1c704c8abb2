"""`orbitmq serve -c conf`: the ACL and TLS keys of the conf hold for its embedded nameserver too.

- aclEnable=true: the nameserver refuses a forged REGISTER_BROKER (unsigned, or signed by a non-admin
  account) as `orbitmq namesrv` does, while serve's own broker, signing with accessKey/secretKey, is
  registered and routes stay readable without credentials.
- tls.server.mode=enforcing: both ports refuse a plain client and serve a TLS one; the broker registers
  with its nameserver over TLS (tls.enable=true in the same conf).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
import yaml

from orbitmq.common.errors import ConnectError, RequestTimeoutError
from orbitmq.namesrv.route_table import DataVersion
from orbitmq.namesrv.wire import encode_registration
from orbitmq.protocol import java_json
from orbitmq.protocol.codes import RequestCode, ResponseCode
from orbitmq.protocol.command import RemotingCommand
from orbitmq.testing.launch import start_serve
from orbitmq.transport import RemotingClient
from orbitmq.transport.signing import request_signer
from orbitmq.transport.tls import TlsClientSettings

ADMIN = ("adminaccount", "adminsecret1")
PRODUCER = ("produceronly", "producersecret")


async def call(
    addr: str,
    code: int,
    ext: dict[str, str] | None = None,
    body: bytes = b"",
    *,
    creds: tuple[str, str] | None = None,
    tls: TlsClientSettings | None = None,
) -> RemotingCommand:
    client = RemotingClient(
        rpc_hook=request_signer(*creds) if creds else None,
        ssl_context=tls.context() if tls else None,
        connect_timeout=3.0,
    )
    try:
        return await client.invoke(addr, RemotingCommand.request(code, ext, body), 5.0)
    finally:
        await client.close()


async def cluster_brokers(addr: str, tls: TlsClientSettings | None = None) -> set[str]:
    answer = await call(addr, RequestCode.GET_BROKER_CLUSTER_INFO, tls=tls)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    return set(java_json.loads(answer.body_bytes()).get("brokerAddrTable", {}))


async def until_registered(addr: str, tls: TlsClientSettings | None = None) -> set[str]:
    deadline = time.monotonic() + 15
    while True:
        brokers = await cluster_brokers(addr, tls)
        if brokers or time.monotonic() > deadline:
            return brokers
        await asyncio.sleep(0.1)


async def test_serve_nameserver_refuses_forged_registrations(tmp_path: Path) -> None:
    acl = {
        "globalWhiteRemoteAddresses": [],
        "accounts": [
            {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True},
            {"accessKey": PRODUCER[0], "secretKey": PRODUCER[1], "defaultTopicPerm": "PUB"},
        ],
    }
    (tmp_path / "acl.yml").write_text(yaml.safe_dump(acl))
    body = encode_registration(DataVersion(1, 1), {}, compressed=False)
    forged = {
        "brokerName": "hijack",
        "brokerAddr": "10.9.9.9:10911",
        "clusterName": "DefaultCluster",
        "haServerAddr": "10.9.9.9:10912",
        "brokerId": "0",
        "compressed": "false",
        "bodyCrc32": str(zlib.crc32(body) & 0x7FFFFFFF),
    }
    with start_serve(
        tmp_path, aclEnable=True, aclFile="acl.yml", accessKey=ADMIN[0], secretKey=ADMIN[1]
    ) as serve:
        # serve's own broker signs its registration with the admin account: it is routed.
        assert await until_registered(serve.address) == {"broker-a"}
        unsigned = await call(serve.address, RequestCode.REGISTER_BROKER, forged, body)
        assert unsigned.code == ResponseCode.NO_PERMISSION
        assert "No accessKey is configured" in str(unsigned.remark)
        not_admin = await call(serve.address, RequestCode.REGISTER_BROKER, forged, body, creds=PRODUCER)
        assert not_admin.code == ResponseCode.NO_PERMISSION
        assert "Need admin permission" in str(not_admin.remark)
        assert await cluster_brokers(serve.address) == {"broker-a"}  # no hijack route
        # The broker port enforces the same file.
        assert (
            await call(serve.broker_addr, RequestCode.GET_BROKER_CONFIG)
        ).code == ResponseCode.NO_PERMISSION


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")
async def test_serve_enforces_tls_on_both_ports(tmp_path: Path) -> None:
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    command = (
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=server"
    )
    subprocess.run(
        [*command.split(), "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True
    )
    conf = {
        "tls.server.mode": "enforcing",
        "tls.server.certPath": str(cert),
        "tls.server.keyPath": str(key),
        "tls.enable": "true",  # the broker's registration with its own nameserver
        "tls.client.authServer": "true",
        "tls.client.trustCertPath": str(cert),
    }
    verifying = TlsClientSettings(enable=True, auth_server=True, trust_cert_path=str(cert))
    with start_serve(tmp_path, **conf) as serve:
        for addr in (serve.address, serve.broker_addr):
            with pytest.raises((ConnectError, RequestTimeoutError)):
                await call(addr, RequestCode.GET_BROKER_CLUSTER_INFO)
        # Registered over TLS, answered over TLS.
        assert await until_registered(serve.address, verifying) == {"broker-a"}
        answer = await call(serve.broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO, tls=verifying)
        assert answer.code == ResponseCode.SUCCESS, answer.remark


async def test_serve_broker_signs_with_the_files_admin_account_when_the_conf_names_none(
    tmp_path: Path,
) -> None:
    """aclEnable=true without accessKey/secretKey: serve's broker still registers with serve's own
    (ACL-guarded) nameserver, signing with the file's admin account; a forged registration is refused."""
    acl = {"accounts": [{"accessKey": PRODUCER[0], "secretKey": PRODUCER[1]}, _admin_account()]}
    (tmp_path / "acl.yml").write_text(yaml.safe_dump(acl))
    with start_serve(tmp_path, aclEnable=True, aclFile="acl.yml") as serve:
        assert await until_registered(serve.address) == {"broker-a"}
        forged = {"brokerName": "hijack", "brokerAddr": "10.9.9.9:10911", "clusterName": "DefaultCluster",
                  "haServerAddr": "10.9.9.9:10912", "brokerId": "0"}  # fmt: skip
        refused = await call(serve.address, RequestCode.REGISTER_BROKER, forged, b"{}")
        assert refused.code == ResponseCode.NO_PERMISSION


def test_serve_without_an_admin_account_stops_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "acl.yml").write_text(yaml.safe_dump({"accounts": [{"accessKey": PRODUCER[0],
                                                                    "secretKey": PRODUCER[1]}]}))  # fmt: skip
    conf = tmp_path / "serve.conf"
    conf.write_text(f"aclEnable=true\naclFile=acl.yml\nstorePathRootDir={tmp_path / 'store'}\nlistenPort=0\n")
    done = subprocess.run(
        [sys.executable, "-m", "orbitmq", "serve", "--port", "0", "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "has no admin account" in done.stderr, done.stderr


def _admin_account() -> dict[str, object]:
    return {"accessKey": ADMIN[0], "secretKey": ADMIN[1], "admin": True}
