"""Provides `main`, the `agency` console script: `agency --version` is answered here, before
click and the commands are imported (they are most of the command's start-up time, and the
version is all that is asked); everything else goes to `debugger.cli.main`."""

from __future__ import annotations

import sys

from debugger import __version__

# What click's `version_option` on `debugger.cli.cli` prints (a test holds them together).
VERSION_LINE = f"agency, version {__version__}\n"


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(VERSION_LINE)
        return
    from debugger.cli import main as run

    run()
