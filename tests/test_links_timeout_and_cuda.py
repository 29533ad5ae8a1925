# sed -i '113s/not (wanted or device.type == "cuda")/not wanted/' runtime/links.py
# sed -i '126s/(group or dist.group.WORLD)/dist.group.WORLD/' runtime/links.py
"""Link groups (runtime/links.py): whose timeout they take when the runner has none, and that a
CUDA runner always gets them.

A link group takes the pipeline group's own timeout, not the world's: the existing test only
checks the world group. On CUDA the links are made even where ``link_groups`` was not asked for:
NCCL runs both directions of a pair on one stream without them and deadlocks 1F1B (links.py's
docstring); the GPU is stood in for, as this machine may have none.
"""

from __future__ import annotations

import datetime

import torch

from schedc.problem import Problem
from schedc.runtime import links
from schedc.runtime.launch import run_local


def _timeouts(rank: int, _world: int) -> tuple[float, float]:
    import torch.distributed as dist

    group = dist.new_group([0, 1], timeout=datetime.timedelta(seconds=41))
    cpu = torch.device("cpu")
    return (links._timeout_of(group, cpu, None)["timeout"].total_seconds(),
            links._timeout_of(None, cpu, None)["timeout"].total_seconds())


def test_link_groups_take_their_pipeline_groups_timeout():
    """A pipeline group made with a 41 s timeout in a world of 60 s: its links wait 41 s for a
    peer, as the runner's other waits on that group do (the world's 60 s only without a group)."""
    assert run_local(_timeouts, 2, timeout=90, pg_timeout=60) == [(41.0, 60.0)] * 2


def test_a_cuda_runner_gets_link_groups_even_unasked(monkeypatch):
    made = []
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    monkeypatch.setattr(links, "Links", lambda *args: made.append(args) or "links")
    problem, cuda = Problem(p=2, m=2), torch.device("cuda", 0)
    assert links.make_links(problem, None, 0, 5.0, cuda, wanted=False) == "links"
    assert links.make_links(problem, None, 0, 5.0, torch.device("cpu"), wanted=False) is None
    assert links.make_links(problem, None, 0, 5.0, torch.device("cpu"), wanted=True) == "links"
    assert made == [(problem, None, 0, 5.0, cuda), (problem, None, 0, 5.0, torch.device("cpu"))]
