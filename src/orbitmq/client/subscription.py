"""Subscriptions: tag expressions (`*`, `a || b`) parsed as RocketMQ's FilterAPI does (fact sheet 4.3),
and SQL92 selectors (`MessageSelector.by_sql`), which the broker evaluates.

`Subscription` is the client's value; `to_json_dict()` turns it into the heartbeat's SubscriptionData.
Messages are matched twice: the broker filters by tag hash code, the client again by the exact tag
(`Subscription.matches`), because different tags can share a hash code.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.common.errors import ClientError
from orbitmq.message.hashing import java_string_hash
from orbitmq.protocol.bodies_client import SubscriptionFields

SUB_ALL = "*"
EXPRESSION_TAG = "TAG"
EXPRESSION_SQL92 = "SQL92"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """RocketMQ's MessageSelector: `by_tag("a || b")` or `by_sql("a > 5 AND TAGS IN ('x')")`.

    SQL92 selectors are evaluated by the broker (it needs `enablePropertyFilter=true`); the consumer
    asks every broker of the topic at start (CHECK_CLIENT_CONFIG) and fails to start when one refuses.
    """

    expression_type: str
    expression: str

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        return cls(EXPRESSION_SQL92, expression)

    @classmethod
    def by_tag(cls, expression: str | None = SUB_ALL) -> MessageSelector:
        return cls(EXPRESSION_TAG, expression or SUB_ALL)


def subscription_of(
    topic: str,
    expression: str | MessageSelector | None,
    *,
    sub_version: int,
    expression_type: str | None = None,
) -> Subscription:
    """A consumer's subscribe() argument (a tag expression, or a MessageSelector) as a Subscription."""
    if isinstance(expression, MessageSelector):
        if expression_type is not None and expression_type != expression.expression_type:
            raise ClientError("give the expression type once: in the MessageSelector or as expression_type")
        return parse_subscription(
            topic, expression.expression, sub_version=sub_version, expression_type=expression.expression_type
        )
    return parse_subscription(
        topic, expression, sub_version=sub_version, expression_type=expression_type or EXPRESSION_TAG
    )


@dataclass(slots=True)
class Subscription(SubscriptionFields):
    """A consumer's subscription; `to_json_dict()` is the heartbeat's SubscriptionData."""

    @property
    def is_all(self) -> bool:
        return self.sub_string == SUB_ALL

    def matches(self, tags: str | None) -> bool:
        """The client-side re-check of a pulled message's tag."""
        if self.expression_type != EXPRESSION_TAG or self.is_all:
            return True
        return tags is not None and tags in self.tags_set


def parse_subscription(
    topic: str, expression: str | None, *, sub_version: int = 0, expression_type: str = EXPRESSION_TAG
) -> Subscription:
    """`None`, empty or `*` subscribe every tag; otherwise tags separated by `||`."""
    if expression_type == EXPRESSION_SQL92:
        if not expression or not expression.strip():
            raise ClientError("an SQL92 subscription needs an expression")
        # The broker compiles and evaluates it; its CHECK_CLIENT_CONFIG answer names any syntax error.
        return Subscription(topic, expression, sub_version=sub_version, expression_type=EXPRESSION_SQL92)
    if expression_type != EXPRESSION_TAG:
        raise ClientError(f"unknown expression type {expression_type!r} (TAG or SQL92)")
    if expression is None or not expression.strip() or expression.strip() == SUB_ALL:
        return Subscription(topic, SUB_ALL, sub_version=sub_version)
    tags: list[str] = []
    for part in expression.split("||"):
        tag = part.strip()
        if tag and tag not in tags:
            tags.append(tag)
    if not tags:
        raise ClientError(f"subscription expression {expression!r} has no tag")
    return Subscription(
        topic,
        expression,
        tags_set=tags,
        code_set=sorted({java_string_hash(t) for t in tags}),
        sub_version=sub_version,
    )
