"""Provides the call frame and the control signals that builtins raise to the machine loop."""

from __future__ import annotations

from typing import Any

from runtime.language.bytecode import Code
from runtime.vm.values import BoundFunction, Closure


class Frame:
    """One activation: code, position, operand stack and locals, all plain data.

    `stmt_pc`/`stmt_sp` remember where the current statement began (its STEP instruction and
    the operand-stack depth then), so `checkpoint()` can re-enter the statement.
    `traps` are open `try`/`catch` regions: (target pc, stack depth, push a failure?).
    `handlers` are open interrupt handlers; `threads` are message threads opened here.
    `entry` is a shallow copy of the arguments at entry (for a failure's checkpoint).
    """

    __slots__ = (
        "code",
        "pc",
        "stack",
        "locals",
        "stmt_pc",
        "stmt_sp",
        "traps",
        "handlers",
        "threads",
        "entry",
        "entry_env",
    )

    def __init__(self, code: Code, locals_: dict[str, Any], pc: int = 0) -> None:
        self.code = code
        self.pc = pc
        self.stack: list[Any] = []
        self.locals = locals_
        self.stmt_pc = pc
        self.stmt_sp = 0
        self.traps: list[tuple[int, int, bool]] = []
        self.handlers: list[Any] = []
        self.threads: list[str] = []
        self.entry: dict[str, Any] | None = None
        # A def's globals (shallow) and thread lengths at entry: what its failure's checkpoint
        # rolls back to.
        self.entry_env: tuple[dict[str, Any], dict[str, int]] | None = None

    def __repr__(self) -> str:
        return f"<Frame {self.code.name} pc={self.pc}>"


class Signal(Exception):  # noqa: N818 - these are control transfers, not errors
    """Base of the control transfers a builtin asks the machine loop for."""


class RestoreSignal(Signal):
    """`restore()` decided to roll back: the loop swaps in the checkpoint's state."""

    def __init__(self, checkpoint: dict[str, Any], options: dict[str, Any]) -> None:
        super().__init__("restore")
        self.checkpoint = checkpoint
        self.options = options


class RejectSignal(Signal):
    """An interrupt was rejected: the nearest def/node returns a failure carrying the reject's
    value (`reject("why")`), or "interrupt rejected" for a plain `reject()`."""

    def __init__(self, reason: str, value: Any = None) -> None:
        super().__init__(reason)
        self.value = value


class UnwindSignal(Signal):
    """Drop every frame above frame `depth` (a guard aborting its work): that frame goes on as
    if the call it was waiting on had returned `value`."""

    def __init__(self, depth: int, value: Any = None) -> None:
        super().__init__("unwind")
        self.depth = depth
        self.value = value


class ExitSignal(Signal):
    """`exit(code)` (std::system): the program ends now, with that exit code and no value."""

    def __init__(self, code: int) -> None:
        super().__init__("exit")
        self.code = code


class PauseSignal(Signal):
    """The run must wait for the outside world (an unanswered interrupt)."""

    def __init__(self, reason: str, payload: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.payload = payload


class TailCall:
    """Returned by a builtin that wants the machine to call a function in its place; the
    function's return value becomes the builtin's result. `name` names a function, or is a
    derived function value (`f.partial(…)`) or a block to call."""

    __slots__ = ("name", "args", "named")

    def __init__(
        self,
        name: str | BoundFunction | Closure,
        args: list[Any],
        named: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.args = args
        self.named = named or {}


class Decision:
    """What an interrupt handler answered: approve(v), reject(m) or resolve(v)."""

    __slots__ = ("action", "value")

    def __init__(self, action: str, value: Any = None) -> None:
        self.action = action
        self.value = value

    def __repr__(self) -> str:
        return f"{self.action}({self.value!r})"

    def js_object(self) -> dict[str, Any]:
        """What JSON.stringify and print show: the reference's `{type, value}` (a missing value
        is left out, as JavaScript leaves out undefined)."""
        return (
            {"type": self.action}
            if self.value is None
            else {"type": self.action, "value": self.value}
        )
