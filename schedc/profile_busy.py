"""``schedc profile``'s notes on a busy machine: times and latencies measured while other work
holds the cores come out far larger than the run will see, and the problem file would keep them."""

from __future__ import annotations

import os


def busy_note(threads: int, load: float | None, cores: int) -> str | None:
    """A warning when other work keeps every core busy and torch runs several threads: they then
    wait on each other, and a 64-wide Linear+GELU layer timed 30 ms a forward against 0.17 ms with
    one thread (load 4 on 2 cores), numbers ``profile`` would write into the problem file. The load
    average counts the whole machine's runnable threads, so ``cores`` is the machine's count
    (``os.cpu_count``), not this process's share of it (``solvers.cores``). Due where the idle cores
    are fewer than the threads, with half a core for an idle machine's own load: at the cores' load
    only, a load of 1.9 on 2 cores timed a transformer 90 times slower than one thread, unnoted."""
    if threads < 2 or load is None or load <= cores - threads + 0.5:
        return None
    return (f"this machine is busy (load average {load:.1f} on {cores} cores, fewer idle than torch's "
            f"{threads} threads): they may then time far slower than they run; --threads 1 times on one")


def p2p_busy_note(load: float | None, cores: int) -> str | None:
    """The latency is a ping-pong between two processes: where fewer than two cores are idle they
    wait for one, and a 4 KiB boundary timed 2-4 ms one way against 50 us (load 2 to 4.5 on 2 cores,
    ``--threads 1`` too), a latency that would change the plan the solver picks. On one core the two
    share it anyway: said there only under other load (an idle machine was told it was busy)."""
    if load is None or load <= max(cores - 2, 0) + 0.5:
        return None
    return (f"this machine is busy (load average {load:.1f} on {cores} cores): the P2P latency is timed "
            "between two processes, which may wait for a core and time it milliseconds too large; "
            "--comm T gives it instead")


def load_average() -> float | None:
    """The last minute's load average, or None where the system has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average (Windows)
        return None
