"""Run a function on a few local gloo ranks: for tests, benchmarks and latency profiling.

On Linux the ranks are forked from multiprocessing's fork server, a fresh process that imported torch
once (``_context``): a spawned rank imports torch again, seconds a rank with every rank at once on a
few cores, and forking the caller would copy its threads, torch's among them, which do not survive a
fork. Forked ranks share what the server fixed when it started: its string-hash seed (spawned ranks,
like torchrun's, each draw their own), and what Python and torch read from the environment at start
(``PYTHONHASHSEED``, ``OMP_NUM_THREADS``); the rest of the environment is the caller's at each
launch. ``spawn=True`` starts fresh interpreters instead, for code whose ranks must agree on orders
that follow string hashing. Each rank joins a gloo group through a file store in a fresh temporary
folder (a free TCP port found first could be taken by another process before gloo binds it), runs
``fn(rank, world_size, *args)`` and reports its result or its error. The run after the ranks start
is bounded by ``timeout`` (the fork server's own start, the first launch's, is not): a rank that
hangs is killed and the run fails, naming it.
"""

from __future__ import annotations

import datetime
import os
import queue
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PRELOAD = ["torch", "torch.distributed", "schedc.runtime"]
"""What the fork server imports before it forks any rank."""


def _context(spawn: bool) -> Any:
    """The fork server on Linux (a 4-rank launch took 6 s spawned here, 0.13 s from the fork server
    once it ran); spawn where asked, and elsewhere: macOS has a fork server, but forking a process
    that loaded its system libraries is unsafe there, and Windows has none."""
    if spawn or not sys.platform.startswith("linux"):
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # no effect once the server runs: it keeps what it loaded
    return ctx


def _entry(rank: int, world: int, store: str, fn: Callable, args: tuple, results: Any,
           threads: int, pg_timeout: float, env: dict[str, str], all_reported: Any) -> None:
    os.environ.clear()  # the caller's environment now, as a spawned rank gets it, not the server's
    os.environ.update(env)
    torch.set_num_threads(threads)
    try:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=pg_timeout))
        results.put((rank, True, fn(rank, world, *args)))
    except BaseException as err:  # reported to the parent, which raises it with the rank
        results.put((rank, False, f"{type(err).__name__}: {err}\n{traceback.format_exc()}"))
    results.close()
    results.join_thread()
    # A rank that exits closes its gloo links, and a peer still in init_process_group fails on that
    # ("connectFullMesh failed ... Connection closed by peer", seen with an fn that sends nothing):
    # so each waits until every rank has reported (the parent kills the rest on a death or a hang).
    all_reported.wait(pg_timeout)
    os._exit(0)  # skip process-group teardown: a peer may have left on purpose (timeout tests)


def run_local(fn: Callable, world_size: int, *args: Any, timeout: float = 120.0, threads: int = 1,
              pg_timeout: float = 60.0, spawn: bool = False) -> list[Any]:
    """``[fn(rank, world_size, *args) for rank]`` over ``world_size`` gloo processes on this machine
    (``spawn``: fresh interpreters, see the module doc)."""
    with tempfile.TemporaryDirectory(prefix="schedc-gloo-") as folder:
        store = os.path.join(folder, "store")
        return _run(fn, world_size, args, store, timeout, threads, pg_timeout, _context(spawn))


def _run(fn: Callable, world_size: int, args: tuple, store: str, timeout: float, threads: int,
         pg_timeout: float, ctx: Any) -> list[Any]:
    results, all_reported = ctx.Queue(), ctx.Event()
    env = dict(os.environ)
    procs = [ctx.Process(target=_entry, daemon=True, args=(r, world_size, store, fn, args, results, threads,
                                                           pg_timeout, env, all_reported))
             for r in range(world_size)]
    out: dict[int, tuple[bool, Any]] = {}
    try:  # a failed start still ends the ranks started before it
        for proc in procs:
            proc.start()
        _collect(procs, results, out, timeout)
        all_reported.set()
    finally:
        _end(procs, reported=len(out) == world_size)
    failed = _failures(out)
    if failed:  # the first to fail, in the order they reported: its peers' errors are its symptoms
        raise RuntimeError(f"rank {failed[0][0]} failed: {failed[0][1]}")
    return [out[r][1] for r in range(world_size)]


def _failures(out: dict[int, tuple[bool, Any]]) -> list[tuple[int, Any]]:
    """(rank, error) of the ranks that failed, in the order they reported (``out`` keeps it)."""
    return [(r, v) for r, (ok, v) in out.items() if not ok]


def _collect(procs: list, results: Any, out: dict[int, tuple[bool, Any]], timeout: float) -> None:
    """Every rank's report into ``out``, or the error that names a rank that died or hung."""
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=timeout)
    while len(out) < len(procs):
        left = (deadline - datetime.datetime.now()).total_seconds()
        try:
            rank, ok, value = results.get(timeout=max(0.1, min(left, 1.0)))
            out[rank] = (ok, value)
        except queue.Empty:
            failed = _failures(out)  # a cause already reported goes with the symptom that ends the run
            first = f"; rank {failed[0][0]} failed first: {failed[0][1]}" if failed else ""
            if left <= 0:
                missing = sorted(set(range(len(procs))) - set(out))
                raise TimeoutError(f"ranks {missing} did not finish within {timeout:g} s{first}") from None
            dead = [r for r, p in enumerate(procs) if not p.is_alive() and p.exitcode and r not in out]
            if dead:
                code = procs[dead[0]].exitcode
                raise RuntimeError(f"rank {dead[0]} died (exit code {code}){first}") from None


def _end(procs: list, reported: bool) -> None:
    """Every rank reported: they are exiting, given 5 s. A death or a hang: the others wait on it in
    vain, and are killed at once."""
    for proc in procs:
        if proc.pid is None:
            continue  # never started
        proc.join(timeout=5 if reported else 0)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5)
