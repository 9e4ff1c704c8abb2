"""A serving process tunes its GC once started (transport/loop.py): the startup heap is frozen and the
young generation is collected less often."""

from __future__ import annotations

import gc

from orbitmq.transport.loop import SERVING_GC_THRESHOLD, tune_gc_for_serving


def test_tune_gc_for_serving_freezes_and_raises_the_young_threshold() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, before[1], before[2])
        kept = [object() for _ in range(10)]  # something allocated "at startup"
        tune_gc_for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (SERVING_GC_THRESHOLD, before[1], before[2])
        gc.set_threshold(SERVING_GC_THRESHOLD * 2, before[1], before[2])
        tune_gc_for_serving()  # never lowers a higher threshold someone set
        assert gc.get_threshold()[0] == SERVING_GC_THRESHOLD * 2
        del kept
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
