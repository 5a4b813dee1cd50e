"""Provides the record format: what a step's delta holds, in the run store.

A step record is `(location id, kind code, writes, depth[, keyframe])`. Each write is a tuple
whose first item is an `R_*` code: the machine's write-log codes (`runtime.vm.writelog`, same
numbers; a test holds them together), with containers replaced by their object ids, plus
`R_CONTENTS`, which defines a container's whole contents the first time it becomes visible.
Batches of step records are marshal-encoded; a keyframe is the full visible state, zlib-compressed
when large (`ZLIB_PREFIX`). An incremental keyframe has a `base` (the step of a full keyframe of its
branch): its `heap` holds only the containers defined or changed since the base, and a list in the heap,
a thread or the output that only grew since is `("+", n, items)`: the base's first n, then these
(`merge_keyframe` makes it whole).
"""

from __future__ import annotations

import marshal
import zlib
from typing import Any

R_LOCAL = 1  # (R_LOCAL, depth, name, value)
R_GLOBAL = 2  # (R_GLOBAL, name, value)
R_SETKEY = 3  # (R_SETKEY, oid, key, value)
R_DELKEY = 4  # (R_DELKEY, oid, key)
R_SPLICE = 5  # (R_SPLICE, oid, start, delete_count, items)
R_PUSH_FRAME = 6  # (R_PUSH_FRAME, scope, line, col, locals, caller line, caller col)
R_POP_FRAME = 7  # (R_POP_FRAME,)
R_OUTPUT = 8  # (R_OUTPUT, text)
R_MESSAGE = 9  # (R_MESSAGE, thread_id, message)
R_THREAD = 10  # (R_THREAD, thread_id, messages)
R_ACTIVE = 11  # (R_ACTIVE, thread_id)
R_USAGE = 12  # (R_USAGE, input_tokens, output_tokens, cost)
R_RESET = 13  # (R_RESET,)  the state was replaced (a restore, a new recorder): see Timeline
R_EVENT = 14  # (R_EVENT, kind, summary, data)
R_SHARED = 15  # (R_SHARED, name, value)
R_STATUS = 16  # (R_STATUS, status, result, error)
R_CONTENTS = 17  # (R_CONTENTS, oid, contents)  a container's contents, when it becomes visible

KINDS = ("step", "llm", "tool", "interrupt", "end")
KIND_CODES = {k: i for i, k in enumerate(KINDS)}
ZLIB_PREFIX = b"\x00z"  # marks a compressed keyframe (no marshal stream starts with NUL)


def merge_keyframe(base: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The whole state an incremental keyframe `data` stands for, given its base's whole state.
    Neither is changed; unchanged containers and messages are shared with the base."""
    heap = dict(base["heap"])
    old = base["heap"]
    for oid, c in data["heap"].items():
        heap[oid] = _grown(old.get(oid) or [], c)
    threads = {tid: _grown(base["threads"].get(tid) or [], v) for tid, v in data["threads"].items()}
    merged = dict(data, heap=heap, threads=threads, output=_grown(base["output"], data["output"]))
    merged.pop("base", None)
    return merged


def _grown(was: list[Any], v: Any) -> Any:
    if type(v) is tuple and len(v) == 3 and v[0] == "+":
        return was[: v[1]] + list(v[2])
    return v


def decode_keyframe(blob: bytes) -> Any:
    """The state a stored keyframe holds."""
    if blob[:2] == ZLIB_PREFIX:
        blob = zlib.decompress(blob[2:])
    return marshal.loads(blob)
