"""The default worker count sees a container's CPU quota as well as the CPU affinity."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedc.solvers import cores
from schedc.solvers.cores import cgroup_cpu_quota, usable_cores


def _tree(tmp_path: Path, files: dict[str, str], cgroup: str) -> tuple[Path, Path]:
    for name, text in files.items():
        path = tmp_path / "fs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "cgroup").write_text(cgroup)
    return tmp_path / "fs", tmp_path / "cgroup"


@pytest.mark.parametrize("files, cgroup, quota", [
    ({"cpu.max": "150000 100000\n"}, "0::/\n", 1.5),  # v2, the container's own cgroup is the root
    ({"cpu.max": "max 100000\n"}, "0::/\n", None),
    ({"cpu.max": "max 100000", "a/b/cpu.max": "300000 100000", "a/cpu.max": "200000 100000"},
     "0::/a/b\n", 2.0),  # the tightest of the cgroup and its ancestors
    ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, "4:cpu,cpuacct:/\n", None),
    ({"cpu,cpuacct/docker/x/cpu.cfs_quota_us": "50000", "cpu,cpuacct/docker/x/cpu.cfs_period_us": "100000"},
     "3:memory:/docker/x\n4:cpu,cpuacct:/docker/x\n", 0.5),  # v1 under the host's path
    ({"cpu/cpu.cfs_quota_us": "400000", "cpu/cpu.cfs_period_us": "100000"},
     "4:cpu,cpuacct:/docker/x\n", 4.0),  # v1: the host's path is not there, the mount's root is
    ({"cpu.max": "garbage"}, "0::/\nnonsense\n", None),
    ({"foo/cpu.max": "50000 100000"}, "0::/../foo\n", None),  # outside the namespace: not its cgroup
    ({"cpu,cpuacct,cpuset/cpu.cfs_quota_us": "300000", "cpu,cpuacct,cpuset/cpu.cfs_period_us": "100000"},
     "4:cpu,cpuacct,cpuset:/\n", 3.0),  # co-mounted v1 controllers
    ({}, "", None),
    ({"cpu.max": "150000 100000"}, "odd:line\n0::/\n", 1.5),  # one colon: skipped, not a crash
    ({"cpu.max": "50000 100000"}, "0::/../foo\n", None),  # outside the namespace: not even the root's
    ({"cpu,cpuacct/a/cpu.cfs_quota_us": "50000", "cpu,cpuacct/a/cpu.cfs_period_us": "100000"},
     "3:cpuset:/a\n4:cpu,cpuacct:/b\n", None),  # cpuset is no cpu controller: its path is not ours
    ({"cpuacct,cpu/cpu.cfs_quota_us": "200000", "cpuacct,cpu/cpu.cfs_period_us": "100000"},
     "4:cpu,cpuacct:/\n", 2.0),  # mounted under the other order of the two names
])
def test_the_cgroup_quota_is_read_from_v1_and_v2_files(tmp_path, files, cgroup, quota):
    root, proc = _tree(tmp_path, files, cgroup)
    assert cgroup_cpu_quota(root, proc) == quota


def test_no_proc_file_means_no_quota(tmp_path):
    assert cgroup_cpu_quota(tmp_path, tmp_path / "missing") is None


def test_a_cgroup_name_of_any_bytes_is_read(tmp_path):
    (tmp_path / "caf\udce9").mkdir()
    (tmp_path / "caf\udce9" / "cpu.max").write_bytes(b"100000 100000")
    (tmp_path / "cgroup").write_bytes(b"0::/caf\xe9\n")
    assert cgroup_cpu_quota(tmp_path, tmp_path / "cgroup") == 1.0


# 1.2, 2.5 and 3.01 round up where round() would not (2.5 to 2: banker's rounding)
@pytest.mark.parametrize("quota, cores_used", [(None, 4), (1.5, 2), (0.2, 1), (16.0, 4),
                                               (1.2, 2), (2.5, 3), (3.01, 4)])
def test_usable_cores_is_the_smaller_of_affinity_and_quota_rounded_up(monkeypatch, quota, cores_used):
    monkeypatch.setattr(cores, "_affinity", lambda: 4)
    monkeypatch.setattr(cores, "cgroup_cpu_quota", lambda: quota)
    assert usable_cores() == cores_used


def test_on_this_machine_the_count_is_within_the_affinity():
    assert 1 <= usable_cores() <= cores._affinity()
