"""Allows `python -m debugger` as another name for the `agency` command."""

from debugger.entry import main

main()
