"""Lines of /proc/self/cgroup that name no CPU quota of this process (solvers/cores.py).

A line with one colon is skipped (it raised ValueError), a cgroup outside the namespace reads
no quota (it read the mount root's as its own), a cpuset line is not the cpu controller, and the
``cpuacct,cpu`` mount name is read as ``cpu,cpuacct`` is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from schedc.solvers.cores import cgroup_cpu_quota


def _tree(tmp_path: Path, files: dict[str, str], cgroup: str) -> tuple[Path, Path]:
    for name, text in files.items():
        path = tmp_path / "fs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "cgroup").write_text(cgroup)
    return tmp_path / "fs", tmp_path / "cgroup"


@pytest.mark.parametrize("files, cgroup, quota", [
    ({"cpu.max": "150000 100000"}, "odd:line\n0::/\n", 1.5),  # one colon: skipped, not a crash
    ({"cpu.max": "50000 100000"}, "0::/../foo\n", None),  # outside the namespace: not even the root's
    ({"cpu,cpuacct/a/cpu.cfs_quota_us": "50000", "cpu,cpuacct/a/cpu.cfs_period_us": "100000"},
     "3:cpuset:/a\n4:cpu,cpuacct:/b\n", None),  # cpuset is no cpu controller: its path is not ours
    ({"cpuacct,cpu/cpu.cfs_quota_us": "200000", "cpuacct,cpu/cpu.cfs_period_us": "100000"},
     "4:cpu,cpuacct:/\n", 2.0),  # mounted under the other order of the two names
])
def test_lines_that_name_no_quota_of_this_process_are_skipped(tmp_path, files, cgroup, quota):
    root, proc = _tree(tmp_path, files, cgroup)
    assert cgroup_cpu_quota(root, proc) == quota
