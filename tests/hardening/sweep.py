"""Issue 11, item 10: every registered builtin and every method, called with hostile arguments
(Infinity, NaN, -0, huge integers, lone surrogates, missing arguments, wrong types), must either
answer or raise an Agency error in Agency's words: never a Python exception, never Python's own
wording. `python -m tests.hardening.sweep` prints the figures (attempts / clean / defects)."""

from __future__ import annotations

import functools
import math
import os
import re
import signal
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from runtime.errors import AgencyError
from runtime.language.bytecode import FuncRef
from runtime.language.program import compile_source
from runtime.vm import builtins, builtins_data, classes
from runtime.vm import methods as value_methods
from runtime.vm.frames import Frame, Signal
from runtime.vm.machine import Machine
from runtime.vm.values import JSArray, JSObject

HOSTILE: list[tuple[str, Any]] = [
    ("Infinity", math.inf),
    ("-Infinity", -math.inf),
    ("NaN", math.nan),
    ("-0", -0.0),
    ("1e308", 1e308),
    ("2**64", 2**64),
    ("10**5000", 10**5000),
    ("-10**5000", -(10**5000)),
    ("lone surrogate", "\ud800"),
    ("empty string", ""),
    ("NUL string", "a\0b"),
    ("null", None),
    ("true", True),
    ("array", None),  # built fresh per call (a builtin may change it)
    ("object", None),
    ("function", FuncRef("print")),
]

# Wording that is Python's, not Agency's.
PYTHONISMS = re.compile(
    r"positional argument|NoneType|'\w+' object|float infinity|float NaN|<lambda>|"
    r"Exceeds the limit|invalid literal|has no attribute|unsupported operand|not subscriptable|"
    r"InvalidOperation|codec can't|surrogates not allowed|'str'|'int'|'float'|'list'|'dict'|"
    r"list index|must be (str|int|real number)|embedded null|takes \d|object of type|Traceback|"
    r"JSArray|JSObject|FuncRef|math domain error"
)

# Builtins that change the process itself rather than a value (tested elsewhere).
SKIPPED = frozenset({"__system_notify"})


def fresh(name: str, value: Any) -> Any:
    if name == "array":
        return JSArray([1, math.nan, "\ud800"])
    if name == "object":
        return JSObject({"a": math.inf, "length": 10**5000})
    return value


def argument_lists() -> Iterator[tuple[str, list[Any]]]:
    yield "()", []
    for name, v in HOSTILE:
        yield f"({name})", [fresh(name, v)]
    for name, v in HOSTILE:
        for name2, v2 in HOSTILE:
            yield f"({name}, {name2})", [fresh(name, v), fresh(name2, v2)]
    for name, v in HOSTILE:
        yield f"({name} x3)", [fresh(name, v)] * 3


@functools.cache
def program() -> Any:
    return compile_source("node main() {\n  print(1)\n}\n", "sweep.agency")


def machine() -> Machine:
    program_ = program()
    m = Machine(program_, world=builtins.World(quiet=True))
    m.frames.append(Frame(program_.functions["main"], {}))
    return m


def classify(call: Callable[[], Any]) -> str | None:
    """None when the call behaved (an answer, a control transfer, an Agency error in Agency's
    words); else what went wrong."""
    signal.signal(signal.SIGALRM, _too_slow)
    signal.setitimer(signal.ITIMER_REAL, SLOW)
    try:
        call()
    except TooSlow:
        return f"took more than {SLOW} s"
    except Signal:
        return None
    except AgencyError as exc:
        text = str(exc)
        if PYTHONISMS.search(text):
            return f"Python's words: {text[:120]}"
        if exc.__cause__ is not None:
            CONVERTED[0] += 1  # a Python exception the builtin boundary worded
        return None
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as exc:
        return f"{type(exc).__name__} (shown as Python's words): {str(exc)[:100]}"
    except Exception as exc:  # noqa: BLE001 - this is what the sweep looks for
        return f"internal error {type(exc).__name__}: {str(exc)[:100]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return None


CONVERTED = [0]  # calls whose error came from the builtin boundary, not the builtin's own check
SLOW = 5.0  # seconds one call may take (a hang or a runaway allocation is a defect)


class TooSlow(BaseException):
    pass


def _too_slow(signum: int, frame: Any) -> None:
    raise TooSlow


def builtin_calls() -> Iterator[tuple[str, Callable[[Machine], Any]]]:
    for name in sorted(builtins.BUILTINS):
        if name in SKIPPED:
            continue
        for label, args in argument_lists():

            def call(m: Machine, name: str = name, args: list[Any] = args) -> Any:
                frame = m.frames[-1]
                m._invoke(frame, name, list(args), {}, len(args), frame.pc)

            yield f"{name}{label}", call


RECEIVERS: list[tuple[str, Callable[[], Any], list[str]]] = [
    ("string", lambda: "abc", [*value_methods.STRING_METHODS, "toString"]),
    ("array", lambda: JSArray([3, 1, 2]), [*value_methods.ARRAY_METHODS]),
    ("number", lambda: 1.5, ["toFixed", "toPrecision", "toExponential", "toString"]),
    ("huge number", lambda: 10**5000, ["toFixed", "toPrecision", "toExponential", "toString"]),
    ("object", lambda: JSObject({"a": 1}), ["hasOwnProperty", "toString"]),
    ("JSON", lambda: FuncRef("JSON"), [*builtins_data.NAMESPACES["JSON"]]),
    ("Math", lambda: FuncRef("Math"), [*builtins_data.NAMESPACES["Math"]]),
    ("Object", lambda: FuncRef("Object"), [*builtins_data.NAMESPACES["Object"]]),
    ("Array", lambda: FuncRef("Array"), [*builtins_data.NAMESPACES["Array"]]),
]


def class_receivers() -> list[tuple[str, Callable[[], Any], list[str]]]:
    m = machine()
    out = []
    for name, table in (
        ("Set", classes.SET_METHODS),
        ("Map", classes.MAP_METHODS),
        ("Date", classes.DATE_METHODS),
    ):
        make = classes.CONSTRUCTORS[name]
        out.append((name, lambda make=make: make(m, []), [*table]))
    return out


def method_calls() -> Iterator[tuple[str, Callable[[Machine], Any]]]:
    for kind, make, methods in [*RECEIVERS, *class_receivers()]:
        for method in methods:
            for label, args in argument_lists():

                def call(
                    m: Machine, make: Any = make, method: str = method, args: list[Any] = args
                ) -> Any:
                    frame = m.frames[-1]
                    frame.stack.append(make())
                    frame.stack.extend(args)
                    if m._call_method(frame, method, len(args)):
                        return  # a prelude frame was pushed: it runs later
                    frame.stack.pop()

                yield f"{kind}.{method}{label}", call


def sweep() -> tuple[int, list[str]]:
    """(attempts, defects) over every builtin and method with every hostile argument list."""
    attempts = 0
    defects: list[str] = []
    environ = dict(os.environ)
    cwd = os.getcwd()
    try:
        for label, call in [*builtin_calls(), *method_calls()]:
            m = machine()
            attempts += 1
            problem = classify(functools.partial(call, m))
            if problem is not None:
                defects.append(f"{label}: {problem}")
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
    return attempts, defects


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        attempts, defects = sweep()
    kinds = Counter(d.split(": ", 1)[1].split(":")[0][:60] for d in defects)
    print(
        f"builtins and methods: {attempts} attempts, {attempts - len(defects)} clean, "
        f"{len(defects)} defects ({CONVERTED[0]} errors worded by the builtin boundary)"
    )
    names = Counter(d.split("(")[0] for d in defects)
    for name, n in sorted(names.items()):
        print(f"  {name}: {n}")
    for kind, n in kinds.most_common(15):
        print(f"    {n:5d} {kind}")
    if "-v" in sys.argv:
        for d in defects:
            print(d)


if __name__ == "__main__":
    main()
