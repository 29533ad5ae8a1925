"""The validator: the executable specification every plan must meet.

Checks, in order: each action is a task of the problem; each task appears exactly once; each
stage runs on the rank the placement gives it; the orders are free of deadlock; no rank runs two
actions at once (for times recorded in a file); each rank stays within its activation cap.
Errors are one line each and name the rank, the position and the action.
"""

from __future__ import annotations

from fractions import Fraction

from schedc.actions import as_orders
from schedc.dag import Fused, cached_index, dependencies, fused_backwards, lag, not_a_task
from schedc.errors import ArgumentError, ScheduleError, counted, shown
from schedc.exact import fmt_exact as fmt
from schedc.problem import Problem, is_flag
from schedc.simulate import Orders, Slot, Timeline, covered, simulate, sparse


class Summary(str):
    """One error line standing for ``stands_for`` errors not listed one by one: an empty plan of a large
    problem misses millions of actions, and formatting each would take seconds."""

    stands_for: int
    at_least: bool
    """Whether ``stands_for`` is only a lower bound (``sparse_error``: the tasks were not checked)."""


def _summary(text: str, count: int, at_least: bool = False) -> Summary:
    line = Summary(text)
    line.stands_for, line.at_least = count, at_least
    return line


def with_prefix(prefix: str, errors: list[str]) -> list[str]:
    """Each line prefixed (a file name); a Summary still stands for its count."""
    return [_summary(prefix + e, e.stands_for, e.at_least) if isinstance(e, Summary) else prefix + e
            for e in errors]


def error_count(errors: list[str]) -> int:
    """The number of errors the lines stand for (a Summary stands for several)."""
    return sum(e.stands_for if isinstance(e, Summary) else 1 for e in errors)


def count_text(errors: list[str], count: int) -> str:
    """``count`` as printed: "at least" where a line's count is only a lower bound."""
    return f"at least {count}" if any(getattr(e, "at_least", False) for e in errors) else str(count)


LISTED_MISSING = 1000
"""Missing actions listed one by one; the rest are one Summary line."""


def sparse_error(problem: Problem, orders: Orders) -> list[str]:
    """One line for orders far too short for a large problem: a typo such as ``0F3000000`` in a CSV
    makes m three million, and listing the missing tasks would cost more than it tells."""
    if not sparse(problem, orders):
        return []
    missing = problem.num_tasks - covered(problem, orders)
    given = sum(len(order) for order in orders)
    actions = f"{given} action{'' if given == 1 else 's'}"
    return [_summary(f"plan has {actions} for the {problem.num_tasks} tasks of {problem.describe()}: "
                     f"at least {missing} are missing", missing, at_least=True)]


def structural_errors(problem: Problem, orders: Orders) -> list[str]:
    """Errors that make the orders not a schedule of the problem at all (no simulation needed)."""
    if len(orders) != problem.p:
        return [f"plan has {counted(len(orders), 'rank')}, the problem has p = {problem.p}"]
    sparse = sparse_error(problem, orders)
    if sparse:
        return sparse
    fused = fused_backwards(problem, orders)
    index = cached_index(problem, fused)
    errors: list[str] = []
    seen = bytearray(len(index.actions))  # 1: listed on a wrong rank only (so not missing), 2: on its own
    for r, order in enumerate(orders):
        for k, a in enumerate(order):
            t = index.ids.get(a)
            if t is None:
                errors.append(f"rank {r} position {k} action {a}: {not_a_task(problem, a, fused)}")
                continue
            if index.rank[t] != r:
                errors.append(
                    f"rank {r} position {k} action {a}: stage {a.stage} belongs to rank "
                    f"{index.rank[t]} under {problem.placement} placement"
                )
                seen[t] = seen[t] or 1
            elif seen[t] == 2:  # a stray copy on a wrong rank leaves the one on its own rank unblamed
                errors.append(f"rank {r} position {k} action {a}: duplicated")
            else:
                seen[t] = 2
    missing = [t for t in range(len(seen)) if not seen[t]]
    for t in missing[:LISTED_MISSING]:
        errors.append(f"rank {index.rank[t]} action {index.actions[t]}: missing")
    if len(missing) > LISTED_MISSING:
        rest = len(missing) - LISTED_MISSING
        errors.append(_summary(f"... and {rest} more missing actions", rest))
    return errors


def memory_errors(problem: Problem, timeline: Timeline) -> list[str]:
    """Ranks whose activation residency exceeds their cap, at the action that first exceeds it."""
    errors = []
    for r, cap in enumerate(problem.mem):
        if cap is None or timeline.peak_mem[r] <= cap:
            continue
        level = Fraction(0)
        for k, action in enumerate(timeline.actions[r]):
            level += problem.mem_delta(action.kind)
            if level > cap:
                errors.append(
                    f"rank {r} position {k} action {action}: activation memory "
                    f"{fmt(level)} exceeds the cap {fmt(cap)}"
                )
                break
    return errors


def timing_errors(problem: Problem, slots: tuple[tuple[Slot, ...], ...]) -> list[str]:
    """Checks times recorded in a plan file (not made by the simulator): each action lasts its
    duration, starts after the previous action of its rank and after its inputs have arrived."""
    errors = structural_errors(problem, tuple(tuple(s.action for s in rank) for rank in slots))
    if errors:
        return errors[:1]
    end = {s.action: s.end for rank in slots for s in rank}
    fused = fused_backwards(problem, [[s.action for s in rank] for rank in slots])
    for r, rank in enumerate(slots):
        for k, slot in enumerate(rank):
            error = _slot_error(problem, rank, k, end, fused)
            if error:
                errors.append(f"rank {r} position {k} action {slot.action}: {error}")
    return errors


def _slot_error(problem: Problem, rank: tuple[Slot, ...], k: int, end: dict, fused: Fused) -> str | None:
    """The first thing wrong with the recorded times of ``rank[k]``, if any."""
    slot, a = rank[k], rank[k].action
    if slot.end - slot.start != problem.duration(a.kind, a.stage):
        return f"lasts {fmt(slot.end - slot.start)}, its cost is {fmt(problem.duration(a.kind, a.stage))}"
    if k and slot.start < rank[k - 1].end:
        previous = rank[k - 1]
        if slot.start < previous.start:  # two entries swapped, say: not an overlap of the order's
            return (f"starts at {fmt(slot.start)}, before {previous.action} (at {fmt(previous.start)}), "
                    "which is listed ahead of it: list a rank's actions in the order they run")
        return f"starts at {fmt(slot.start)}, overlapping {previous.action} which ends at {fmt(previous.end)}"
    for d in dependencies(problem, a, fused):
        arrives = end[d] + lag(problem, d, a)
        if slot.start < arrives:
            return f"starts at {fmt(slot.start)} before its input {d} arrives at {fmt(arrives)}"
    return None


def replay_errors(timeline: Timeline, slots: tuple[tuple[Slot, ...], ...]) -> list[str]:
    """Recorded times that differ from the simulator's replay (the only times schedc stands by)."""
    return [f"rank {r} position {k} action {mine.action}: recorded at {fmt(mine.start)}-{fmt(mine.end)}, "
            f"the replay runs it at {fmt(truth.start)}-{fmt(truth.end)}"
            for r, (recorded, replayed) in enumerate(zip(slots, timeline.slots, strict=True))
            for k, (mine, truth) in enumerate(zip(recorded, replayed, strict=True))
            if (mine.start, mine.end) != (truth.start, truth.end)]


def validate(problem: Problem, orders: Orders | None = None, check_memory: bool = True) -> list[str]:
    """Every error of the orders, one line each; an empty list means a valid schedule.

    ``validate(plan)`` checks a Plan's own orders against its problem and cap, and its claimed
    bound as loading a plan file does (a bound above a fitting textbook schedule is false)."""
    if orders is None and hasattr(problem, "orders") and hasattr(problem, "problem"):
        plan = problem
        return validate(plan.problem, plan.orders, check_memory) + _claim_errors(plan)  # cap's and bound's
    if not isinstance(problem, Problem):
        raise ArgumentError(f"validate needs a Problem and orders, or a Plan; got {type(problem).__name__}")
    if orders is None:
        raise ArgumentError("validate needs the orders as well as the Problem (or a Plan alone)")
    if not is_flag(check_memory):  # an array's truth value is numpy's error, not one line
        raise ArgumentError(f"check_memory must be True or False, got {shown(check_memory)}")
    orders = as_orders(orders)
    errors = structural_errors(problem, orders)
    if errors:
        return errors
    try:
        timeline = simulate(problem, orders)
    except ScheduleError as err:
        return [str(err)]
    return memory_errors(problem, timeline) if check_memory else []


def _claim_errors(plan: object) -> list[str]:
    """A Plan's bound against the schedules that fit its cap (``claims.check_claims``)."""
    from schedc.claims import check_claims
    from schedc.plan import Plan

    if not isinstance(plan, Plan):
        return []
    try:
        check_claims(plan)
    except ScheduleError as err:
        return [str(err)]
    return []


def first_and_count(errors: list[str]) -> str:
    """One line: the first error and how many follow."""
    total = error_count(errors)
    rest = total - error_count(errors[:1])  # a summary line first already stands for its count
    more = "error" if rest == 1 else "errors"
    return errors[0] + (f" (+{count_text(errors[1:], rest)} more {more})" if rest > 0 else "")
