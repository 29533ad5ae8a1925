"""Benchmark and example scripts loaded as modules, so tests can call their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/<name>.py as module ``name`` (``load_script``)."""
    return load_script(BENCHMARKS / f"{name}.py")


def load_script(path: Path) -> ModuleType:
    """A script as a module named for its file: registered in sys.modules (its dataclasses look their
    module up) and run with its folder on the path (benchmarks import their sibling bench_args)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module
