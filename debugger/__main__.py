"""Allows `python -m debugger` as another name for the `agency` command."""

from debugger.cli import main

main()
