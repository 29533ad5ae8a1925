"""Lowering a plan into per-rank programs: every cross-rank dependency becomes one send matched by
one receive, posted ahead within the window, and the programs run to completion together."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedc.actions import Action
from schedc.baselines import applicable, baseline_plan
from schedc.dag import dependencies
from schedc.plan import Plan
from schedc.problem import Problem
from schedc.runtime.lowering import (
    Compute,
    PostRecv,
    Send,
    TensorKey,
    delivery,
    edge_tensor,
    lower,
    send_orders,
    tag,
)
from tests.strategies import problems, topological_orders


def message_order_errors(problem: Problem, orders) -> list[str]:
    """Rank pairs whose receive order (with nothing posted ahead) differs from the send order: a
    backend matching messages by order, not tag, would pair the wrong tensors there."""
    sent = send_orders(problem, orders)
    received: dict[tuple[int, int], list[TensorKey]] = {}
    for rank in range(problem.p):
        for op in lower(problem, orders, rank, recv_ahead=0):
            if isinstance(op, PostRecv):
                received.setdefault((op.peer, rank), []).append(op.key)
    return [
        f"rank {dst} receives from rank {src} in another order than rank {src} sends "
        f"(first difference: {next(a for a, b in zip(sent[(src, dst)], keys, strict=True) if a != b)})"
        for (src, dst), keys in sorted(received.items())
        if keys != sent.get((src, dst))
    ]


@st.composite
def plans(draw):
    problem = draw(problems(max_p=4, max_m=5, max_v=3, caps=False))
    return problem, draw(topological_orders(problem))


def _programs(problem, orders, ahead):
    return [lower(problem, orders, r, ahead) for r in range(problem.p)]


def _run_together(programs) -> None:
    """Interprets the programs round-robin: a compute waits for every receive it consumes to have
    been sent. Raises when no rank can move (a deadlock in the lowered programs)."""
    sent: set[tuple[int, int, TensorKey]] = set()
    pc = [0] * len(programs)
    pending: list[dict[TensorKey, int]] = [{} for _ in programs]
    while any(pc[r] < len(prog) for r, prog in enumerate(programs)):
        moved = False
        for r, prog in enumerate(programs):
            while pc[r] < len(prog):
                op = prog[pc[r]]
                if isinstance(op, PostRecv):
                    pending[r][op.key] = op.peer
                elif isinstance(op, Send):
                    sent.add((r, op.peer, op.key))
                else:
                    needs = [(peer, k) for k, peer in pending[r].items() if _consumes(op.action, k)]
                    if any((peer, r, k) not in sent for peer, k in needs):
                        break
                    for _, k in needs:
                        del pending[r][k]
                pc[r] += 1
                moved = True
        assert moved, f"lowered programs deadlock at {pc}"


def _consumes(action: Action, key: TensorKey) -> bool:
    return key.mb == action.mb and (
        (key.kind == "act" and action.kind == "F" and key.stage == action.stage - 1)
        or (key.kind == "grad" and action.kind in ("I", "B") and key.stage == action.stage + 1))


@settings(max_examples=60, deadline=None)
@given(plans(), st.sampled_from([None, 0, 1, 3]))
def test_sends_match_receives_and_programs_complete(plan, ahead):
    problem, orders = plan
    programs = _programs(problem, orders, ahead)
    sends = sorted((r, op.peer, op.key) for r, prog in enumerate(programs) for op in prog
                   if isinstance(op, Send))
    recvs = sorted((op.peer, r, op.key) for r, prog in enumerate(programs) for op in prog
                   if isinstance(op, PostRecv))
    assert sends == recvs
    assert len(set(sends)) == len(sends)
    for r, prog in enumerate(programs):
        assert tuple(op.action for op in prog if isinstance(op, Compute)) == orders[r]
    _run_together(programs)


@settings(max_examples=40, deadline=None)
@given(plans(), st.sampled_from([None, 0, 2]))
def test_receives_are_posted_within_the_window_and_sends_follow_their_producer(plan, ahead):
    problem, orders = plan
    for r in range(problem.p):
        computes = -1
        position = {a: k for k, a in enumerate(orders[r])}
        last = None
        for op in lower(problem, orders, r, ahead):
            if isinstance(op, Compute):
                computes += 1
                last = op.action
            elif isinstance(op, PostRecv):
                want = 0 if ahead is None else max(0, position[op.consumer] - ahead)
                assert computes + 1 == want
            else:
                assert op.producer == last


@settings(max_examples=40, deadline=None)
@given(plans(), st.sampled_from([None, 0, 2]))
def test_a_message_proves_delivered_exactly_what_its_sender_took_before(plan, ahead):
    """Read off each peer's program with receives posted anywhere: when it sends this rank a
    tensor, it has taken (at the consuming compute) exactly ``taken[peer][:proves[key]]``."""
    problem, orders = plan
    for rank in range(problem.p):
        known = delivery(problem, orders, rank)
        for peer in range(problem.p):
            posted, taken = set(), []
            for op in lower(problem, orders, peer, ahead):
                if isinstance(op, PostRecv) and op.peer == rank:
                    posted.add(op.key)
                elif isinstance(op, Compute):
                    taken += [key for key in sorted(posted) if _consumes(op.action, key)]
                    posted -= set(taken)
                elif op.peer == rank:
                    assert known.taken[peer][:known.proves[op.key]] == tuple(taken)
            assert known.taken.get(peer, ()) == tuple(taken)


def test_cross_rank_edges_only():
    """vshape keeps stage p-1 -> p on one rank: that boundary is passed locally, never sent."""
    problem = Problem(p=2, m=2, v=2, placement="vshape")
    plan = baseline_plan("zb-v", problem)
    keys = {op.key for r in range(2) for op in lower(problem, plan.orders, r) if isinstance(op, Send)}
    assert {k.stage for k in keys if k.kind == "act"} == {0, 2}
    assert {k.stage for k in keys if k.kind == "grad"} == {1, 3}
    one = Problem(p=1, m=3, v=2)
    assert all(isinstance(op, Compute) for op in lower(one, baseline_plan("interleaved-1f1b", one).orders, 0))


def test_edge_tensors_follow_the_dependency_rules():
    problem = Problem(p=3, m=2)
    assert edge_tensor(Action("F", 0, 1), Action("F", 1, 1)) == TensorKey("act", 0, 1)
    assert edge_tensor(Action("I", 2, 0), Action("I", 1, 0)) == TensorKey("grad", 2, 0)
    assert edge_tensor(Action("F", 1, 0), Action("I", 1, 0)) is None
    for dep in dependencies(problem, Action("W", 1, 0)):
        assert edge_tensor(dep, Action("W", 1, 0)) is None
    with pytest.raises(ValueError, match="no tensor"):
        edge_tensor(Action("F", 0, 0), Action("F", 2, 0))


def test_tags_are_unique_within_a_step():
    problem = Problem(p=2, m=5, v=3)
    keys = [TensorKey(k, s, i) for k in ("act", "grad") for s in range(problem.num_stages) for i in range(5)]
    assert len({tag(k, problem.num_stages) for k in keys}) == len(keys)


@pytest.mark.parametrize("name", ["gpipe", "1f1b", "zb-h1", "zb-h2"])
def test_textbook_plans_receive_in_send_order(name):
    problem = Problem(p=3, m=5)
    assert name in applicable(problem)
    assert message_order_errors(problem, baseline_plan(name, problem).orders) == []


def test_out_of_order_receives_are_reported_for_order_matching_backends():
    problem = Problem(p=2, m=2, split=False)
    orders = ((Action("F", 0, 0), Action("F", 0, 1), Action("B", 0, 1), Action("B", 0, 0)),
              (Action("F", 1, 1), Action("B", 1, 1), Action("F", 1, 0), Action("B", 1, 0)))
    Plan(problem=problem, orders=orders, source="test")  # a valid plan
    errors = message_order_errors(problem, orders)
    assert errors and "rank 1 receives from rank 0 in another order" in errors[0]


def test_negative_window_is_rejected():
    problem = Problem(p=2, m=2)
    with pytest.raises(ValueError, match="recv_ahead"):
        lower(problem, baseline_plan("1f1b", problem).orders, 0, -1)
