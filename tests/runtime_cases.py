"""Shared by the runtime tests that spawn gloo ranks over a few textbook plans."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime.launch import run_local


def run_baseline_cases(worker: Callable, cases: Mapping[str, tuple[str, Problem]], world: int = 2) -> list:
    """``worker(rank, world, plans)`` on ``world`` gloo ranks, plans = {case: baseline plan}."""
    plans = {case: baseline_plan(name, problem) for case, (name, problem) in cases.items()}
    return run_local(worker, world, plans, timeout=180)
