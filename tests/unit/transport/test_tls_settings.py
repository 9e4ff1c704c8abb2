"""TLS settings under RocketMQ's property names; bad combinations fail at startup with the key named."""

from __future__ import annotations

import pytest

from orbitmq.transport.tls import TlsClientSettings, TlsMode, TlsServerSettings


def test_defaults_are_plain() -> None:
    assert TlsServerSettings.from_properties({}).mode is TlsMode.DISABLED
    assert TlsServerSettings.from_properties({}).context() is None
    assert TlsClientSettings.from_properties({}).context() is None


def test_server_keys() -> None:
    settings = TlsServerSettings.from_properties(
        {
            "tls.server.mode": "Permissive",
            "tls.server.certPath": "/c.pem",
            "tls.server.keyPath": "/k.pem",
            "tls.server.need.client.auth": "require",
            "tls.server.trustCertPath": "/ca.pem",
        }
    )
    assert settings.mode is TlsMode.PERMISSIVE
    assert (settings.cert_path, settings.key_path, settings.trust_cert_path) == (
        "/c.pem",
        "/k.pem",
        "/ca.pem",
    )
    assert settings.need_client_auth == "require"


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ({"tls.server.mode": "strict"}, "tls.server.mode"),
        ({"tls.server.mode": "enforcing"}, "tls.server.certPath"),
        ({"tls.server.need.client.auth": "maybe"}, "tls.server.need.client.auth"),
        ({"tls.server.need.client.auth": "require"}, "tls.server.trustCertPath"),
    ],
)
def test_bad_server_settings_name_the_key(props: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        TlsServerSettings.from_properties(props)


def test_client_keys() -> None:
    settings = TlsClientSettings.from_properties(
        {"tls.enable": "true", "tls.client.authServer": "TRUE", "tls.client.trustCertPath": "/ca.pem"}
    )
    assert settings.enable and settings.auth_server and settings.trust_cert_path == "/ca.pem"
    assert not TlsClientSettings.from_properties({"tls.enable": "yes"}).enable  # Boolean.parseBoolean
