"""The `schedc profile` subcommand (being built; registers nothing yet)."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Adds the subcommand to the schedc parser."""
