"""Settings for the whole suite.

Hypothesis's default 200 ms deadline per example is a timing assertion: on a loaded 2-core box a
property test failed with DeadlineExceeded, not with a wrong answer. Properties here assert behaviour;
speed is measured in bench/, so the deadline is off for every run.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("orbitmq", deadline=None)
settings.load_profile("orbitmq")
