"""tls.server.mode=enforcing: the gRPC port takes TLS only, with the broker's certificate, and the
official 5.x client with tls_enable=True sends over it (the certificate the test makes is its root)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from rocketmq.grpc_protocol import Code, MessagingServiceStub

from .conftest import GrpcServe, grpc_serve, unique
from .test_endpoint import route

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")

CLIENT = """
import sys
from rocketmq import ClientConfiguration, Credentials, Message, Producer
producer = Producer(ClientConfiguration(sys.argv[1], Credentials()), (sys.argv[2],), tls_enable=True)
producer.startup()
message = Message()
message.topic, message.body = sys.argv[2], b"over tls"
print("sent", producer.send(message).message_id, flush=True)
producer.shutdown()
"""


@pytest.fixture
def tls_serve(tmp_path: Path) -> Iterator[tuple[GrpcServe, Path]]:
    cert, key = tmp_path / "server.crt", tmp_path / "server.key"
    subprocess.run(
        [
            *[
                "openssl",
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-nodes",
                "-days",
                "1",
            ],
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    conf = {
        "tls.server.mode": "enforcing",
        "tls.server.certPath": str(cert),
        "tls.server.keyPath": str(key),
        "tls.enable": "true",  # the broker's registration with its own nameserver
    }
    with grpc_serve(tmp_path, **conf) as serve:
        serve.tls = True
        yield serve, cert


def test_the_grpc_port_takes_tls_only(tls_serve: tuple[GrpcServe, Path]) -> None:
    serve, cert = tls_serve
    topic = unique("Tls")
    serve.create_topic(topic)
    with grpc.insecure_channel(serve.grpc_address) as plain, pytest.raises(grpc.RpcError):
        route(MessagingServiceStub(plain), serve, topic)
    credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
    with grpc.secure_channel(serve.grpc_address, credentials) as secure:
        assert route(MessagingServiceStub(secure), serve, topic).status.code == Code.OK
    env = {"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(cert), "PATH": "/usr/bin:/bin", "HOME": str(cert.parent)}
    done = subprocess.run(
        [sys.executable, "-c", CLIENT, serve.grpc_address, topic],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("sent "), done.stdout + done.stderr[-2000:]
