# sed -i '63s/other_key >= key/other_key > key/' solvers/list_engine.py
# sed -i '63s/ready >= end/ready > end/' solvers/list_engine.py
# sed -i '63s/other_key >= key or ready >= end/other_key >= key and ready >= end/' solvers/list_engine.py
# sed -i '67s/if sc.delta\[sk\] > 0:/if sc.delta[sk] >= 0:/' solvers/list_engine.py
# sed -i '69s/mb != entry_mb/mb == entry_mb/' solvers/list_engine.py
# sed -i '69s/(entry and mb != entry_mb) or/(entry and mb != entry_mb) and/' solvers/list_engine.py
# sed -i '152s/self.next_entry\[r\])/self.next_entry[r] + 1)/' solvers/list_engine.py
"""The 'wait' variants' rule (``list_engine.Engine.worth_waiting``), case by case: a rank idles for a
task on its way only when that task's key is strictly smaller and it arrives strictly before the
task at hand would end; an F is waited for only when it could start (an entry only in its turn, and
only when memory allows), every other kind always. The wait variants' plans are valid either way, so
a slip in one of these cases only lengthens (or shortens) the step, which no validity test notices."""

from __future__ import annotations

from fractions import Fraction

from schedc.problem import Problem
from schedc.solvers.list_engine import Engine
from schedc.solvers.priorities import task_keys
from schedc.solvers.scaled import Scaled, scaled

UNCAPPED = Problem(p=2, m=4, v=1, tf=1, tb=2, tw=1)


def _engine(problem: Problem, keys: list[int]) -> tuple[Scaled, Engine]:
    sc = scaled(problem)
    return sc, Engine(sc, keys, list(sc.caps), ("banker",) * problem.p, wait=True)


def _task(sc: Scaled, kind: str, stage: int, mb: int) -> int:
    return sc.sk_of(kind, stage) * sc.m + mb


def test_only_a_strictly_smaller_key_arriving_strictly_before_the_end_is_waited_for() -> None:
    """Equal keys are not worth idling for (the task at hand is as urgent), nor is a task that
    arrives only when the one at hand would end, nor one of larger key however early it comes."""
    sc = scaled(UNCAPPED)
    keys = [10] * (sc.num_sk * sc.m)
    sc, engine = _engine(UNCAPPED, keys)
    task = _task(sc, "I", 1, 0)
    other = _task(sc, "W", 1, 1)  # a kind that frees memory: no fit test
    end = 5 + sc.dur[sc.sk_of("I", 1)]
    assert engine.worth_waiting({other: (9, end - 1)}, task, 5, 0)
    assert not engine.worth_waiting({other: (10, 5)}, task, 5, 0)  # equal key
    assert not engine.worth_waiting({other: (9, end)}, task, 5, 0)  # arrives as the task would end
    assert not engine.worth_waiting({other: (11, 5)}, task, 5, 0)  # larger key, arriving at once


def test_an_entry_is_waited_for_in_its_turn_only() -> None:
    """Entries go in index order: the next one in turn is worth waiting for, a later one is not
    (it could not start when it arrives)."""
    sc = scaled(UNCAPPED)
    sc, engine = _engine(UNCAPPED, [10] * (sc.num_sk * sc.m))
    task = _task(sc, "I", 1, 0)
    assert sc.entry[1] == sc.sk_of("F", 1)
    in_turn, out_of_turn = _task(sc, "F", 1, 2), _task(sc, "F", 1, 3)
    assert engine.worth_waiting({in_turn: (9, 5)}, task, 5, 2)
    assert not engine.worth_waiting({out_of_turn: (9, 5)}, task, 5, 2)


def test_a_task_that_frees_nothing_is_waited_for_even_when_no_forward_would_fit() -> None:
    """With w_mem = 0 a W frees nothing (delta 0); it is no F, so it needs no room and is waited
    for even when an F would not fit. Here (cap 4 units, 2 per microbatch) microbatch 0 entered
    and waits for its second F while microbatch 1 overtook it and holds both its activations:
    another unit for microbatch 1 would leave microbatch 0 without room, yet 1's W is worth waiting
    for."""
    problem = Problem(p=1, m=4, v=2, tf=1, tb=1, tw=1, mem=2, w_mem=0)
    sc = scaled(problem)
    sc, engine = _engine(problem, [10] * (sc.num_sk * sc.m))
    assert sc.delta[sc.sk_of("W", 1)] == 0 and sc.caps == (4,)
    memory = engine.memory[0]
    assert memory is not None
    memory.allocate(0, True, 0)
    memory.allocate(1, True, 1)
    memory.allocate(1, False, 2)
    assert not memory.safe(1, False, 3)
    w = _task(sc, "W", 1, 1)
    assert engine.worth_waiting({w: (9, 3)}, _task(sc, "I", 0, 2), 3, 2)


class _Recording(Engine):
    """Records, per call of the wait test, the entry microbatch it was told is next in turn and
    the number of entries the rank has started so far (entries go in index order: the same)."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.calls: list[tuple[int, int]] = []

    def worth_waiting(self, pending: dict[int, tuple[int, int]], task: int, now: int, entry_mb: int) -> bool:
        r = next(i for i, p in enumerate(self.pending) if p is pending)
        entered = sum(1 for t in self.orders[r] if t // self.sc.m == self.sc.entry[r])
        self.calls.append((entry_mb, entered))
        return super().worth_waiting(pending, task, now, entry_mb)


def test_the_wait_test_is_told_the_entry_in_turn() -> None:
    """The rank's next entry is the number of entries it started; one past it would wait for an
    entry that cannot start and skip the one that can."""
    problem = Problem(p=4, m=6, v=2, placement="vshape", tf=1, tb=2, tw=1, comm=Fraction(1, 2), mem=2)
    sc = scaled(problem)
    engine = _Recording(sc, task_keys(sc, "lst-mb"), list(sc.caps), ("forecast",) * problem.p, wait=True)
    engine.run()
    assert engine.calls and all(told == entered for told, entered in engine.calls)

