# sed -i '57s/os\.environ\.clear()/os.environ.copy()/' runtime/launch.py
# sed -i '59s/torch\.set_num_threads(threads)/torch.set_num_threads(1)/' runtime/launch.py
# sed -i '63s/fn(rank, world, \*args)/fn(rank, world - 1, *args)/' runtime/launch.py
# sed -i '120s/failed\[0\]\[0\]/failed[-1][0]/' runtime/launch.py
# sed -i '120s/failed\[0\]\[1\]/failed[-1][1]/' runtime/launch.py
# sed -i '137s/if proc\.is_alive()/if not proc.is_alive()/' runtime/launch.py
"""runtime/launch.py beyond test_runtime_launch.py: the world size and thread count each rank gets, a
variable the caller removed after the fork server started, the first of several failures named at a
timeout, and a hung rank killed (not left running)."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

pytest.importorskip("torch")

from schedc.runtime.launch import run_local


def _world_and_threads(rank: int, world: int) -> tuple[int, int, int]:
    import torch

    return rank, world, torch.get_num_threads()


def _variable(rank: int, world: int, name: str) -> str | None:
    return os.environ.get(name)


def _two_fail_then_one_hangs(rank: int, world: int) -> int:
    """Rank 2 fails at once, rank 1 a while later, rank 0 never finishes."""
    if rank == 2:
        raise ValueError("first, on rank 2")
    time.sleep(3 if rank == 1 else 60)
    raise ValueError("second, on rank 1")


def _hangs_on_one(rank: int, world: int) -> int:
    if rank == 1:
        time.sleep(60)
    return rank


def test_each_rank_gets_the_world_size_and_thread_count_asked_for():
    """``fn(rank, world_size, *args)`` with ``threads`` torch threads: the world passed to fn, or the
    thread count set in the rank, was another number than the caller's."""
    assert run_local(_world_and_threads, 3, threads=2) == [(0, 3, 2), (1, 3, 2), (2, 3, 2)]
    assert run_local(_world_and_threads, 2) == [(0, 2, 1), (1, 2, 1)]  # the default: one thread


def test_a_variable_the_caller_removed_after_the_server_started_is_gone_in_the_ranks(monkeypatch):
    """PATH was set when the fork server started (it is set from this process's start); a rank forked
    from the server that only added the caller's variables to the server's kept PATH after the caller
    removed it."""
    assert "PATH" in os.environ
    run_local(_variable, 2, "PATH")  # the server runs from here on, with PATH in its environment
    monkeypatch.delenv("PATH")
    assert run_local(_variable, 2, "PATH") == [None, None]


def test_a_timeout_names_the_first_of_several_failures_with_its_own_error():
    """Ranks 2 then 1 fail and rank 0 hangs: the timeout names rank 2 with rank 2's error (the first to
    report), not the last failure's rank or error."""
    with pytest.raises(TimeoutError, match=r"^ranks \[0\] did not finish within 9 s; rank 2 failed first: "
                                           r"ValueError: first, on rank 2"):
        run_local(_two_fail_then_one_hangs, 3, timeout=9)


def test_a_rank_that_hangs_is_not_left_running_after_the_timeout():
    """The run fails at its timeout and kills the hung rank: it was left sleeping in the background."""
    before = set(multiprocessing.active_children())
    with pytest.raises(TimeoutError, match=r"ranks \[1\] did not finish within 8 s"):
        run_local(_hangs_on_one, 2, timeout=8)
    assert set(multiprocessing.active_children()) - before == set()

