# sed -i '81s/statistics.median(trips/statistics.mean(trips/' runtime/message_costs.py
# sed -i '152s/"repeats", 1)/"repeats", 0)/' runtime/message_costs.py
"""The numbers ``measure_p2p`` and ``measure_message_calls`` make of what their ranks time
(runtime/message_costs.py), checked without processes: the ranks' results are stood in for, or the
clock is. ``profile`` turns these into the problem's comm and the stage costs, so a slip here
writes a wrong problem file without any error.

The one-way latency is half the round trip, both ranks' calls count, sends and receives are not
swapped, the 2 warm-up trips are left out of 5 per repeat, and ``repeats=True`` is refused.
"""

from __future__ import annotations

import types

import pytest
import torch

from schedc.errors import ProblemError
from schedc.runtime import message_costs
from schedc.runtime.message_costs import MessageCalls, measure_message_calls, measure_p2p
from schedc.runtime.shapes import TensorMeta

META = TensorMeta((4, 8), torch.float32)


def test_the_one_way_latency_is_half_rank_0s_round_trip(monkeypatch):
    monkeypatch.setattr(message_costs, "run_local", lambda *args, **kwargs: [0.5, 0.7])
    assert measure_p2p(META, repeats=2) == 0.25


def test_message_calls_are_the_medians_over_both_ranks(monkeypatch):
    """Rank 0 timed sends 1, 2, 3 and receives 10, 20, 30; rank 1 sends 5, 6, 7 and receives 50,
    60, 70: the medians of the six are 4 and 40."""
    parts = [([1.0, 2.0, 3.0], [10.0, 20.0, 30.0]), ([5.0, 6.0, 7.0], [50.0, 60.0, 70.0])]
    monkeypatch.setattr(message_costs, "run_local", lambda *args, **kwargs: parts)
    assert measure_message_calls(META, repeats=3) == MessageCalls(send=4.0, recv=40.0)


def test_a_round_trip_is_the_median_of_5_per_repeat_after_2_warm_up_trips(monkeypatch):
    """A rank beyond the pair (rank 2) times empty trips: the fake clock makes the first two 100 s
    (warm-up) and the next five 1, 1, 1, 1 and 11 s, so the median is 1 s (one slow trip on a noisy
    machine moves the mean to 3 s)."""
    durations = iter([100.0, 100.0, 1.0, 1.0, 1.0, 1.0, 11.0, 1000.0, 1000.0])
    ticks: list[float] = []

    def clock() -> float:  # start, end, start, end...: each trip lasts its duration
        if len(ticks) % 2 == 0:
            ticks.append(ticks[-1] if ticks else 0.0)
        else:
            ticks.append(ticks[-1] + next(durations))
        return ticks[-1]

    monkeypatch.setattr(message_costs, "time", types.SimpleNamespace(perf_counter=clock))
    assert message_costs._pingpong(2, 3, META, 1) == 1.0


@pytest.mark.parametrize("measure", [measure_p2p, measure_message_calls])
@pytest.mark.parametrize("repeats", [True, 1.0, 0])
def test_repeats_must_be_a_whole_count(measure, repeats):
    """repeats=0 left measure_message_calls no round to take a median of: a StatisticsError from a
    child process instead of the one-line error."""
    with pytest.raises(ProblemError, match="repeats must be an integer >= 1"):
        measure(META, repeats=repeats)
