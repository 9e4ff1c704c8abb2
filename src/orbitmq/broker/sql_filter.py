"""The broker's SQL92 property filter (RocketMQ's ExpressionMessageFilter, without the bloom filter).

With enablePropertyFilter=true a SQL92 subscription gets only the pulled records whose properties make
its selector TRUE (compiled once per subscription version); otherwise it is refused at
CHECK_CLIENT_CONFIG and its pulls answered SYSTEM_ERROR, as RocketMQ does. A selector that does not
compile is refused with SUBSCRIPTION_PARSE_FAILED.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from orbitmq.broker.client_registry import Subscription
from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.processors.base import BadRequest
from orbitmq.common.errors import RemoteProtocolError
from orbitmq.message.record_decode import decode_record
from orbitmq.protocol.codes import ResponseCode
from orbitmq.store.results import GetMessageResult, GetMessageStatus

if TYPE_CHECKING:
    from orbitmq.protocol.sql92 import Selector

log = logging.getLogger("orbitmq.broker")

SQL92 = "SQL92"


def is_tag_type(expression_type: str | None) -> bool:
    """RocketMQ's ExpressionType.isTagType: no type, empty, or TAG."""
    return not expression_type or expression_type == "TAG"


def check_filter_supported(config: BrokerConfig, expression_type: str | None) -> None:
    if not is_tag_type(expression_type) and not config.enable_property_filter:
        raise BadRequest(
            ResponseCode.SYSTEM_ERROR,
            f"The broker does not support consumer to filter message by {expression_type}"
            " (set enablePropertyFilter=true in broker.conf)",
        )


def compile_expression(config: BrokerConfig, expression_type: str, expression: str | None) -> Selector:
    """Compile a non-TAG expression or raise BadRequest(SUBSCRIPTION_PARSE_FAILED)."""
    if expression_type != SQL92:
        raise BadRequest(
            ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"unknown filter expression type {expression_type!r}"
        )
    # Imported on the first SQL92 subscription, not at start-up (`orbitmq serve` serves sooner).
    from orbitmq.protocol.sql92 import SqlParseError

    try:
        return _compiled(expression or "", config.filter_expression_max_depth)
    except SqlParseError as exc:
        raise BadRequest(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)) from None


@functools.lru_cache(maxsize=256)
def _compiled(expression: str, max_depth: int) -> Selector:
    """Selectors are immutable: a pull that carries its subscription (FLAG_SUBSCRIPTION) reuses the
    compiled one instead of parsing again (RocketMQ's SelectorParser keeps a cache of 100)."""
    from orbitmq.protocol.sql92 import compile_selector

    return compile_selector(expression, max_depth=max_depth)


def selector_for(config: BrokerConfig, sub: Subscription | None) -> Selector | None:
    """The compiled selector of a SQL92 subscription (None for TAG ones), cached on the subscription."""
    if sub is None or is_tag_type(sub.expression_type) or sub.class_filter_mode:
        return None
    check_filter_supported(config, sub.expression_type)
    if sub.selector is None or sub.selector.expression != sub.sub_string:
        sub.selector = compile_expression(config, sub.expression_type, sub.sub_string)
    return sub.selector


def apply_selector(result: GetMessageResult, selector: Selector) -> GetMessageResult:
    """Keep the records whose properties match; when none is left the pull is NO_MATCHED_MESSAGE (the
    consumer pulls again right away from the next offset, which the store already moved past them)."""
    if result.status is not GetMessageStatus.FOUND:
        return result
    from orbitmq.protocol.sql92 import SqlEvalError  # loaded already: `selector` was compiled by it

    buffers: list[memoryview] = []
    offsets: list[int] = []
    total = 0
    for i, view in enumerate(result.buffers):
        try:
            props = decode_record(view, decompress=False).properties
            matched = selector.root.evaluate(props) is True
        except SqlEvalError as exc:
            # RocketMQ logs the failed evaluation and skips the message.
            log.debug("SQL92 filter %r failed on a message: %s", selector.expression, exc)
            matched = False
        except (RemoteProtocolError, RecursionError):
            matched = False
        if matched:
            buffers.append(view)
            if i < len(result.queue_offsets):
                offsets.append(result.queue_offsets[i])
            total += len(view)
    if len(buffers) == len(result.buffers):
        return result
    status = GetMessageStatus.FOUND if buffers else GetMessageStatus.NO_MATCHED_MESSAGE
    return replace(
        result,
        status=status,
        buffers=buffers,
        message_count=len(buffers),
        buffer_total_size=total,
        queue_offsets=offsets,
    )
