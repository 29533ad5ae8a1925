"""Boundary shapes, learned before data exists so that receives can be posted ahead of it.

A stage may take and return one tensor or a tuple of tensors (as torch's ``PipelineStage``
allows): the boundary between stage s and s+1 is the tuple of stage s's outputs, which stage s+1
takes as positional arguments. A receive needs a buffer of the right shape and dtype, which only
the sending stage can know. On the first step (and, with ``variable_shapes``, on each new input
shape: ``shape_book.py``) every rank walks its stages in layer order: it takes
the input metas from the previous stage (locally, or as a small message from that stage's rank),
computes the output metas (``shape_probe.output_metas``) and sends them on. Gradients flow back for the
floating-point entries of a boundary (``grad_metas``), each with the shape of its activation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
from torch import nn

from schedc.plan import Plan
from schedc.problem import Problem

from .errors import PlanMismatchError
from .waits import same_everywhere, start, wait

DTYPES = (
    torch.float32, torch.float16, torch.bfloat16, torch.float64,
    torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
    torch.complex64, torch.complex128, torch.complex32, torch.uint16, torch.uint32, torch.uint64,
    torch.float8_e4m3fn, torch.float8_e5m2,
)
"""Every dtype a boundary tensor may have (its index is the shape message's code). gloo sends all
of them (torch 2.13, measured); the complex and unsigned ones were refused until complex stages
crossed ranks."""
FAILED = -1
"""A shape message's tensor count when its sender failed first: its peer fails at once too."""
FAILURE_NOTICE_S = 2.0
"""How long a failing rank waits for its peer to take that notice before raising its own error: a
peer waiting for the shape takes it at once; one that failed too never does, and each such wait
delays the rank's own error by this much."""
MAX_DIMS = 8
MAX_TENSORS = 8
"""Tensors per boundary: messages of one boundary tensor tag as ``(tag * MAX_TENSORS + index) *
CALL_TAGS + call`` (``comm.py``)."""
SHAPE_TAG = 1 << 30


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int, ...]
    dtype: torch.dtype

    @staticmethod
    def of(t: torch.Tensor) -> TensorMeta:
        return TensorMeta(tuple(t.shape), t.dtype)

    def encode(self) -> torch.Tensor:
        if len(self.shape) > MAX_DIMS or self.dtype not in DTYPES:
            raise PlanMismatchError(f"boundary tensors need <= {MAX_DIMS} dims and a dtype in {DTYPES}; "
                                    f"got {self.shape} {self.dtype}")
        data = [DTYPES.index(self.dtype), len(self.shape), *self.shape]
        return torch.tensor(data + [0] * (MAX_DIMS + 2 - len(data)), dtype=torch.int64)

    @staticmethod
    def decode(data: torch.Tensor) -> TensorMeta:
        values = data.tolist()
        return TensorMeta(tuple(values[2:2 + values[1]]), DTYPES[values[0]])


Metas = tuple[TensorMeta, ...]
"""One boundary: the metas of its tensors, in order."""


def as_tensors(value: object, what: str) -> tuple[torch.Tensor, ...]:
    """A boundary value as a tuple of tensors: a tensor, or a tuple/list of them."""
    values = tuple(value) if isinstance(value, tuple | list) else (value,)
    if not values or not all(isinstance(v, torch.Tensor) for v in values) or len(values) > MAX_TENSORS:
        kinds = ", ".join(type(v).__name__ for v in values) or "nothing"
        raise PlanMismatchError(f"{what} must be a tensor or a tuple of 1 to {MAX_TENSORS} tensors, "
                                f"got {kinds}")
    return values


def metas_of(value: object, what: str) -> Metas:
    return tuple(TensorMeta.of(t) for t in as_tensors(value, what))


def differentiable(dtype: torch.dtype) -> bool:
    """Whether a boundary tensor of this dtype carries a gradient back: floating point or complex."""
    return dtype.is_floating_point or dtype.is_complex


def grad_metas(metas: Metas) -> Metas:
    """The gradient message of a boundary: one tensor per floating-point (or complex) entry."""
    return tuple(m for m in metas if differentiable(m.dtype))


def encode_metas(metas: Metas) -> torch.Tensor:
    return torch.cat([torch.tensor([len(metas)]), *(m.encode() for m in metas),
                      torch.zeros((MAX_TENSORS - len(metas)) * (MAX_DIMS + 2), dtype=torch.int64)])


def failure_message(failed: set[int]) -> torch.Tensor:
    """A failure notice, listing the ranks known to have failed (as many as the message holds): a
    rank it reaches sends no notice of its own to them, which none of them would take."""
    message = torch.zeros(1 + MAX_TENSORS * (MAX_DIMS + 2), dtype=torch.int64)
    listed = sorted(failed)[:len(message) - 2]
    message[0], message[1] = FAILED, len(listed)
    message[2:2 + len(listed)] = torch.tensor(listed, dtype=torch.int64)
    return message


def decode_metas(data: torch.Tensor) -> Metas:
    count, rows = int(data[0]), data[1:].view(MAX_TENSORS, MAX_DIMS + 2)
    return tuple(TensorMeta.decode(rows[k]) for k in range(count))


IN_PLACE_ON_LEAF = "a leaf Variable that requires grad is being used in an in-place operation"


def modifies_input(err: Exception) -> bool:
    """Whether autograd refused an in-place op on a stage input (a leaf that needs a gradient)."""
    return isinstance(err, RuntimeError) and IN_PLACE_ON_LEAF in str(err)


def in_place_error(stage: int) -> PlanMismatchError:
    return PlanMismatchError(f"stage {stage} modifies its input in place (e.g. ReLU(inplace=True) right "
                             "after the cut), which a received activation cannot allow: make that op out of "
                             "place")


def plan_key(plan: Plan) -> int:
    """A digest of the plan's problem and orders (63 bits, the same in every process)."""
    digest = hashlib.sha256(repr((plan.problem, plan.orders)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def describe_metas(metas: Metas) -> str:
    return ", ".join(f"{m.shape} {m.dtype}" for m in metas)


AUTOCAST_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def changed_message(rank: int, what: str, sent: Metas, expected: Metas) -> str:
    """A message that no longer matches the shapes learned for its input; where only float dtypes moved
    between float32 and half precision, the likely cause is autocast around one call only (a
    step under autocast, then an eval without it)."""
    why = "a stage's output must keep its shape and dtype from step to step, in train and eval mode"
    pairs = list(zip(sent, expected, strict=False))
    moved = [{s.dtype, e.dtype} for s, e in pairs if s.dtype != e.dtype]
    if (len(sent) == len(expected) and all(s.shape == e.shape for s, e in pairs) and moved
            and all(dtypes <= set(AUTOCAST_DTYPES) for dtypes in moved)):
        why = "autocast around one call and not another? run step() and eval() under the same autocast"
    return (f"rank {rank}: the {what} is {describe_metas(sent)}, but the shapes learned for this input "
            f"give {describe_metas(expected)} ({why})")


def check_same_plan(plan_key: int, flags: list[int], rank: int, group: dist.ProcessGroup | None,
                    device: torch.device, timeout: float | None) -> list[int]:
    """Before the first shape message, one all-reduce (MAX) of the plan's digest and its negation:
    ranks running different plans all fail here, where one whose peers under the other plan never
    exchange shapes with it would otherwise wait for its timeout. ``flags`` ride along: each one's
    maximum over the group is returned."""
    what = f"rank {rank} waited for the other ranks' plan digests (each rank's first step or eval)"
    maxima, same = same_everywhere(flags, [plan_key], group, device, timeout, what)
    if not same:
        raise PlanMismatchError(f"rank {rank}: the ranks run different plans (other orders or another "
                                "problem): every rank must run the same plan; make it on one rank and "
                                "broadcast it (solves with several workers differ run to run)")
    return maxima


def infer_boundaries(
    problem: Problem, stages: Mapping[int, nn.Module], rank: int, first_input: Metas | None,
    group: dist.ProcessGroup | None, timeout: float, device: torch.device, untaken: list[int] | None = None,
    noticed: set[int] | None = None,
) -> dict[int, Metas]:
    """Metas of the output of each stage b next to this rank's stages (boundary b -> b+1), sent
    once ``check_same_plan`` has shown that every rank runs this plan. Where this rank fails (a
    stage's forward, an unsupported output, a peer's notice), each peer still waiting for a shape
    from it is sent a failure notice, so that it fails at once instead of at its timeout; peers the
    notices name as failed are skipped. A notice no peer took (it failed too, unknown to this rank)
    goes into ``untaken``: its unfinished send may leave the pair unusable; the ranks the notices this
    rank took named as failed go into ``noticed`` (empty where it failed on its own)."""
    exchange = _Exchange(rank, group, timeout, device)
    metas: dict[int, Metas] = {}
    sent: set[int] = set()
    try:
        _infer(problem, stages, rank, first_input, exchange, metas, sent)
    except Exception:
        if noticed is not None:
            noticed.update(exchange.failed)
        failed = exchange.failed | {rank}
        for peer, s in _first_waits(problem, rank, sent, failed).items():
            if not exchange.notify_failure(peer, s, failed):
                (untaken if untaken is not None else []).append(peer)
        raise
    metas.pop(-1, None)
    return metas


def _first_waits(problem: Problem, rank: int, sent: set[int], failed: set[int]) -> dict[int, int]:
    """Per peer not known to have failed, the first boundary from this rank whose shape it still
    waits for: a notice there fails it, and it takes no second one (a second notice, to a later
    boundary, would be left unfinished)."""
    waits: dict[int, int] = {}
    for s in sorted(problem.rank_stages[rank]):
        peer = problem.stage_rank[s + 1] if s + 1 < problem.num_stages else rank
        if peer != rank and peer not in failed and s not in sent:
            waits.setdefault(peer, s)
    return waits


def _infer(problem: Problem, stages: Mapping[int, nn.Module], rank: int, first_input: Metas | None,
           exchange: _Exchange, metas: dict[int, Metas], sent: set[int]) -> None:
    """``infer_boundaries``' walk over the rank's stages, filling ``metas`` and ``sent`` (the
    boundaries whose shapes went out) as it goes."""
    from .shape_probe import output_metas  # it builds on this module's metas

    last = problem.num_stages - 1
    for s in problem.rank_stages[rank]:
        if s == 0:
            if first_input is None:
                raise PlanMismatchError(f"rank {rank} holds stage 0 but step() got no input")
            in_metas = first_input
        elif s - 1 in metas:
            in_metas = metas[s - 1]
        else:
            in_metas = exchange.receive(problem.stage_rank[s - 1], s - 1)
        metas[s - 1] = in_metas
        if s == last:
            continue
        try:
            metas[s] = output_metas(stages[s], in_metas, exchange.device, s)
        except PlanMismatchError as err:  # name the rank: every rank prints its own line
            raise PlanMismatchError(f"rank {rank}: {err}") from err.__cause__
        peer = problem.stage_rank[s + 1]
        if peer != rank:
            exchange.send(metas[s], peer, s)
            sent.add(s)


@dataclass(frozen=True)
class _Exchange:
    """Shape messages of one walk (the first step's, or a new input shape's), each wait bounded by
    ``timeout``."""

    rank: int
    group: dist.ProcessGroup | None
    timeout: float
    device: torch.device
    failed: set[int] = field(default_factory=set)
    """The ranks a failure notice named as failed (its sender among them)."""

    def send(self, metas: Metas, peer: int, boundary: int) -> None:
        what = f"rank {self.rank} waited for rank {peer} to take the shape of stage {boundary}'s output"
        try:
            message = encode_metas(metas)
        except PlanMismatchError as err:  # too many dims or an unsent dtype: named like every runtime error
            raise PlanMismatchError(f"rank {self.rank}: stage {boundary}'s output: {err}") from None
        self._transfer(True, message.to(self.device), peer, SHAPE_TAG + boundary, what)

    def receive(self, peer: int, boundary: int) -> Metas:
        buffer = torch.empty(1 + MAX_TENSORS * (MAX_DIMS + 2), dtype=torch.int64, device=self.device)
        what = f"rank {self.rank} waited for the shape of stage {boundary}'s output from rank {peer}"
        self._transfer(False, buffer, peer, SHAPE_TAG + boundary, what)
        if int(buffer[0]) == FAILED:
            named = set(buffer[2:2 + int(buffer[1])].tolist())
            self.failed.update({peer, *named})
            raise PlanMismatchError(_notice_text(self.rank, peer, boundary, named - {peer}))
        return decode_metas(buffer.cpu())

    def notify_failure(self, peer: int, boundary: int, failed: set[int]) -> bool:
        """Best effort: a peer that is not waiting (it failed too) is not waited for past a few
        seconds. Whether the peer took the notice."""
        what = f"rank {self.rank} waited for rank {peer} to take its failure notice"
        try:
            work = start(lambda: dist.isend(failure_message(failed).to(self.device), group=self.group,
                                            group_dst=peer, tag=SHAPE_TAG + boundary), what)
            wait(work, min(self.timeout or FAILURE_NOTICE_S, FAILURE_NOTICE_S), what)
        except Exception:  # the rank's own error is the one to raise
            return False
        return True

    def _transfer(self, send: bool, tensor: torch.Tensor, peer: int, tag: int, what: str) -> None:
        if send:
            work = start(lambda: dist.isend(tensor, group=self.group, group_dst=peer, tag=tag), what)
        else:
            work = start(lambda: dist.irecv(tensor, group=self.group, group_src=peer, tag=tag), what)
        wait(work, self.timeout, what)


def _notice_text(rank: int, peer: int, boundary: int, before: set[int]) -> str:
    """A notice that names ranks besides its sender was passed on: the sender failed only because
    they did, so the line points at theirs."""
    if not before:
        return (f"rank {rank}: rank {peer} failed before it could send the shape of stage {boundary}'s "
                "output (its own error says why)")
    who = " and ".join(f"rank {r}" for r in sorted(before))
    return (f"rank {rank}: rank {peer} could not send the shape of stage {boundary}'s output since {who} "
            f"failed first ({'its' if len(before) == 1 else 'their'} own error says why)")
