"""The README's test command installs the ``[test]`` extra, torch and matplotlib with it. The runtime's
and the pictures' test files skip themselves where those do not import (``pytest.importorskip``), so
that a run without them still tests the core; here, a broken or missing install fails loudly instead
of leaving CI green with the runtime untested."""

from __future__ import annotations

import importlib


def test_torch_with_gloo_imports() -> None:
    torch = importlib.import_module("torch")
    assert torch.distributed.is_available() and torch.distributed.is_gloo_available()


def test_matplotlib_makes_a_figure() -> None:
    pyplot = importlib.import_module("matplotlib.pyplot")
    figure = pyplot.figure()
    try:
        assert figure.canvas.get_width_height() != (0, 0)  # a figure with its canvas, as --plot makes
    finally:
        pyplot.close(figure)
