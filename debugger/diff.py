"""Provides `:diff`: what differs between two steps, or between two branches.

Two steps (`:diff 120 340`) are compared value by value: each frame's arguments and locals
(frames matched by position and function), the globals, the output printed between them, the
active thread's messages, the run's status and result, and the usage. Two branches (`:diff
branch 2`) are compared from where they diverge: their states there (the edit a branch began
with), their last states as above, plus each one's LLM answers after the divergence, side by
side, since that is usually where they parted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from debugger.expressions import show

__all__ = ["DiffLine", "diff_branches", "diff_states"]

_MISSING = object()


@dataclass(frozen=True)
class DiffLine:
    """One difference: `what` differs, `a` and `b` as shown ('' where it is absent). `step`
    is where to go to see it, when there is one place."""

    what: str
    a: str
    b: str
    step: int | None = None

    def text(self) -> str:
        if not self.b:
            return f"{self.what}: {self.a}"
        return f"{self.what}: {self.a}  →  {self.b}"


def _apart(a: Any, b: Any, width: int) -> tuple[str, str]:
    """`a` and `b` as shown in `width` characters; when those look the same (a long text or
    list that differs after the cut), both from a little before where they first differ,
    marked with `…`, so the line shows the difference and not two equal beginnings."""
    shown_a, shown_b = show(a, width), show(b, width)
    if shown_a != shown_b:
        return shown_a, shown_b
    full_a, full_b = show(a, 100_000), show(b, 100_000)
    first = next(
        (i for i, (x, y) in enumerate(zip(full_a, full_b, strict=False)) if x != y),
        min(len(full_a), len(full_b)),
    )
    start = max(0, first - width // 3)

    def cut(text: str) -> str:
        end = start + width - 2
        return ("…" if start else "") + text[start:end] + ("…" if len(text) > end else "")

    return cut(full_a), cut(full_b)


def _values(prefix: str, a: dict[str, Any], b: dict[str, Any]) -> list[DiffLine]:
    out = []
    for name in list(a) + [n for n in b if n not in a]:
        va, vb = a.get(name, _MISSING), b.get(name, _MISSING)
        if va is _MISSING or vb is _MISSING:
            out.append(
                DiffLine(
                    f"{prefix}{name}",
                    "(absent)" if va is _MISSING else show(va, 80),
                    "(absent)" if vb is _MISSING else show(vb, 80),
                )
            )
        elif va != vb or type(va) is not type(vb):
            out.append(DiffLine(f"{prefix}{name}", *_apart(va, vb, 80)))
    return out


def diff_states(a: Any, b: Any) -> list[DiffLine]:
    """What differs from StateView `a` to StateView `b` (empty when nothing does)."""
    out: list[DiffLine] = []
    if a.status != b.status:
        out.append(DiffLine("status", a.status, b.status))
    if a.result != b.result:
        out.append(DiffLine("result", show(a.result, 80), show(b.result, 80)))
    for i in range(max(len(a.frames), len(b.frames))):
        fa = a.frames[i] if i < len(a.frames) else None
        fb = b.frames[i] if i < len(b.frames) else None
        if fa is None or fb is None or fa.scope != fb.scope:
            out.append(
                DiffLine(
                    f"frame {i}",
                    fa.scope if fa is not None else "(none)",
                    fb.scope if fb is not None else "(none)",
                )
            )
            continue
        out += _values(f"{fa.scope}.", {**fa.args, **fa.locals}, {**fb.args, **fb.locals})
    out += _values("globals.", a.globals, b.globals)
    out += _output(a.output, b.output)
    out += _messages(a, b)
    if a.usage != b.usage:
        out.append(
            DiffLine(
                "usage",
                f"{a.usage.input_tokens}+{a.usage.output_tokens} tokens ${a.usage.cost:.4f}",
                f"{b.usage.input_tokens}+{b.usage.output_tokens} tokens ${b.usage.cost:.4f}",
            )
        )
    return out


def _output(a: tuple[str, ...], b: tuple[str, ...]) -> list[DiffLine]:
    common = 0
    while common < min(len(a), len(b)) and a[common] == b[common]:
        common += 1
    out = [DiffLine("output", f"- {line}", "") for line in a[common:]]
    out += [DiffLine("output", f"+ {line}", "") for line in b[common:]]
    return out


def _messages(a: Any, b: Any) -> list[DiffLine]:
    ma = a.threads.get(a.active_thread, ())
    mb = b.threads.get(b.active_thread, ())
    out = []
    for i in range(max(len(ma), len(mb))):
        x = ma[i] if i < len(ma) else None
        y = mb[i] if i < len(mb) else None
        if x == y:
            continue
        if x is not None and y is not None:
            shown_x, shown_y = _apart(x.content, y.content, 70)
            out.append(DiffLine(f"message {i}", f"{x.role}: {shown_x}", f"{y.role}: {shown_y}"))
            continue
        out.append(
            DiffLine(
                f"message {i}",
                f"{x.role}: {show(x.content, 70)}" if x is not None else "(absent)",
                f"{y.role}: {show(y.content, 70)}" if y is not None else "(absent)",
            )
        )
    return out


def diff_branches(timeline_a: Any, timeline_b: Any, diverge: int | None) -> list[DiffLine]:
    """Branch `timeline_a` against `timeline_b`: where they diverge, their LLM answers after
    it, and what differs between their last states."""
    out: list[DiffLine] = []
    start = diverge if diverge is not None else 0
    out.append(DiffLine("diverge", f"at step {start}", "", start))
    if start < min(len(timeline_a), len(timeline_b)):
        # what the branch began with (an edit): the ends may agree while this differs
        out += [
            DiffLine(line.what, line.a, line.b, start)
            for line in diff_states(timeline_a.state_at(start), timeline_b.state_at(start))
        ]
    answers_a = [e for e in timeline_a.events("llm") if e.step >= start]
    answers_b = [e for e in timeline_b.events("llm") if e.step >= start]
    for i in range(max(len(answers_a), len(answers_b))):
        ea = answers_a[i] if i < len(answers_a) else None
        eb = answers_b[i] if i < len(answers_b) else None
        if ea is not None and eb is not None and ea.summary == eb.summary:
            continue
        out.append(
            DiffLine(
                f"LLM answer {i + 1}",
                f"step {ea.step}: {ea.summary}" if ea is not None else "(none)",
                f"step {eb.step}: {eb.summary}" if eb is not None else "(none)",
                ea.step if ea is not None else None,
            )
        )
    last_a = timeline_a.state_at(len(timeline_a) - 1)
    last_b = timeline_b.state_at(len(timeline_b) - 1)
    ends = diff_states(last_a, last_b)
    if ends:
        out.append(DiffLine("at the end", f"step {last_a.step}", f"step {last_b.step}"))
        out += ends
    else:
        out.append(
            DiffLine("at the end", f"nothing differs (step {last_a.step}, step {last_b.step})", "")
        )
    return out
