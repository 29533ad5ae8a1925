"""runtime/launch.py: local gloo ranks forked from the fork server behave as spawned ones did (the
caller's environment at the launch, results in rank order, a failing, dying or hanging rank named)."""

from __future__ import annotations

import os
import time

import pytest

from schedc.runtime.launch import run_local


def _env_and_rank(rank: int, world: int, name: str) -> tuple[int, int, str | None]:
    import torch.distributed as dist

    return rank, dist.get_world_size(), os.environ.get(name)


def _fails_on_one(rank: int, world: int) -> int:
    if rank == 1:
        raise ValueError("rank one's own error")
    return rank


def _dies_on_one(rank: int, world: int) -> int:
    if rank == 1:
        os._exit(3)
    return rank


def _hangs_on_one(rank: int, world: int) -> int:
    if rank == 1:
        time.sleep(60)
    return rank


def test_ranks_see_the_callers_environment_as_it_is_at_each_launch(monkeypatch):
    """The fork server keeps the environment it started with; each rank takes the caller's."""
    run_local(_env_and_rank, 2, "SCHEDC_LAUNCH_TEST")  # the server runs from here on
    monkeypatch.setenv("SCHEDC_LAUNCH_TEST", "set after the server started")
    assert run_local(_env_and_rank, 3, "SCHEDC_LAUNCH_TEST") == \
        [(r, 3, "set after the server started") for r in range(3)]
    monkeypatch.delenv("SCHEDC_LAUNCH_TEST")
    assert run_local(_env_and_rank, 2, "SCHEDC_LAUNCH_TEST") == [(0, 2, None), (1, 2, None)]


def test_a_rank_that_raises_is_named_with_its_error():
    with pytest.raises(RuntimeError, match="rank 1 failed: ValueError: rank one's own error"):
        run_local(_fails_on_one, 2)


def test_a_rank_that_dies_is_named_with_its_exit_code():
    with pytest.raises(RuntimeError, match=r"rank 1 died \(exit code 3\)"):
        run_local(_dies_on_one, 2)


def test_a_rank_that_hangs_is_killed_at_the_timeout_and_named():
    t0 = time.perf_counter()
    with pytest.raises(TimeoutError, match=r"ranks \[1\] did not finish within 2 s"):
        run_local(_hangs_on_one, 2, timeout=2)
    assert time.perf_counter() - t0 < 30  # killed, not waited for
