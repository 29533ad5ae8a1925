# sed -i '150s/else "mem\[{}\]"/else "mem"/' schedc/problem.py
# sed -i '69s/if isinstance(value, str) else ""/if True else ""/' schedc/errors.py
"""Bad numbers from library callers and problem files: each is a one-line SchedcError, found at once
(no hang on a tiny exponent, no OverflowError, no number echoed in a thousand digits)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from fractions import Fraction as F

import numpy as np
import pytest

from schedc import Plan, Problem, load_problem
from schedc.baselines import baseline_plan
from schedc.errors import ArgumentError, PlanFormatError, ProblemError, shown
from schedc.solvers import solve

TINY = "about -1e-999"
"""-1e-999 (or -1e-400) in an error line: its fraction cut to 40 characters."""


def _error(call) -> str:
    """The one-line ProblemError message of ``call()``."""
    with pytest.raises(ProblemError) as err:
        call()
    message = str(err.value)
    assert "\n" not in message and len(message) < 400
    return message


# ---- 1: a Decimal's exponent is checked before it becomes a Fraction (10**999999999 hangs) ---------


@pytest.mark.parametrize("field", ["tf", "tb", "tw", "comm", "mem", "w_mem"])
@pytest.mark.parametrize("value", ["1e-999999999", "1e-10000000", "1e999999999"])
def test_decimal_with_a_huge_exponent_is_refused_at_once(field, value):
    message = _error(lambda: Problem(p=2, m=2, **{field: Decimal(value)}))
    assert message.startswith(f"{field} has an exponent out of range, got Decimal(")


def test_decimal_exponent_limit_matches_the_strings():
    assert Problem(p=2, m=2, tf=Decimal("1e-999")).tf == F(1, 10**999)
    assert Problem(p=2, m=2, tf="1e-999").tf == F(1, 10**999)
    assert "exponent out of range" in _error(lambda: Problem(p=2, m=2, tf=Decimal("1e-1000")))
    assert "exponent out of range" in _error(lambda: Problem(p=2, m=2, tf="1e-1000"))


def test_decimal_with_a_million_digits_is_refused_before_its_fraction():
    message = _error(lambda: Problem(p=2, m=2, tf=Decimal("1" * 10**6 + "e-1000000")))
    assert message.startswith("tf has over 999 digits")
    assert Problem(p=2, m=2, tf=Decimal("1." + "0" * 998)).tf == 1  # 999 digits: read exactly
    thousand = Decimal("1." + "0" * 999)
    assert _error(lambda: Problem(p=2, m=2, tf=thousand)).startswith("tf has over 999 digits")


def test_stage_costs_and_a_plans_lower_bound_check_decimal_exponents_too():
    costs = [(1, 1, 1), (1, Decimal("1e-999999999"), 1)]
    message = _error(lambda: Problem(p=2, m=2, stage_costs=costs))
    assert message.startswith("stage_costs[1]: tb has an exponent out of range")
    with pytest.raises(PlanFormatError) as err:  # a plan's field: the plan's error type
        Plan(problem=Problem(p=1, m=1), orders=((),), source="x", lower_bound=Decimal("1e-999999999"))
    assert str(err.value).startswith("lower_bound has an exponent out of range")


def test_other_reals_go_through_the_same_exponent_check():
    assert "tf has an exponent out of range" in _error(lambda: Problem(p=2, m=2, tf=np.longdouble("1e-4000")))
    assert Problem(p=2, m=2, tf=np.float32(0.1)).tf == F(1, 10)


# ---- 2, 3: NaNs, floats out of range and absurd time limits ---------------------------------------


@pytest.mark.parametrize("value", [Decimal("sNaN"), Decimal("NaN"), Decimal("-Infinity")])
def test_decimal_nans_and_infinities_are_not_finite(value):
    assert _error(lambda: Problem(p=2, m=2, tf=value)) == f"tf must be finite, got {value!r}"
    assert _error(lambda: Problem(p=2, m=2, stage_costs=[(1, 1, value)] * 2)).startswith(
        "stage_costs[0]: tw must be finite")


@pytest.mark.parametrize("time_limit", [Decimal("sNaN"), Decimal("NaN"), 10**400, F(10**400), 1e308, 1e9 + 1,
                                        Decimal("1e400"), -1])  # "10" is no number: an ArgumentError
def test_time_limits_no_float_holds_or_beyond_30_years_are_refused(time_limit):
    message = _error(lambda: solve(Problem(p=2, m=4, mem=2), time_limit=time_limit, workers=1))
    assert message.startswith("time_limit must be a positive, finite number of seconds, at most 1e9")
    assert message.endswith(f"got {shown(time_limit)}")


# ---- 4: bytes are no list of caps or costs --------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    ({"mem": b"4"}, "mem must be a number, got b'4'"),
    ({"mem": bytearray(b"4")}, "mem must be a number, got bytearray(b'4')"),
    ({"mem": [b"4"] * 4}, "mem[0] must be a number, got b'4'"),
    ({"mem": [4, 4, [4], 4]}, "mem[2] must be a number, got [4]"),  # of many caps, the one at fault
    ({"stage_costs": b"1234"}, "stage_costs must be a list of (tf, tb, tw), got b'1234'"),
    ({"stage_costs": [b"123"] * 4}, "stage_costs[0] must be (tf, tb, tw), got b'123'"),
])
def test_bytes_are_refused_not_read_as_their_byte_values(kwargs, message):
    assert _error(lambda: Problem(p=4, m=8, **kwargs)) == message


# ---- 5: huge numbers are shown by their size ------------------------------------------------------


def test_a_huge_problem_names_its_size_not_its_digits():
    message = _error(lambda: Problem(p=10**400, m=8))
    assert message.startswith("problem too large: about 1e401 tasks (p*v*m*3)")
    assert _error(lambda: Problem(p=10**9, m=1)).startswith("problem too large: 3000000000 tasks")


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": 10**400}, "workers must be an integer from 1 to 10000 (None: every usable core), got 10000"),
    ({"workers": 10**5000}, "got an integer of about 5001 digits"),
    ({"seed": -(10**400)}, "seed must be a 32-bit integer"),
])
def test_huge_solve_arguments_are_cut_in_the_message(kwargs, message):
    assert message in _error(lambda: solve(Problem(p=2, m=2), **kwargs))


@pytest.mark.parametrize("kwargs, message", [
    ({"p": -(10**5000)}, "p must be a positive integer, got an integer of about 5001 digits"),
    ({"tf": 10**5000}, "tf is out of range (|x| <= 1e100), got an integer of about 5001 digits"),
    ({"tf": "-1e-999"}, "costs need tf > 0, tb > 0, tw >= 0; got " + TINY + ", 1, 1"),
    ({"comm": "-1e-999"}, "comm must be >= 0, got " + TINY),
    ({"mem": "-1e-999"}, "mem cap of rank 0 must be > 0, got " + TINY),
])
def test_huge_and_finely_divided_fields_are_cut_in_the_message(kwargs, message):
    assert _error(lambda: Problem(**{"p": 2, "m": 2, **kwargs})) == message


# ---- 6: a repr over several lines is quoted on one --------------------------------------------------


def test_a_numpy_array_is_quoted_on_one_line():
    message = _error(lambda: Problem(p=2, m=4, tf=np.ones((2, 3))))
    assert message == "tf must be a number, got array([[1., 1., 1.], [1., 1., 1.]])"
    assert shown("a\nb") == "'a\\nb'"  # a string's repr has no newline to join


def test_a_cut_string_keeps_its_closing_quote():
    """``action token '0F999999999... has an index too long`` left its quote open."""
    assert shown("0F" + "9" * 30, 12) == "'0F999999999...'"
    assert shown(10**50, 12) == "100000000000..."  # not a string: no quote to close


# ---- 7: the CP-SAT integer limit reads right for huge scales ------------------------------------


def test_costs_too_fine_for_cp_sat_name_ticks_and_scale_once_each():
    message = _error(lambda: solve(Problem(p=2, m=2, tf="1e-999")))
    assert "a serial schedule is about 1e999 ticks long, at most 2**50; ticks per time unit: about 1e999)" \
        in message
    assert "1/about" not in message


# ---- 8: numbers in problem files are exact ---------------------------------------------------------


def _file(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("name, text", [("p.json", '{"p": 2, "m": 2, "tf": 0.1, "tw": 1e-400, "mem": 2.50}'),
                                        ("p.toml", "p = 2\nm = 2\ntf = 0.1\ntw = 1e-400\nmem = 2.50\n")])
def test_file_floats_are_read_exactly(tmp_path, name, text):
    problem = load_problem(_file(tmp_path, name, text))
    assert (problem.tf, problem.tw, problem.mem) == (F(1, 10), F(1, 10**400), (F(5, 2), F(5, 2)))


@pytest.mark.parametrize("suffix", ["json", "toml"])
@pytest.mark.parametrize("fields, message", [
    ({"tf": "1e400"}, "field tf is out of range (|x| <= 1e100), got 1e400"),
    ({"tf": "1e-1000"}, "field tf has an exponent out of range, got 1e-1000"),
    ({"tf": "1e-999999999"}, "field tf has an exponent out of range, got 1e-999999999"),
    ({"tf": "-1e-400"}, "costs need tf > 0, tb > 0, tw >= 0; got about -1e-400, 1, 1"),
    ({"p": "2.0"}, "field p must be a positive integer, got 2.0"),
    ({"split": "1.0"}, "field split must be true or false, got 1.0"),
])
def test_file_floats_out_of_range_are_named_as_written(tmp_path, suffix, fields, message):
    fields = {"p": "2", "m": "2", **fields}
    if suffix == "json":
        text = "{" + ", ".join(f'"{k}": {v}' for k, v in fields.items()) + "}"
    else:
        text = "".join(f"{k} = {v}\n" for k, v in fields.items())
    path = _file(tmp_path, f"p.{suffix}", text)
    assert _error(lambda: load_problem(path)) == f"{path}: {message}"


def test_a_json_key_given_twice_is_still_refused(tmp_path):
    path = _file(tmp_path, "twice.json", '{"p": 2, "m": 2, "m": 3}')
    assert "key 'm' appears twice" in _error(lambda: load_problem(path))


def test_an_integer_past_pythons_digit_limit_is_named_without_pythons_advice(tmp_path):
    """The message ended "use sys.set_int_max_str_digits() to increase the limit"."""
    path = _file(tmp_path, "long.json", '{"p": 2, "m": 1' + "0" * 5000 + "}")
    message = _error(lambda: load_problem(path))
    assert message.endswith("an integer of 5001 digits (at most 4300)") and "sys." not in message
    path = _file(tmp_path, "fine.json", '{"p": 2, "m": 1' + "0" * 4299 + "}")
    assert "4300" not in _error(lambda: load_problem(path))  # read, then refused as too large a problem


# ---- 9: load_problem names its path once, and refuses a path of the wrong type ---------------------


def test_a_missing_problem_file_is_named_once(tmp_path):
    path = str(tmp_path / "missing.toml")
    message = _error(lambda: load_problem(path))
    assert message.startswith(f"cannot read problem file {path}: ") and message.count(path) == 1


@pytest.mark.parametrize("path", [None, 3, b"p.toml"])
def test_a_problem_path_of_the_wrong_type_is_one_line(path):
    with pytest.raises(ArgumentError, match=f"^a problem file path must be a str or os.PathLike, "
                                            f"got {type(path).__name__}$"):
        load_problem(path)


# ---- plan files read their floats exactly too, and huge fractions print by their value ----------


def test_plan_file_floats_are_read_exactly(tmp_path):
    """A hand-edited plan file's "tw": 1e-400 is no 0 (as a float it would be), and the float
    solve_seconds schedc writes stays a float."""
    from schedc import save_plan
    from schedc.baselines import baseline_plan
    from schedc.plan_json import load_plan

    tiny = F(1, 10**400)
    plan = baseline_plan("1f1b", Problem(p=2, m=2, tw=tiny))
    path = tmp_path / "plan.json"
    save_plan(plan, path)
    text = path.read_text()
    assert f'"tw": "1/{10**400}"' in text
    path.write_text(text.replace(f'"tw": "1/{10**400}"', '"tw": 1e-400').replace('"solve_seconds": null',
                                                                                 '"solve_seconds": 1.25'))
    loaded = load_plan(path)
    assert loaded.problem.tw == tiny and loaded.solve_seconds == 1.25 and type(loaded.solve_seconds) is float
    path.write_text(text.replace('"solve_seconds": null', '"solve_seconds": 1e400'))
    with pytest.raises(PlanFormatError, match=r"solve_seconds must be a finite number >= 0, got 1e400$"):
        load_plan(path)


@pytest.mark.parametrize("value, text", [
    (F(7, 3), "7/3"),
    (F(30 * 10**400 + 1, 5 * 10**400), "about 6"),
    (-F(30 * 10**400 + 1, 5 * 10**400), "about -6"),
    (F(1, 10**400), "about 1e-400"),
    (F(25, 10**400), "about 2.5e-399"),
    (F(-2, 3 * 10**50), "about -6.66667e-51"),
    (F(3, 10**400) + F(1, 7), "about 0.142857142857143"),
])
def test_a_fraction_of_hundreds_of_digits_prints_as_its_approximate_value(value, text):
    from schedc.exact import fmt_exact

    assert fmt_exact(value) == text


# ---- 9: a fraction finer than 1e-999 is refused like a string's exponent ---------------------------


@pytest.mark.parametrize("kwargs, field", [
    ({"tf": F(1, 7**5000)}, "tf"),
    ({"comm": "1/" + "7" * 1200}, "comm"),
    ({"mem": F(1, 3 * 10**999)}, "mem"),
    ({"stage_costs": [(1, 1, 1), (1, 1, F(1, 3**3000))]}, "stage_costs[1]: tw"),
])
def test_a_fraction_finer_than_the_exponent_limit_is_refused(kwargs, field):
    message = _error(lambda: Problem(**{"p": 2, "m": 2, **kwargs}))
    assert message.startswith(f"{field} is too fine a fraction (denominator over 1e999), got ")


def test_the_finest_fractions_allowed_are_the_finest_strings():
    assert Problem(p=2, m=2, tw=F(1, 10**999)).tw == Problem(p=2, m=2, tw="1e-999").tw
    assert Problem(p=2, m=2, v=2, tw="1e-999").stage_cost(0).tw == F(1, 2 * 10**999)  # derived: not checked
    plan = baseline_plan("1f1b", Problem(p=2, m=2, tw=F(1, 10**999), tb=F(1, 7**1000) + 1))
    assert plan.makespan.denominator > 10**999  # derived numbers may be finer; only given ones are checked
    assert dataclasses.replace(plan, lower_bound=plan.makespan).lower_bound == plan.makespan


@pytest.mark.parametrize("text", ["1_5", "\uff13", "\u0663/2", "1e1_0"])
def test_numbers_in_text_need_ascii_digits_without_underscores(tmp_path, text):
    """Fraction() reads '1_5' as 15 and full-width or Arabic-Indic digits as ASCII ones."""
    assert "ASCII digits without underscores" in _error(lambda: Problem(p=2, m=2, tb=text))
    (tmp_path / "p.json").write_text(f'{{"p": 2, "m": 2, "mem": "{text}"}}', encoding="utf-8")
    assert "ASCII digits without underscores" in _error(lambda: load_problem(tmp_path / "p.json"))


def test_per_rank_caps_and_stage_costs_may_be_numpy_arrays():
    """Caps held in an array were refused as "mem must be a number, got array([3, 2])", where a list
    of the same numpy scalars was taken; a 2-d array of caps stays refused (an entry is no cap)."""
    assert Problem(p=2, m=2, mem=np.array([3, 2.5])).mem == (3, F(5, 2))
    costs = Problem(p=2, m=2, stage_costs=np.array([[1, 2, 1], [1, 1, 0.5]])).stage_costs
    assert [(c.tf, c.tb, c.tw) for c in costs] == [(1, 2, 1), (1, 1, F(1, 2))]
    with pytest.raises(ProblemError, match=r"mem must be a number, got array\(\[3, 2\]\)"):
        Problem(p=2, m=2, mem=np.array([[3, 2]]))


def test_split_may_be_a_numpy_bool():
    """np.True_ (a mask's entry, a config read through numpy) is no bool subclass: it was refused as
    "split must be true or false, got np.True_"."""
    assert Problem(p=2, m=2, split=np.bool_(False)).split is False
    assert Problem(p=2, m=2, split=np.True_).split is True
    with pytest.raises(ProblemError, match="split must be true or false"):
        Problem(p=2, m=2, split=np.int64(1))
