"""Listener answers: the enum members, their RocketMQ names as strings, None/True/False; nothing else."""

from __future__ import annotations

import pytest

from orbitmq.client.results import (
    ConsumeOrderlyStatus,
    ConsumeStatus,
    concurrently_status,
    orderly_status,
)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, ConsumeStatus.CONSUME_SUCCESS),
        (True, ConsumeStatus.CONSUME_SUCCESS),
        ("CONSUME_SUCCESS", ConsumeStatus.CONSUME_SUCCESS),
        (ConsumeStatus.CONSUME_SUCCESS, ConsumeStatus.CONSUME_SUCCESS),
        (False, ConsumeStatus.RECONSUME_LATER),
        ("RECONSUME_LATER", ConsumeStatus.RECONSUME_LATER),
        (ConsumeStatus.RECONSUME_LATER, ConsumeStatus.RECONSUME_LATER),
        ("consume_success", None),
        (0, None),
        ("SUCCESS", None),
    ],
)
def test_concurrent_answers(answer: object, expected: ConsumeStatus | None) -> None:
    assert concurrently_status(answer) is expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, ConsumeOrderlyStatus.SUCCESS),
        ("SUCCESS", ConsumeOrderlyStatus.SUCCESS),
        (False, ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT),
        ("SUSPEND_CURRENT_QUEUE_A_MOMENT", ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT),
        ("CONSUME_SUCCESS", None),
    ],
)
def test_orderly_answers(answer: object, expected: ConsumeOrderlyStatus | None) -> None:
    assert orderly_status(answer) is expected
