"""How many cores this process can keep busy: the default worker count, and what the CPU-time
stall clock divides by.

Two limits apply, and the smaller wins: the CPU affinity (as ``taskset`` or a cpuset sets it) and
a cgroup CPU quota (``docker --cpus 2``, a Kubernetes CPU limit), which leaves the affinity at
every host core. More CP-SAT workers than the quota allows share its time slices and each gets
less done: on 2 cores, eight workers did worse than two (``benchmarks/SOLVER_NOTES.md``).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def usable_cores() -> int:
    """The smaller of the CPU affinity and the cgroup CPU quota (rounded up), at least 1."""
    quota = cgroup_cpu_quota()
    return max(1, min(_affinity(), math.ceil(quota) if quota is not None else math.inf))


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def cgroup_cpu_quota(root: Path = CGROUP_ROOT, proc_cgroup: Path = Path("/proc/self/cgroup")) -> float | None:
    """Cores' worth of CPU time the process's cgroups allow (the tightest of its own cgroup and
    its ancestors, v2 or v1), or None where none is set or nothing can be read."""
    lines = _read(proc_cgroup).splitlines()
    quotas = [q for line in lines for q in _quotas(root, line)]
    return min(quotas, default=None)


def _quotas(root: Path, line: str) -> list[float]:
    """The quotas set on the cgroup that one /proc/self/cgroup line names and on its ancestors.

    A container often sees its own cgroup as the mount's root while the line names the host's
    path, so the mount's root is read too. Mount points are the usual ones (/sys/fs/cgroup and,
    for v1, its cpu folders); /proc/self/mountinfo is not parsed."""
    if line.count(":") < 2:
        return []
    _, controllers, path = line.split(":", 2)
    parts = [p for p in path.split("/") if p]
    if ".." in parts:  # outside the namespace's root: no folder under the mount is its cgroup
        return []
    if controllers == "":  # v2: "0::/path", files under the unified mount
        folders, read = [root], _v2_quota
    elif "cpu" in controllers.split(","):  # v1: "4:cpu,cpuacct:/path", mounted by one of these names
        names = dict.fromkeys(("cpu", controllers, "cpu,cpuacct", "cpuacct,cpu"))
        folders, read = [root / name for name in names], _v1_quota
    else:
        return []
    candidates = {folder.joinpath(*parts[:k]) for folder in folders for k in range(len(parts) + 1)}
    return [q for folder in sorted(candidates) if (q := read(folder)) is not None]


def _v2_quota(folder: Path) -> float | None:
    """cpu.max holds "QUOTA PERIOD" in microseconds, or "max PERIOD" for no limit."""
    fields = _read(folder / "cpu.max").split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _v1_quota(folder: Path) -> float | None:
    """cpu.cfs_quota_us is -1 for no limit."""
    return _ratio(_read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us"))


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _read(path: Path) -> str:
    """The file's text, or "" where it cannot be read (a cgroup's name may hold any byte)."""
    try:
        return path.read_text(errors="surrogateescape").strip()
    except (OSError, ValueError):
        return ""
