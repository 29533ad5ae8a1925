# sed -i '181s/len(args.bounds) != problem.num_stages/False/' schedc/cli_profile.py
# sed -i '193s/if args.bounds and _as_json(args):/if _as_json(args):/' schedc/cli_profile.py
# sed -i '232s/for a, b in bounds\]/for a, b in stage_bounds(len(layers), 2)]/' schedc/cli_profile.py
# sed -i '274s/if args.bounds else/if not args.bounds else/' schedc/cli_profile.py
# sed -i '244s/--bounds: {err}/{err}/' schedc/cli_profile.py
# sed -i '14s/:(\[0-9\]{1,9})"/:([0-9]+)"/' schedc/layer_ranges.py
# sed -i '127s/p\*v = {num_stages} stages/{num_stages}/' runtime/stages.py
"""``schedc profile --bounds``: uneven stages measured as they will be trained (the header writes the
cut back for ``split_stages``' ``bounds=``), and bounds that do not fit the model refused in one line
before anything is timed or written."""

from __future__ import annotations

import argparse

import pytest

from schedc.cli import main
from schedc.layer_ranges import format_layer_ranges, parse_layer_ranges

BASE = ["profile", "--p", "2", "--m", "4", "--layers", "4", "--width", "16", "--microbatch", "4",
        "--repeats", "1", "--comm", "0", "--threads", "1"]


def _header(path) -> dict[str, str]:
    """The header's lines by their first words."""
    lines = [line.lstrip("# ") for line in path.read_text().splitlines() if line.startswith("#")]
    return {line.split(":")[0]: line for line in lines if ":" in line}


def test_ranges_read_back_as_written() -> None:
    assert parse_layer_ranges("0:3,3:8, 8:12") == ((0, 3), (3, 8), (8, 12))
    assert format_layer_ranges(parse_layer_ranges("0:3,3:8,8:12")) == "0:3,3:8,8:12"
    for bad in ("", "0:3,", "0-3", "0:3;3:8", "0:x", "a:b", "0:3:8", "\uff10:3", "0_0:3", "0:" + "9" * 10):
        with pytest.raises(argparse.ArgumentTypeError, match="START:END layer ranges"):
            parse_layer_ranges(bad)


def test_uneven_stages_are_measured_at_their_bounds(tmp_path, capsys) -> None:
    """The demo MLP's 8 layers (a Linear and a Tanh a block) cut 2 and 6 rather than 4 and 4: the
    first rank's stage holds less (its unit bytes), the second's more; the header names the cut and
    what split_stages needs."""
    even, uneven = tmp_path / "even.toml", tmp_path / "uneven.toml"
    assert main([*BASE, "-o", str(even)]) == 0
    assert main([*BASE, "--bounds", "0:2,2:8", "-o", str(uneven)]) == 0
    capsys.readouterr()
    units = {}
    for name, path in (("even", even), ("uneven", uneven)):
        line = next(v for k, v in _header(path).items() if k.startswith("bytes of one unit"))
        units[name] = [int(x) for x in line.rsplit(":", 1)[1].split()]
    assert units["uneven"][0] < units["even"][0] and units["uneven"][1] > units["even"][1]
    assert _header(even)["layers per stage"].endswith("0:4,4:8 (split_stages' even cut)")
    assert _header(uneven)["layers per stage"].endswith(
        "0:2,2:8 (--bounds: give split_stages the same bounds=)")


def test_a_count_of_ranges_other_than_the_stages_is_refused_before_torch(capsys, monkeypatch) -> None:
    """It was checked once torch had loaded and built the model (seconds, and the busy notes first)."""
    import schedc.cli_profile

    def no_torch():
        raise AssertionError("torch loaded before the check")

    monkeypatch.setattr(schedc.cli_profile, "_import_torch", no_torch)
    for bounds, count in (("0:2,2:5,5:8", "3 layer ranges"), ("0:8", "1 layer range")):
        assert main([*BASE, "--bounds", bounds]) == 1
        assert capsys.readouterr().err == \
            f"schedc: error: --bounds: {count} given for the p*v = 2 stages: give one per stage\n"


def test_split_stages_names_a_wrong_count_of_ranges() -> None:
    from schedc.runtime import PlanMismatchError
    from schedc.runtime.stages import check_bounds

    for bounds, said in (([(0, 2), (2, 5), (5, 8)], "3 stage ranges"), ([(0, 8)], "1 stage range")):
        with pytest.raises(PlanMismatchError, match=rf"^{said} given for the p\*v = 2 stages$"):
            check_bounds(8, 2, bounds)


@pytest.mark.parametrize(("bounds", "message"), [
    ("0:2,2:7", "--bounds: stage bounds must cut the 8 layers in order into non-empty ranges"),
    ("0:3,2:8", "--bounds: stage bounds must cut the 8 layers in order"),
    ("0:0,0:8", "--bounds: stage bounds must cut the 8 layers in order"),
])
def test_bounds_that_do_not_fit_are_one_line_and_write_nothing(tmp_path, capsys, bounds, message) -> None:
    out = tmp_path / "problem.toml"
    assert main([*BASE, "--bounds", bounds, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"schedc: error: {message}") and err.count("\n") == 1
    assert not out.exists()


def test_malformed_bounds_are_a_usage_error(capsys) -> None:
    assert main([*BASE, "--bounds", "0:2;2:8"]) == 2
    assert "argument --bounds: expected START:END layer ranges" in capsys.readouterr().err


def test_a_json_file_cannot_record_the_cut_so_stderr_gives_it(tmp_path, capsys) -> None:
    note = "a JSON problem file has no header to record the cut: give split_stages bounds=[(0, 2), (2, 8)]"
    assert main([*BASE, "--bounds", "0:2,2:8", "-o", str(tmp_path / "b.json")]) == 0
    assert note in capsys.readouterr().err
    assert main([*BASE, "--bounds", "0:2,2:8", "-o", str(tmp_path / "b.toml")]) == 0
    assert main([*BASE, "-o", str(tmp_path / "even.json")]) == 0  # the even cut needs no bounds=
    assert "record the cut" not in capsys.readouterr().err
