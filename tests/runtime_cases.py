"""Shared by the runtime tests that launch gloo ranks over a few textbook plans."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping

import torch
from torch import nn
from torch.nn import functional

from schedc.baselines import baseline_plan
from schedc.problem import Problem
from schedc.runtime.launch import run_local


def run_baseline_cases(worker: Callable, cases: Mapping[str, tuple[str, Problem]], world: int = 2) -> list:
    """``worker(rank, world, plans)`` on ``world`` gloo ranks, plans = {case: baseline plan}."""
    plans = {case: baseline_plan(name, problem) for case, (name, problem) in cases.items()}
    return run_local(worker, world, plans, timeout=180)


WIDTH = 8
"""Width of the tiny models the one-rank runtime tests compare against the unpipelined one."""


def reference_grads(layers: list[nn.Module], x: torch.Tensor, y: torch.Tensor, m: int) -> list[torch.Tensor]:
    """Gradients of the unpipelined model: the mean of the microbatches' mean losses."""
    ref = copy.deepcopy(layers)
    for xs, ys in zip(x.chunk(m), y.chunk(m), strict=True):
        (functional.mse_loss(nn.Sequential(*ref)(xs), ys) / m).backward()
    return [p.grad for layer in ref for p in layer.parameters()]


def grads_of(layers: list[nn.Module]) -> list[torch.Tensor | None]:
    return [p.grad for layer in layers for p in layer.parameters()]


def batch(m: int = 2, rows: int = 4) -> tuple[torch.Tensor, torch.Tensor]:
    """A seeded (input, target) batch of m microbatches of ``rows`` rows."""
    torch.manual_seed(1)
    return torch.randn(m * rows, WIDTH), torch.randn(m * rows, WIDTH)
