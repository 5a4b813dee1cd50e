"""`RequestPacker` on its own: whatever sequence of requests it packs (threads that grow, fork,
interleave or are edited), each reads back exactly, its message references are the fewest runs,
and it stores as new parts exactly the messages past the longest prefix it shares with one of
the last few requests (what keeps a growing thread's calls O(new messages))."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.record.requests import RECENT, RequestPacker, common_prefix


def message(i: int) -> dict[str, Any]:
    return {"role": "user" if i % 2 else "assistant", "content": f"m{i % 7}"}


# A request: a branch and messages drawn from a few threads, each a prefix of a long one, with
# now and then an edited message (so prefixes end early) or messages of another thread.
requests = st.lists(
    st.tuples(
        st.integers(0, 1),
        st.integers(0, 2),  # which thread
        st.integers(0, 12),  # how much of it
        st.one_of(st.none(), st.integers(0, 12)),  # a message edited there
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(requests)
def test_packed_requests_read_back_and_reuse_the_longest_recent_prefix(
    drawn: list[tuple[int, int, int, int | None]],
) -> None:
    packer = RequestPacker(lambda run_id, branch: -1)
    parts: dict[tuple[int, int], str] = {}
    sent: list[list[dict[str, Any]]] = []
    for branch, thread, n, edit in drawn:
        messages = [message(thread * 100 + i) for i in range(n)]
        if edit is not None and edit < n:
            messages[edit] = {"role": "user", "content": "edited"}
        req = {"messages": messages, "tools": [], "schema": None, "params": {}}
        packed, new = packer.pack("r", branch, req)
        shared = max((common_prefix(prev, messages) for prev in sent[-RECENT:]), default=0)
        assert len(new) == len(messages) - shared + sum(
            1 for b, _, text in new if text in ("[]", "null")
        )
        for b, seq, text in new:
            assert (b, seq) not in parts
            parts[b, seq] = text
        runs = packed["messages"]
        assert all(not (a[0] == b[0] and a[2] + 1 == b[1]) for a, b in zip(runs, runs[1:])), (
            runs
        )  # the fewest runs: none follows on from the one before

        def load(b: int, lo: int, hi: int) -> Any:
            return [(s, parts[b, s]) for s in range(lo, hi + 1) if (b, s) in parts]

        got = RequestPacker(lambda run_id, branch: -1).unpack("r", packed, load)
        assert json.dumps(got) == json.dumps(json.loads(json.dumps(req)))
        sent.append(messages)
