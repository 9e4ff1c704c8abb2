"""Tag expressions (FilterAPI rules, fact sheet 4.3) and the client-side tag re-check."""

from __future__ import annotations

import pytest

from orbitmq.client.subscription import parse_subscription
from orbitmq.common.errors import ClientError
from orbitmq.protocol.bodies import SubscriptionData


@pytest.mark.parametrize("expression", [None, "", "  ", "*", " * "])
def test_everything_expressions(expression: str | None) -> None:
    sub = parse_subscription("T", expression)
    assert sub.sub_string == "*" and sub.tags_set == [] and sub.code_set == []
    assert sub.matches(None) and sub.matches("anything")


def test_or_expression_trims_and_skips_empties() -> None:
    sub = parse_subscription("T", "TagA || TagB ||  || TagA", sub_version=42)
    assert sub.tags_set == ["TagA", "TagB"]
    # Java String.hashCode("TagA") = 2598919, ("TagB") = 2598920
    assert sorted(sub.code_set) == [2598919, 2598920]
    assert sub.sub_version == 42
    assert sub.matches("TagB") and not sub.matches("TagC") and not sub.matches(None)


def test_expression_without_tags_is_refused() -> None:
    with pytest.raises(ClientError):
        parse_subscription("T", "||")
    with pytest.raises(ClientError):
        parse_subscription("T", "a", expression_type="XPATH")


def test_body_matches_the_protocol_subscription_data() -> None:
    sub = parse_subscription("T", "a || b", sub_version=7)
    data = SubscriptionData.from_obj(sub.to_json_dict())
    assert (data.topic, data.sub_string, sorted(data.tags_set), sorted(data.code_set), data.sub_version) == (
        "T",
        "a || b",
        ["a", "b"],
        sorted(sub.code_set),
        7,
    )
