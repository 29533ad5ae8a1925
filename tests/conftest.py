"""Test-wide hypothesis settings: no per-example deadline (CI machines are shared and noisy; speed is
measured by benchmarks, never asserted), and derandomised under CI so a red run reproduces."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "schedc",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
    print_blob=True,
)
settings.load_profile("schedc")
