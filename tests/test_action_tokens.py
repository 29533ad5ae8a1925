"""Tokens that only look like torch's are refused, not read as a nearby valid one: with a prefix
match a damaged cell (``0F1x``, ``0F1;0B0`` for a missing comma) loaded as another schedule, or one
action short; a RECV without a microbatch is a token torch's runtime fails on, as a SEND without
one; an OVERLAP with another suffix is not torch's."""

from __future__ import annotations

import pytest

from schedc.actions import Action, parse_cell, transfer_of
from schedc.errors import PlanFormatError
from schedc.problem import Problem
from schedc.torch_csv import read_csv_orders


@pytest.mark.parametrize("token", ["0F1x", "0F1;0B0", "2I3W3", "1B0 1B1"])
def test_a_token_with_anything_after_it_is_refused(token):
    with pytest.raises(PlanFormatError, match="unknown action token"):
        Action.parse(token)
    with pytest.raises(PlanFormatError, match="unknown action token"):
        parse_cell(token)


def test_a_damaged_csv_cell_is_an_error_not_a_shorter_schedule(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("0F0,0F1;0B0,0B1\n1F0,1B0,1F1,1B1\n")
    with pytest.raises(PlanFormatError, match="rank 0 position 1 \\(row 1, column 2\\)"):
        read_csv_orders(str(path), Problem(p=2, m=2, split=False))


@pytest.mark.parametrize("token", ["1RECV_F", "1RECV_B", "0SEND_B"])
def test_a_send_or_recv_without_a_microbatch_is_refused(token):
    with pytest.raises(PlanFormatError, match="names no microbatch"):
        transfer_of(token)


@pytest.mark.parametrize("token", ["(0F3;3B1)OVERLAP_B_F", "(0F3;3B1)OVERLAP_", "(0F3;3B1)OVERLAP_FB"])
def test_only_torch_s_overlap_suffix_is_an_overlap(token):
    assert parse_cell("(0F3;3B1)OVERLAP_F_B") == (Action("F", 0, 3), Action("B", 3, 1))
    with pytest.raises(PlanFormatError):
        parse_cell(token)
