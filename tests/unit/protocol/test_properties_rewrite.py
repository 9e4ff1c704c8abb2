"""Writing accepted UPDATE_BROKER_CONFIG values back into a broker.conf: lines replaced where they
stand, comments kept, new keys appended, and no value can inject a line of its own."""

from __future__ import annotations

from orbitmq.protocol.properties_text import decode_properties_text, rewrite_properties_text

ORIGINAL = (
    "# broker-a, production\n"
    "listenPort = 10911\n"
    "! old-style comment\n"
    "namesrvAddr=a:1;\\\n"
    "    b:2\n"
    "flushDiskType=ASYNC_FLUSH\n"
    "\n"
    "listenPort=10911\n"
)


def test_replaces_in_place_and_keeps_everything_else() -> None:
    text = rewrite_properties_text(ORIGINAL, {"listenPort": "10921", "namesrvAddr": "c:3", "newKey": "v"})
    assert text == (
        "# broker-a, production\n"
        "listenPort=10921\n"
        "! old-style comment\n"
        "namesrvAddr=c:3\n"
        "flushDiskType=ASYNC_FLUSH\n"
        "\n"
        "listenPort=10921\n"
        "newKey=v\n"
    )


def test_values_cannot_inject_lines_and_round_trip() -> None:
    updates = {"brokerName": "x\nstorePathRootDir=/etc", "odd key": " =:#!\\\t\r\x01é"}
    text = rewrite_properties_text("a=1", updates)
    assert text.count("\n") == 3 and text.startswith("a=1\n")
    assert decode_properties_text(text) == {"a": "1", **updates}
