# sed -i '123s/if not order:/if not order and r:/' schedc/torch_csv.py
"""A torch CSV whose first row holds only transfer tokens is refused by the reader, as any other row
without a compute action is: every rank holds a stage, so rank 0 must run some F, I, W or B."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedc.errors import PlanFormatError
from schedc.problem import Problem
from schedc.torch_csv import read_csv_orders


def test_a_first_row_of_transfers_only_is_named_as_having_no_compute_actions(tmp_path: Path) -> None:
    """The check skipped row 1 (rank 0): its valid SEND token passed the transfer checks and the
    reader returned an empty order for rank 0 instead of the one-line error the other rows get."""
    path = tmp_path / "p.csv"
    path.write_text("0SEND_F0\n1F0,1B0\n")
    with pytest.raises(PlanFormatError) as err:
        read_csv_orders(str(path), Problem(p=2, m=1, split=False))
    assert str(err.value) == f"{path}: row 1 (rank 0) has no compute actions"
