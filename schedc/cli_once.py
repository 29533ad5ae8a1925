"""Argparse actions for options that take one value each."""

from __future__ import annotations

import argparse

from schedc.errors import printable


class Once(argparse.Action):
    """A file option given twice is refused: argparse would keep the last file and drop the first
    without a word, where a user asking for two pictures expects two, and one giving two problem
    files would get a plan of the second alone."""

    each = "one file each"

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: str,
                 option_string: str | None = None) -> None:
        first = getattr(namespace, self.dest)
        if first is not None:
            parser.error(f"argument {'/'.join(self.option_strings)}: given twice "
                         f"({printable(first)}, then {printable(values)}): {self.each}")
        setattr(namespace, self.dest, values)


class OnceValue(Once):
    """The same for a value that is not a file (``profile --module``: the second model alone would
    be measured)."""

    each = "give it once"
