"""Backward split into I (gradient w.r.t. the stage input) and W (weight gradients, later).

Zero-bubble schedules run W late to fill bubbles, but autograd computes both in one pass. The
split runs autograd twice over disjoint parts of one graph. I differentiates the stage output
w.r.t. the stage input with ``retain_graph=True`` and, through pre-hooks, records the gradient that
reaches each *join*: a node on the input's path where a parameter's branch enters. W later runs
autograd from the joins to the parameters only, so no input-gradient work is repeated. This is the
approach of PyTorch's ``torch/distributed/pipelining/_backward.py`` (stage_backward_input /
stage_backward_weight), on public autograd APIs. Unlike torch, I then frees what the nodes W does
not run again saved (``release_saved``): the retained graph otherwise held every activation of
the input's path until W, 1.65 times what F left on the demo transformer's middle stages (1.22
now). A stage has one or more outputs (those that require grad, each with its incoming gradient)
and zero or more inputs to differentiate.

When a stage has no differentiable input (the first stage fed integer tokens), I does no work and
W runs the whole weight backward from the outputs; when a parameter does not join the inputs'
paths, I computes the input gradients keeping the graph and W again runs the whole weight backward
from the outputs; both are still exact. A stage without weights runs its I without keeping the
graph, and its W does nothing.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import torch
from torch.autograd.graph import GradientEdge, Node, get_gradient_edge

from .saved_box import RELEASED, SavedBox

_ACCUMULATE = torch._C._functions.AccumulateGrad
"""The node type of a leaf that requires grad (its tensor is ``node.variable``)."""


@dataclass
class _Group:
    """Parameters whose branches enter the input's path at the same joins."""

    params: list[torch.Tensor]
    joins: list[Node]
    grads: dict[Node, tuple[torch.Tensor | None, ...]] = field(default_factory=dict)


@dataclass
class WeightWork:
    """What W needs after I: the joins with their recorded gradients, or (fallback) the outputs."""

    groups: list[_Group] = field(default_factory=list)
    outputs: Sequence[torch.Tensor] = ()
    grad_outputs: Sequence[torch.Tensor | None] = ()
    params: Sequence[torch.Tensor] = ()

    def held(self) -> list[torch.Tensor]:
        """The tensors this keeps until W: the gradients recorded at the joins, or the outputs and
        their gradients W starts from again (``activation_bytes`` counts them)."""
        recorded = [g for group in self.groups for grads in group.grads.values() for g in grads]
        return [t for t in (*recorded, *self.outputs, *self.grad_outputs) if t is not None]


def _node(t: torch.Tensor) -> Node:
    return get_gradient_edge(t).node


def _graph(roots: Sequence[Node]) -> tuple[dict[Node, list[Node]], list[torch.Tensor]]:
    """Reverse edges of the graph under ``roots`` (node -> nodes that take its gradient output),
    and its leaves that require grad (each AccumulateGrad node's tensor)."""
    users: dict[Node, list[Node]] = defaultdict(list)
    leaves: list[torch.Tensor] = []
    queue, seen = deque(roots), set(roots)
    while queue:
        node = queue.popleft()
        if isinstance(node, _ACCUMULATE):  # not any node with a .variable: a Function's ctx may have one
            leaves.append(node.variable)
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            users[nxt].append(node)
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return users, leaves


def graph_leaves(outputs: Sequence[torch.Tensor], inputs: Sequence[torch.Tensor] = ()) -> list[torch.Tensor]:
    """The leaves that require grad under these outputs, without ``inputs``: what a backward from
    them adds gradients to (``grads_ready``, on every forward). A walk that keeps no reverse edges,
    as ``_graph`` must: 5 times faster on a 2-layer GRU over 512 steps."""
    roots = [_node(o) for o in outputs if o.requires_grad]
    skip = {id(x) for x in inputs}
    leaves, stack, seen = [], list(roots), set(roots)
    while stack:
        node = stack.pop()
        if isinstance(node, _ACCUMULATE):
            if id(node.variable) not in skip:
                leaves.append(node.variable)
            continue
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return leaves


def _trainable(params: Sequence[torch.Tensor], leaves: Sequence[torch.Tensor],
               inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Every leaf under the outputs that requires grad, the stage's parameters first, without the
    stage inputs: what the unpipelined backward fills, a loss function's own parameter, one a module
    uses without registering it and another stage's weight in the loss among them. A parameter this
    forward did not use gets no gradient, as in the unpipelined backward; left in, it would find no
    join and send the whole stage down W's fallback, which frees nothing at I."""
    skip = {id(x) for x in inputs}
    under = {id(leaf) for leaf in leaves}
    found = {id(p): p for p in params if p.requires_grad and id(p) in under}
    for leaf in leaves:
        if id(leaf) not in skip:
            found.setdefault(id(leaf), leaf)
    return list(found.values())


def _reach(start: Node, users: dict[Node, list[Node]], stop: set[Node]) -> tuple[set[Node], set[Node]]:
    """Nodes reached from ``start`` towards the output, and the ``stop`` nodes where it halted."""
    seen, hit, queue = {start}, set(), deque([start])
    while queue:
        for user in users.get(queue.popleft(), ()):
            if user in stop:
                hit.add(user)
            elif user not in seen:
                seen.add(user)
                queue.append(user)
    return seen, hit


def _input_path(inputs: Sequence[torch.Tensor], users: dict[Node, list[Node]]) -> set[Node]:
    """The nodes between the inputs and the outputs: what I runs."""
    return _sweep([_node(x) for x in inputs], lambda n: users.get(n, ()))


def _groups(outputs: Sequence[torch.Tensor], on_path: set[Node], params: Sequence[torch.Tensor],
            users: dict[Node, list[Node]]) -> list[_Group] | None:
    """Parameters grouped by their joins; None when some parameter never joins the inputs' paths,
    or also reaches an output past them (a side output made from it alone: W from the joins would
    miss that branch)."""
    roots = {_node(o) for o in outputs}
    by_join: dict[Node, _Group] = {}
    for param in params:
        reached, joins = _reach(_node(param), users, on_path)
        if not joins or reached & roots:  # a branch to an output that never meets the inputs' path
            return None
        merged = {id(g): g for g in (by_join.get(j) for j in joins) if g is not None}
        group = _Group([param], list(joins))
        for other in merged.values():
            group.params += other.params
            group.joins += [j for j in other.joins if j not in group.joins]
        for join in group.joins:
            by_join[join] = group
    return list({id(g): g for g in by_join.values()}.values())


def _dense(grads: Sequence[torch.Tensor | None], like: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Zeros where an input did not reach any output: a gradient message always has every tensor."""
    return tuple(torch.zeros_like(x) if g is None else g for g, x in zip(grads, like, strict=True))


def backward_input(
    outputs: Sequence[torch.Tensor], grad_outputs: Sequence[torch.Tensor | None],
    inputs: Sequence[torch.Tensor], params: Sequence[torch.Tensor],
) -> tuple[tuple[torch.Tensor, ...], WeightWork]:
    """I: the gradients w.r.t. ``inputs`` (all require grad); returns them and what W needs."""
    if not outputs:  # nothing of this stage's output depends on an input or a weight
        return _dense([None] * len(inputs), inputs), WeightWork()
    users, leaves = _graph([_node(o) for o in outputs])
    params = _trainable(params, leaves, inputs)
    if not inputs:
        return (), WeightWork(outputs=outputs, grad_outputs=grad_outputs, params=params)
    on_path = _input_path(inputs, users)
    groups = _groups(outputs, on_path, params, users) if params else None
    if groups is None:  # W will run the weight backward from the outputs again (if it has weights)
        dxs = torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph=bool(params), allow_unused=True)
        if not params:  # nothing for W to do: keep nothing (the outputs and their gradients went free)
            return _dense(dxs, inputs), WeightWork()
        return _dense(dxs, inputs), WeightWork(outputs=outputs, grad_outputs=grad_outputs, params=params)
    handles = []
    for group in groups:
        for join in group.joins:
            def record(grads: tuple[torch.Tensor | None, ...], group: _Group = group,
                       join: Node = join) -> None:
                group.grads[join] = grads
            handles.append(join.register_prehook(record))
    try:
        dxs = torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph=True, allow_unused=True)
    finally:
        for handle in handles:
            handle.remove()
    for node in on_path - _weight_nodes(groups, on_path, users):
        release_saved(node)
    return _dense(dxs, inputs), WeightWork(groups=groups)


def _weight_nodes(groups: Sequence[_Group], on_path: set[Node], users: dict[Node, list[Node]]) -> set[Node]:
    """The input-path nodes W runs again: every join, and, for a group that joins at several
    places, the input-path nodes between its joins (a pass from an upper join reaches the group's
    parameters through the lower one too, whose pin then replaces what arrives)."""
    nodes: set[Node] = set()
    for group in groups:
        nodes.update(group.joins)
        if len(group.joins) > 1:  # one sweep each way, not one per join: an RNN joins at every step
            below = _sweep(group.joins, lambda n: (nxt for nxt, _ in n.next_functions if nxt in on_path))
            nodes |= below & _sweep(group.joins, lambda n: users.get(n, ()))
    return nodes


def _sweep(starts: Sequence[Node], step: Callable[[Node], Iterable[Node]]) -> set[Node]:
    """The nodes reached from ``starts`` through ``step``, the starts among them."""
    seen, queue = set(starts), deque(starts)
    while queue:
        for nxt in step(queue.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


_SAVED_NAMES: dict[type, tuple[str, ...]] = {}


def _saved_names(node: Node) -> tuple[str, ...]:
    """The node type's saved-tensor properties (``_raw_saved_self``, ...), looked up once per type."""
    kind = type(node)
    if kind not in _SAVED_NAMES:
        _SAVED_NAMES[kind] = tuple(a for a in dir(kind) if a.startswith("_raw_saved_"))
    return _SAVED_NAMES[kind]


def _refuse(_: object) -> torch.Tensor:
    raise RuntimeError(RELEASED)


def release_saved(node: Node) -> None:
    """Frees what ``node`` saved for its backward, which only I needed: the graph itself stays for
    W (``retain_graph=True``), and without this everything on the inputs' path stayed with it.
    A saved tensor without hooks gets a pair that drops it; one packed by schedc's measuring box is
    emptied; one under someone else's hooks (a checkpoint region, offloading) is left alone."""
    for name in _saved_names(node):
        try:
            value = getattr(node, name)
        except RuntimeError:  # freed already, or a node type that cannot show it: left as it is
            continue
        for saved in value if isinstance(value, tuple | list) else (value,):
            if saved is None or saved.data is None:  # an optional tensor the op did not save
                continue
            if saved.unpack_hook is None:
                saved.register_hooks(lambda _t: None, _refuse)
            elif isinstance(saved.data, SavedBox):
                saved.data.release()


def backward_weight(work: WeightWork) -> None:
    """W: accumulates the weight gradients into ``.grad`` and frees the graph."""
    if work.outputs and work.params:  # accumulated inside the engine, as in backward_full
        torch.autograd.backward(work.outputs, work.grad_outputs, inputs=list(work.params))
    for k, group in enumerate(work.groups):  # a group's pass may run through nodes a later one needs
        _group_backward(group, retain=k < len(work.groups) - 1)
    work.groups.clear()
    work.outputs = work.grad_outputs = ()


def _group_backward(group: _Group, retain: bool) -> None:
    edges, seeds = [], []
    for join in group.joins:
        for index, grad in enumerate(group.grads[join]):
            if grad is not None:
                edges.append(GradientEdge(join, index))
                seeds.append(grad)
    # Pin every join to the gradient I saw there: a join below another one would get the upper
    # join's gradient again, and a user's hook on the join's tensor would run a second time (I
    # recorded the gradient after it).
    pins = [j.register_prehook(lambda _g, saved=group.grads[j]: saved) for j in group.joins]
    try:
        if edges:  # accumulated by the engine, which runs the parameters' post-accumulate-grad hooks
            torch.autograd.backward(edges, seeds, retain_graph=retain, inputs=list(group.params))
    finally:
        for pin in pins:
            pin.remove()


def backward_full(
    outputs: Sequence[torch.Tensor], grad_outputs: Sequence[torch.Tensor | None],
    inputs: Sequence[torch.Tensor],
) -> tuple[torch.Tensor, ...]:
    """B: input and weight gradients in one pass; returns the gradients w.r.t. ``inputs``. Every
    trainable leaf under the outputs is filled, the stage's parameters among them."""
    if not outputs:  # an output that requires grad has some leaf that does under it
        return _dense([None] * len(inputs), inputs)
    # autograd.backward accumulates into .grad inside the engine (AccumulateGrad): no captured
    # gradients handed back to Python and added there, which made B measurably slower. Unrestricted
    # (no inputs=), it fills every leaf under the outputs, as the unpipelined backward does: the
    # stage inputs, its parameters and any other trainable leaf (a loss function's own parameter).
    torch.autograd.backward(outputs, grad_outputs)
    dxs = tuple(x.grad for x in inputs)
    for x in inputs:
        x.grad = None
    return _dense(dxs, inputs)
