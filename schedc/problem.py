"""The problem model: what a pipeline schedule must satisfy.

A model is cut into ``p * v`` stages in layer order and spread over ``p`` ranks. Costs ``tf``,
``tb``, ``tw`` are the time of one microbatch through *all* the layers a rank holds, so one
stage costs ``t / v`` unless per-stage costs override it. Memory is counted in units of one
microbatch's activations through all the layers of a rank: a stage's F allocates ``1 / v``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from fractions import Fraction
from functools import cached_property
from numbers import Integral

from schedc.errors import ProblemError, counted, shown
from schedc.exact import MAX_DENOMINATOR, MAX_MAGNITUDE, exact, fmt_count, fmt_exact

PLACEMENTS = ("looped", "vshape")
MAX_TASKS = 10_000_000
"""Largest problem schedc takes: the simulator alone takes minutes and gigabytes beyond it, so a
typo such as m = 1000000000 is an error instead of a hang."""
W_MEM = Fraction(1, 2)
"""The default ``w_mem``: the share of a stage's activation that W still needs after I (the Zero
Bubble paper's M_W, here half of M_B)."""
KINDS_SPLIT = ("F", "I", "W")
KINDS_UNSPLIT = ("F", "B")


@dataclass(frozen=True)
class StageCost:
    """Time of one microbatch through one stage (not divided by v: it is that stage's own cost)."""

    tf: Fraction
    tb: Fraction
    tw: Fraction

    def __post_init__(self) -> None:
        for name in ("tf", "tb", "tw"):
            object.__setattr__(self, name, exact(getattr(self, name), name))
        if self.tf <= 0 or self.tb <= 0 or self.tw < 0:
            raise ProblemError(
                f"stage costs need tf > 0, tb > 0, tw >= 0; got tf={fmt_exact(self.tf)} "
                f"tb={fmt_exact(self.tb)} tw={fmt_exact(self.tw)}"
            )

    @classmethod
    def _derived(cls, tf: Fraction, tb: Fraction, tw: Fraction) -> StageCost:
        """Costs derived from a checked Problem's (tf / v, ...): not user numbers, so not checked
        again (1e-999 / 2 is finer than any number a user may give)."""
        cost = object.__new__(cls)
        for name, value in (("tf", tf), ("tb", tb), ("tw", tw)):
            object.__setattr__(cost, name, value)
        return cost


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One scheduling problem. Frozen and hashable; validated on construction."""

    p: int
    """Ranks (devices) in the pipeline."""
    m: int
    """Microbatches per training step."""
    v: int = 1
    """Stages (virtual chunks) per rank."""
    placement: str = "looped"
    """'looped': stage s on rank s mod p. 'vshape' (v=2): rank r holds stages r and 2p-1-r."""
    split: bool = True
    """Backward split into I (input gradient) and W (weight gradient); else one B task."""
    tf: Fraction = Fraction(1)
    tb: Fraction = Fraction(1)
    tw: Fraction = Fraction(1)
    stage_costs: tuple[StageCost, ...] | None = None
    """Optional per-stage costs, one per stage in layer order (StageCosts, (tf, tb, tw) triples or
    {tf, tb, tw} dicts). They replace tf, tb and tw, which then become their mean per rank (so a
    problem equals its copy made with ``dataclasses.replace``, and ``replace(problem,
    stage_costs=...)`` works). A problem file with both is an error: there nothing derives them."""
    comm: Fraction = Fraction(0)
    """Latency on every dependency between stages on different ranks (occupies neither rank)."""
    mem: tuple[Fraction | None, ...] = field(default=())
    """Activation cap per rank (None: no cap). An empty tuple, a single value, or a list of equal
    values is one cap for every rank (so ``dataclasses.replace(problem, p=...)`` keeps it); files and
    ``--mem`` give one cap or exactly p (``problem_io.problem_from_dict``)."""
    w_mem: Fraction = W_MEM
    """Share of a stage's activation that W still needs after I (the Zero Bubble paper's M_W)."""

    def __hash__(self) -> int:
        """The fields' hash, computed once: solver caches hash a problem per rank, and its ``mem``
        holds p values, so hashing it afresh each time made bounds quadratic in p."""
        found = self.__dict__.get("_hash")
        if found is None:
            found = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", found)
        return found

    def __getstate__(self) -> dict[str, object]:
        """Without the cached hash: strings hash differently in another process."""
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def __post_init__(self) -> None:
        self._check_counts()
        if self.stage_costs is None:  # else their means replace tf, tb, tw, whatever was given beside
            self._check_rank_costs()
        for name in ("comm", "w_mem"):
            object.__setattr__(self, name, exact(getattr(self, name), name))
        if self.comm < 0:
            raise ProblemError(f"comm must be >= 0, got {fmt_exact(self.comm)}")
        if not 0 <= self.w_mem <= 1:
            raise ProblemError(f"w_mem must be within [0, 1], got {fmt_exact(self.w_mem)}")
        object.__setattr__(self, "mem", self._normalise_caps(self.mem))
        self._check_stage_costs()

    def _check_rank_costs(self) -> None:
        for name in ("tf", "tb", "tw"):
            object.__setattr__(self, name, exact(getattr(self, name), name, MAX_MAGNITUDE, MAX_DENOMINATOR))
        if self.tf <= 0 or self.tb <= 0 or self.tw < 0:
            got = ", ".join(fmt_exact(t) for t in (self.tf, self.tb, self.tw))
            raise ProblemError(f"costs need tf > 0, tb > 0, tw >= 0; got {got}")

    def _check_counts(self) -> None:
        for name in ("p", "m", "v"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise ProblemError(f"{name} must be a positive integer, got {shown(value)}")
            object.__setattr__(self, name, int(value))
        if not isinstance(self.placement, str) or self.placement not in PLACEMENTS:
            raise ProblemError(f"placement must be one of {', '.join(PLACEMENTS)}, "
                               f"got {shown(self.placement)}")
        object.__setattr__(self, "placement", str(self.placement))  # numpy's str_ is a str subclass
        if not is_flag(self.split):
            raise ProblemError(f"split must be true or false, got {shown(self.split)}")
        object.__setattr__(self, "split", bool(self.split))  # numpy's bool is no bool subclass
        if self.placement == "vshape" and self.v != 2:
            raise ProblemError(f"vshape placement needs v = 2 (two stages per rank), got v = {self.v}")
        if self.num_tasks > MAX_TASKS:  # checked before one cap per rank is laid out
            kinds = len(self.kinds)
            raise ProblemError(f"problem too large: {fmt_count(self.num_tasks)} tasks (p*v*m*{kinds}); "
                               f"schedc handles at most {MAX_TASKS}")

    def _normalise_caps(self, mem: object) -> tuple[Fraction | None, ...]:
        if mem is None:
            mem = ()
        if not _is_list(mem):  # one cap; bytes too, whose entries would be caps of 52 for b'4'
            mem = (mem,)
        if len(mem) == 0:
            return (None,) * self.p
        what = "mem" if len(mem) == 1 else "mem[{}]"  # of many caps, the one at fault (as stage_costs[k])
        caps = tuple(_cap(c, what.format(k)) for k, c in enumerate(mem))  # a list in a list is no cap
        if len(set(caps)) == 1:  # one cap for all ranks, however many times it is given
            caps = (caps[0],) * self.p
        if len(caps) != self.p:
            raise ProblemError(f"mem gives {len(caps)} caps for {counted(self.p, 'rank')}; "
                               f"give one or {self.p}")
        for rank, cap in enumerate(caps):
            if cap is not None and cap <= 0:
                raise ProblemError(f"mem cap of rank {rank} must be > 0, got {fmt_exact(cap)}")
        return caps

    def _check_stage_costs(self) -> None:
        if self.stage_costs is None:
            return
        if not _is_list(self.stage_costs):
            raise ProblemError(f"stage_costs must be a list of (tf, tb, tw), got {shown(self.stage_costs)}")
        costs = tuple(_stage_cost(c, k) for k, c in enumerate(self.stage_costs))
        if len(costs) != self.num_stages:
            raise ProblemError(
                f"stage_costs gives {counted(len(costs), 'stage')}, the problem has "
                f"p*v = {self.num_stages}"
            )
        object.__setattr__(self, "stage_costs", costs)
        for kind in ("tf", "tb", "tw"):  # what the stage costs replace: their mean per rank, exactly
            mean = sum((getattr(c, kind) for c in costs), Fraction(0)) / self.p
            object.__setattr__(self, kind, mean)

    # ---- structure -------------------------------------------------------------------------

    @property
    def num_stages(self) -> int:
        return self.p * self.v

    @property
    def kinds(self) -> tuple[str, ...]:
        return KINDS_SPLIT if self.split else KINDS_UNSPLIT

    @cached_property
    def stage_rank(self) -> tuple[int, ...]:
        """Rank that holds each stage, in layer order."""
        if self.placement == "vshape":
            return tuple(s if s < self.p else 2 * self.p - 1 - s for s in range(self.num_stages))
        return tuple(s % self.p for s in range(self.num_stages))

    @cached_property
    def rank_stages(self) -> tuple[tuple[int, ...], ...]:
        """Stages each rank holds, in layer order."""
        held: list[list[int]] = [[] for _ in range(self.p)]
        for s, r in enumerate(self.stage_rank):  # one pass: p x stages would be quadratic in p
            held[r].append(s)
        return tuple(map(tuple, held))

    @cached_property
    def binding_caps(self) -> tuple[Fraction | None, ...]:
        """Each rank's cap where it can bind, else None: a rank holds at most one unit per microbatch
        (v stages of 1/v each), so a cap of m or more never binds. The solvers search such a rank as
        uncapped (a cap of 1e19 in a CP-SAT cumulative overflowed int64); ``mem`` keeps what the user
        gave, for what schedc prints."""
        return tuple(c if c is not None and c < self.m else None for c in self.mem)

    @property
    def num_tasks(self) -> int:
        return self.num_stages * self.m * len(self.kinds)

    # ---- costs and memory ------------------------------------------------------------------

    def stage_cost(self, stage: int) -> StageCost:
        if not isinstance(stage, Integral) or isinstance(stage, bool) or not 0 <= stage < self.num_stages:
            raise ProblemError(f"no stage {shown(stage)}: this problem has stages 0..{self.num_stages - 1}")
        if self.stage_costs is not None:
            return self.stage_costs[stage]
        return StageCost._derived(self.tf / self.v, self.tb / self.v, self.tw / self.v)

    def duration(self, kind: str, stage: int) -> Fraction:
        try:
            if stage >= 0:  # a negative stage would index from the end
                return self._durations[kind][stage]
        except (KeyError, IndexError, TypeError):  # hot path: no checks before the lookup
            pass
        raise ProblemError(f"no {shown(kind)} task at stage {shown(stage)}: this problem has stages "
                           f"0..{self.num_stages - 1} and kinds {'/'.join(self._durations)}")

    @cached_property
    def _durations(self) -> dict[str, tuple[Fraction, ...]]:
        costs = [self.stage_cost(s) for s in range(self.num_stages)]
        return {
            "F": tuple(c.tf for c in costs),
            "I": tuple(c.tb for c in costs),
            "W": tuple(c.tw for c in costs),
            "B": tuple(c.tb + c.tw for c in costs),
        }

    @property
    def stage_activation(self) -> Fraction:
        """Activation one stage's F allocates, in units of a rank's full activation."""
        return Fraction(1, self.v)

    def mem_delta(self, kind: str) -> Fraction:
        """Change of activation memory a task causes: + at the start of F, - at the end of I/W/B."""
        try:
            return self._mem_deltas[kind]
        except (KeyError, TypeError):  # hot path: no checks before the lookup
            raise ProblemError(f"no task kind {shown(kind)}: the kinds are {'/'.join(self._mem_deltas)}") \
                from None

    @cached_property
    def _mem_deltas(self) -> dict[str, Fraction]:
        a = self.stage_activation
        return {"F": a, "I": -(1 - self.w_mem) * a, "W": -self.w_mem * a, "B": -a}

    @cached_property
    def time_scale(self) -> int:
        """Ticks per time unit: the smallest integer that makes every duration and the latency
        integral. The simulator and every solver model count time in these integers, so one
        definition keeps their ticks the same (a fused B, I + W, is integral too)."""
        durations = (d for kind in self.kinds for d in self._durations[kind])
        return math.lcm(self.comm.denominator, *(d.denominator for d in durations))

    @cached_property
    def memory_scale(self) -> int:
        """Memory units per activation unit in the solver models: the smallest integer that makes
        every memory delta of the problem's kinds integral (B frees what F allocated)."""
        return math.lcm(*(self.mem_delta(kind).denominator for kind in self.kinds))

    def describe(self) -> str:
        """One-line summary used in headers and error messages; numbers as the CLI takes them ('2.5',
        or '7/3' where no short decimal is exact), like the lines under a header."""
        caps = {c for c in self.mem}
        cap = "none" if caps == {None} else ",".join("none" if c is None else fmt_exact(c) for c in self.mem)
        if len(caps) == 1 and None not in caps:
            cap = fmt_exact(self.mem[0])
        costs = ("per-stage" if self.stage_costs
                 else f"tf={fmt_exact(self.tf)} tb={fmt_exact(self.tb)} tw={fmt_exact(self.tw)}")
        share = f" w_mem={fmt_exact(self.w_mem)}" if self.split and self.w_mem != W_MEM else ""  # moves peaks
        return (
            f"p={fmt_count(self.p)} m={fmt_count(self.m)} v={fmt_count(self.v)} {self.placement} "
            f"{'split' if self.split else 'unsplit'} {costs} comm={fmt_exact(self.comm)} mem={cap}{share}"
        )


def _stage_cost(entry: object, index: int) -> StageCost:
    """One per-stage override: a StageCost, a (tf, tb, tw) triple or a {tf, tb, tw} mapping."""
    if isinstance(entry, StageCost):
        return entry
    if isinstance(entry, Mapping):
        if set(entry) != {"tf", "tb", "tw"}:
            got = sorted(map(str, entry))
            raise ProblemError(f"stage_costs[{index}] must have exactly tf, tb, tw; got {got}")
        entry = (entry["tf"], entry["tb"], entry["tw"])
    if _is_list(entry) and len(entry) == 3:
        try:
            return StageCost(*entry)
        except ProblemError as err:
            raise ProblemError(f"stage_costs[{index}]: {err}") from None
    raise ProblemError(f"stage_costs[{index}] must be (tf, tb, tw), got {shown(entry)}")


NUMPY_BOOLS = (("numpy", "bool"), ("numpy", "bool_"))
"""numpy's bool type (``bool_`` before numpy 2), told apart without importing numpy."""


def is_flag(value: object) -> bool:
    """A bool or numpy's bool (an array's element, which is no bool subclass); 1 and "yes" are not."""
    return isinstance(value, bool) or (type(value).__module__, type(value).__name__) in NUMPY_BOOLS


def _is_list(value: object) -> bool:
    """A list or tuple of entries, or an array of them (numpy's: caps held in an array were told
    "mem must be a number"); text is none, nor are bytes (b'4' is a sequence of the int 52)."""
    if getattr(value, "ndim", 0) >= 1 and hasattr(value, "tolist"):
        return True
    return isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray | memoryview)


def _cap(value: object, what: str) -> Fraction | None:
    """One rank's cap: a number, or None / 'none' for no cap (TOML has no null)."""
    if value is None or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    return exact(value, what)
