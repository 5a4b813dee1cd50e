"""The `agency` command and the time-travel debugger.

Ctrl-C while the command is still starting (importing) ends it quietly with 130, as a shell
expects, instead of a KeyboardInterrupt traceback; `debugger.cli.main` restores the normal
handler once the command is ready to report interruptions itself.
"""

import os

try:  # the C module `signal` wraps: `signal` itself makes enums of every signal and handler
    import _signal as signals  # when imported, a third of `agency --version`'s CPU time
except ImportError:  # pragma: no cover (an interpreter without it)
    import signal as signals

__all__ = ["__version__", "signals"]

__version__ = "0.1.0"  # pyproject.toml's version (a test holds them together); read here, not
# from the installed package's metadata, which costs `agency --version` a third of its start-up


def _quiet_exit(signum: int, frame: object) -> None:
    os._exit(130)


if signals.getsignal(signals.SIGINT) is signals.default_int_handler:
    signals.signal(signals.SIGINT, _quiet_exit)
