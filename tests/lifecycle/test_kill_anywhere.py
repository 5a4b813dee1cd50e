"""Recorded runs stopped anywhere (SIGKILL, SIGTERM, one or two Ctrl-C), then listed, shown,
opened in a debugging session, resumed and replayed the way a user would (`harness.py` says what
is checked after each).

CI runs a small seeded subset: one program that has a bit of everything (tool rounds that write
files, threads and subthreads, handled interrupts, a busy loop, `fork`), answered by a local
model server, stopped at two points of different kinds, each resume stopped once more (SIGKILL
with a request in flight, then one Ctrl-C; SIGTERM, then two Ctrl-C). `AGENCY_KILL_POINTS=N`
also sweeps N seeded points through each of the single-purpose programs (a tight loop, scripted
`llm()` calls, tools, threads, forks, interrupts), every third stop followed by a stop of its
resume; the same sweep runs as a script: `python -m tests.lifecycle.harness --points N`.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.lifecycle.harness import (
    MIXED,
    SHAPES,
    KillPoint,
    Reference,
    iter_cases,
    kill_and_resume,
    reference,
)

SEED = 20261206
SWEEP = int(os.environ.get("AGENCY_KILL_POINTS") or 0)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return reference(MIXED, tmp_path_factory.mktemp("kill-anywhere") / "reference")


def _point(ref: Reference, what: str, how: str, share: float, salt: str) -> KillPoint:
    """A seeded point in the first `share` of the uninterrupted run's `what`."""
    rng = random.Random(f"{SEED}:{salt}:{what}:{how}")
    n = rng.randrange(1, max(2, int(ref.measure(what) * share)))
    return KillPoint(what, n, round(rng.uniform(0, 0.003), 4), how)


@pytest.mark.parametrize(
    ("what", "how", "then"),
    [
        # kill -9 while a model request is in flight; its resume stopped by one Ctrl-C just
        # after an answer (it stops at the next step)
        ("requests", "KILL", ("answers", "INT")),
        # SIGTERM once some steps are stored; its resume stopped by two Ctrl-C (at once)
        ("steps", "TERM", ("steps", "INT2")),
    ],
    ids=["kill-in-flight-then-ctrl-c", "term-then-ctrl-c-twice"],
)
def test_a_run_stopped_anywhere_resumes_to_the_uninterrupted_result(
    mixed: Reference, tmp_path: Path, what: str, how: str, then: tuple[str, str] | None
) -> None:
    point = _point(mixed, what, how, 0.5, "first")
    again = None
    if then is not None:
        again = _point(mixed, then[0], then[1], 0.3, "again")
    outcome = kill_and_resume(mixed, point, tmp_path / "case", again, thorough=False)
    assert outcome["killed"], f"the run ended before {point}"
    assert len(outcome["kills"]) == 2, f"the resume ended before {again}: {outcome}"
    print(outcome)


@pytest.mark.skipif(not SWEEP, reason="AGENCY_KILL_POINTS=N sweeps N seeded points a program")
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_sweep_kill_points_through_each_program(name: str, tmp_path: Path) -> None:
    ref = reference(SHAPES[name], tmp_path / "reference")
    failures = []
    for i, (_, point, again) in enumerate(
        iter_cases({name: ref}, SEED, SWEEP, ["KILL", "TERM", "INT", "INT2"])
    ):
        try:
            kill_and_resume(ref, point, tmp_path / f"case{i:03d}", again)
        except AssertionError as exc:
            failures.append(f"{point} then {again}: {exc}")
    assert not failures, "\n\n".join(failures)
