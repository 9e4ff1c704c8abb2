"""TLS settings under RocketMQ's names (TlsSystemConfig) and the ssl contexts built from them.

The `tls.*` keys of namesrv.conf / broker.conf (`TlsServerSettings`) and of the clients
(`TlsClientSettings`, `tls.enable=true` or `tls=True`), so a RocketMQ deployment's TLS files work as
they are. RocketMQ does not check host names, nor does this.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

TLS_HANDSHAKE_BYTE = 0x16


class TlsMode(StrEnum):
    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


def _java_bool(text: str | None) -> bool:
    return text is not None and text.strip().lower() == "true"


def _opt(props: Mapping[str, str], key: str) -> str | None:
    value = props.get(key)
    return value.strip() if value and value.strip() else None


@dataclass(frozen=True, slots=True)
class TlsServerSettings:
    """A server's TLS keys (namesrv.conf / broker.conf), one field each."""

    mode: TlsMode = TlsMode.DISABLED
    """disabled (plain only), permissive (one port for TLS and plain: a TLS connection's first byte is
    0x16, which no remoting frame starts with below 352 MB) or enforcing (TLS only). RocketMQ's default
    permissive relies on a throwaway self-signed certificate, which orbitmq does not invent."""
    cert_path: str | None = None
    """The server's certificate (PEM); needed unless the mode is disabled."""
    key_path: str | None = None
    """The server certificate's private key (PEM); needed unless the mode is disabled."""
    key_password: str | None = None
    """The private key's password, when it is encrypted."""
    trust_cert_path: str | None = None
    """The CA certificates client certificates are verified against (need.client.auth optional or
    require)."""
    need_client_auth: str = "none"
    """none, optional or require: whether clients must show a certificate."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TlsServerSettings:
        mode_text = (_opt(props, "tls.server.mode") or "disabled").lower()
        try:
            mode = TlsMode(mode_text)
        except ValueError:
            raise ValueError(
                f"tls.server.mode={mode_text!r}: expected disabled, permissive or enforcing"
            ) from None
        need = (_opt(props, "tls.server.need.client.auth") or "none").lower()
        if need not in ("none", "optional", "require"):
            raise ValueError(f"tls.server.need.client.auth={need!r}: expected none, optional or require")
        settings = cls(
            mode=mode,
            cert_path=_opt(props, "tls.server.certPath"),
            key_path=_opt(props, "tls.server.keyPath"),
            key_password=_opt(props, "tls.server.keyPassword"),
            trust_cert_path=_opt(props, "tls.server.trustCertPath"),
            need_client_auth=need,
        )
        if mode is not TlsMode.DISABLED and (settings.cert_path is None or settings.key_path is None):
            raise ValueError(f"tls.server.mode={mode.value} needs tls.server.certPath and tls.server.keyPath")
        if need != "none" and settings.trust_cert_path is None:
            raise ValueError(f"tls.server.need.client.auth={need} needs tls.server.trustCertPath")
        return settings

    def context(self) -> ssl.SSLContext | None:
        if self.mode is TlsMode.DISABLED:
            return None
        assert self.cert_path is not None and self.key_path is not None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert_path, self.key_path, self.key_password)
        if self.need_client_auth != "none":
            ctx.load_verify_locations(self.trust_cert_path)
            ctx.verify_mode = ssl.CERT_REQUIRED if self.need_client_auth == "require" else ssl.CERT_OPTIONAL
        return ctx


@dataclass(frozen=True, slots=True)
class TlsClientSettings:
    """A client's TLS keys (with `tls.enable=true`), one field each."""

    enable: bool = False
    """Connect with TLS (orbitmq's clients: `tls=True` or a TlsClientSettings)."""
    auth_server: bool = False
    """Verify the server's certificate against trustCertPath (host names are not checked, as in
    RocketMQ)."""
    trust_cert_path: str | None = None
    """The CA certificates server certificates are verified against; the system's when unset."""
    cert_path: str | None = None
    """The client's own certificate, for servers that require one."""
    key_path: str | None = None
    """The client certificate's private key."""
    key_password: str | None = None
    """The private key's password, when it is encrypted."""

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TlsClientSettings:
        return cls(
            enable=_java_bool(props.get("tls.enable")),
            auth_server=_java_bool(props.get("tls.client.authServer")),
            trust_cert_path=_opt(props, "tls.client.trustCertPath"),
            cert_path=_opt(props, "tls.client.certPath"),
            key_path=_opt(props, "tls.client.keyPath"),
            key_password=_opt(props, "tls.client.keyPassword"),
        )

    def context(self) -> ssl.SSLContext | None:
        if not self.enable:
            return None
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        if self.auth_server:
            if self.trust_cert_path:
                ctx.load_verify_locations(self.trust_cert_path)
            else:
                ctx.load_default_certs()
            ctx.verify_mode = ssl.CERT_REQUIRED
        else:
            ctx.verify_mode = ssl.CERT_NONE
        if self.cert_path:
            ctx.load_cert_chain(self.cert_path, self.key_path, self.key_password)
        return ctx
