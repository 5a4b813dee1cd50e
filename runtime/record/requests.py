"""Provides the O(change) form of stored LLM requests: each message stored once per run.

A request as `llm()` sends it is `{"messages": [...], "tools": [...], "schema": s, "params": p}`,
and consecutive calls in one thread resend the whole conversation: stored whole, a run of n calls
costs O(n²) bytes. A store *packs* a request instead. Every message becomes a *part* (its JSON
text) stored once per run, numbered per branch (`(branch, seq)`: only one process records a
branch, so numbers never collide); the tool list and the response schema are parts too, shared
by every call that sends the same text. The call keeps what is new plus references:

    {"messages": [[branch, first seq, last seq], ...], "tools": [branch, seq],
     "schema": [branch, seq], "params": {...}}

where the message ranges, in order, list the request's messages. A call that continues a thread
is one of the last few calls' messages plus what was added since, so its ranges stay a few
whatever the thread's length, and only its new messages become parts.

`RequestPacker` holds what a store needs for that (per run: the next seq of each branch, the
parts it knows, the last few requests) and rebuilds requests from parts. It is storage-neutral:
a store gives it the parts it lacks (`load_parts`) and writes the new ones it returns. Unpacking
gives back exactly `json.loads(dumps(request))` of what was packed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["PACKED", "WHOLE", "Part", "RequestPacker", "common_prefix", "packable"]

WHOLE = 0  # the request is stored as its own JSON text
PACKED = 1  # the request is stored packed: references to parts (this module)
RECENT = 4  # how many of a run's last requests a new one is matched against

Part = tuple[int, int, str]  # (branch, seq, JSON text)
Ref = tuple[int, int]  # (branch, seq)
_KEYS = ["messages", "tools", "schema", "params"]


def _dumps(value: Any) -> str:
    """JSON text as the stores write it (`rows.dumps`), with the same error for a bad value."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"LLM request is not JSON-serialisable: {exc}") from exc
    return text if has_utf8(text) else json.dumps(value, separators=(",", ":"))


def has_utf8(text: str) -> bool:
    """Whether `text` has a UTF-8 form (a database's text column needs one): not when it holds
    a lone surrogate (`String.fromCharCode(0xD800)`, a JSON `"\\ud800"`). JSON text that has
    none is written with `ensure_ascii`, which escapes it and reads back as the same string."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def packable(request: Any) -> bool:
    """Whether `request` has the shape `llm()` sends (anything else is stored whole)."""
    return (
        type(request) is dict
        and list(request) == _KEYS
        and type(request["messages"]) is list
        and set(map(type, request["messages"])) <= {dict}
    )


class _Run:
    """What the packer knows of one run. (A plain class: a dataclass costs every command that
    opens a store ~1 ms to build at import.)"""

    __slots__ = ("next_seq", "texts", "values", "recent")

    def __init__(self) -> None:
        self.next_seq: dict[int, int] = {}
        self.texts: dict[str, Ref] = {}  # tool lists and schemas, by text
        self.values: dict[int, list[Any]] = {}  # branch -> parsed parts by seq
        # The last few requests: (messages, their refs, those as runs: `_add_range`)
        self.recent: list[tuple[list[Any], list[Ref], list[list[int]]]] = []


class RequestPacker:
    """Packs requests into parts and references, and rebuilds them (one per store).

    `max_seq(run_id, branch)`: the highest seq stored for a branch (-1 if none), asked once per
    branch. Not thread-safe: the store calls it under its own lock or from one thread.
    """

    def __init__(self, max_seq: Callable[[str, int], int]) -> None:
        self._max_seq = max_seq
        self._runs: dict[str, _Run] = {}

    def forget(self, run_id: str) -> None:
        """Drop what is known of a run (deleted, pruned)."""
        self._runs.pop(run_id, None)

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = _Run()
        return run

    def _new_part(self, run: _Run, run_id: str, branch: int, text: str, out: list[Part]) -> Ref:
        seq = run.next_seq.get(branch)
        if seq is None:
            seq = self._max_seq(run_id, branch) + 1
        run.next_seq[branch] = seq + 1
        out.append((branch, seq, text))
        return (branch, seq)

    def _shared_part(self, run: _Run, run_id: str, branch: int, value: Any, out: list[Part]) -> Ref:
        text = _dumps(value)
        ref = run.texts.get(text)
        if ref is None:
            ref = run.texts[text] = self._new_part(run, run_id, branch, text, out)
        return ref

    def pack(self, run_id: str, branch: int, request: dict[str, Any]) -> tuple[Any, list[Part]]:
        """The packed form of a `packable` request and the parts to store before it."""
        run = self._run(run_id)
        messages = request["messages"]
        new: list[Part] = []
        # The longest prefix shared with a recent request, and its refs and ranges: O(the new
        # messages) but for comparing the prefix (in C), since a thread only grows. A recent
        # request too short to share more than the best so far is not compared.
        k, refs, ranges = 0, [], []
        for prev, prev_refs, prev_ranges in reversed(run.recent):
            if min(len(prev), len(messages)) > k:
                n = common_prefix(prev, messages)
                if n > k:
                    k, refs, ranges = n, prev_refs, prev_ranges
        refs = refs[:k]
        ranges = _prefix_ranges(ranges, k)
        for m in messages[k:]:
            ref = self._new_part(run, run_id, branch, _dumps(m), new)
            refs.append(ref)
            _add_range(ranges, ref)
        run.recent.append((messages, refs, ranges))
        del run.recent[:-RECENT]
        packed = {
            "messages": [list(r) for r in ranges],
            "tools": list(self._shared_part(run, run_id, branch, request["tools"], new)),
            "schema": list(self._shared_part(run, run_id, branch, request["schema"], new)),
            "params": request["params"],
        }
        return packed, new

    def unpack(
        self,
        run_id: str,
        packed: Any,
        load_parts: Callable[[int, int, int], Iterable[tuple[int, str]]],
    ) -> dict[str, Any]:
        """The request a packed one stands for. `load_parts(branch, lo, hi)` yields `(seq,
        text)` of the branch's stored parts with seqs `lo..hi`; each is read once. Message
        dicts are shared between the requests rebuilt here: read them, do not change them.
        Raises KeyError for a reference to a part that is not stored."""
        values = self._run(run_id).values
        spans = [*packed["messages"], [*packed["tools"], packed["tools"][1]]]
        spans.append([*packed["schema"], packed["schema"][1]])
        for b, _, hi in spans:
            known = values.setdefault(b, [])
            if hi >= len(known):  # read the branch's parts up to `hi` (they come in order)
                start = len(known)
                known.extend([_UNKNOWN] * (hi + 1 - start))
                for seq, text in load_parts(b, start, hi):
                    known[seq] = json.loads(text)
        messages: list[Any] = []
        for b, lo, hi in packed["messages"]:
            messages.extend(values[b][lo : hi + 1])
        tools, schema = _part(values, packed["tools"]), _part(values, packed["schema"])
        if _UNKNOWN in messages:
            raise KeyError("a message")
        return {
            "messages": messages,
            "tools": json.loads(_dumps(tools)),  # fresh copies: small, and callers may edit
            "schema": json.loads(_dumps(schema)),
            "params": packed["params"],
        }


_UNKNOWN = object()  # a part not stored (a seq skipped by a pack that failed)


def _part(values: dict[int, list[Any]], ref: list[int]) -> Any:
    found = values[ref[0]][ref[1]]
    if found is _UNKNOWN:
        raise KeyError(f"part {ref}")
    return found


def common_prefix(a: list[Any], b: list[Any]) -> int:
    """How many leading items `a` and `b` share (compared in C; identical items at once)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _add_range(ranges: list[list[int]], ref: Ref) -> None:
    """Add `ref` after `ranges`, runs of consecutive references as `[branch, first seq, last
    seq]`: its last run grown if `ref` follows it."""
    b, s = ref
    if ranges and ranges[-1][0] == b and ranges[-1][2] == s - 1:
        ranges[-1][2] = s
    else:
        ranges.append([b, s, s])


def _prefix_ranges(ranges: list[list[int]], k: int) -> list[list[int]]:
    """The runs of the first `k` references of those `ranges` are the runs of (new lists)."""
    out: list[list[int]] = []
    for b, lo, hi in ranges:
        if k <= 0:
            break
        take = min(hi - lo + 1, k)
        out.append([b, lo, lo + take - 1])
        k -= take
    return out
