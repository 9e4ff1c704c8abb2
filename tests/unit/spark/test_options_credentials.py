"""Spark options accessKey/secretKey: parsed together and used to sign every request."""

from __future__ import annotations

import pytest

from orbitmq.protocol.acl_sign import verify_signature
from orbitmq.protocol.command import RemotingCommand
from orbitmq.spark.broker_access import BrokerAccess
from orbitmq.spark.options import parse_sink_options, parse_source_options

BASE = {"namesrv": "127.0.0.1:9876", "topic": "T"}


def test_credentials_parsed_for_source_and_sink() -> None:
    creds = {"accessKey": "sparkaccess", "SECRETKEY": "sparksecret"}
    assert parse_source_options({**BASE, **creds}, streaming=False).credentials == (
        "sparkaccess",
        "sparksecret",
    )
    assert parse_sink_options({**BASE, **creds}).credentials == ("sparkaccess", "sparksecret")
    assert parse_source_options(BASE, streaming=False).credentials is None


@pytest.mark.parametrize("one", [{"accessKey": "sparkaccess"}, {"secretKey": "sparksecret"}])
def test_one_without_the_other_is_an_error(one: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="go together"):
        parse_source_options({**BASE, **one}, streaming=True)


def test_broker_access_signs_its_requests() -> None:
    access = BrokerAccess(["127.0.0.1:9876"], credentials=("sparkaccess", "sparksecret"))
    try:
        hook = access.api.remoting.rpc_hook
        assert hook is not None
        request = RemotingCommand.request(11, {"topic": "T"}, b"body")
        hook(request)
        assert request.ext_fields["AccessKey"] == "sparkaccess"
        assert verify_signature(request.ext_fields, b"body", "sparksecret", request.ext_fields["Signature"])
    finally:
        access.close()
