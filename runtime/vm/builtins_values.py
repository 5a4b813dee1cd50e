"""Provides builtins for values and types: `sleep(ms)` (unit literals make it `sleep(50ms)`).

`sleep` waits through the effect journal, so a replayed or resumed run is served the recorded
wait instead of waiting again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError
from runtime.vm.builtin_base import arg, builtin
from runtime.vm.effects import observe
from runtime.vm.values import to_number

if TYPE_CHECKING:
    from runtime.vm.machine import Machine

MAX_SLEEP_MS = 24 * 3_600_000


@builtin("sleep")
def _sleep(m: Machine, args: list[Any], named: dict[str, Any]) -> None:
    ms = to_number(arg(args, named, 0, "ms", 0))
    if ms != ms or ms < 0 or ms > MAX_SLEEP_MS:
        raise AgencyRuntimeError(f"sleep takes 0 to {MAX_SLEEP_MS} milliseconds, not {ms}")

    def wait() -> None:
        time.sleep(ms / 1000)

    observe(m, "sleep", {"ms": ms}, wait)
