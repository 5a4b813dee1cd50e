"""Provides the machine's write log and run statuses.

When recording, the machine appends every write a program makes to `Machine.wlog` as a small
tuple whose first item is one of the `W_*` codes below; the recorder (`runtime.runs.recorder`)
turns them into the stored deltas of `runtime.record.format`, which keeps these codes (a test
holds the two tables together: the store is a sibling of the machine and imports nothing of it).
"""

from __future__ import annotations

# Write-log records: (kind, ...). Containers are logged encoded (the recorder's `enc_now`).
# A write to a local of the innermost frame, the most common, is two entries rather than a
# tuple: its name (no other entry is a str), then its value. The reader derives the depth.
W_LOCAL = 1  # (W_LOCAL, depth, name, value): a local of the frame at `depth`
W_GLOBAL = 2  # (W_GLOBAL, name, value)
W_SETKEY = 3  # (W_SETKEY, container, key, value)
W_DELKEY = 4  # (W_DELKEY, container, key)
W_SPLICE = 5  # (W_SPLICE, array, start, delete_count, items)
W_PUSH_FRAME = 6  # (W_PUSH_FRAME, frame)
W_POP_FRAME = 7  # (W_POP_FRAME,)
W_OUTPUT = 8  # (W_OUTPUT, text)
W_MESSAGE = 9  # (W_MESSAGE, thread_id, message)
W_THREAD = 10  # (W_THREAD, thread_id, messages)  a new thread
W_ACTIVE = 11  # (W_ACTIVE, thread_id)  the active thread changed
W_USAGE = 12  # (W_USAGE, input_tokens, output_tokens, cost)
W_RESET = 13  # (W_RESET, frames)  the whole state was replaced (restore)
W_EVENT = 14  # (W_EVENT, kind, summary, data)
W_SHARED = 15  # (W_SHARED, name, value)
W_STATUS = 16  # (W_STATUS, status, result, error)
W_APPEND = 18  # (W_APPEND, container) then the item: the recorder's push (`log_push`)
# A step marker and a local write in one: (W_STEP_WRITE, marker, name, a, b, op, b is a local).
# The machine logs it for a statement `name = a <op> b` on two ints; a reader recomputes the
# value (`runtime.language.int_ops`, op by index) from the state before the step.
W_STEP_WRITE = 19
# ... or `name = a <op> (c <op> d)`: b is then `(c, d, op, d is a local)`, "b is a local" 2
W_NESTED = 2
W_DERIVED = 20  # (W_DERIVED, name, a, b, op, b is a local): the write alone (the recorder's)
# A step marker and a push in one: (W_STEP_PUSH, marker, list, item's name). The machine logs it
# for a statement `xs.push(v)` of a primitive v (`runtime.vm.fuse`); a reader appends the value
# of the local v in the state before the step.
W_STEP_PUSH = 21
W_PUSHED = 22  # (W_PUSHED, list, item's name): the push alone (the recorder's, as W_DERIVED)
# A loop head's step marker and its variable's write in one: (W_STEP_LOCAL, marker, name), then
# the value, logged for FOR_RANGE and FOR_EACH (`runtime.vm.fuse`).
W_STEP_LOCAL = 23

PLAIN = frozenset({type(None), bool, int, float, str})  # written to the log as they are
POPPED = (W_POP_FRAME,)  # one tuple for every return: a batch pickles it once, then refers to it

HALTED = "finished"
FAILED = "failed"
INTERRUPTED = "interrupted"
RUNNING = "running"
PAUSED = "paused"
