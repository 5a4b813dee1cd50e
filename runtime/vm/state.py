"""Provides the value codec of checkpoints and snapshots: Agency values to plain JSON and back.

A container referenced more than once goes to a `heap` table and is written as `{"$ref": n}`, so
aliasing survives a file; results, function values (`$function`; a block is `$block` with the index of the frame it closes
over and that frame's function) and decisions have their own markers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from runtime.errors import AgencyRuntimeError, CheckpointFormatError
from runtime.language.bytecode import FuncRef
from runtime.vm.frames import Decision
from runtime.vm.values import Closure, JSArray, JSObject, Partial, Result

if TYPE_CHECKING:
    pass


class Encoder:
    """Encodes values of one snapshot, sharing containers referenced more than once."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps counted objects alive so ids stay unique
        self.labels: dict[int, int] = {}
        self.heap: dict[str, Any] = {}

    def count(self, v: Any) -> None:
        stack = [v]
        counts = self.counts
        while stack:
            x = stack.pop()
            t = type(x)
            if t is JSArray or t is JSObject:
                k = id(x)
                c = counts.get(k, 0)
                counts[k] = c + 1
                if c == 0:
                    self.keep.append(x)
                    stack.extend(x if t is JSArray else x.values())
            elif t is Result:
                stack.append(x.value)
                stack.append(x.error)
            elif t is Decision:
                stack.append(x.value)
            elif t is Partial:
                stack.extend(x.bound.values())

    def enc(self, v: Any) -> Any:
        t = type(v)
        if v is None or t is bool or t is str or t is int:
            return v
        if t is float:
            if v != v:
                return {"$num": "NaN"}
            if v in (math.inf, -math.inf):
                return {"$num": "Infinity" if v > 0 else "-Infinity"}
            return v
        if t is JSArray or t is JSObject:
            k = id(v)
            if self.counts.get(k, 1) > 1:
                label = self.labels.get(k)
                if label is None:
                    label = self.labels[k] = len(self.labels) + 1
                    self.heap[str(label)] = None  # reserve: cycles refer to it while encoding
                    self.heap[str(label)] = self._contents(v)
                return {"$ref": label}
            return self._contents(v)
        if t is Result:
            if v.ok:
                return {"$result": "success", "value": self.enc(v.value)}
            out = {"$result": "failure", "error": self.enc(v.error)}
            if v.checkpoint is not None:
                out["checkpoint"] = self.enc(v.checkpoint)
            return out
        if t is FuncRef:
            return {"$function": v.name}
        if t is Closure:
            return {"$block": v.name, "frame": v.frame, "owner": v.owner}
        if t is Partial:
            return {
                "$partial": {
                    "fn": self.enc(v.fn),
                    "bound": {k: self.enc(x) for k, x in v.bound.items()},
                    "description": v.description,
                    "name": v.tool_name,
                    "preapprove": v.preapprove,
                }
            }
        if t is Decision:
            return {"$decision": v.action, "value": self.enc(v.value)}
        if t is dict:  # internal plain data (messages): readable, `{role, content}`
            if any(str(k).startswith("$") for k in v):
                return {"$object": [[str(k), self.enc(x)] for k, x in v.items()]}
            return {str(k): self.enc(x) for k, x in v.items()}
        if t is list or t is tuple:
            return [self.enc(x) for x in v]
        raise AgencyRuntimeError(f"cannot save a value of type {t.__name__} in a checkpoint")

    def _contents(self, v: Any) -> Any:
        if type(v) is JSArray:
            return [self.enc(x) for x in v]
        if any(k.startswith("$") for k in v):
            return {"$object": [[k, self.enc(x)] for k, x in v.items()]}
        return {k: self.enc(x) for k, x in v.items()}


class Decoder:
    """Decodes values of one snapshot; `{"$ref": n}` resolves to one shared container."""

    def __init__(self, heap: dict[str, Any] | None) -> None:
        self.raw = heap or {}
        self.made: dict[str, Any] = {}
        self.closures: list[Closure] = []  # every block value decoded (checkpoints validates)

    def dec(self, v: Any) -> Any:
        t = type(v)
        if v is None or t is bool or t is str or t is int:
            return v
        if t is float:
            return int(v) if v.is_integer() and abs(v) < 2**53 else v
        if t is list:
            return JSArray(self.dec(x) for x in v)
        if t is dict:
            if len(v) <= 3:
                if "$ref" in v:
                    return self._ref(str(v["$ref"]))
                if "$num" in v:
                    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(
                        v["$num"], math.nan
                    )
                if "$result" in v:
                    if v["$result"] == "success":
                        return Result(True, value=self.dec(v.get("value")))
                    cp = v.get("checkpoint")
                    return Result(
                        False,
                        error=self.dec(v.get("error")),
                        checkpoint=self.dec(cp) if cp is not None else None,
                    )
                if "$function" in v:
                    return FuncRef(str(v["$function"]))
                if "$block" in v:
                    frame = v.get("frame")
                    if type(frame) is not int or frame < 0:
                        raise CheckpointFormatError("a `$block` value has no frame index")
                    block = Closure(str(v["$block"]), frame, str(v.get("owner")))
                    self.closures.append(block)
                    return block
                if "$partial" in v and len(v) == 1:
                    return self._partial(v["$partial"])
                if "$decision" in v:
                    return Decision(str(v["$decision"]), self.dec(v.get("value")))
                if "$object" in v and len(v) == 1:
                    pairs = v["$object"]
                    if not isinstance(pairs, list) or not all(
                        isinstance(p, list) and len(p) == 2 for p in pairs
                    ):
                        raise CheckpointFormatError("a `$object` value is malformed")
                    return JSObject((str(k), self.dec(x)) for k, x in pairs)
            return JSObject((k, self.dec(x)) for k, x in v.items())
        raise CheckpointFormatError(f"unexpected value in checkpoint: {v!r:.60}")

    def _partial(self, spec: Any) -> Partial:
        if not isinstance(spec, dict) or not isinstance(spec.get("bound"), dict):
            raise CheckpointFormatError("a `$partial` value is malformed")
        fn = self.dec(spec.get("fn"))
        if type(fn) is not FuncRef and type(fn) is not Closure:
            raise CheckpointFormatError("a `$partial` value has no function")
        description, name = spec.get("description"), spec.get("name")
        return Partial(
            fn,
            {str(k): self.dec(x) for k, x in spec["bound"].items()},
            description if isinstance(description, str) else None,
            name if isinstance(name, str) else None,
            spec.get("preapprove") is True,
        )

    def _ref(self, label: str) -> Any:
        if label in self.made:
            return self.made[label]
        if label not in self.raw:
            raise CheckpointFormatError(
                f"checkpoint refers to heap entry {label}, which is missing"
            )
        raw = self.raw[label]
        if type(raw) is list:
            out: Any = JSArray()
            self.made[label] = out
            out.extend(self.dec(x) for x in raw)
        elif type(raw) is dict:
            out = JSObject()
            self.made[label] = out
            if len(raw) == 1 and "$object" in raw:
                for k, x in raw["$object"]:
                    out[str(k)] = self.dec(x)
            else:
                for k, x in raw.items():
                    out[k] = self.dec(x)
        else:
            raise CheckpointFormatError(f"heap entry {label} is not an array or object")
        return out
