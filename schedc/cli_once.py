"""An argparse action for options that name one file each."""

from __future__ import annotations

import argparse

from schedc.errors import printable


class Once(argparse.Action):
    """An output option given twice is refused: argparse would keep the last file and drop the
    first without a word, where a user asking for two pictures expects two."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        first = getattr(namespace, self.dest)
        if first is not None:
            parser.error(f"argument {'/'.join(self.option_strings)}: given twice "
                         f"({printable(first)}, then {printable(values)}): one file each")
        setattr(namespace, self.dest, values)
