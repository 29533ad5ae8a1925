"""The ``schedc`` console script's entry point: a Ctrl-C while the command line loads its modules
(about half a second, OR-Tools' later) exits 130 without a traceback, as one during a run does."""

from __future__ import annotations


def main() -> int:
    """The exit status of ``schedc.cli.main``, or 130 if interrupted while it loads."""
    try:
        from schedc.cli import main as run
    except KeyboardInterrupt:
        return 130
    return run()
