"""The edges of ``schedc solve``'s --time-limit, --seed and --workers: each message names a closed
range (at most 1e9; -2**31 <= n < 2**31; from 1 to 10000), so its ends are accepted and the values
just past them refused by the option's own one line (not by the library's message, which names no
flag, nor by OR-Tools)."""

from __future__ import annotations

import pytest

from schedc.cli import main
from schedc.errors import ProblemError


def test_the_ends_of_each_range_are_accepted():
    from schedc.cli_solve import _int, _workers, positive_seconds

    assert positive_seconds("1e9", "--time-limit") == 1e9
    assert _int(str(-2**31), "--seed") == -2**31
    assert _int(str(2**31 - 1), "--seed") == 2**31 - 1
    assert _workers("10000") == 10000 and _workers("1") == 1


@pytest.mark.parametrize("flag, value", [("--time-limit", "0"), ("--time-limit", "1000000001"),
                                         ("--seed", "2147483648"), ("--seed", "-2147483649"),
                                         ("--workers", "10001")])
def test_just_past_each_end_is_the_options_own_one_line(flag, value, capsys):
    assert main(["solve", "--p", "2", "--m", "2", "--backend", "list", "--quiet", flag, value]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"schedc: error: {flag} must be ") and err.count("\n") == 1


def test_the_list_backend_still_checks_the_search_options(capsys):
    """--seed -2**31 is a valid 32-bit seed: the list backend notes it does not apply, no error."""
    assert main(["solve", "--p", "2", "--m", "2", "--backend", "list", "--quiet", "--seed", str(-2**31)]) == 0
    assert "--seed does not apply" in capsys.readouterr().err
    with pytest.raises(ProblemError, match="--seed must be a 32-bit integer"):
        from schedc.cli_solve import _int

        _int(str(2**31), "--seed")
