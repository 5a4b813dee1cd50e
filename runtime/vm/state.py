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
from runtime.vm.values import (
    BoundFunction,
    Closure,
    JSArray,
    JSDate,
    JSMap,
    JSObject,
    JSSet,
    Result,
    set_key,
)

if TYPE_CHECKING:
    pass


class Encoder:
    """Encodes values of one snapshot, sharing containers referenced more than once."""

    def __init__(
        self, *, failure_checkpoints: bool = True, frozen: dict[int, Any] | None = None
    ) -> None:
        # False in a failure's own checkpoint: the failures it holds go without theirs, or each
        # failure would carry every earlier one's (a checkpoint doubling with each failure).
        self.failure_checkpoints = failure_checkpoints
        self.counts: dict[int, int] = {}
        self.keep: list[Any] = []  # keeps counted objects alive so ids stay unique
        self.labels: dict[int, int] = {}
        self.heap: dict[str, Any] = {}
        # The frozen containers (by id): each goes to the heap, so its label can say it is
        # frozen; `frozen_labels` lists those labels.
        self.frozen = frozen
        self.frozen_labels: list[int] = []

    def count(self, v: Any) -> None:
        stack = [v]
        counts = self.counts
        while stack:
            x = stack.pop()
            t = type(x)
            if t is JSArray or t is JSObject or t is JSSet or t is JSMap:
                k = id(x)
                c = counts.get(k, 0)
                counts[k] = c + 1
                if c == 0:
                    self.keep.append(x)
                    if t is JSMap:
                        for key, value in x.values():
                            stack.append(key)
                            stack.append(value)
                    else:
                        stack.extend(x if t is JSArray else x.values())
                        if t is JSArray and getattr(x, "props", None):
                            stack.extend(x.props.values())
            elif t is Result:
                stack.append(x.value)
                stack.append(x.error)
            elif t is Decision:
                stack.append(x.value)
            elif t is BoundFunction:
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
        if t is JSArray or t is JSObject or t is JSSet or t is JSMap:
            k = id(v)
            if self.counts.get(k, 1) > 1 or (self.frozen and k in self.frozen):
                label = self.labels.get(k)
                if label is None:
                    label = self.labels[k] = len(self.labels) + 1
                    if self.frozen and k in self.frozen:
                        self.frozen_labels.append(label)
                    self.heap[str(label)] = None  # reserve: cycles refer to it while encoding
                    self.heap[str(label)] = self._contents(v)
                return {"$ref": label}
            return self._contents(v)
        if t is Result:
            if v.ok:
                return {"$result": "success", "value": self.enc(v.value)}
            out = {"$result": "failure", "error": self.enc(v.error)}
            if v.checkpoint is not None and self.failure_checkpoints:
                out["checkpoint"] = self.enc(v.checkpoint)
            if v.origin is not None:
                out["origin"] = v.origin
            if v.skipped:
                out["skipped"] = [list(x) for x in v.skipped]
            if v.destructive:
                out["destructiveRan"] = True
            return out
        if t is FuncRef:
            return {"$function": v.name}
        if t is Closure:
            return {"$block": v.name, "frame": v.frame, "owner": v.owner}
        if t is BoundFunction:
            # `{"$partial": base, "bound": {param: value}, "tool": {…}}`: what was derived.
            tool: dict[str, Any] = {}
            if v.description is not None:
                tool["description"] = v.description
            if v.tool_name is not None:
                tool["name"] = v.tool_name
            if v.preapprove:
                tool["preapprove"] = True
            return {
                "$partial": v.base.name,
                "bound": {k: self.enc(x) for k, x in v.bound.items()},
                "tool": tool,
            }
        if t is Decision:
            return {"$decision": v.action, "value": self.enc(v.value)}
        if t is JSDate:
            return {"$date": v.ms if v.ms == v.ms else "NaN"}
        if t is dict:  # internal plain data (messages): readable, `{role, content}`
            if any(str(k).startswith("$") for k in v):
                return {"$object": [[str(k), self.enc(x)] for k, x in v.items()]}
            return {str(k): self.enc(x) for k, x in v.items()}
        if t is list or t is tuple:
            return [self.enc(x) for x in v]
        raise AgencyRuntimeError(f"cannot save a value of type {t.__name__} in a checkpoint")

    def _contents(self, v: Any) -> Any:
        if type(v) is JSArray:
            props = getattr(v, "props", None)
            if props:  # a match array: `{"$array": items, "props": {index, input, groups}}`
                return {
                    "$array": [self.enc(x) for x in v],
                    "props": {k: self.enc(x) for k, x in props.items()},
                }
            return [self.enc(x) for x in v]
        if type(v) is JSSet:
            return {"$set": [self.enc(x) for x in v.values()]}
        if type(v) is JSMap:
            return {"$map": [[self.enc(k), self.enc(x)] for k, x in v.values()]}
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
            if len(v) <= 5:
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
                    origin = v.get("origin")
                    skipped = v.get("skipped") or []
                    if not isinstance(skipped, list) or not all(
                        isinstance(x, list) and len(x) == 2 for x in skipped
                    ):
                        raise CheckpointFormatError("a failure's `skipped` list is malformed")
                    failed = Result(
                        False,
                        error=self.dec(v.get("error")),
                        checkpoint=self.dec(cp) if cp is not None else None,
                        origin=origin if isinstance(origin, str) else None,
                        skipped=tuple((str(n), str(p)) for n, p in skipped),
                    )
                    failed.destructive = v.get("destructiveRan") is True
                    return failed
                if "$function" in v:
                    return FuncRef(str(v["$function"]))
                if "$block" in v:
                    frame = v.get("frame")
                    if type(frame) is not int or frame < 0:
                        raise CheckpointFormatError("a `$block` value has no frame index")
                    block = Closure(str(v["$block"]), frame, str(v.get("owner")))
                    self.closures.append(block)
                    return block
                if "$partial" in v:
                    return self._partial(v)
                if "$date" in v:
                    ms = v["$date"]
                    return JSDate(float(ms) if isinstance(ms, (int, float)) else math.nan)
                if len(v) == 1 and ("$set" in v or "$map" in v):
                    out = JSSet() if "$set" in v else JSMap()
                    self._fill(out, v)
                    return out
                if "$decision" in v:
                    return Decision(str(v["$decision"]), self.dec(v.get("value")))
                if "$array" in v and len(v) == 2:
                    arr = JSArray()
                    self._fill_array(arr, v)
                    return arr
                if "$object" in v and len(v) == 1:
                    pairs = v["$object"]
                    if not isinstance(pairs, list) or not all(
                        isinstance(p, list) and len(p) == 2 for p in pairs
                    ):
                        raise CheckpointFormatError("a `$object` value is malformed")
                    return JSObject((str(k), self.dec(x)) for k, x in pairs)
            return JSObject((k, self.dec(x)) for k, x in v.items())
        raise CheckpointFormatError(f"unexpected value in checkpoint: {v!r:.60}")

    def _partial(self, v: dict[str, Any]) -> BoundFunction:
        bound, tool = v.get("bound") or {}, v.get("tool") or {}
        if not isinstance(bound, dict) or not isinstance(tool, dict):
            raise CheckpointFormatError("a `$partial` function value is malformed")
        description, name = tool.get("description"), tool.get("name")
        if not all(x is None or isinstance(x, str) for x in (description, name)):
            raise CheckpointFormatError("a `$partial` function value has a malformed tool")
        return BoundFunction(
            FuncRef(str(v["$partial"])),
            {str(k): self.dec(x) for k, x in bound.items()},
            description,
            name,
            tool.get("preapprove") is True,
        )

    def _fill_array(self, arr: JSArray, raw: dict[str, Any]) -> None:
        """An array with named properties (a match array's index, input and groups)."""
        items, props = raw.get("$array"), raw.get("props")
        if not isinstance(items, list) or not isinstance(props, dict):
            raise CheckpointFormatError("a `$array` value is malformed")
        arr.extend(self.dec(x) for x in items)
        arr.props = {str(k): self.dec(x) for k, x in props.items()}

    def _fill(self, c: JSSet | JSMap, raw: dict[str, Any]) -> None:
        items = raw.get("$set", raw.get("$map"))
        if not isinstance(items, list):
            raise CheckpointFormatError("a `$set` or `$map` value is malformed")
        for item in items:
            if type(c) is JSSet:
                x = self.dec(item)
                c[set_key(x)] = x
            else:
                if not isinstance(item, list) or len(item) != 2:
                    raise CheckpointFormatError("a `$map` entry is not a [key, value] pair")
                k, x = self.dec(item[0]), self.dec(item[1])
                c[set_key(k)] = (k, x)

    def _ref(self, label: str) -> Any:
        if label in self.made:
            return self.made[label]
        if label not in self.raw:
            raise CheckpointFormatError(
                f"checkpoint refers to heap entry {label}, which is missing"
            )
        raw = self.raw[label]
        if type(raw) is dict and len(raw) == 1 and ("$set" in raw or "$map" in raw):
            c = JSSet() if "$set" in raw else JSMap()
            self.made[label] = c
            self._fill(c, raw)
            return c
        if type(raw) is dict and len(raw) == 2 and "$array" in raw:
            arr = JSArray()
            self.made[label] = arr
            self._fill_array(arr, raw)
            return arr
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
