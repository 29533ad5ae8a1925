"""Lowering: one rank's compute order -> the ops it runs, communication included.

The plan says only which compute comes next on a rank. What must cross ranks follows from the
dependency rules (``schedc.dag.dependencies``, the one home of them) and the placement
(``problem.stage_rank``): an edge between tasks on different ranks carries one tensor, so the
consumer's rank posts a receive for it and the producer's rank sends it right after computing it.
An edge within a rank passes the tensor locally. Receives are posted ``recv_ahead`` compute ops
before their consumer (None: all at the start of the step) so that transfers overlap compute.
This module is pure (no torch): the lowered program is data that tests can read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from schedc.actions import Action
from schedc.dag import Fused, dependencies, fused_backwards, tasks
from schedc.problem import Problem
from schedc.simulate import Orders


class TensorKey(NamedTuple):
    """A boundary tensor: 'act' = output of ``stage`` (input of stage+1); 'grad' = gradient w.r.t.
    the input of ``stage`` (sent to stage-1)."""

    kind: str
    stage: int
    mb: int

    def describe(self) -> str:
        if self.kind == "act":
            return f"activation of stage {self.stage} -> {self.stage + 1}, microbatch {self.mb}"
        return f"gradient of stage {self.stage} -> {self.stage - 1}, microbatch {self.mb}"


class PostRecv(NamedTuple):
    key: TensorKey
    peer: int
    consumer: Action


class Compute(NamedTuple):
    action: Action


class Send(NamedTuple):
    key: TensorKey
    peer: int
    producer: Action


Op = PostRecv | Compute | Send


def edge_tensor(before: Action, after: Action) -> TensorKey | None:
    """The tensor a dependency edge carries between stages, or None for an edge inside one stage
    (F -> its own backward, I -> W): those keep their state on the rank that owns the stage."""
    if before.stage == after.stage:
        return None
    if before.kind == "F" and after.kind == "F" and after.stage == before.stage + 1:
        return TensorKey("act", before.stage, before.mb)
    if before.kind in ("I", "B") and after.kind in ("I", "B") and after.stage == before.stage - 1:
        return TensorKey("grad", before.stage, before.mb)
    raise ValueError(f"no tensor is defined for the dependency {before} -> {after}")


def tag(key: TensorKey, num_stages: int) -> int:
    """A message tag unique per boundary tensor within one step (backends with tags match on it)."""
    return ((key.mb * num_stages + key.stage) << 1) | (key.kind == "grad")


def _users(problem: Problem, fused: Fused) -> dict[Action, list[Action]]:
    users: dict[Action, list[Action]] = {}
    for task in tasks(problem, fused):
        for dep in dependencies(problem, task, fused):
            users.setdefault(dep, []).append(task)
    return users


def _remote_inputs(problem: Problem, action: Action, rank: int, fused: Fused) -> Iterable[PostRecv]:
    for dep in dependencies(problem, action, fused):
        peer = problem.stage_rank[dep.stage]
        if peer != rank:
            yield PostRecv(edge_tensor(dep, action), peer, action)


def lower(problem: Problem, orders: Orders, rank: int, recv_ahead: int | None = None) -> tuple[Op, ...]:
    """The op program of ``rank``: its computes in plan order, each receive posted ``recv_ahead``
    computes early (clamped to the step start; None = all at the start), each send right after its
    producer."""
    if recv_ahead is not None and recv_ahead < 0:
        raise ValueError(f"recv_ahead must be >= 0 or None, got {recv_ahead}")
    order = orders[rank]
    fused = fused_backwards(problem, orders)  # the whole plan's: a B's consumers sit on other ranks
    users = _users(problem, fused)
    posts: list[list[PostRecv]] = [[] for _ in order]
    for k, action in enumerate(order):
        at = 0 if recv_ahead is None else max(0, k - recv_ahead)
        posts[at].extend(_remote_inputs(problem, action, rank, fused))
    program: list[Op] = []
    for k, action in enumerate(order):
        program.extend(posts[k])
        program.append(Compute(action))
        for user in users.get(action, ()):
            peer = problem.stage_rank[user.stage]
            if peer != rank:
                program.append(Send(edge_tensor(action, user), peer, action))
    return tuple(program)


def send_orders(problem: Problem, orders: Orders) -> dict[tuple[int, int], list[TensorKey]]:
    """Per directed link (src, dst), the tensors src sends to dst in the order it sends them."""
    sent: dict[tuple[int, int], list[TensorKey]] = {}
    for src in range(problem.p):
        for op in lower(problem, orders, src, recv_ahead=0):
            if isinstance(op, Send):
                sent.setdefault((src, op.peer), []).append(op.key)
    return sent


def in_send_order(problem: Problem, orders: Orders, rank: int, recv_ahead: int | None) -> tuple[Op, ...]:
    """``lower``'s program with every receive posted in the order its sender sends on that link.

    A backend that pairs messages by order, not by tag (NCCL), then pairs each receive with its
    own tensor on any plan: when the receive of key K is due, the receives of every key the peer
    sends before K are posted first (early, never late: each still precedes its consumer)."""
    program = lower(problem, orders, rank, recv_ahead)
    posts = {op.key: op for op in program if isinstance(op, PostRecv)}
    links = {src: keys for (src, dst), keys in send_orders(problem, orders).items() if dst == rank}
    done = dict.fromkeys(links, 0)
    out: list[Op] = []
    for op in program:
        if not isinstance(op, PostRecv):
            out.append(op)
            continue
        keys = links[op.peer]
        upto = keys.index(op.key)
        out.extend(posts[key] for key in keys[done[op.peer]:upto + 1])
        done[op.peer] = max(done[op.peer], upto + 1)
    return tuple(out)


@dataclass(frozen=True)
class Delivery:
    """What a message from a peer proves about the tensors this rank sent it. A rank takes each
    received tensor at its consumer's compute (waiting for its transfer) and sends each tensor
    after its producer's compute, both in plan order: so when this rank has a message from a peer,
    the peer had, before sending it, received every tensor of ours it takes earlier in its program.
    gloo reports a send complete only once waited on, so this is how the runner learns it may free
    a sent tensor before the step ends."""

    taken: dict[int, tuple[TensorKey, ...]]
    """Per peer, the tensors this rank sends it, in the order the peer takes them."""
    proves: dict[TensorKey, int]
    """Per tensor this rank receives, how many of ``taken[its sender]`` the sender had taken first."""


def delivery(problem: Problem, orders: Orders, rank: int) -> Delivery:
    """``rank``'s ``Delivery``, from its peers' programs (``lower``; where receives are posted
    does not matter, so each is placed just before its consumer)."""
    peers = {op.peer for op in lower(problem, orders, rank, recv_ahead=0) if isinstance(op, PostRecv | Send)}
    taken: dict[int, tuple[TensorKey, ...]] = {}
    proves: dict[TensorKey, int] = {}
    for peer in sorted(peers):
        keys: list[TensorKey] = []
        for op in lower(problem, orders, peer, recv_ahead=0):
            if isinstance(op, PostRecv) and op.peer == rank:
                keys.append(op.key)
            elif isinstance(op, Send) and op.peer == rank:
                proves[op.key] = len(keys)
        taken[peer] = tuple(keys)
    return Delivery(taken, proves)
