"""Parameters shared between stages (tied weights), kept equal across the ranks that hold them.

A language model often ties its input embedding (stage 0) to its output layer (the last stage).
Once the model is cut into stages each holder has its own copy, so the pipelined gradient of one
copy is only its own stage's part. Megatron keeps an "embedding group" for this; PyTorch's
pipelining leaves it to the user. Here a tie lists ``(stage, parameter name)`` pairs. The copies
are made equal once (the holder of the tie's lowest stage sends its values) and, after every step,
each copy receives the gradients the step gave the other copies: the sum over the copies is the
gradient of the shared weight in the unpipelined model. Equal values and equal gradients then stay
equal under any optimizer that treats them alike.

The sum runs over point-to-point messages in the runner's own group (the lowest holder gathers,
adds in rank order and sends the sum back), so no extra process group is created and ranks that
hold no copy take no part.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral

import torch
import torch.distributed as dist
from torch import nn

from schedc.problem import Problem

from .errors import PlanMismatchError
from .shapes import TensorMeta
from .waits import start, wait

Tie = Sequence[tuple[int, str]]
"""One shared weight: the (stage, parameter name in that stage's module) of each copy."""

TIE_TAG = 1 << 29
"""Above every data tag (``Mailbox._tag``: below 64 m S, and m S is at most 5 million within the
10-million-task limit), below the shape tags."""
_WHAT = ("values", "gradient", "shape", "shape check", "shape verdict")
_SLOTS = len(_WHAT)
_DTYPES = sorted({str(v) for v in vars(torch).values() if isinstance(v, torch.dtype)})
"""Every dtype's name, in one order in every process of one torch version: a dtype as an int."""
_MAX_DIMS = 8


@dataclass(frozen=True)
class _Tie:
    index: int
    copies: tuple[tuple[int, str], ...]
    """Sorted by stage: the first copy's holder is the root."""


def tie_errors(problem: Problem, ties: Sequence[Tie], stages: Mapping[int, nn.Module]) -> list[str]:
    """What is wrong with ``ties`` for this rank's ``stages`` (checked before any communication)."""
    errors = []
    for k, tie in enumerate(ties):
        if not all(_is_copy(c) for c in tie):
            errors.append(f"tie {k} must be a list of (stage, parameter name) pairs, got {tie!r:.80}")
            continue
        held = [s for s, _ in tie]
        if len(set(held)) != len(held) or len(held) < 2:
            errors.append(f"tie {k} needs two or more distinct stages, got {held} (a Parameter shared "
                          "in Python between stages: stage_parameters(layers, problem, param) lists them)")
        for s, name in tie:
            if not 0 <= s < problem.num_stages:
                errors.append(f"tie {k} names stage {s}, outside the plan's {problem.num_stages} stages")
            elif s in stages and name not in dict(stages[s].named_parameters()):
                errors.append(f"tie {k}: stage {s} has no parameter {name!r}")
        if all(s in stages for s, _ in tie):  # no other holder: nobody waits for a verdict
            errors += _local_mismatch(k, tie, stages)
    return errors + _shared_copies(ties)


def _shared_copies(ties: Sequence[Tie]) -> list[str]:
    """A copy listed in two ties: summed tie by tie, the second re-summed what the first had made
    and never reached the first's other copies, so the copies drifted apart silently."""
    first: dict[tuple, int] = {}
    for k, tie in enumerate(ties):
        for copy in tie:
            key = tuple(copy) if _is_copy(copy) else None
            if key in first and first[key] != k:
                return [f"stage {key[0]}'s {key[1]!r} is in ties {first[key]} and {k}: list all the "
                        "copies of one weight in one tie"]
            if key is not None:
                first.setdefault(key, k)
    return []


def _is_copy(copy: object) -> bool:
    return isinstance(copy, Sequence) and not isinstance(copy, str) and len(copy) == 2 \
        and isinstance(copy[0], Integral) and not isinstance(copy[0], bool) and isinstance(copy[1], str)


def _local_mismatch(k: int, tie: Tie, stages: Mapping[int, nn.Module]) -> list[str]:
    """Copies held on this rank must have one shape and dtype (the other ranks' are checked by
    ``TiedParameters.sync_weights``)."""
    held = {(s, name): dict(stages[s].named_parameters()).get(name) for s, name in tie if s in stages}
    metas = {c: TensorMeta.of(p) for c, p in held.items() if p is not None}
    if len(set(metas.values())) > 1:
        shown = ", ".join(f"stage {s} {name!r} {m.shape} {m.dtype}" for (s, name), m in metas.items())
        return [f"tie {k}'s copies differ in shape or dtype: {shown}"]
    return []


def _meta_code(t: torch.Tensor) -> torch.Tensor:
    """A copy's dtype and shape as int64s: [dtype, ndim, numel, the first 8 dims, -1 padded]."""
    dims = list(t.shape[:_MAX_DIMS]) + [-1] * (_MAX_DIMS - min(t.dim(), _MAX_DIMS))
    return torch.tensor([_DTYPES.index(str(t.dtype)), t.dim(), t.numel(), *dims], dtype=torch.int64)


def _describe(t: torch.Tensor) -> str:
    return f"{tuple(t.shape)} {t.dtype}"


def _decoded(code: torch.Tensor) -> str:
    dtype, ndim, _, *dims = code.tolist()
    shape = tuple(dims[:ndim]) if ndim <= _MAX_DIMS else f"{ndim} dims"
    return f"{shape} {_DTYPES[dtype]}"


class TiedParameters:
    """The ties that concern this rank; ``sync_weights`` once, ``reduce_grads`` after each step."""

    def __init__(self, problem: Problem, ties: Sequence[Tie], stages: Mapping[int, nn.Module],
                 rank: int, group: dist.ProcessGroup | None, timeout: float) -> None:
        self.rank, self.group, self.timeout = rank, group, timeout
        self.holder = problem.stage_rank
        self.stages = stages
        self.ties = [_Tie(k, tuple(sorted(tie))) for k, tie in enumerate(ties)
                     if any(self.holder[s] == rank for s, _ in tie)]

    def sync_weights(self) -> None:
        """Every copy takes the values of the copy on the tie's lowest stage, once every holder has
        checked that its copy has that copy's shape and dtype (other bytes would be read silently
        as other values, and another size aborts the process inside gloo)."""
        with torch.no_grad():
            for tie in self.ties:
                self._check_metas(tie)
                root = self._root(tie)
                value = self._param(tie.copies[0]) if root == self.rank else None
                if root == self.rank:
                    for peer in self._peers(tie):
                        self._send(value.detach(), peer, tie, 0)
                else:
                    value = self._recv(self._local(tie)[0], root, tie, 0)
                for param in self._local(tie):
                    if param is not value:
                        param.copy_(value)

    def _check_metas(self, tie: _Tie) -> None:
        """Three messages, so that every holder fails alike (one failing alone would leave the
        others waiting for values): the root sends its copy's shape and dtype; each peer answers
        whether its copies all match it; the root sends everyone the verdict over all holders."""
        root, local = self._root(tie), self._local(tie)
        code, device = _meta_code(local[0]), local[0].device
        here_ok = all(torch.equal(_meta_code(p), code) for p in local)
        flag = torch.zeros(1, dtype=torch.int64, device=device)
        if root == self.rank:
            peers = self._peers(tie)
            for peer in peers:
                self._send(code.to(device), peer, tie, 2)
            bad = [peer for peer in peers if not int(self._recv(flag, peer, tie, 3).item())]
            for peer in peers:
                self._send(torch.tensor([int(here_ok and not bad)], device=device), peer, tie, 4)
            if bad or not here_ok:
                where = f"on ranks {bad}" if bad else "here"
                raise PlanMismatchError(f"rank {self.rank}: tie {tie.index}: copies {where} differ in shape "
                                        f"or dtype from {tie.copies[0]} here ({_describe(local[0])})")
            return
        theirs = self._recv(code.to(device), root, tie, 2).cpu()
        mine_ok = here_ok and torch.equal(theirs, code)
        self._send(torch.tensor([int(mine_ok)], device=device), root, tie, 3)
        all_ok = int(self._recv(flag, root, tie, 4).item())
        if not mine_ok:
            raise PlanMismatchError(f"rank {self.rank}: tie {tie.index}: its copies here are "
                                    f"{', '.join(sorted({_describe(p) for p in local}))}, but "
                                    f"{tie.copies[0]} on rank {root} is {_decoded(theirs)}")
        if not all_ok:
            raise PlanMismatchError(f"rank {self.rank}: tie {tie.index}: the copies on other ranks differ in "
                                    f"shape or dtype (rank {root} names them); nothing was copied")

    def snapshot(self) -> dict[int, torch.Tensor | None]:
        """Each local copy's gradient before a step, so that the step's part can be told apart from
        what earlier steps accumulated (gradient accumulation without zero_grad)."""
        return {id(p): None if p.grad is None else p.grad.detach().clone()
                for tie in self.ties for p in self._local(tie)}

    def reduce_grads(self, before: Mapping[int, torch.Tensor | None]) -> None:
        """Adds to every copy's ``.grad`` what this step gave the other copies, so each holds its
        earlier gradient plus the step's gradient of the shared weight (the sum over copies)."""
        with torch.no_grad():
            for tie in self.ties:
                packed = self._local_step_sum(tie, before)
                root = self._root(tie)
                if root == self.rank:
                    for peer in self._peers(tie):
                        packed = packed + self._recv(packed, peer, tie, 1)
                    for peer in self._peers(tie):
                        self._send(packed, peer, tie, 1)
                else:
                    self._send(packed, root, tie, 1)
                    packed = self._recv(packed, root, tie, 1)
                total, used = packed[:-1].view_as(self._local(tie)[0]), bool(packed[-1] > 0)
                for param in self._local(tie):
                    old = before.get(id(param))
                    param.grad = old if not used else total.clone() if old is None else old + total

    def _local_step_sum(self, tie: _Tie, before: Mapping[int, torch.Tensor | None]) -> torch.Tensor:
        """This rank's part of the step's gradient, flat, and last how many copies here got one: a
        weight no copy used keeps the gradient it had (None after ``zero_grad``), as unpipelined."""
        params = self._local(tie)
        total = torch.zeros_like(params[0])
        for param in params:
            if param.grad is not None:
                total += param.grad
            if before.get(id(param)) is not None:
                total -= before[id(param)]
        used = sum(param.grad is not None for param in params)
        return torch.cat([total.reshape(-1), total.new_full((1,), used)])

    def local_params(self) -> list[torch.Tensor]:
        """Every tied copy this rank holds: their gradients are final only after ``reduce_grads``."""
        return [p for tie in self.ties for p in self._local(tie)]

    def first_copies(self) -> list[torch.Tensor]:
        """The copy on each tie's lowest stage, where this rank holds it: the one a norm counts."""
        return [self._param(tie.copies[0]) for tie in self.ties if self._root(tie) == self.rank]

    def _local(self, tie: _Tie) -> list[torch.Tensor]:
        """This rank's copies, each Parameter object once (two stages may hold the same one)."""
        found = {id(p): p for p in (self._param(c) for c in tie.copies if self.holder[c[0]] == self.rank)}
        return list(found.values())

    def _param(self, copy: tuple[int, str]) -> torch.Tensor:
        stage, name = copy
        return dict(self.stages[stage].named_parameters())[name]

    def _root(self, tie: _Tie) -> int:
        return self.holder[tie.copies[0][0]]

    def _peers(self, tie: _Tie) -> list[int]:
        root = self._root(tie)
        return sorted({self.holder[s] for s, _ in tie.copies} - {root})

    def _send(self, tensor: torch.Tensor, peer: int, tie: _Tie, what: int) -> None:
        text = f"rank {self.rank} sent tied weight {tie.index}'s {_WHAT[what]} to rank {peer}"
        work = start(lambda: dist.isend(tensor.contiguous(), group=self.group, group_dst=peer,
                                        tag=TIE_TAG + _SLOTS * tie.index + what), text)
        wait(work, self.timeout, text)

    def _recv(self, like: torch.Tensor, peer: int, tie: _Tie, what: int) -> torch.Tensor:
        text = f"rank {self.rank} waited for tied weight {tie.index}'s {_WHAT[what]} from rank {peer}"
        buffer = torch.empty_like(like)
        work = start(lambda: dist.irecv(buffer, group=self.group, group_src=peer,
                                        tag=TIE_TAG + _SLOTS * tie.index + what), text)
        wait(work, self.timeout, text)
        return buffer
