"""broker.conf's ACL keys: aclFile beside broker.conf, the broker's own credentials never shown."""

from __future__ import annotations

from pathlib import Path

from orbitmq.broker.config import BrokerConfig


def test_acl_file_resolved_beside_broker_conf_and_secret_masked(tmp_path: Path) -> None:
    conf = tmp_path / "conf" / "broker.conf"
    conf.parent.mkdir()
    conf.write_text("aclEnable=true\naccessKey=brokeraccess\nsecretKey=brokersecret\n")
    config = BrokerConfig.from_file(conf)
    assert config.acl_enable
    assert config.acl_file == str((tmp_path / "conf" / "plain_acl.yml").resolve())
    shown = config.properties(mask_secrets=True)
    assert shown["accessKey"] == "brokeraccess"
    assert shown["secretKey"] == "******"
    assert config.properties()["secretKey"] == "brokersecret"
    conf.write_text("aclFile=/etc/orbitmq/acl.yml\n")
    assert BrokerConfig.from_file(conf).acl_file == "/etc/orbitmq/acl.yml"
