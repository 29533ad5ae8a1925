"""The transfer and FSDP tokens of torch's ``compute_comms`` CSVs, checked as torch's runtime runs them.

schedc derives its own transfers from the compute order, but a file that carries torch's tokens
(``2SEND_F0``, ``3RECV_B1``, ``0REDUCE_GRAD``, ...) is run by ``_PipelineScheduleRuntime`` exactly as
written, so ``validate`` saying OK of one it cannot run would be wrong. What it does, and so what is
refused here (a tester's files passed with a receive missing, a send missing, or a receive after
the forward that needs it; torch's runtime then failed or timed out):

- a forward (backward) whose input comes from another rank waits on a ``RECV_F`` (``RECV_B``) posted
  earlier in its row, consumed by it (torch: "Computing ... before receiving input"); a second
  receive before that is torch's "Recv twice";
- a ``SEND_F`` (``SEND_B``) follows the forward (I or B) whose output it sends, and names a stage
  whose neighbour is on another rank (adjacent stages on one rank hand over in memory);
- transfers between two ranks are paired in the order they are posted (no tags), so each rank's
  sends to a peer must list, in order, what that peer receives from it: crossed, a microbatch's
  data would land in another's buffer;
- no deadlock: with sends that never block (torch waits for them at the end of the step), a rank
  stops only at a compute action whose received input was not yet sent;
- FSDP: a stage named by ``UNSHARD``/``RESHARD`` computes only while unsharded (torch: "Attempted to
  compute on sharded"), is not unsharded twice or resharded while sharded;
- ``REDUCE_GRAD`` comes once per stage with a backward, after its last backward, in every file with
  any of these tokens: torch 2.13's runtime scales the gradients by 1/m there, FSDP or not (without
  it they are m times too large; earlier, later gradients would miss the reduction and scaling).

Errors are (row, column, message) of the first offending cell, for ``torch_csv.check_csv``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import NamedTuple

from schedc.actions import Action
from schedc.problem import Problem

_PEER_STEP = {"SEND_F": 1, "RECV_F": -1, "SEND_B": -1, "RECV_B": 1}
"""The stage across each transfer: SEND_F goes to stage + 1, RECV_F comes from stage - 1, ..."""
_MATCH = {"SEND_F": "RECV_F", "SEND_B": "RECV_B"}
_COMMS_TOKENS = {*_PEER_STEP, "UNSHARD", "RESHARD", "REDUCE_GRAD"}
"""Any of them makes a file one torch's ``compute_comms`` reader runs as written: one with FSDP
tokens and no transfers still needs its receives at p >= 2 (torch: "Attempted to run compute
action ... before receiving input"), and one with transfers its REDUCE_GRADs."""


class Step(NamedTuple):
    """One item of a row in torch's order: a compute action or a transfer/FSDP token."""

    column: int
    kind: str
    """F, I, W, B, or SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD, REDUCE_GRAD."""
    stage: int
    mb: int | None

    def __str__(self) -> str:
        return f"{self.stage}{self.kind}{'' if self.mb is None else self.mb}"


Error = tuple[int, int, str]
"""(row, column, message), from 0."""


def comms_error(rows: tuple[tuple[Step, ...], ...], problem: Problem) -> Error | None:
    """The first way torch's runtime would fail on (or silently mis-pair) the rows' transfers, None
    if they have none or run (module doc). The compute order itself is ``validate``'s."""
    if any(s.stage >= problem.num_stages for row in rows for s in row):
        return None  # a compute action of no stage: validate names it
    if not any(s.kind in _COMMS_TOKENS for row in rows for s in row):
        return None  # compute only: torch lowers it itself (transfers, REDUCE_GRAD) as it loads it
    for r, row in enumerate(rows):  # torch runs every other file as written, tokens and all
        error = _fsdp_error(row) or _row_error(row, problem)
        if error:
            return (r, *error)
    return _pairing_error(rows, problem) or _deadlock(rows, problem) or _reduce_errors(rows)


def _reduce_errors(rows: tuple[tuple[Step, ...], ...]) -> Error | None:
    """Last: a file that runs but misses a REDUCE_GRAD is named for that, once its transfers hold."""
    for r, row in enumerate(rows):
        error = _reduce_error(row)
        if error:
            return (r, *error)
    return None


def _input_from(step: Step, problem: Problem) -> str | None:
    """The receive a compute step waits on, when its input comes from another rank (adjacent stages
    on one rank hand over in memory, as torch's V-schedule special case does)."""
    rank = problem.stage_rank
    if step.kind == "F" and step.stage > 0 and rank[step.stage - 1] != rank[step.stage]:
        return "RECV_F"
    last = problem.num_stages - 1
    if step.kind in ("I", "B") and step.stage < last and rank[step.stage + 1] != rank[step.stage]:
        return "RECV_B"
    return None


Key = tuple[str, int, int | None]


def _row_error(row: tuple[Step, ...], problem: Problem) -> tuple[int, str] | None:
    """One rank's row on its own: each transfer names a peer on another rank and each send follows
    its action; each received input is posted once before the action that takes it, and used."""
    done: set[Key] = set()
    posted: dict[Key, Step] = {}
    for step in row:
        if step.kind in _PEER_STEP:
            error = _peer_error(step, problem) or _send_before_its_action(step, done) or \
                _post(step, posted)
        else:
            error = _take(step, posted, problem)
            done.add(("B" if step.kind == "I" else step.kind, step.stage, step.mb))
        if error:
            return step.column, error
    unused = min(posted.values(), default=None)
    if unused is not None:
        return unused.column, f"receives {unused}, but no action after it in its row uses it"
    return None


def _post(step: Step, posted: dict[Key, Step]) -> str | None:
    """A receive is posted until its action takes it: torch refuses a second one before that."""
    if step.kind.startswith("RECV"):
        key = (step.kind, step.stage, step.mb)
        if key in posted:
            return f"receives {step} twice before the action that uses it"
        posted[key] = step
    return None


def _take(step: Step, posted: dict[Key, Step], problem: Problem) -> str | None:
    """A compute action whose input crosses ranks takes its posted receive (torch: "Computing ...
    before receiving input" without one)."""
    wanted = _input_from(step, problem) if step.kind in ("F", "I", "B") else None
    if wanted is None:
        return None
    if posted.pop((wanted, step.stage, step.mb), None) is None:
        needed = f"{step.stage}{wanted}{step.mb}"
        return f"{step} runs before its input is received: torch's runtime needs {needed} earlier in its row"
    return None


def _peer_error(step: Step, problem: Problem) -> str | None:
    """The stage across the transfer exists and is on another rank."""
    peer = step.stage + _PEER_STEP[step.kind]
    if peer < 0:
        return f"{step}: stage 0 is the first, so nothing crosses to or from a stage before it"
    if peer >= problem.num_stages:
        return f"{step}: stage {step.stage} is the last, so nothing crosses to or from a stage after it"
    if problem.stage_rank[peer] == problem.stage_rank[step.stage]:
        low, high = sorted((peer, step.stage))
        return (f"{step} transfers between stages {low} and {high}, both on this rank: torch hands those "
                "over in memory, and a send to itself never completes")
    return None


def _send_before_its_action(step: Step, done: set[Key]) -> str | None:
    """A send posts its action's output (or input gradient), so it comes after that action."""
    if step.kind == "SEND_F" and ("F", step.stage, step.mb) not in done:
        return f"{step} comes before {step.stage}F{step.mb}, whose output it sends"
    if step.kind == "SEND_B" and ("B", step.stage, step.mb) not in done:
        return f"{step} comes before {step.stage}I{step.mb} (or B), whose input gradient it sends"
    return None


def _pairing_error(rows: tuple[tuple[Step, ...], ...], problem: Problem) -> Error | None:
    """Each rank's sends to a peer, in order, against what the peer receives from it, in order."""
    rank = problem.stage_rank
    sent: dict[tuple[int, int], list[Step]] = defaultdict(list)
    received: dict[tuple[int, int], list[tuple[int, Step]]] = defaultdict(list)
    for r, row in enumerate(rows):
        for s in row:
            if s.kind in _PEER_STEP:
                peer = rank[s.stage + _PEER_STEP[s.kind]]
                if s.kind.startswith("SEND"):
                    sent[r, peer].append(s)
                else:
                    received[peer, r].append((r, s))
    for pair in sorted(set(sent) | set(received)):
        error = _paired(pair, sent[pair], received[pair])
        if error:
            return error
    return None


def _paired(pair: tuple[int, int], sends: list[Step], recvs: list[tuple[int, Step]]) -> Error | None:
    """A receive no send matches, a send no receive matches, then the first two paired out of order."""
    def match(send: Step) -> Key:
        return _MATCH[send.kind], send.stage + _PEER_STEP[send.kind], send.mb

    wanted, got = [match(s) for s in sends], [(s.kind, s.stage, s.mb) for _, s in recvs]
    unsent, unreceived = Counter(got) - Counter(wanted), Counter(wanted) - Counter(got)
    for r, recv in recvs:
        if unsent[recv.kind, recv.stage, recv.mb]:
            return r, recv.column, f"{recv} has no matching send in rank {pair[0]}'s row"
    for send in sends:
        if unreceived[match(send)]:
            return pair[0], send.column, f"{send} has no matching receive in rank {pair[1]}'s row"
    for k, ((r, recv), send) in enumerate(zip(recvs, sends, strict=True)):
        if got[k] != wanted[k]:
            return (r, recv.column, f"{recv} is receive {k + 1} from rank {pair[0]}, whose send {k + 1} "
                    f"to this rank is {send}: torch pairs two ranks' transfers in the order they are "
                    "posted, so one microbatch's data would land in another's buffer")
    return None


def _deadlock(rows: tuple[tuple[Step, ...], ...], problem: Problem) -> Error | None:
    """Runs the rows as torch's runtime does (a compute action waits for its received input's send;
    nothing else waits) and names a stuck rank's first waiting action, if any rank never finishes."""
    sent: set[Key] = set()
    at = [0] * len(rows)
    progress = True
    while progress:
        progress = False
        for r, row in enumerate(rows):
            while at[r] < len(row) and _ready(row[at[r]], sent, problem):
                step = row[at[r]]
                if step.kind.startswith("SEND"):
                    sent.add((step.kind, step.stage, step.mb))
                at[r], progress = at[r] + 1, True
    stuck = [r for r, row in enumerate(rows) if at[r] < len(row)]
    if not stuck:
        return None
    r = stuck[0]
    step = rows[r][at[r]]
    others = ", ".join(f"rank {q} at {rows[q][at[q]]}" for q in stuck[1:4])
    others += ", ..." if len(stuck) > 4 else ""
    return (r, step.column, f"{step} waits for its input, which is never sent: the transfers deadlock "
            f"(also waiting: {others or 'none'})")


def _ready(step: Step, sent: set[Key], problem: Problem) -> bool:
    """Only a compute action whose input crosses ranks waits: for its peer's send."""
    wanted = _input_from(step, problem) if step.kind in ("F", "I", "B") else None
    if wanted is None:
        return True
    kind = "SEND_F" if wanted == "RECV_F" else "SEND_B"
    return (kind, step.stage - _PEER_STEP[kind], step.mb) in sent


def _fsdp_error(row: tuple[Step, ...]) -> tuple[int, str] | None:
    """torch's runtime's FSDP asserts for the stages the row shards (an UNSHARD is waited on by the
    stage's next compute action, and only then may a RESHARD follow)."""
    state = {s.stage: "sharded" for s in row if s.kind in ("UNSHARD", "RESHARD")}
    for s in row:
        if s.kind == "UNSHARD":
            if state[s.stage] != "sharded":
                return s.column, f"{s} unshards stage {s.stage} twice"
            state[s.stage] = "pending"
        elif s.kind == "RESHARD":
            if state[s.stage] != "unsharded":
                why = "no compute action ran on since its UNSHARD" if state[s.stage] == "pending" else \
                    "is not unsharded"
                return s.column, f"{s} reshards stage {s.stage}, which {why}"
            state[s.stage] = "sharded"
        elif s.kind in ("F", "I", "W", "B"):
            if state.get(s.stage) == "sharded":
                return s.column, f"{s} computes on stage {s.stage} while it is sharded (no UNSHARD before it)"
            if s.stage in state:
                state[s.stage] = "unsharded"
    unused = next((s for s in reversed(row) if s.kind == "UNSHARD" and state[s.stage] == "pending"), None)
    if unused is not None:
        return unused.column, f"{unused} is never used: no compute action on stage {unused.stage} follows it"
    return None


def _reduce_error(row: tuple[Step, ...]) -> tuple[int, str] | None:
    """One REDUCE_GRAD per stage with a backward, after its last one: torch 2.13's runtime scales a
    stage's gradients by 1/m there only, with or without FSDP (a file without it trained with
    gradients m times too large, silently), and reduces an FSDP stage's there (without it a stage's
    ``weight.grad`` stayed None)."""
    reduces = Counter(s.stage for s in row if s.kind == "REDUCE_GRAD")
    reduced: set[int] = set()
    for s in row:
        if s.kind == "REDUCE_GRAD":
            if reduces[s.stage] > 1:
                return s.column, f"{s} reduces stage {s.stage}'s gradients {reduces[s.stage]} times"
            reduced.add(s.stage)
        elif s.kind in ("I", "W", "B") and s.stage in reduced:
            return s.column, f"{s} comes after {s.stage}REDUCE_GRAD: its gradient would miss the reduction"
    backward = next((s for s in reversed(row) if s.kind in ("I", "W", "B") and s.stage not in reduces), None)
    if backward is not None:
        return backward.column, (f"stage {backward.stage} has no REDUCE_GRAD after its last backward "
                                 f"({backward}): torch scales its gradients by 1/m there (m times too "
                                 "large without it) and reduces them there under FSDP")
    return None


def steps_of(actions: tuple[Action, ...], column: int) -> list[Step]:
    """A compute cell's steps (an OVERLAP_F_B gives two in one column)."""
    return [Step(column, a.kind, a.stage, a.mb) for a in actions]
