"""Placeholder: the `schedc solve` subcommand lands with the solver (issue 3)."""
