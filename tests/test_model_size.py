"""The sizes ``schedc profile`` checks against memory before torch allocates them."""

from __future__ import annotations

import pytest

from schedc.errors import SchedcError
from schedc.model_size import check_fits, demo_parameters, physical_memory, tensor_bytes


@pytest.mark.parametrize(("model", "layers", "width"), [("mlp", 3, 8), ("transformer", 2, 12)])
def test_the_demo_parameter_count_is_the_built_models(model, layers, width):
    """The count must never exceed what torch builds: an overestimate would refuse a model that fits."""
    from schedc.runtime import models

    built = models.mlp(layers, width) if model == "mlp" else models.transformer(layers, width, 4, 5, 7)
    assert demo_parameters(model, layers, width, seq=5, vocab=7) == \
        sum(p.numel() for layer in built for p in layer.parameters())


def test_sizes_beyond_memory_are_refused_and_others_pass():
    total = physical_memory()
    assert total is not None and total > 0  # Linux says
    check_fits(total, "all of it", "never raised")
    with pytest.raises(SchedcError, match=r"^a tensor would take .* GiB, more than .*: shrink it$"):
        check_fits(total + 1, "a tensor", "shrink it")
    assert tensor_bytes((8, 2**40, 2**40), 4) == 2**85  # beyond torch's 64-bit sizes, exact here


def test_sizes_print_in_gib_without_exponents():
    """Three digits below 1000 GiB; from there whole GiB with thousands separators (999.7 rounds to
    1,000, which three digits would print as 1e+03)."""
    from schedc.model_size import _gib

    assert [_gib(int(g * 2**30)) for g in (1.5, 999.4, 999.7, 26800)] == [
        "1.5 GiB", "999 GiB", "1,000 GiB", "26,800 GiB"]
