"""The action IR: one compute task, written as torch.distributed.pipelining writes it (``2F0``).

A token is ``{stage}{kind}{microbatch}``: stage index first, then F (forward), I (input
gradient), W (weight gradient) or B (unsplit backward), then the microbatch index.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from numbers import Integral
from typing import NamedTuple

from schedc.errors import PlanFormatError, shown

KINDS = ("F", "I", "W", "B")
MAX_INDEX_DIGITS = 9
"""A stage or microbatch index has at most this many digits: no problem has 10**9 of either (schedc
takes at most 10 million tasks), and a longer number is a typo that would fill every message."""
_INDEX_LIMIT = 10**MAX_INDEX_DIGITS
_TOKEN = re.compile(r"([0-9]+)([FIWB])([0-9]+)")
_TORCH_COMM = re.compile(r"([0-9]+)(SEND_F|RECV_F|SEND_B|RECV_B|UNSHARD|RESHARD|REDUCE_GRAD)([0-9]*)")
"""torch's communication and FSDP actions (its ``compute_comms`` CSV and lowered orders): schedc
derives every transfer from the compute order itself, so a reader skips them."""
_OVERLAP = re.compile(r"\((.*)\)OVERLAP_F_B")
"""torch's DualPipeV cell running a forward and a backward together: ``(0F3;3B1)OVERLAP_F_B``."""


class Action(NamedTuple):
    """One task: a pass of one microbatch through one stage. Plain data, hashable, ordered."""

    kind: str
    stage: int
    mb: int

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{self.mb}"

    @staticmethod
    def parse(token: str) -> Action:
        """Reads a token such as ``3I12``; anything else is a PlanFormatError."""
        match = _TOKEN.fullmatch(token.strip()) if isinstance(token, str) else None
        if match is None:
            raise PlanFormatError(f"unknown action token {shown(token)} (expected e.g. 0F3, 5I2, 5W2, 1B0)")
        stage, kind, mb = match.groups()
        if max(len(stage.lstrip("0")), len(mb.lstrip("0"))) > MAX_INDEX_DIGITS:
            raise PlanFormatError(f"action token {shown(token.strip(), 12)} has an index too long")
        return Action(kind, int(stage), int(mb))


@functools.lru_cache(maxsize=1 << 18)
def parse_cell(token: str) -> tuple[Action, ...]:
    """The compute actions of one torch token: one Action, the parts of an OVERLAP_F_B in order, or
    none for an empty cell or a communication action. Cached: ``validate`` reads a CSV's cells
    twice (the plan, then ``torch_lockstep``), and the regular expressions were most of its time."""
    token = token.strip()
    if not token or transfer_of(token) is not None:
        return ()
    overlap = _OVERLAP.fullmatch(token)
    if overlap:
        parts = overlap.group(1).split(";")
        if any(_OVERLAP.fullmatch(part.strip()) for part in parts):  # torch writes none; deep ones recurse
            raise PlanFormatError(f"an OVERLAP_F_B inside an OVERLAP_F_B: {shown(token, 60)}")
        actions = tuple(a for part in parts for a in parse_cell(part))
        if not actions:  # torch reads "()OVERLAP_F_B" as an action its runtime then asserts on
            raise PlanFormatError(f"an OVERLAP_F_B with no compute action inside: {shown(token, 60)}")
        return actions
    return (Action.parse(token),)


def is_overlap(cell: str) -> bool:
    """An OVERLAP_F_B cell, however many parts it holds: only torch's runtime class runs one."""
    return bool(_OVERLAP.fullmatch(cell.strip()))


def transfer_of(token: str) -> tuple[int, str, int | None] | None:
    """(stage, kind, microbatch) of a torch communication or FSDP token (``2SEND_F3``; the FSDP ones
    may name no microbatch: None), None for any other token. schedc derives its own transfers, but
    a file torch would fail on is refused."""
    comm = _TORCH_COMM.fullmatch(token.strip())
    if comm is None:
        return None
    stage, kind, mb = comm.groups()
    if max(len(stage.lstrip("0")), len(mb.lstrip("0"))) > MAX_INDEX_DIGITS:
        raise PlanFormatError(f"transfer token {shown(token.strip(), 12)} has an index too long")
    if kind.startswith(("SEND", "RECV")) and not mb:
        raise PlanFormatError(f"transfer token {shown(token, 40)} names no microbatch (torch writes "
                              f"{int(stage)}{kind}0 for microbatch 0)")
    return int(stage), kind, int(mb) if mb else None


def entry_actions(entry: object) -> tuple[Action, ...]:
    """The actions of one order entry, in what users hold: an Action, a token ('2F0', or any torch
    token as ``parse_cell`` reads it), torch's ``_Action`` (read through its token) or a
    (kind, stage, mb) triple."""
    if isinstance(entry, str) or hasattr(entry, "computation_type"):
        return parse_cell(str(entry))
    if isinstance(entry, Sequence) and len(entry) == 3 and _is_kind(entry[0]) \
            and _is_index(entry[1]) and _is_index(entry[2]):
        return (Action(entry[0], int(entry[1]), int(entry[2])),)  # an Action of numpy ints, say
    raise PlanFormatError(f"an action must be an Action, a token such as '0F3' or a (kind, stage, mb) triple "
                          f"of a kind in {'/'.join(KINDS)} and two integer indices from 0 to "
                          f"{_INDEX_LIMIT - 1}, got {shown(entry, 60)}")


def _is_kind(kind: object) -> bool:
    return isinstance(kind, str) and kind in KINDS


def _is_index(index: object) -> bool:
    """What a token's index can be: bools and floats are not (``0F0.0`` reads back nowhere)."""
    return isinstance(index, Integral) and not isinstance(index, bool) and 0 <= index < _INDEX_LIMIT


class CheckedOrders(tuple):
    """Orders that ``as_orders`` returned: a tuple of per-rank tuples of Actions whose fields are
    checked, so reading them again (a Plan's orders in its replay) costs nothing."""

    __slots__ = ()


def as_orders(orders: object) -> tuple[tuple[Action, ...], ...]:
    """Per-rank orders as Actions. Also takes torch's ``pipeline_order`` shape: a dict from rank to
    list, where None marks an idle step (the time a rank waits is the simulator's to derive)."""
    if type(orders) is CheckedOrders:
        return orders
    if isinstance(orders, Mapping):
        orders = _rank_rows(orders)
    if not isinstance(orders, Sequence) or isinstance(orders, str):
        raise PlanFormatError(f"orders must be one list of actions per rank, got {type(orders).__name__}")
    rows = []
    for r, row in enumerate(orders):
        if not isinstance(row, Sequence) or isinstance(row, str):
            raise PlanFormatError(f"rank {r}: expected a list of actions, got {shown(row, 60)}")
        plain = _plain_row(row)
        rows.append(plain if plain is not None else
                    tuple(a for entry in row if entry is not None for a in entry_actions(entry)))
    return CheckedOrders(rows)


_KIND_SET, _STR, _INT, _ACTION = frozenset(KINDS), {str}, {int}, {Action}


def _plain_row(row: Sequence) -> tuple[Action, ...] | None:
    """The row as it is when every entry is an Action of int fields in range (what schedc itself
    builds), checked in a few passes at C speed; None: read it entry by entry."""
    if not row or set(map(type, row)) != _ACTION:
        return None
    kinds, stages, mbs = zip(*row, strict=True)
    if set(map(type, kinds)) == _STR and _KIND_SET.issuperset(kinds) \
            and set(map(type, stages)) == _INT == set(map(type, mbs)) \
            and min(stages) >= 0 and max(stages) < _INDEX_LIMIT and min(mbs) >= 0 and max(mbs) < _INDEX_LIMIT:
        return tuple(row)
    return None


def _rank_rows(orders: Mapping) -> list:
    """The rows of a dict keyed by rank, in rank order; numpy's integers count as ranks."""
    ranks = {int(k): k for k in orders if isinstance(k, Integral) and not isinstance(k, bool)}
    if len(ranks) != len(orders) or sorted(ranks) != list(range(len(orders))):
        raise PlanFormatError(f"a dict of orders needs the ranks 0..{len(orders) - 1} as keys, "
                              f"got {shown(list(orders), 60)}")
    return [orders[ranks[r]] for r in range(len(ranks))]
