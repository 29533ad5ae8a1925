"""Problem model: validation, stage/rank maps, durations, memory deltas, problem files."""

from __future__ import annotations

import dataclasses
import json
import re
from fractions import Fraction as F

import pytest

from schedc.errors import ProblemError
from schedc.problem import Problem, StageCost
from schedc.problem_io import problem_from_dict, problem_to_dict, read_problem_file


def test_defaults_are_the_issues():
    p = Problem(p=2, m=4)
    assert (p.v, p.placement, p.split) == (1, "looped", True)
    assert (p.tf, p.tb, p.tw, p.comm, p.w_mem) == (1, 1, 1, 0, F(1, 2))
    assert p.mem == (None, None)
    assert p.kinds == ("F", "I", "W")
    assert Problem(p=2, m=4, split=False).kinds == ("F", "B")


def test_looped_placement_interleaves_stages():
    p = Problem(p=3, m=1, v=2)
    assert p.stage_rank == (0, 1, 2, 0, 1, 2)
    assert p.rank_stages == ((0, 3), (1, 4), (2, 5))


def test_vshape_placement_folds_stages_back():
    p = Problem(p=3, m=1, v=2, placement="vshape")
    assert p.stage_rank == (0, 1, 2, 2, 1, 0)
    assert p.rank_stages == ((0, 5), (1, 4), (2, 3))


@pytest.mark.parametrize("v", [1, 3])
def test_vshape_needs_two_stages_per_rank(v):
    with pytest.raises(ProblemError, match="vshape placement needs v = 2"):
        Problem(p=2, m=1, v=v, placement="vshape")


@pytest.mark.parametrize("field", ["p", "m", "v"])
@pytest.mark.parametrize("value", [0, -1, 1.5, 2.0, "3", True, None])
def test_counts_must_be_positive_integers(field, value):
    kwargs = {"p": 2, "m": 2, field: value}
    with pytest.raises(ProblemError, match=f"^{field} must be a positive integer"):
        Problem(**kwargs)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tf": 0}, "tf > 0"),
        ({"tb": -1}, "tb > 0"),
        ({"tw": F(-1, 2)}, "tw >= 0"),
        ({"tf": "fast"}, "tf must be a number"),
        ({"tf": float("nan")}, "tf must be finite"),
        ({"tb": float("inf")}, "tb must be finite"),
        ({"tf": [1]}, "tf must be a number"),
        ({"comm": -1}, "comm must be >= 0"),
        ({"w_mem": F(3, 2)}, "w_mem must be within"),
        ({"w_mem": -0.5}, "w_mem must be within"),
        ({"placement": "zigzag"}, "placement must be one of"),
        ({"placement": 3}, "placement must be one of"),
        ({"split": "no"}, "split must be true or false"),
    ],
)
def test_bad_numbers_and_options_are_problem_errors(kwargs, message):
    with pytest.raises(ProblemError, match=message):
        Problem(p=2, m=2, **kwargs)


def test_zero_weight_gradient_is_allowed():
    assert Problem(p=2, m=2, split=False, tw=0).duration("B", 0) == 1


def test_numbers_are_exact_fractions():
    p = Problem(p=1, m=1, tf=0.1, tb="1/3", tw="0.25", comm=F(1, 7), mem=1.5)
    assert (p.tf, p.tb, p.tw, p.comm) == (F(1, 10), F(1, 3), F(1, 4), F(1, 7))
    assert p.mem == (F(3, 2),)
    assert all(type(x) is F for x in (p.tf, p.tb, p.tw, p.comm, p.w_mem))


def test_durations_divide_a_ranks_cost_by_v():
    p = Problem(p=2, m=1, v=2, tf=3, tb=2, tw=1)
    assert [p.duration(k, 0) for k in ("F", "I", "W", "B")] == [F(3, 2), 1, F(1, 2), F(3, 2)]
    assert {p.duration("F", s) for s in range(4)} == {F(3, 2)}


def test_per_stage_costs_override_and_are_not_divided():
    costs = (StageCost(1, 2, 3), (F(1, 2), 1, 0), ("0.5", "1/4", 2), StageCost(4, 4, 4))
    p = Problem(p=2, m=1, v=2, stage_costs=costs)
    assert p.duration("F", 1) == F(1, 2)
    assert p.duration("I", 2) == F(1, 4)
    assert p.duration("W", 0) == 3
    assert p.duration("B", 2) == F(9, 4)
    assert p.stage_costs[1] == StageCost(F(1, 2), 1, 0)
    assert (p.tf, p.tb, p.tw) == (3, F(29, 8), F(9, 2))  # the mean per rank of what they replace


def test_stage_costs_may_be_dicts_and_replace_tf_tb_tw():
    costs = ({"tf": 1, "tb": 2, "tw": 3}, (3, 2, 1))
    given = Problem(p=2, m=1, stage_costs=costs, tf=100)  # documented: stage costs replace tf
    assert given.stage_costs[0] == StageCost(1, 2, 3) and given.tf == 2
    assert dataclasses.replace(given, stage_costs=((1, 1, 1), (1, 1, 1))).tf == 1
    with pytest.raises(ProblemError, match="stage_costs\\[0\\] must have exactly tf, tb, tw; got \\['tf'\\]"):
        Problem(p=2, m=1, stage_costs=({"tf": 1}, (1, 1, 1)))
    with pytest.raises(ProblemError, match="must have exactly tf, tb, tw; got \\['tb', 'tf', 'tw', 'tww'\\]"):
        Problem(p=2, m=1, stage_costs=({"tf": 1, "tb": 1, "tw": 1, "tww": 5}, (1, 1, 1)))  # a typo is no cost


@pytest.mark.parametrize(
    "costs, message",
    [
        ((StageCost(1, 1, 1),), "stage_costs gives 1 stage, the problem has p\\*v = 2"),
        ((StageCost(1, 1, 1), (1, 1)), "stage_costs\\[1\\] must be"),
        ((StageCost(1, 1, 1), (1, 0, 1)), "stage_costs\\[1\\]: stage costs need"),
        (5, "stage_costs must be a list"),
        ("1,1,1", "stage_costs must be a list"),
    ],
)
def test_bad_stage_costs_are_problem_errors(costs, message):
    with pytest.raises(ProblemError, match=message):
        Problem(p=2, m=1, stage_costs=costs)


def test_caps_broadcast_or_per_rank():
    assert Problem(p=3, m=1, mem=2).mem == (2, 2, 2)
    assert Problem(p=3, m=1, mem=(2,)).mem == (2, 2, 2)
    assert Problem(p=3, m=1, mem=None).mem == (None, None, None)
    assert Problem(p=3, m=1, mem=[1, None, "none"]).mem == (1, None, None)
    assert Problem(p=3, m=1, mem=["None", " none", 4]).mem == (None, None, 4)  # any case, spaces around
    assert Problem(p=3, m=1, mem=(1, "3/2", 2.5)).mem == (1, F(3, 2), F(5, 2))


@pytest.mark.parametrize(
    "mem, message",
    [
        ((1, 2), "mem gives 2 caps for 3 ranks"),
        ((1, 2, 3, 4), "mem gives 4 caps for 3 ranks"),
        (0, "cap of rank 0 must be > 0"),
        ((1, -2, 1), "cap of rank 1 must be > 0"),
        ("lots", "mem must be a number"),
        ({"a": 1}, "mem must be a number"),
    ],
)
def test_bad_caps_are_problem_errors(mem, message):
    with pytest.raises(ProblemError, match=message):
        Problem(p=3, m=1, mem=mem)


def test_memory_deltas():
    p = Problem(p=2, m=1, v=2, w_mem=F(1, 4))
    assert p.stage_activation == F(1, 2)
    assert p.mem_delta("F") == F(1, 2)
    assert p.mem_delta("I") == -F(3, 8)  # -(1 - r) / v
    assert p.mem_delta("W") == -F(1, 8)  # -r / v
    assert p.mem_delta("B") == -F(1, 2)  # -1 / v
    assert p.mem_delta("F") + p.mem_delta("I") + p.mem_delta("W") == 0


@pytest.mark.parametrize("split, per_task", [(True, 3), (False, 2)])
def test_num_tasks(split, per_task):
    assert Problem(p=3, m=5, v=2, split=split).num_tasks == 3 * 2 * 5 * per_task


def test_equal_problems_are_equal_and_hash_alike():
    a = Problem(p=2, m=3, tf=1, mem=2)
    b = Problem(p=2, m=3, tf=F(1), mem=(2, 2))
    assert a == b and hash(a) == hash(b)
    assert a != Problem(p=2, m=3, tf=2, mem=2)


def test_problem_is_frozen():
    with pytest.raises(AttributeError):
        Problem(p=1, m=1).p = 2


def test_describe_is_one_line():
    text = Problem(p=2, m=4, v=2, mem=(1, None), comm=F(1, 2)).describe()
    assert "\n" not in text
    assert text.startswith("p=2 m=4 v=2 looped split")
    assert "comm=0.5" in text and "mem=1,none" in text and "w_mem" not in text
    assert Problem(p=2, m=4, w_mem=0).describe().endswith(" mem=none w_mem=0")  # it changes the peaks
    assert "w_mem" not in Problem(p=2, m=4, w_mem=0, split=False).describe()  # B frees it all at once


def test_describe_shows_a_fraction_of_hundreds_of_digits_by_its_magnitude():
    text = Problem(p=2, m=4, tf=F(1, 10**999)).describe()
    assert "tf=about 1e-999 tb=1" in text and len(text) < 100  # was 1,056 characters
    assert "tf=1/3 " in Problem(p=2, m=4, tf=F(1, 3)).describe()  # no decimal is exact: as written
    assert "tb=2.5 " in Problem(p=2, m=4, tb=F(5, 2)).describe()  # as typed, like the cap line's 3.5


# ---- problem files ----------------------------------------------------------------------------


def _rich_problem() -> Problem:
    return Problem(
        p=2, m=3, v=2, placement="vshape", split=True, comm=F(1, 3), mem=(F(3, 2), None),
        w_mem=F(1, 4), stage_costs=((1, 2, 3), (F(1, 2), 1, 0), (1, 1, 1), (2, 2, F(1, 5))),
    )


def test_stage_costs_replace_tf_tb_tw_by_their_mean_per_rank():
    given = Problem(p=2, m=1, tf=5, stage_costs=((1, 2, 0), (3, 2, F(1, 2))))
    assert (given.tf, given.tb, given.tw) == (2, 2, F(1, 4))
    assert given == Problem(p=2, m=1, stage_costs=((1, 2, 0), (3, 2, F(1, 2))))
    assert dataclasses.replace(given, m=1) == given  # replace passes the means back in


def test_problem_dict_round_trips_exactly():
    p = _rich_problem()
    data = json.loads(json.dumps(problem_to_dict(p)))
    assert problem_from_dict(data) == p


def test_problem_dict_overrides_and_unknown_fields():
    assert problem_from_dict({"p": 2, "m": 2}, m=5).m == 5
    with pytest.raises(ProblemError, match="unknown problem field\\(s\\): ranks"):
        problem_from_dict({"p": 2, "m": 2, "ranks": 3})
    with pytest.raises(ProblemError, match=re.escape("the problem gives no p (ranks)")):
        problem_from_dict({"m": 2})
    with pytest.raises(ProblemError, match=re.escape("gives no p (ranks) and no m (microbatches)")):
        problem_from_dict({})
    assert problem_from_dict({"p": 3, "m": 2, "mem": [2, 2, 2]}).mem == (2, 2, 2)
    with pytest.raises(ProblemError, match=re.escape("mem gives 2 caps for 3 ranks; give one or 3")):
        problem_from_dict({"p": 3, "m": 2, "mem": [2, 2]})
    with pytest.raises(ProblemError, match="must be a table"):
        problem_from_dict([1, 2])
    with pytest.raises(ProblemError, match="exactly tf, tb, tw"):
        problem_from_dict({"p": 1, "m": 1, "stage_costs": [{"tf": 1, "tb": 1}]})
    with pytest.raises(ProblemError, match="stage_costs must be a list"):
        problem_from_dict({"p": 1, "m": 1, "stage_costs": 7})
    with pytest.raises(ProblemError, match="so tf, tb, tw would not apply"):  # one would be ignored
        problem_from_dict({"p": 1, "m": 1, "tf": 2, "stage_costs": [[1, 1, 1]]})
    assert "tf" not in problem_to_dict(problem_from_dict({"p": 1, "m": 1, "stage_costs": [[1, 1, 1]]}))


def test_read_problem_file_toml_and_json(tmp_path):
    toml = tmp_path / "p.toml"
    toml.write_text('p = 2\nm = 3\ncomm = "3/2"\nmem = [2, "none"]\n'
                    'stage_costs = [{tf = 1, tb = 1, tw = 0.5}, [1, 2, 0]]\n')
    p = problem_from_dict(read_problem_file(str(toml)))
    assert (p.comm, p.mem, p.duration("W", 0), p.duration("I", 1)) == (F(3, 2), (2, None), F(1, 2), 2)
    js = tmp_path / "p.json"
    js.write_text(json.dumps(problem_to_dict(_rich_problem())))
    assert problem_from_dict(read_problem_file(str(js))) == _rich_problem()


def test_a_format_field_other_than_a_plans_is_an_unknown_problem_field(tmp_path):
    """Only "format": "schedc-plan" makes a file a plan; any other format is a field a problem does
    not have (it was reported as a plan missing its format)."""
    from schedc.problem_io import problem_file_fields

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"p": 2, "m": 2, "format": "toml"}))
    with pytest.raises(ProblemError, match="unknown problem field\\(s\\): format"):
        problem_from_dict(problem_file_fields(str(path)))


@pytest.mark.parametrize("name, content", [("bad.toml", "p = = 2"), ("bad.json", "{p: 2"),
                                           ("bin.toml", b"\xff\xfe\x00")])
def test_unreadable_problem_files_are_problem_errors(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ProblemError) as err:
        read_problem_file(str(path))
    assert "\n" not in str(err.value)


def test_missing_problem_file(tmp_path):
    with pytest.raises(ProblemError, match="cannot read problem file"):
        read_problem_file(str(tmp_path / "nope.toml"))


def test_a_problem_hashes_once_and_not_across_processes():
    """Bounds hash a problem per rank (caches keyed by it), and ``mem`` holds p values, so the hash
    is kept; a pickle leaves it out, since strings hash differently in another process."""
    import dataclasses
    import pickle

    problem = Problem(p=3, m=6, mem=(2, 3, 4))
    assert hash(problem) == hash(Problem(p=3, m=6, mem=(2, 3, 4))) and "_hash" in problem.__dict__
    copy = pickle.loads(pickle.dumps(problem))
    assert "_hash" not in copy.__dict__ and copy == problem and hash(copy) == hash(problem)
    assert hash(dataclasses.replace(problem, m=12)) != hash(problem)


def test_rank_stages_of_many_ranks_in_one_pass():
    problem = Problem(p=5, m=1, v=2, placement="vshape")
    assert problem.rank_stages == ((0, 9), (1, 8), (2, 7), (3, 6), (4, 5))
    assert Problem(p=3, m=1, v=2).rank_stages == ((0, 3), (1, 4), (2, 5))


@pytest.mark.parametrize("stage", [99, 4, -1, None, "0", True, 1.0])
def test_stage_cost_of_no_such_stage_is_one_line(stage):
    """Stages 0..3: -1 read stage 3's cost, 99 and None the rank-wide one, silently."""
    for problem in (Problem(p=2, m=2, v=2), Problem(p=2, m=2, stage_costs=[(1, 2, 3)] * 4, v=2)):
        with pytest.raises(ProblemError, match=r"no stage .*: this problem has stages 0\.\.3"):
            problem.stage_cost(stage)
