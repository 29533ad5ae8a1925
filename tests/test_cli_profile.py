"""The profile command: measured costs and latency written as a problem file the CLI reads back,
user modules loaded from the working directory, and its one-line errors and notes."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

from schedc.cli import main
from schedc.plan_json import load_plan
from schedc.problem_io import problem_from_dict, read_problem_file
from schedc.profile_failures import is_out_of_memory


def test_cli_profile_measures_latency_and_writes_a_file_the_cli_reads(tmp_path, capsys):
    out = tmp_path / "problem.toml"
    argv = ["profile", "--p", "2", "--m", "4", "--layers", "2", "--width", "8", "--repeats", "2",
            "--microbatch", "2", "-o", str(out)]
    assert main(argv) == 0
    data = tomllib.loads(out.read_text())
    assert data["p"] == 2 and data["m"] == 4 and len(data["stage_costs"]) == 2 and data["comm"] >= 0
    assert "P2P latency" in capsys.readouterr().out
    assert main(["baseline", "1f1b", "--problem", str(out)]) == 0
    plan = tmp_path / "plan.json"
    assert main(["solve", "--problem", str(out), "--time-limit", "2", "--workers", "1", "--quiet",
                 "-o", str(plan)]) == 0
    assert load_plan(str(plan)).problem == problem_from_dict(read_problem_file(str(out)))


def test_cli_profile_transformer_json_and_errors(tmp_path, capsys):
    out = tmp_path / "problem.json"
    argv = ["profile", "--model", "transformer", "--p", "1", "--m", "2", "--v", "2", "--layers", "2",
            "--width", "8", "--heads", "2", "--seq", "4", "--vocab", "16", "--repeats", "1", "-o", str(out)]
    assert main(argv) == 0
    assert problem_from_dict(read_problem_file(str(out))).num_stages == 2
    assert main(["profile", "--p", "2", "--m", "2", "--tf", "3"]) == 2  # a usage error, as an unknown option
    assert main(["profile", "--p", "2", "--m", "2", "--module", "no_such_module:f", "--comm", "0"]) == 1
    err = capsys.readouterr().err
    assert "schedc: error: profile: --tf: the costs are measured here; drop the flag (see" in err
    assert "schedc: error: --module no_such_module:f: cannot load it" in err


def test_cli_profile_help_after_a_refused_cost_flag_prints_the_help(capsys):
    assert main(["profile", "--tw", "1", "--help"]) == 0  # --help wins, as for any other option
    out, err = capsys.readouterr()
    assert out.startswith("usage: schedc profile") and "--activation-budget" in out and not err
    assert main(["profile", "--p", "2", "--m", "2", "--tf", "1", "--tb", "2"]) == 2
    assert "schedc: error: profile: --tf: the costs are measured here" in capsys.readouterr().err  # the first


def test_profile_help_does_not_import_torch():
    code = ("import sys; from schedc.cli import main; main(['profile', '--help']); "
            "sys.exit('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def test_cli_profile_user_module_from_the_working_directory(tmp_path, monkeypatch, capsys):
    (tmp_path / "user_layers.py").write_text(
        "from torch import nn\n\ndef layers():\n    return [nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6)]\n")
    monkeypatch.chdir(tmp_path)
    argv = ["profile", "--module", "user_layers:layers", "--input-shape", "6", "--p", "1", "--m", "2",
            "--v", "3", "--repeats", "1"]
    assert main(argv) == 0
    data = tomllib.loads(capsys.readouterr().out)
    assert data["v"] == 3 and len(data["stage_costs"]) == 3
    assert main([*argv[:3], "--p", "1", "--m", "2"]) == 1
    assert "needs --input-shape" in capsys.readouterr().err


def test_cli_profile_takes_layers_that_pass_tuples_and_a_tuple_example(tmp_path, monkeypatch, capsys):
    (tmp_path / "pair_layers.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "class Pair(nn.Module):  # two tensors in, two out: the runner's Chain unpacks them\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(6, 6)\n\n"
        "    def forward(self, x, ids):\n        return self.lin(x) + ids.unsqueeze(1), ids\n\n"
        "def layers():\n    return [Pair(), Pair(), Pair()], (torch.randn(2, 6), torch.arange(2))\n")
    monkeypatch.chdir(tmp_path)
    assert main(["profile", "--module", "pair_layers:layers", "--p", "2", "--m", "2", "--repeats", "1"]) == 0
    text = capsys.readouterr().out
    data = tomllib.loads(text)  # the latency was measured on stage 0's output
    assert len(data["stage_costs"]) == 2 and data["comm"] >= 0
    assert "(pair_layers:layers, microbatch 2)" in text  # the example's size, not --microbatch's default
    pair = ["profile", "--module", "pair_layers:layers", "--p", "2", "--m", "2"]
    for flag, value in (("--microbatch", "5"), ("--input-shape", "99"), ("--input-dtype", "int64")):
        assert main([*pair, flag, value]) == 1  # the example sets them: the flag would be ignored
        assert f"{flag}: --module pair_layers:layers returns its own example" in capsys.readouterr().err


def test_cli_profile_times_a_user_modules_loss_when_it_gives_one(tmp_path, monkeypatch, capsys):
    """``--module`` profiled without a loss, silently: the last stage's backward started from ones.
    A function may return (layers, example, loss_fn, target); without one a note says what is not timed."""
    (tmp_path / "lossy_layers.py").write_text(
        "import torch\nfrom torch import nn\n\ncalls = []\n\n"
        "def loss(out, target):\n    calls.append(tuple(out.shape))\n"
        "    return ((out - target) ** 2).mean()\n\n"
        "def two():\n    return [nn.Linear(6, 6), nn.Linear(6, 6)]\n\n"
        "def with_loss():\n    return two(), torch.randn(4, 6), loss, torch.randn(4, 6)\n\n"
        "def bad_loss():\n    return two(), torch.randn(4, 6), 'mse', None\n\n"
        "def module_loss():\n    return two(), torch.randn(4, 6), nn.MSELoss(), torch.randn(4, 6)\n\n"
        "def four():\n    return tuple(two() + two())\n\n"
        "def without():\n    return two(), torch.randn(4, 6)\n")
    monkeypatch.chdir(tmp_path)
    base = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--module"]
    assert main([*base, "lossy_layers:with_loss"]) == 0
    assert "gives no loss" not in capsys.readouterr().err
    assert sys.modules["lossy_layers"].calls and set(sys.modules["lossy_layers"].calls) == {(4, 6)}
    assert main([*base, "lossy_layers:without"]) == 0
    assert "schedc: note: --module lossy_layers:without gives no loss" in capsys.readouterr().err
    assert main([*base, "lossy_layers:module_loss"]) == 0  # a loss module, as torch's own losses are
    assert "gives no loss" not in capsys.readouterr().err
    assert main([*base, "lossy_layers:four", "--input-shape", "6"]) == 0  # four layers, not a quad
    assert "gives no loss" in capsys.readouterr().err
    assert main([*base, "lossy_layers:bad_loss"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must be a loss function (output, target) -> loss, got str" in err


def test_cli_profile_user_module_failures_are_one_line_errors(tmp_path, monkeypatch, capsys):
    (tmp_path / "bad_layers.py").write_text(
        "from torch import nn\n\ndef fails():\n    raise RuntimeError('boom')\n\n"
        "def text():\n    return 'layers'\n\ndef linear():\n    return [nn.Linear(6, 6), nn.Linear(6, 6)]\n"
        "def empty():\n    return []\n\ndef words():\n    return ['a', nn.Linear(6, 6)]\n\n"
        "def three():\n    return [nn.Linear(6, 6)] * 2, None, None\n")
    monkeypatch.chdir(tmp_path)
    base = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--input-shape"]
    cases = {"fails": ("6", "cannot load it (RuntimeError: boom)"),
             "text": ("6", "expected a list of torch.nn.Module layers, got str"),
             "linear": ("5", "the model fails on the example microbatch (RuntimeError: mat1 and mat2"),
             "linear ": ("0", "bad --input-shape '0'"),
             "empty": ("6", "expected a list of torch.nn.Module layers, got an empty list"),
             "words": ("6", "expected a list of torch.nn.Module layers, got a list holding str"),
             "linear  ": ("6,x", "bad --input-shape '6,x': positive sizes"),
             "three": ("6", "(layers, example, loss_fn, target), got a tuple of 3")}
    for func, (shape, message) in cases.items():
        assert main([*base, shape, "--module", f"bad_layers:{func.strip()}"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("schedc: error: ") and err.count("\n") == 1 and message in err


def test_cli_profile_user_modules_that_exit_print_or_mislead_are_handled(tmp_path, monkeypatch, capsys):
    """A module's sys.exit passed for success (exit 0, no file); its prints went into the problem file
    on stdout; an example of no samples measured overhead and made a 1-byte budget no cap; an output
    without a gradient was timed as if a backward followed; a quantized input dtype was a traceback."""
    (tmp_path / "odd_layers.py").write_text(
        "import sys\nimport torch\nfrom torch import nn\n\n"
        "class Loud(nn.Linear):\n    def forward(self, x):\n        print('forward', tuple(x.shape))\n"
        "        return super().forward(x)\n\n"
        "class Cut(nn.Module):\n    def forward(self, x):\n        return x.detach()\n\n"
        "def exits():\n    sys.exit(0)\n\n"
        "def loud():\n    print('building')\n    return [Loud(6, 6), Loud(6, 6)]\n\n"
        "def empty():\n    return [nn.Linear(6, 6), nn.Linear(6, 6)], torch.randn(0, 6)\n\n"
        "def cut():\n    return [nn.Linear(6, 6), Cut()]\n")
    monkeypatch.chdir(tmp_path)
    base = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--module"]
    cases = {"exits": ("--input-shape", "6", "cannot load it (SystemExit: 0)"),
             "empty": ("--activation-budget", "1", "its example microbatch has no samples (leading size 0)"),
             "cut": ("--input-shape", "6", "the model's output does not require grad"),
             "cut ": ("--input-dtype", "qint8", "bad --input-dtype 'qint8': torch cannot make an input")}
    for func, (flag, value, message) in cases.items():
        extra = ["--input-shape", "6"] if flag == "--input-dtype" else []
        assert main([*base, f"odd_layers:{func.strip()}", flag, value, *extra]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("schedc: error: ") and err.count("\n") == 1 and message in err
    assert main([*base, "odd_layers:loud", "--input-shape", "6"]) == 0
    out, err = capsys.readouterr()
    assert "building" in err and "forward (8, 6)" in err and "building" not in out and "forward" not in out
    (tmp_path / "p.toml").write_text(out)
    assert main(["solve", "--problem", str(tmp_path / "p.toml"), "--quiet"]) == 0  # stdout is the file
    assert main(["profile", "--p", "2", "--m", "2", "--repeats", "10001"]) == 1
    assert "--repeats must be within [1, 10,000], got 10001" in capsys.readouterr().err


def test_cli_profile_out_of_memory_is_one_line(capsys):
    """A model or microbatch larger than any memory (8e16 bytes of weights, then 3e14 of input): the
    weights are counted before torch builds them (a std::bad_alloc from a layer's constructor was a
    traceback), the demo's input fails in torch and is caught."""
    base = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--layers", "2"]
    assert main([*base, "--width", "100000000"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("schedc: error: the mlp demo model's parameters would take 74,505,807 GiB, more")
    assert err.count("\n") == 1 and "give smaller --layers or --width" in err
    assert main([*base, "--width", "8", "--microbatch", "10000000000000"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("schedc: error: out of memory building or timing the model (")
    assert err.count("\n") == 1 and "give smaller --width" in err
    assert is_out_of_memory(RuntimeError("std::bad_alloc")) and not is_out_of_memory(RuntimeError("boom"))


def test_cli_profile_refuses_an_input_larger_than_memory_before_torch_makes_it(tmp_path, monkeypatch, capsys):
    """An oversized --input-shape was blamed on the dtype (or overflowed torch's 64-bit sizes)."""
    (tmp_path / "few_layers.py").write_text(
        "from torch import nn\n\ndef two():\n    return [nn.Linear(6, 6)] * 2\n")
    monkeypatch.chdir(tmp_path)
    base = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--module", "few_layers:two"]
    for shape in ("99999999,99999999", "99999999999999999999"):
        assert main([*base, "--input-shape", shape]) == 1
        err = capsys.readouterr().err
        assert err.startswith("schedc: error: an input microbatch of shape (8, ") and err.count("\n") == 1
        assert "more than this machine's" in err and "give a smaller --input-shape or --microbatch" in err


def test_cli_profile_under_autocast_says_so_in_the_header(tmp_path, capsys):
    base = ["profile", "--p", "2", "--m", "4", "--layers", "2", "--width", "64", "--microbatch", "2",
            "--repeats", "1", "--comm", "0"]
    units = []
    for extra in ([], ["--autocast", "bfloat16"]):
        assert main([*base, *extra, "-o", str(tmp_path / "p.toml")]) == 0
        text = (tmp_path / "p.toml").read_text()
        assert ("under autocast to bfloat16); times" in text) == bool(extra)
        units.append([int(u) for u in text.split("after F or I): ")[1].split("\n")[0].split()])
    capsys.readouterr()
    assert units[0] != units[1]  # what the stages save under autocast is measured, not float32's


def test_cli_profile_refuses_empty_module_and_input_values(capsys):
    """An unset shell variable (``--module "$M"``) profiled the demo model instead, exit 0."""
    for flag in ("--module", "--input-shape", "--input-dtype"):
        assert main(["profile", "--p", "2", "--m", "2", flag, ""]) == 2
        assert f"argument {flag}: needs a value, got ''" in capsys.readouterr().err


def test_cli_profile_writes_json_for_any_case_of_json_and_never_over_its_input(tmp_path, capsys):
    (tmp_path / "in.toml").write_text("p = 2\nm = 2\n")
    base = ["profile", "--repeats", "1", "--comm", "0", "--layers", "2", "--width", "8", "--problem"]
    assert main([*base, str(tmp_path / "in.toml"), "-o", str(tmp_path / "out.JSON")]) == 0
    assert json.loads((tmp_path / "out.JSON").read_text())["p"] == 2
    assert problem_from_dict(read_problem_file(str(tmp_path / "out.JSON"))).p == 2  # read as JSON
    assert main([*base, str(tmp_path / "in.toml"), "-o", str(tmp_path / "in.toml")]) == 1
    assert "--problem and -o name the same file" in capsys.readouterr().err
    assert (tmp_path / "in.toml").read_text() == "p = 2\nm = 2\n"


def test_cli_profile_takes_a_tuple_of_layers_and_notes_replaced_costs(tmp_path, monkeypatch, capsys):
    (tmp_path / "tuple_layers.py").write_text(
        "from torch import nn\n\ndef three():\n    return tuple(nn.Linear(6, 6) for _ in range(3))\n")
    (tmp_path / "costs.toml").write_text("p = 2\nm = 2\nstage_costs = [[1, 1, 1], [2, 2, 2]]\n")
    monkeypatch.chdir(tmp_path)
    base = ["profile", "--repeats", "1", "--comm", "0", "--input-shape", "6", "--module",
            "tuple_layers:three"]
    assert main([*base, "--problem", "costs.toml"]) == 0
    out, err = capsys.readouterr()
    notes = err.splitlines()
    assert notes[0] == "schedc: note: the costs in costs.toml are replaced by the measured ones"
    assert notes[1].startswith("schedc: note: --module tuple_layers:three gives no loss") and len(notes) == 2
    assert len(tomllib.loads(out)["stage_costs"]) == 2


def test_reprofiling_a_file_with_caps_notes_their_new_unit_and_a_budget_is_in_the_header(
        tmp_path, monkeypatch, capsys):
    """A file's caps kept through a new measurement silently changed what they mean in bytes; the
    budget that set them was not recorded."""
    monkeypatch.chdir(tmp_path)
    demo = ["profile", "--p", "2", "--m", "4", "--layers", "4", "--width", "16", "--repeats", "1",
            "--comm", "0"]
    assert main([*demo, "--activation-budget", "16KiB", "-o", "first.toml"]) == 0
    capsys.readouterr()
    text = (tmp_path / "first.toml").read_text()
    assert "# caps from an activation budget of 16384 bytes per rank" in text
    assert main(["profile", "--problem", "first.toml", "--layers", "4", "--width", "32", "--repeats", "1",
                 "--comm", "0", "-o", "second.toml"]) == 0
    err = capsys.readouterr().err
    assert "the caps in first.toml are kept as numbers, now in units of this measurement's bytes" in err
    assert "activation budget" not in (tmp_path / "second.toml").read_text()


def test_cli_profile_prints_the_busy_note_before_it_measures(tmp_path, monkeypatch, capsys):
    from schedc import cli_profile

    monkeypatch.setattr(cli_profile, "load_average", lambda: 1000.0)
    args = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--comm", "0", "--layers", "2",
            "--threads", "2", "-o", str(tmp_path / "p.toml")]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert err.startswith("schedc: note: this machine is busy (load average 1000.0 on ")
    assert "torch's 2 threads" in err and "P2P latency" not in err  # --comm given: nothing timed
    args = ["profile", "--p", "2", "--m", "2", "--repeats", "1", "--layers", "2", "--threads", "1",
            "-o", str(tmp_path / "q.toml")]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert err.startswith("schedc: note: this machine is busy (load average 1000.0 on ")
    assert "P2P latency is timed between two processes" in err and "threads" not in err


def test_byte_counts_read_and_print_in_decimal_and_binary_units():
    """--activation-budget: KB and MB are powers of 1000, KiB and MiB of 1024; the summary prints
    binary units from exactly one of them up (1024 bytes is 1 KiB, not 1024 B)."""
    from schedc.byte_sizes import format_bytes as _fmt_bytes
    from schedc.byte_sizes import parse_size as _size

    assert [_size(t) for t in ("512MB", "1.5KB", "1KiB", "2MiB", "1e9")] == [
        512 * 1000**2, 1500, 1024, 2 * 1024**2, 10**9]
    assert [_fmt_bytes(n) for n in (1023, 1024, 1536, 2**20)] == ["1023 B", "1 KiB", "1.5 KiB", "1 MiB"]
