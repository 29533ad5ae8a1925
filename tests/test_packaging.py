"""What a packaged or checked-out schedc gives its users beyond the editable install CI runs: the
sdist holds the whole suite and what the README points at, and Python started in a checkout finds
``schedc.solvers`` and ``schedc.runtime`` without an install's mapping."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout")
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_python_started_in_a_checkout_finds_the_mapped_subpackages() -> None:
    """-S: no site-packages, so no editable install's finder, as after ``pip install .`` (where the
    checkout's schedc/, first on the path, had no solvers/ or runtime/ and hid the installed copy)."""
    code = ("import importlib.util as u; "
            "print(u.find_spec('schedc.solvers').origin); print(u.find_spec('schedc.runtime').origin)")
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(ROOT / name / "__init__.py") for name in ("solvers", "runtime")]


def test_the_sdist_holds_the_whole_suite_the_examples_and_the_licence(tmp_path: Path) -> None:
    """setuptools' default took tests/test*.py only (none of their helpers: 65 test files failed to
    import), and no examples, picture, benchmarks or LICENSE."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip("pyproject.toml's licence expression needs setuptools 77")
    source = tmp_path / "src"
    wanted = [f for f in _tracked() if f.split("/")[0] in {"tests", "examples", "docs", "benchmarks"}]
    for name in [*_tracked(), "LICENSE", "MANIFEST.in"]:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    code = f"from setuptools import build_meta as b; print(b.build_sdist({str(tmp_path)!r}))"
    out = subprocess.run([sys.executable, "-c", code], cwd=source, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    with tarfile.open(tmp_path / out.stdout.split()[-1]) as sdist:
        held = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {"LICENSE", "tests/conftest.py", "tests/cli_helpers.py", "docs/worked-example.png"} <= held
    assert set(wanted) <= held and not any("__pycache__" in name for name in held)


def test_a_second_checkout_imports_its_own_subpackages(tmp_path: Path) -> None:
    """With an editable install of another checkout, its finder mapped schedc.solvers there whatever
    schedc was loaded: a clone's own schedc ran the installed checkout's solvers and runtime."""
    for name in ("schedc", "solvers", "runtime"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import importlib.util as u, schedc, schedc.solvers; print(schedc.__file__); "
            "print(schedc.solvers.__file__); print(u.find_spec('schedc.runtime').origin)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    names = ("schedc", "solvers", "runtime")
    assert out.stdout.split() == [str(tmp_path / name / "__init__.py") for name in names]
