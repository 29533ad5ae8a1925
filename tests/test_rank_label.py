# sed -i '36s/re\.match(rf"rank/re.search(rf"rank/' runtime/rank_label.py
# sed -i '66s/isinstance(err, SchedcError) or/isinstance(err, SchedcError) and/' runtime/rank_label.py
# sed -i '66s/startswith("rank ")/startswith("rank")/' runtime/rank_label.py
"""The global rank beside the pipeline rank in runtime errors (``runtime/rank_label.py``); the
launched check is in test_runtime_dp_edges.py, where each replica is rank 0 of its own pipeline."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import torch.distributed as dist

from schedc.actions import Action
from schedc.errors import SchedcError
from schedc.runtime.errors import PlanMismatchError
from schedc.runtime.rank_label import names_global_rank, noted, with_global_rank


@pytest.fixture
def world_rank_5(monkeypatch):
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 5)


@pytest.mark.parametrize("rank, text, want", [
    (1, "rank 1: the plan does not fit", "rank 1 (global rank 5): the plan does not fit"),
    (1, "rank 1 waited for the F of stage 2 from rank 2", "rank 1 (global rank 5) waited for the F of "
                                                          "stage 2 from rank 2"),
    (1, "rank 10: another rank's message", "rank 10: another rank's message"),
    (1, "a user's own error", "a user's own error"),
    (5, "rank 5: the same rank in both", "rank 5: the same rank in both"),
    (1, "rank 1 (global rank 5): labelled already", "rank 1 (global rank 5): labelled already"),
    (1, "stage 2 waited on rank 1: nothing came", "stage 2 waited on rank 1: nothing came"),  # not first
])
def test_only_the_runtime_s_own_messages_get_the_global_rank(world_rank_5, rank, text, want):
    err = PlanMismatchError(text)
    with_global_rank(err, rank)
    assert str(err) == want


def test_errors_of_other_forms_are_left_as_they_are(world_rank_5):
    key, pair = KeyError("rank 1: a key"), RuntimeError("rank 1: two", "arguments")
    for err in (key, pair):
        with_global_rank(err, 1)
    assert key.args == ("rank 1: a key",) and pair.args == ("rank 1: two", "arguments")


def test_without_a_process_group_nothing_changes(monkeypatch):
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    err = PlanMismatchError("rank 1: no world")
    with_global_rank(err, 1)
    assert str(err) == "rank 1: no world"


class _Runner:
    rank = 1

    @names_global_rank
    def step(self) -> None:
        raise PlanMismatchError("rank 1: a step failed")


def test_a_runner_method_raises_the_same_error_with_the_global_rank(world_rank_5):
    with pytest.raises(PlanMismatchError, match=r"^rank 1 \(global rank 5\): a step failed$"):
        _Runner().step()


def test_a_user_error_s_note_names_the_global_rank_where_it_differs(world_rank_5):
    def fails() -> None:
        raise ValueError("the user's own")

    with pytest.raises(ValueError, match=r"^the user's own") as raised:
        noted(1, Action.parse("2F3"), fails)
    note = "schedc: raised on rank 1 (global rank 5) in 2F3 (F of stage 2, microbatch 3)"
    assert raised.value.__notes__ == [note]


def _notes(err: Exception) -> list[str]:
    """The notes ``noted`` adds to ``err`` raised on rank 1 in 2W0, outside a process group."""
    def fails() -> None:
        raise err

    with pytest.raises(type(err)) as raised:
        noted(1, Action.parse("2W0"), fails)
    assert raised.value is err  # the same error, type and message kept
    return getattr(err, "__notes__", [])


def test_only_user_errors_that_name_no_rank_are_noted():
    """The runtime's errors (SchedcError) get no note whatever their text, nor errors whose message
    names the rank ("rank 1: ..."); 'ranking ...' is the user's wording and gets one."""
    assert _notes(SchedcError("a plan that does not fit")) == []
    assert _notes(TimeoutError("rank 1: waited 60 s for the F of stage 1")) == []
    assert _notes(ValueError("ranking the batch failed")) == \
        ["schedc: raised on rank 1 in 2W0 (W of stage 2, microbatch 0)"]
