"""Provides the record format: what a step's delta holds, in the run store.

A step record is `(location id, kind code, writes, depth[, keyframe])`. Each write is a tuple
whose first item is an `R_*` code: the machine's write-log codes (`runtime.vm.writelog`, same
numbers; a test holds them together), with containers replaced by their object ids, plus
`R_CONTENTS`, which defines a container's whole contents the first time it becomes visible.
A batch of consecutive steps is stored as `(first step, frames before, frames after, entries,
BATCH_LOCALS)`: step markers (ints), writes, and a write to a local of the innermost frame (most
writes) as two entries, its name and its value, which `decode_batch` makes an `R_LOCAL` tuple again
(older stores' batches have no fifth item and every write a tuple). An append is two entries too:
`(R_APPEND, oid)`, the same tuple object for a container all through a recorder (so a batch
pickles it once and refers to it in two bytes after that), and the item (`BATCH_APPENDS`). A keyframe is the full visible
state, zlib-compressed when large (`ZLIB_PREFIX`). They are read back by `safe_loads`, never by `marshal.loads`. An
incremental keyframe has a `base` (the step of a full keyframe of its branch): its `heap` holds only
the containers defined or changed since the base, and a list in the heap, a thread or the output
that only grew since is `("+", n, items)`: the base's first n, then these (`merge_keyframe` makes
it whole).
"""

from __future__ import annotations

import io
import pickle
import struct
import threading
import zlib
from typing import Any

from runtime.record.contract import StoreError

R_LOCAL = 1  # (R_LOCAL, depth, name, value)
R_GLOBAL = 2  # (R_GLOBAL, name, value)
R_SETKEY = 3  # (R_SETKEY, oid, key, value)
R_DELKEY = 4  # (R_DELKEY, oid, key)
R_SPLICE = 5  # (R_SPLICE, oid, start, delete_count, items)
R_PUSH_FRAME = 6  # (R_PUSH_FRAME, scope, kind, params, locals, caller line, caller col)
# A call whose locals are all visible and plain values is two entries: the same tuple with None
# for locals, one object per call site (a batch pickles it once, then refers to it in two
# bytes), and then its locals, a dict (`BATCH_CALLS`).
R_POP_FRAME = 7  # (R_POP_FRAME,)
R_OUTPUT = 8  # (R_OUTPUT, text)
R_MESSAGE = 9  # (R_MESSAGE, thread_id, message)
R_THREAD = 10  # (R_THREAD, thread_id, messages)
R_ACTIVE = 11  # (R_ACTIVE, thread_id)
R_USAGE = 12  # (R_USAGE, input_tokens, output_tokens, cost)
R_RESET = 13  # (R_RESET[, frames])  the state was replaced (a restore, a new recorder)
R_EVENT = 14  # (R_EVENT, kind, summary, data)
R_SHARED = 15  # (R_SHARED, name, value)
R_STATUS = 16  # (R_STATUS, status, result, error)
R_CONTENTS = 17  # (R_CONTENTS, oid, contents)  a container's contents, when it becomes visible
R_APPEND = 18  # (R_APPEND, oid, item)  one item added at the end of a list (a push, a Set's add)
# A step marker and a write to a local of the innermost frame in one entry: a statement
# `name = a <op> b` that computed two ints. The value is not stored: a reader recomputes it from
# the state before the step, a and b being locals there (b a constant if not `b_local`), op an
# index into `runtime.language.int_ops.INT_OP_LIST`. One tuple object per statement, so a batch
# pickles it once and refers to it in two bytes after that.
R_STEP_WRITE = 19  # (R_STEP_WRITE, marker, name, a, b, op, b_local)
# `b_local` is R_NESTED for `name = a <op> (c <op> d)`: b is then `(c, d, op, d_local)`, its
# value that operator on two ints (`BATCH_NESTED`).
R_NESTED = 2
# The same write without the marker: what follows an `R_STEP_WRITE` that ended a batch of a run
# stopped within that step (`Recorder.flush_chunk`), at the start of the next batch.
R_DERIVED = 20  # (R_DERIVED, name, a, b, op, b_local)
# A step marker and a push in one: a statement `xs.push(v)` of a primitive v. The item is not
# stored: a reader appends the value the local v holds in the state before the step. One tuple
# per statement and list (`BATCH_PUSHES`).
R_STEP_PUSH = 21  # (R_STEP_PUSH, marker, oid, name)
R_PUSHED = 22  # (R_PUSHED, oid, name): the push alone, as R_DERIVED is a derived write alone
# A step marker and a write to a local of the innermost frame, the value being the next entry: a
# loop head's step and its variable (`for (x in xs)`). One tuple per loop head, so a batch pickles
# it once and refers to it in two bytes after that (`BATCH_STEP_LOCALS`).
R_STEP_LOCAL = 23  # (R_STEP_LOCAL, marker, name), then the value

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
    """The state a stored keyframe holds; `BlobError` for a damaged one."""
    if blob[:2] == ZLIB_PREFIX:
        inflate = zlib.decompressobj()
        try:
            raw = inflate.decompress(blob[2:], MAX_DECODED)
        except zlib.error as exc:
            raise BlobError(f"damaged keyframe: {exc}") from None
        if inflate.unconsumed_tail or not inflate.eof:
            raise BlobError(f"damaged keyframe: larger than {MAX_DECODED >> 20} MiB or cut short")
        blob = raw
    return safe_loads(blob)


# --- encoding and decoding stored blobs ----------------------------------------------------------
#
# Blobs come from a file or a database that anyone with access may have altered, so they are
# never given to `marshal.loads` (which builds code objects, and allocates whatever length a
# tampered header claims before reading a byte of it).
#
# The recorder writes plain data (None, booleans, ints, floats, str, bytes, tuples, lists, dicts)
# with `encode_record`: a pickle (protocol 5, so it starts with `PICKLE_PREFIX`, which no marshal
# stream of a record does), read back by an unpickler that refuses every class and function
# (`find_class`), so nothing but those built-in types can come out of it; both run in C, at
# marshal's speed. Blobs of older stores are marshal streams, read by `_MarshalReader`, which
# knows the same plain data and nothing else (slower, in Python: only old runs pay for it).
# Anything else, a length past the end, a reference to something not yet whole (a cycle),
# nesting deeper than `MAX_DEPTH` or an int longer than `MAX_INT_DIGITS` is a `BlobError`.

PICKLE_PREFIX = b"\x80"  # pickle's PROTO opcode


class _PlainPickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        # Called only for what is not a built-in plain type (those never reach Python here).
        raise ValueError(f"a {type(obj).__name__} is not plain data")


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


_PICKLERS = threading.local()  # each thread's picklers and their buffers, made once


def encode_record(value: Any, memo: bool = False) -> bytes:
    """A step batch or keyframe as stored; `ValueError` for anything that is not plain data.

    `memo` for a step batch: it names the same few variables again and again, and with the
    pickler's memo each repeat is a two-byte reference (a batch of local writes ~25% smaller
    and ~15% faster to write). A keyframe has few repeats worth it and many objects the memo
    would note, ~30% slower with it (a 2,000-message thread)."""
    pickler: _PlainPickler
    out: io.BytesIO
    slot = "memo" if memo else "fast"
    try:
        pickler, out = getattr(_PICKLERS, slot)
    except AttributeError:  # this thread's first record (a pickler costs ~2 µs to make)
        out = io.BytesIO()
        pickler = _PlainPickler(out, protocol=5)
        pickler.fast = not memo  # (without the memo, a cycle is an error: plain data has none)
        setattr(_PICKLERS, slot, (pickler, out))
    try:
        pickler.dump(value)
        return out.getvalue()
    except ValueError:  # not plain data (`reducer_override`)
        delattr(_PICKLERS, slot)  # cut short: the next record gets a new pickler
        raise
    except (pickle.PicklingError, TypeError, RecursionError) as exc:
        delattr(_PICKLERS, slot)
        raise ValueError(str(exc)) from None
    finally:
        if memo:
            pickler.clear_memo()  # (it holds what it wrote)
        out.seek(0)
        out.truncate()


def _unpickle(blob: bytes) -> Any:
    stream = io.BytesIO(blob)
    try:
        value = _PlainUnpickler(stream).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError) as exc:
        raise BlobError(f"damaged record: {exc}") from None
    except (AttributeError, OverflowError, MemoryError, RecursionError, struct.error) as exc:
        raise BlobError(f"damaged record: {type(exc).__name__}") from None
    if stream.tell() != len(blob):
        raise BlobError(f"damaged record: {len(blob) - stream.tell()} bytes after the value")
    return value


MAX_DEPTH = 400
MAX_INT_DIGITS = 2048  # 15-bit digits: ints up to ~9,800 decimal digits
MAX_DECODED = 1 << 30  # bytes a compressed keyframe may expand to

_FLAG_REF = 0x80
_INT32 = struct.Struct("<i")
_FLOAT = struct.Struct("<d")
_DIGIT = struct.Struct("<H")


class BlobError(StoreError):
    """A stored step batch or keyframe that is not what the recorder writes."""


class _MarshalReader:
    __slots__ = ("data", "pos", "refs", "open")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.refs: list[Any] = []
        self.open: set[int] = set()  # refs of containers still being read

    def fail(self, why: str) -> BlobError:
        return BlobError(f"damaged record at byte {self.pos}: {why}")

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise self.fail(f"a length of {n} runs past the end")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def int32(self) -> int:
        if self.pos + 4 > len(self.data):
            raise self.fail("truncated")
        (n,) = _INT32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(n)

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.data) - self.pos:  # every item takes a byte at least
            raise self.fail(f"a count of {n} items cannot fit")
        return n

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH}")
        if self.pos >= len(self.data):
            raise self.fail("truncated")
        code = self.data[self.pos]
        self.pos += 1
        flag = code & _FLAG_REF
        code &= 0x7F
        slot = -1
        if flag:
            slot = len(self.refs)
            self.refs.append(None)
        if code == 0x69:  # 'i'
            v: Any = self.int32()
        elif code == 0x29 or code == 0x28:  # ')' small tuple, '(' tuple
            n = self.take(1)[0] if code == 0x29 else self.count()
            if slot >= 0:
                self.open.add(slot)
            v = tuple([self.value(depth + 1) for _ in range(n)])
            self.open.discard(slot)
        elif code in (0x7A, 0x5A):  # 'z', 'Z': short ASCII
            v = self.take(self.take(1)[0]).decode("ascii", "strict")
        elif code in (0x61, 0x41):  # 'a', 'A': ASCII
            v = self.take(self.count()).decode("ascii", "strict")
        elif code in (0x75, 0x74):  # 'u', 't': UTF-8
            v = self.take(self.count()).decode("utf-8", "surrogatepass")
        elif code == 0x72:  # 'r': a value seen before
            index = self.int32()
            if not 0 <= index < len(self.refs) or index in self.open or index == slot:
                raise self.fail(f"reference {index} to nothing whole")
            v = self.refs[index]
        elif code == 0x4E:  # 'N'
            v = None
        elif code == 0x54:  # 'T'
            v = True
        elif code == 0x46:  # 'F'
            v = False
        elif code == 0x67:  # 'g': binary float
            (v,) = _FLOAT.unpack(self.take(8))
        elif code == 0x5B:  # '[': list
            n = self.count()
            v = []
            if slot >= 0:
                self.refs[slot] = v
                self.open.add(slot)
            for _ in range(n):
                v.append(self.value(depth + 1))
            self.open.discard(slot)
        elif code == 0x7B:  # '{': dict, pairs up to '0'
            v = {}
            if slot >= 0:
                self.refs[slot] = v
                self.open.add(slot)
            while True:
                if self.pos >= len(self.data):
                    raise self.fail("truncated")
                if self.data[self.pos] == 0x30:
                    self.pos += 1
                    break
                key = self.value(depth + 1)
                if not isinstance(key, str | int | float | bool | bytes | tuple | None):
                    raise self.fail(f"a {type(key).__name__} as a dict key")
                try:
                    v[key] = self.value(depth + 1)
                except TypeError as exc:  # a tuple key holding a list
                    raise self.fail(str(exc)) from None
            self.open.discard(slot)
        elif code == 0x6C:  # 'l': long int, 15-bit digits
            n = self.int32()
            size = abs(n)
            if size > MAX_INT_DIGITS:
                raise self.fail(f"an int of {size} digits (at most {MAX_INT_DIGITS})")
            digits = self.take(2 * size)
            v = 0
            for i in range(size - 1, -1, -1):
                (d,) = _DIGIT.unpack_from(digits, 2 * i)
                if d >= 1 << 15:
                    raise self.fail("an int digit out of range")
                v = (v << 15) | d
            v = -v if n < 0 else v
        elif code == 0x73:  # 's': bytes
            v = self.take(self.count())
        else:
            raise self.fail(f"type code {chr(code)!r} is not plain data")
        if slot >= 0:
            self.refs[slot] = v
        return v


def safe_loads(blob: bytes) -> Any:
    """The plain value a stored blob holds (see above); `BlobError` for anything else."""
    if blob[:1] == PICKLE_PREFIX:
        return _unpickle(bytes(blob))
    reader = _MarshalReader(bytes(blob))
    try:
        value = reader.value(0)
    except UnicodeDecodeError as exc:
        raise reader.fail(f"bad text ({exc.reason})") from None
    if reader.pos != len(reader.data):
        raise reader.fail(f"{len(reader.data) - reader.pos} bytes after the value")
    return value


BATCH_LOCALS = 2  # a batch's fifth item: its local writes as `name, value` (`decode_batch`)
BATCH_APPENDS = 3  # ... and its appends as `(R_APPEND, oid), item` (older readers refuse these)
BATCH_CALLS = 4  # ... and calls as `(R_PUSH_FRAME, …, None, …), locals` (older readers refuse)
BATCH_NESTED = 5  # ... and derived writes of `a <op> (c <op> d)` (R_NESTED; older readers refuse)
BATCH_PUSHES = 6  # ... and pushes as R_STEP_PUSH, R_PUSHED (older readers refuse these)
BATCH_STEP_LOCALS = 7  # ... and loop heads as R_STEP_LOCAL, value (older readers refuse these)
BATCH_VERSIONS = (
    BATCH_LOCALS,
    BATCH_APPENDS,
    BATCH_CALLS,
    BATCH_NESTED,
    BATCH_PUSHES,
    BATCH_STEP_LOCALS,
)


def batch_entries(blob: bytes) -> tuple[int, int, int, list[Any], bool]:
    """(first step, depth before, depth after, entries, whether local writes are `name, value`
    entries) of a stored step batch, its entries as stored (checked by their reader)."""
    value = safe_loads(blob)
    if (
        type(value) is not tuple
        or len(value) not in (4, 5)
        or not all(type(x) is int for x in value[:3])
        or type(value[3]) is not list
        or (len(value) == 5 and value[4] not in BATCH_VERSIONS)
    ):
        raise BlobError("damaged step batch: not (first, depth, depth, entries)")
    return value[0], value[1], value[2], value[3], len(value) == 5


def decode_batch(blob: bytes) -> tuple[int, int, int, list[Any]]:
    """(first step, depth before, depth after, entries) of a stored step batch, its writes as
    `R_*` tuples whichever way it was stored."""
    first, before, after, entries, pairs = batch_entries(blob)
    if pairs:
        entries = expand_locals(before, entries)
    for entry in entries:
        if type(entry) is not int and (type(entry) is not tuple or not entry):
            raise BlobError("damaged step batch: an entry is neither a marker nor a write")
    return first, before, after, entries


def expand_locals(depth: int, entries: list[Any]) -> list[Any]:
    """The entries of a batch whose writes to a local of the current frame are two entries,
    the name (the only kind of entry that is a str) and the value, as `R_LOCAL` tuples: the
    depth they leave out is derived from the frame pushes and pops before them, from `depth`
    (the frames at the batch's start) and the frame count an `(R_RESET, frames)` gives. An
    append's two entries become one `(R_APPEND, oid, item)`, a call's two one `R_PUSH_FRAME`
    with its locals; an `R_STEP_WRITE` its marker and
    an `R_LOCAL` whose value is None, which only a reader with the state can compute
    (`RawState.apply`), as an `R_DERIVED` is; an `R_STEP_PUSH` its marker and an `R_APPEND`
    whose item is None, as an `R_PUSHED` is; an `R_STEP_LOCAL` its marker and an `R_LOCAL`."""
    out: list[Any] = []
    append = out.append
    items = iter(entries)
    for e in items:
        t = type(e)
        if t is str:
            v = next(items, _END)
            if v is _END:
                raise BlobError("damaged step batch: a local write without its value")
            append((R_LOCAL, depth - 1, e, v))
            continue
        if t is tuple and e:
            code = e[0]
            if code == R_STEP_WRITE or code == R_DERIVED:  # its value is in no record (None)
                marked = code == R_STEP_WRITE
                if len(e) != (7 if marked else 6) or type(e[-5]) is not str:
                    raise BlobError("damaged step batch: a derived write of another shape")
                if marked:
                    append(e[1])
                append((R_LOCAL, depth - 1, e[-5], None))  # (its name: the same place in both)
                continue
            if code == R_STEP_PUSH or code == R_PUSHED:  # its item is in no record (None)
                marked = code == R_STEP_PUSH
                if len(e) != (4 if marked else 3) or type(e[-1]) is not str:
                    raise BlobError("damaged step batch: a push of another shape")
                if marked:
                    append(e[1])
                append((R_APPEND, e[-2], None))
                continue
            if code == R_STEP_LOCAL:  # a marker, then a local write whose value follows
                v = next(items, _END)
                if len(e) != 3 or type(e[2]) is not str or v is _END:
                    raise BlobError("damaged step batch: a loop head of another shape")
                append(e[1])
                append((R_LOCAL, depth - 1, e[2], v))
                continue
            if code == R_APPEND and len(e) == 2:
                v = next(items, _END)
                if v is _END:
                    raise BlobError("damaged step batch: an append without its item")
                append((R_APPEND, e[1], v))
                continue
            if code == R_PUSH_FRAME:
                depth += 1
                if len(e) == 7 and e[4] is None:  # a call site's tuple, then the locals
                    v = next(items, _END)
                    if type(v) is not dict:
                        raise BlobError("damaged step batch: a call without its locals")
                    append((R_PUSH_FRAME, e[1], e[2], e[3], v, e[5], e[6]))
                    continue
            elif code == R_POP_FRAME:
                depth -= 1
            elif code == R_RESET and len(e) > 1 and type(e[1]) is int:
                depth = e[1]
        append(e)
    return out


_END = object()
