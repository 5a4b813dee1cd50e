"""Provides `FakeTimeline`: a small in-memory timeline with the API of
`runtime.record.timeline.Timeline`, for session tests that need exact control of every step."""

from __future__ import annotations

import copy
from typing import Any

from runtime.record.views import (
    BranchInfo,
    Change,
    Event,
    FrameView,
    Location,
    Message,
    StateView,
    Usage,
)

SOURCE = """\
def add(a, b) {
  const s = a + b
  return s
}

node main() {
  let counter = 1
  let total = add(counter, 2)
  const answer = llm("Pick a number")
  debugger()
  counter = counter + answer
  print("counter is", counter)
  return counter
}
"""


def _loc(line: int, scope: str = "main") -> Location:
    return Location("fake.agency", scope, f"{line}", line, 3, line, 20)


class FakeTimeline:
    """Steps built by `sample()`; `fork` makes a branch whose later steps carry the edits."""

    def __init__(
        self,
        rows: list[dict[str, Any]],
        events: list[Event],
        *,
        branch: int = 0,
        family: dict[int, FakeTimeline] | None = None,
        info: BranchInfo | None = None,
    ) -> None:
        self.rows = rows
        self._events = events
        self.run_id = "run-fake"
        self.branch = branch
        self.program = None
        self.source_path = "fake.agency"
        self.family = family if family is not None else {}
        self.family[branch] = self
        self.info = info or BranchInfo(0, None, None, len(rows))
        self.forks: list[tuple[int, dict[str, Any]]] = []
        self.state_calls = 0

    def __len__(self) -> int:
        return len(self.rows)

    def state_at(self, step: int) -> StateView:
        self.state_calls += 1
        row = self.rows[step]
        return row["state"].replace(step=step, branch=self.branch)

    def location_at(self, step: int) -> Location | None:
        return self.rows[step]["state"].location

    def kind_at(self, step: int) -> str:
        return self.rows[step]["kind"]

    def depth_at(self, step: int) -> int:
        return len(self.rows[step]["state"].frames)

    def events(self, kind: str | None = None) -> list[Event]:
        return [e for e in self._events if kind is None or e.kind == kind]

    def changes_at(self, step: int) -> list[Change]:
        return list(self.rows[step]["changes"])

    def last_write(
        self, name: str, before: int, frame: Any = None, scope: Any = None
    ) -> int | None:
        for j in range(before, -1, -1):
            for c in self.rows[j]["changes"]:
                if c.target.split(".")[-1] == name:
                    return j
        return None

    def llm_call_at(self, step: int) -> dict[str, Any] | None:
        calls = [e for e in self._events if e.kind == "llm" and e.step <= step]
        return calls[-1].data if calls else None

    def search(self, text: str) -> list[int]:
        hits = []
        for j, row in enumerate(self.rows):
            blob = " ".join(f"{c.target} {c.value}" for c in row["changes"])
            if text in blob:
                hits.append(j)
        return hits

    def branches(self) -> list[BranchInfo]:
        return [t.info for _, t in sorted(self.family.items())]

    def switch(self, branch: int) -> FakeTimeline:
        return self.family[branch]

    def diverge(self, a: int, b: int) -> int | None:
        ta, tb = self.family[a], self.family[b]
        for j in range(min(len(ta), len(tb))):
            if ta.rows[j]["state"] != tb.rows[j]["state"]:
                return j
        return None if len(ta) == len(tb) else min(len(ta), len(tb))

    def fork(
        self, step: int, edits: dict[str, Any], progress: Any = None, stopper: Any = None
    ) -> FakeTimeline:
        self.forks.append((step, edits))
        rows = copy.deepcopy(self.rows)
        for j in range(step, len(rows)):
            st = rows[j]["state"]
            frames = list(st.frames)
            fi = edits.get("frame", len(frames) - 1)
            if frames and fi < len(frames):
                f = frames[fi]
                frames[fi] = f.replace(
                    locals={**f.locals, **edits.get("locals", {})},
                    args={**f.args, **edits.get("args", {})},
                )
            rows[j]["state"] = st.replace(
                frames=tuple(frames), globals={**st.globals, **edits.get("globals", {})}
            )
        if progress is not None:
            progress(1, 1)
        new = max(self.family) + 1
        info = BranchInfo(new, self.branch, step, len(rows), edits)
        events = [e for e in self._events if e.step <= step]
        return FakeTimeline(rows, events, branch=new, family=self.family, info=info)

    def export_checkpoint(self, step: int) -> dict[str, Any]:
        st = self.state_at(step)
        return {
            "format": "agency-checkpoint",
            "version": 1,
            "step": step,
            "branch": self.branch,
            "stack": [{"scope": f.scope, "args": f.args, "locals": f.locals} for f in st.frames],
            "globals": st.globals,
        }


def sample() -> FakeTimeline:
    """A run of SOURCE: main calls add, asks the model (answer 4), hits debugger(), prints."""
    rows: list[dict[str, Any]] = []
    events: list[Event] = []
    msgs: tuple[Message, ...] = ()
    output: tuple[str, ...] = ()

    def add(line, frames, kind="step", changes=(), scope="main", status="running"):
        st = StateView(
            step=len(rows),
            branch=0,
            location=_loc(line, scope),
            frames=tuple(frames),
            globals={"limit": 10},
            threads={"0": msgs},
            active_thread="0",
            output=output,
            usage=Usage(12 if len(msgs) else 0, 3 if len(msgs) else 0, 0.001 if msgs else 0.0),
            status=status,
        )
        rows.append({"state": st, "kind": kind, "changes": list(changes)})

    def main(**locals_):
        return FrameView("main", "node", {}, dict(locals_), 0, 0)

    add(7, [main()])  # 0 let counter = 1
    add(8, [main(counter=1)], changes=[Change("main.counter", 1)])  # 1 total = add(...)
    add(2, [main(counter=1), FrameView("add", "def", {"a": 1, "b": 2}, {}, 2, 3)], scope="add")
    add(
        3,
        [main(counter=1), FrameView("add", "def", {"a": 1, "b": 2}, {"s": 3}, 3, 3)],
        scope="add",
        changes=[Change("add.s", 3)],
    )  # 3
    add(9, [main(counter=1, total=3)], changes=[Change("main.total", 3)])  # 4 llm(...)
    msgs = (Message("user", "Pick a number"), Message("assistant", "4"))
    call = {
        "provider": "mock",
        "model": "mock",
        "request": {"messages": [{"role": "user", "content": "Pick a number"}], "tools": []},
        "response": {"content": "4"},
        "value": 4,
        "input_tokens": 12,
        "output_tokens": 3,
        "cost": 0.001,
        "latency_ms": 1.5,
    }
    add(9, [main(counter=1, total=3)], kind="llm", changes=[Change("threads.0", None)])  # 5
    events.append(Event(5, "llm", "Pick a number → 4", call))
    add(10, [main(counter=1, total=3, answer=4)], changes=[Change("main.answer", 4)])  # 6
    events.append(Event(6, "debugger", "debugger()"))
    add(11, [main(counter=1, total=3, answer=4)])  # 7 counter = counter + answer
    add(12, [main(counter=5, total=3, answer=4)], changes=[Change("main.counter", 5)])  # 8
    output = ("counter is 5",)
    add(13, [main(counter=5, total=3, answer=4)], changes=[Change("output", "counter is 5")])
    add(13, [], kind="end", status="finished")  # 10
    return FakeTimeline(rows, events)
