"""Run a function on a few local gloo ranks: for tests, benchmarks and latency profiling.

The ranks are forked from multiprocessing's fork server, a fresh process that imported torch once
(``_context``): forking the caller instead would copy its threads, and torch's with them, which do
not survive a fork. Each rank joins a gloo group through a file store in a fresh temporary folder (a
free TCP port found first could be taken by another process before gloo binds it), runs
``fn(rank, world_size, *args)`` and reports its result or its error. The whole run is bounded by
``timeout``: a rank that hangs is killed and the run fails, naming it.
"""

from __future__ import annotations

import datetime
import os
import queue
import socket
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


def _context() -> Any:
    """The fork server where the platform has one: each rank a spawned process would start imports
    torch again, seconds a rank with every rank at once on a few cores (a 4-rank launch took 6 s
    here, and 0.13 s from the fork server once it had started). Elsewhere (Windows), spawn."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)  # no effect once the server runs: it keeps what it loaded
    return ctx


def _entry(rank: int, world: int, store: str, fn: Callable, args: tuple, results: Any,
           threads: int, pg_timeout: float, env: dict[str, str]) -> None:
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
    os._exit(0)  # skip process-group teardown: a peer may have left on purpose (timeout tests)


def run_local(fn: Callable, world_size: int, *args: Any, timeout: float = 120.0, threads: int = 1,
              pg_timeout: float = 60.0) -> list[Any]:
    """``[fn(rank, world_size, *args) for rank]`` over ``world_size`` gloo processes on this machine."""
    with tempfile.TemporaryDirectory(prefix="schedc-gloo-") as folder:
        return _run(fn, world_size, args, os.path.join(folder, "store"), timeout, threads, pg_timeout)


def _run(fn: Callable, world_size: int, args: tuple, store: str, timeout: float, threads: int,
         pg_timeout: float) -> list[Any]:
    ctx = _context()
    results = ctx.Queue()
    env = dict(os.environ)
    procs = [ctx.Process(target=_entry, daemon=True,
                         args=(r, world_size, store, fn, args, results, threads, pg_timeout, env))
             for r in range(world_size)]
    for proc in procs:
        proc.start()
    out: dict[int, tuple[bool, Any]] = {}
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=timeout)
    try:
        while len(out) < world_size:
            left = (deadline - datetime.datetime.now()).total_seconds()
            try:
                rank, ok, value = results.get(timeout=max(0.1, min(left, 1.0)))
                out[rank] = (ok, value)
            except queue.Empty:
                if left <= 0:
                    missing = sorted(set(range(world_size)) - set(out))
                    raise TimeoutError(f"ranks {missing} did not finish within {timeout:g} s") from None
                dead = [r for r, p in enumerate(procs) if not p.is_alive() and p.exitcode and r not in out]
                if dead:
                    raise RuntimeError(f"rank {dead[0]} died (exit code {procs[dead[0]].exitcode})") from None
    finally:  # every rank reported: they are exiting; a death or a hang: the others wait on it
        for proc in procs:
            proc.join(timeout=5 if len(out) == world_size else 0)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
    failed = [(r, v) for r, (ok, v) in sorted(out.items()) if not ok]
    if failed:
        raise RuntimeError(f"rank {failed[0][0]} failed: {failed[0][1]}")
    return [out[r][1] for r in range(world_size)]
