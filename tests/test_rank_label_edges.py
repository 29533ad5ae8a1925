# sed -i '36s/re\.match(rf"rank/re.search(rf"rank/' runtime/rank_label.py
# sed -i '66s/isinstance(err, SchedcError) or/isinstance(err, SchedcError) and/' runtime/rank_label.py
# sed -i '66s/startswith("rank ")/startswith("rank")/' runtime/rank_label.py
"""``runtime/rank_label.py`` beyond test_rank_label.py: the rank is matched only at a message's start,
and only a message starting with "rank " (or a SchedcError) is taken for the runtime's own."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

import torch.distributed as dist

from schedc.actions import Action
from schedc.errors import SchedcError
from schedc.runtime.errors import PlanMismatchError
from schedc.runtime.rank_label import noted, with_global_rank


def _raise(err: Exception) -> None:
    raise err


def _notes(err: Exception, rank: int = 1) -> list[str]:
    with pytest.raises(type(err)) as raised:
        noted(rank, Action.parse("2W0"), _raise, err)
    assert raised.value is err  # the same error, type and message kept
    return getattr(err, "__notes__", [])


@pytest.fixture
def world_rank_5(monkeypatch):
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "get_rank", lambda group=None: 5)


def test_a_message_naming_the_rank_later_is_not_relabelled(world_rank_5):
    """Only a message starting with "rank R" is the runtime's own form: one naming rank R further on
    (a user's text, or a peer's report) was cut at the length of "rank R" and relabelled."""
    err = PlanMismatchError("stage 2 waited on rank 1: nothing came")
    with_global_rank(err, 1)
    assert err.args == ("stage 2 waited on rank 1: nothing came",)


def test_a_user_error_whose_text_starts_with_rank_but_not_rank_space_is_noted():
    """'ranking ...' is the user's wording, not the runtime's 'rank R: ...': it gets the note."""
    assert _notes(ValueError("ranking the batch failed")) == \
        ["schedc: raised on rank 1 in 2W0 (W of stage 2, microbatch 0)"]


def test_only_errors_that_are_the_runtime_s_and_name_no_rank_are_noted_otherwise():
    """The runtime's errors (SchedcError) get no note, whatever their text; neither do errors whose
    message names the rank already. Requiring both before skipping the note noted them."""
    assert _notes(SchedcError("a plan that does not fit")) == []
    assert _notes(TimeoutError("rank 1: waited 60 s for the F of stage 1")) == []
