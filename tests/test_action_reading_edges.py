# sed -i '47s/> MAX_INDEX_DIGITS/>= MAX_INDEX_DIGITS/' schedc/actions.py
# sed -i '47s/len(stage.lstrip("0"))/len(stage)/' schedc/actions.py
# sed -i '43s/_TOKEN.fullmatch(token.strip())/_TOKEN.fullmatch(token)/' schedc/actions.py
# sed -i '63s/_OVERLAP.fullmatch(part.strip())/_OVERLAP.fullmatch(part)/' schedc/actions.py
# sed -i '85s/len(mb.lstrip("0"))/len(mb)/' schedc/actions.py
# sed -i '113s/0 <= index < _INDEX_LIMIT/0 <= index <= _INDEX_LIMIT/' schedc/actions.py
# sed -i '153s/max(stages) < _INDEX_LIMIT/max(stages) <= _INDEX_LIMIT/' schedc/actions.py
# sed -i '153s/and min(mbs) >= 0 //' schedc/actions.py
# sed -i '151s/and _KIND_SET.issuperset(kinds)//' schedc/actions.py
# sed -i '161s/sorted(ranks) != list(.*)))/max(ranks, default=-1) != len(orders) - 1/' schedc/actions.py
# sed -i '65s/for part in parts for a/for part in parts[:2] for a/' schedc/actions.py
# sed -i '90s/int(mb) if mb else None/int(mb) if mb else 0/' schedc/actions.py
# sed -i '99s/len(entry) == 3 and/len(entry) >= 3 and/' schedc/actions.py
"""Reading actions at the edges: nine-digit indices and leading zeros (a token's digits, not its
value, past MAX_INDEX_DIGITS), blanks around a token, a nested OVERLAP behind a blank, every part of
an OVERLAP, FSDP tokens without a microbatch, and orders of Actions whose fields no token holds
(the fast path for rows of Actions checks what the entry-by-entry path checks)."""

from __future__ import annotations

import pytest

from schedc.actions import Action, parse_cell, transfer_of
from schedc.errors import PlanFormatError
from schedc.problem import Problem
from schedc.simulate import simulate

ONE = Problem(p=1, m=1)
NOT_AN_ACTION = r"^an action must be an Action, a token such as '0F3' or a \(kind, stage, mb\) triple"


def test_nine_digit_indices_read() -> None:
    """MAX_INDEX_DIGITS is 9: a nine-digit stage or microbatch is an index, only a tenth digit is
    too long."""
    assert Action.parse("999999999F123456789") == Action("F", 999999999, 123456789)
    with pytest.raises(PlanFormatError, match="has an index too long"):
        Action.parse("1000000000F0")


def test_leading_zeros_do_not_count_as_digits() -> None:
    """An index's length is that of its value: ten zeros are 0, in a compute token as in a transfer."""
    assert Action.parse("0000000000F00000000001") == Action("F", 0, 1)
    assert transfer_of("1SEND_F0000000003") == (1, "SEND_F", 3)


def test_a_token_with_blanks_around_it_reads() -> None:
    """Action.parse takes a token as a cell or a JSON plan holds it, blanks around it included."""
    assert Action.parse(" 2I3\t") == Action("I", 2, 3)


def test_an_overlap_nested_behind_a_blank_is_refused() -> None:
    """A part is read stripped, so a nested OVERLAP_F_B after a blank is still one, and refused (it
    was read as its own parts, a cell torch never writes)."""
    with pytest.raises(PlanFormatError, match="an OVERLAP_F_B inside an OVERLAP_F_B"):
        parse_cell("( (0F0)OVERLAP_F_B;1B0)OVERLAP_F_B")


def test_an_overlap_with_no_compute_action_is_refused() -> None:
    """It was skipped as an empty cell; torch's parser takes "()OVERLAP_F_B" and its runtime then
    asserts on it. Empty parts beside an action are skipped, as torch's parser skips them."""
    for cell in ("()OVERLAP_F_B", "( ; )OVERLAP_F_B", "(0SEND_F0)OVERLAP_F_B"):
        with pytest.raises(PlanFormatError, match=r"^an OVERLAP_F_B with no compute action inside: "):
            parse_cell(cell)
    assert parse_cell("(0F0;;1B0)OVERLAP_F_B") == (Action("F", 0, 0), Action("B", 1, 0))


def test_every_part_of_an_overlap_is_read() -> None:
    """An OVERLAP_F_B of three parts gives three actions, none dropped."""
    assert parse_cell("(0F3;3B1;1F0)OVERLAP_F_B") == (Action("F", 0, 3), Action("B", 3, 1), Action("F", 1, 0))


def test_fsdp_tokens_without_a_microbatch_name_none() -> None:
    """UNSHARD, RESHARD and REDUCE_GRAD may name no microbatch: None, not microbatch 0."""
    assert transfer_of("0UNSHARD") == (0, "UNSHARD", None)
    assert transfer_of("2REDUCE_GRAD") == (2, "REDUCE_GRAD", None)
    assert transfer_of("2REDUCE_GRAD0") == (2, "REDUCE_GRAD", 0)


@pytest.mark.parametrize("entry", [
    Action("F", 10**9, 0), Action("F", 0, 10**9), Action("F", 0, -1), Action("X", 0, 0),
    ("F", 0, 10**9), ("F", 0, 0, 7),
])
def test_an_action_no_token_holds_is_refused_alone_in_its_row(entry: object) -> None:
    """A row of one Action takes the fast path of rows of Actions, a tuple the entry-by-entry one:
    either way an index of ten digits, a negative index, an unknown kind or a fourth field is the
    one-line format error, not a task the simulator cannot find (or one read without its extra field)."""
    with pytest.raises(PlanFormatError, match=NOT_AN_ACTION):
        simulate(ONE, [[entry]])


def test_a_dict_of_orders_needs_the_ranks_from_zero() -> None:
    """Keys -1 and 1 are two ranks but not 0..1: refused in one line (not a KeyError for rank 0)."""
    row = ["0F0", "0I0", "0W0"]
    with pytest.raises(PlanFormatError, match=r"a dict of orders needs the ranks 0\.\.1 as keys"):
        simulate(Problem(p=2, m=1), {-1: row, 1: row})
