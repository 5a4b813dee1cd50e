"""Provides what the run stores share besides the contract: run ids, timestamps, JSON
encoding, argument checks, lineages, and the rows of the SQL schema (one dict per row, the
column names of `migrations.py`) turned into records and back. `MemoryStore` keeps its data in
the same rows, so every store validates and round-trips values the same way.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

from runtime.record.contract import (
    MAX_STEP,
    RUN_STATUSES,
    TERMINAL_STATUSES,
    UPDATABLE_RUN_FIELDS,
    Blob,
    BranchRecord,
    EffectRecord,
    LLMCallRecord,
    RunMeta,
    RunRecord,
    Segment,
    StoreError,
)
from runtime.record.requests import PACKED, has_utf8

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, in ASCII order: sorts right
_id_lock = threading.Lock()
_last_id_ms = 0


def new_run_id() -> str:
    """A new run id: "r", 9 base32 digits of milliseconds since 1970, 3 random base32 digits.

    Ids sort by creation time and strictly increase within a process; the random tail keeps
    runs started in the same millisecond by different processes apart.
    """
    global _last_id_ms
    with _id_lock:
        ms = max(time.time_ns() // 1_000_000, _last_id_ms + 1)
        _last_id_ms = ms
    tail = int.from_bytes(os.urandom(2), "big") % 32**3
    return "r" + _base32(ms, 9) + _base32(tail, 3)


def _base32(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 32)
        digits.append(_ALPHABET[digit])
    return "".join(reversed(digits))


def utcnow() -> datetime:
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    """Timestamps are stored as fixed-width ISO 8601 UTC text, so text order is time order."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(text: str) -> datetime:
    return datetime.fromisoformat(text)


def lease_left(lease_until: str | None, now: datetime) -> float | None:
    """Seconds from `now` to the end of a lease stored as `lease_until` (`format_ts`), negative
    once it has ended; None for a claim without a lease."""
    if lease_until is None:
        return None
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    return (parse_ts(lease_until) - now).total_seconds()


def dumps(value: Any, what: str) -> str:
    """JSON text for a stored value, encoded by the caller so a bad value fails at the call."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON-serialisable: {exc}") from exc
    return text if has_utf8(text) else json.dumps(value, separators=(",", ":"))


def well_formed(text: str) -> str:
    """Free text for a text column (an event's summary, a run's error): a lone surrogate, which
    has no UTF-8 form, replaced by U+FFFD."""
    if has_utf8(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class DamagedText(str):
    """A text column whose bytes are not UTF-8 (a damaged page), as read back: its characters
    with U+FFFD for the bad bytes, marked, so the row reads as damaged where a plain `str` is
    expected, instead of the whole query failing (sqlite3 raises on the first such value)."""

    __slots__ = ()


def stored_text(raw: bytes) -> str:
    """The sqlite3 `text_factory` of the run store: UTF-8, or `DamagedText`."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return DamagedText(raw.decode("utf-8", "replace"))


def loads(text: str | None) -> Any:
    if type(text) is DamagedText:
        raise ValueError("the text is not UTF-8")
    return None if text is None else json.loads(text)


def as_blob(blob: Blob) -> bytes:
    return blob if type(blob) is bytes else bytes(blob)


def stored_int(value: Any, what: str) -> int:
    """An integer column as read back: a whole number, or `StoreError` naming `what` (sqlite
    keeps any type in any column, so a tampered store may hold text or a real there)."""
    if type(value) is not int or not -MAX_STEP <= value <= MAX_STEP:
        raise StoreError(f"{what} is damaged: {str(value)[:40]!r} is not a step or count")
    return value


def stored_blob(value: Any, what: str) -> bytes:
    """A blob column as read back: bytes, or `StoreError` naming `what`."""
    if type(value) is bytes:
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise StoreError(f"{what} is damaged: it holds {type(value).__name__}, not bytes")


def stored_json(text: Any, what: str) -> Any:
    """A JSON column as read back (None stays None), or `StoreError` naming `what`."""
    try:
        return loads(text)
    except (ValueError, TypeError, RecursionError) as exc:
        raise StoreError(f"{what} is damaged: {str(exc)[:80]}") from None


_Decoder = TypeVar("_Decoder", bound=Callable[..., Any])


def decoding(what: str) -> Callable[[_Decoder], _Decoder]:
    """A row decoder whose row may be damaged: what its columns fail to decode to (JSON that
    does not parse, a timestamp that is not one, a retyped column) is a `StoreError` naming
    the table, the run and the step."""

    def wrap(fn: _Decoder) -> _Decoder:
        def decode(row: Any, *args: Any) -> Any:
            try:
                return fn(row, *args)
            except (StoreError, ValueError, TypeError, KeyError, RecursionError) as exc:
                if isinstance(exc, StoreError) and str(exc).startswith("run "):
                    raise
                run, step = _column(row, "run_id"), _column(row, "step")
                at = f" at step {step}" if type(step) is int else ""
                detail = str(exc) if isinstance(exc, StoreError) else type(exc).__name__
                detail += "" if isinstance(exc, StoreError) else f": {str(exc)[:80]}"
                raise StoreError(f"run {run}: a damaged row of {what}{at} ({detail})") from None

        decode.__doc__ = fn.__doc__
        return cast(_Decoder, decode)

    return wrap


def _number(value: Any, what: str) -> float:
    if type(value) not in (int, float) or value != value or abs(value) == float("inf"):
        raise StoreError(f"{what} is damaged: {str(value)[:40]!r} is not a number")
    return float(value)


def _column(row: Any, name: str) -> Any:
    try:
        return row[name]
    except (KeyError, IndexError):
        return None


def check_status(status: str) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"run status must be one of {sorted(RUN_STATUSES)}, not {status!r}")


def check_step_range(first_step: int, last_step: int) -> None:
    if last_step < first_step:
        raise ValueError(f"batch ends ({last_step}) before it starts ({first_step})")


def lineage_segments(
    run_id: str, branch: int, parents: dict[int, tuple[int | None, int | None]]
) -> list[Segment]:
    """The lineage of `branch` from `parents` (branch -> (parent, fork_step)), branch 0 first.

    Raises `StoreError` for an unknown branch or a cycle (a damaged store).
    """
    for b, (parent, fork) in parents.items():
        for value in (b, parent, fork):
            if value is not None and (type(value) is not int or not -MAX_STEP <= value <= MAX_STEP):
                raise StoreError(
                    f"run {run_id}: the branches table is damaged ({str(value)[:40]!r} is not "
                    "a branch or a step)"
                )
    chain: list[tuple[int, int | None]] = []  # (branch, fork_step), from `branch` upwards
    seen: set[int] = set()
    current: int | None = branch
    while current is not None:
        if current not in parents:
            if current == branch:
                raise StoreError(f"run {run_id} has no branch {branch}")
            raise StoreError(f"run {run_id}: branch {current} (an ancestor) is missing")
        if current in seen:
            raise StoreError(f"run {run_id}: branch {branch} has a cycle in its ancestry")
        seen.add(current)
        parent, fork = parents[current]
        chain.append((current, fork))
        current = parent
    segments: list[Segment] = []
    hi = MAX_STEP
    for b, fork in chain:
        lo = fork if fork is not None else 0
        if lo <= hi:  # an ancestor forked before this branch's own fork supplies nothing
            segments.append(Segment(b, lo, hi))
        hi = min(hi, lo)
    segments.reverse()
    return segments


def run_update_columns(fields: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Column values for `update_run(**fields)`: validated and encoded, with updated_at."""
    unknown = set(fields) - UPDATABLE_RUN_FIELDS
    if unknown:
        raise TypeError(
            f"update_run cannot set {', '.join(sorted(unknown))}; "
            f"it sets {', '.join(sorted(UPDATABLE_RUN_FIELDS))}"
        )
    columns: dict[str, Any] = {"updated_at": format_ts(now)}
    for name, value in fields.items():
        if name == "status":
            check_status(value)
            columns["status"] = value
            if value in TERMINAL_STATUSES and "finished_at" not in fields:
                columns["finished_at"] = format_ts(now)
        elif name == "finished_at":
            columns["finished_at"] = None if value is None else format_ts(value)
        elif name in ("args", "config", "meta", "result"):
            columns[f"{name}_json"] = dumps(value, f"run {name}")
        elif type(value) is str:
            columns[name] = well_formed(value)
        else:
            columns[name] = value
    return columns


def run_from_row(row: Any) -> RunRecord:
    """A `RunRecord` from a row of the runs table (a dict, a `sqlite3.Row`).

    A damaged field (JSON that does not parse, a timestamp that is not one) never makes the run
    unreadable, so it cannot hide the other runs of a listing: it reads as empty, and the run's
    `meta["damaged"]` names it.
    """
    damaged: list[str] = []

    def field(name: str, decode: Callable[[Any], Any], default: Any) -> Any:
        try:
            return decode(row[name])
        except (ValueError, TypeError, RecursionError):
            damaged.append(name)
            return default

    meta, config = field("meta_json", loads, {}), field("config_json", loads, {})
    if not isinstance(meta, dict):
        damaged.append("meta_json")
        meta = {}
    if not isinstance(config, dict):
        damaged.append("config_json")
        config = {}
    args = field("args_json", loads, {})
    if not isinstance(args, dict):
        damaged.append("args_json")
        args = {}

    def text(name: str) -> str:
        value = row[name]
        if type(value) is not str:
            damaged.append(name)
            return str(value)
        return value

    def count(value: Any) -> int:
        if type(value) is not int or not 0 <= value <= MAX_STEP:
            raise ValueError(value)
        return value

    record = RunRecord(
        id=row["id"],
        source_path=text("source_path"),
        source_sha256=text("source_sha256"),
        node=text("node"),
        args=args,
        config=config,
        status=row["status"],
        created_at=field("created_at", parse_ts, _EPOCH),
        updated_at=field("updated_at", parse_ts, _EPOCH),
        finished_at=field("finished_at", _parse_optional_ts, None),
        step_count=field("step_count", count, 0),
        result=field("result_json", loads, None),
        error=None if row["error"] is None else text("error"),
        meta=meta,
    )
    if damaged:
        record.meta["damaged"] = damaged
    return record


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _parse_optional_ts(text: str | None) -> datetime | None:
    return None if text is None else parse_ts(text)


def run_row(run_id: str, meta: RunMeta, now: datetime) -> dict[str, Any]:
    """A row of the runs table for a new run."""
    check_status(meta.status)
    if not has_utf8(meta.source_path):
        # A file name of bytes that are not UTF-8 (Python holds them as lone surrogates): the
        # text column cannot keep it, and a lossy copy would name another file on resume.
        raise StoreError(
            f"cannot record a run of {meta.source_path!r}: its path is not UTF-8 text;"
            " rename the file, or run it with --no-record"
        )
    stamp = format_ts(now)
    return {
        "id": run_id,
        "source_path": meta.source_path,
        "source_sha256": meta.source_sha256,
        "node": meta.node,
        "args_json": dumps(meta.args, "run args"),
        "config_json": dumps(meta.config, "run config"),
        "status": meta.status,
        "created_at": stamp,
        "updated_at": stamp,
        "finished_at": stamp if meta.status in TERMINAL_STATUSES else None,
        "step_count": 0,
        "result_json": None,
        "error": None,
        "meta_json": dumps(meta.meta, "run meta"),
    }


def row_of_run(record: RunRecord) -> dict[str, Any]:
    """The row of the runs table that `run_from_row` reads back as `record`."""
    check_status(record.status)
    return {
        "id": record.id,
        "source_path": record.source_path,
        "source_sha256": record.source_sha256,
        "node": record.node,
        "args_json": dumps(record.args, "run args"),
        "config_json": dumps(record.config, "run config"),
        "status": record.status,
        "created_at": format_ts(record.created_at),
        "updated_at": format_ts(record.updated_at),
        "finished_at": None if record.finished_at is None else format_ts(record.finished_at),
        "step_count": record.step_count,
        "result_json": dumps(record.result, "run result"),
        "error": record.error,
        "meta_json": dumps(record.meta, "run meta"),
    }


@decoding("the effect journal")
def effect_from_row(row: Any) -> EffectRecord:
    return EffectRecord(
        key=row["key"],
        run_id=row["run_id"],
        branch=row["branch"],
        step=stored_int(row["step"], "an effect's step"),
        kind=row["kind"],
        status=row["status"],
        args=loads(row["args_json"]),
        result=loads(row["result_json"]),
        created_at=parse_ts(row["created_at"]),
    )


@decoding("llm_calls")
def llm_call_from_row(row: Any, unpack: Callable[[Any], Any] | None = None) -> LLMCallRecord:
    """An `LLMCallRecord` from a row of the llm_calls table; `unpack` rebuilds a packed request
    (`request_form` PACKED, a column older stores do not have)."""
    request = loads(row["request_json"])
    if unpack is not None and "request_form" in row.keys() and row["request_form"] == PACKED:
        request = unpack(request)
    return LLMCallRecord(
        run_id=row["run_id"],
        branch=row["branch"],
        step=stored_int(row["step"], "an LLM call's step"),
        provider=row["provider"],
        model=row["model"],
        request=request,
        response=loads(row["response_json"]),
        input_tokens=stored_int(row["input_tokens"], "an LLM call's input tokens"),
        output_tokens=stored_int(row["output_tokens"], "an LLM call's output tokens"),
        cost=_number(row["cost"], "an LLM call's cost"),
        latency_ms=_number(row["latency_ms"], "an LLM call's latency"),
        created_at=parse_ts(row["created_at"]),
    )


@decoding("branches")
def branch_from_row(row: Any) -> BranchRecord:
    return BranchRecord(
        run_id=row["run_id"],
        branch=stored_int(row["branch"], "a branch number"),
        parent_branch=row["parent_branch"],
        fork_step=row["fork_step"],
        edits=loads(row["edits_json"]),
        created_at=parse_ts(row["created_at"]),
        length=stored_int(row["length"], "a branch's length"),
    )


def prefix_upper_bound(prefix: str) -> str:
    """The smallest string above every string that starts with `prefix` (ids are ASCII)."""
    return prefix + "\U0010ffff"


def ambiguous_prefix(prefix: str, ids: list[str]) -> StoreError:
    shown = ", ".join(ids[:5])
    more = "" if len(ids) <= 5 else ", …"
    return StoreError(f"run id prefix {prefix!r} is ambiguous: it matches {shown}{more}")
