"""The CheckpointManager over each storage: the seed's programmatic flow (save → list → rollback
→ prune), kept branches, discard, resume, O(change) payloads, and runs the CLI reads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from debugger.cli import cli
from runtime import (
    CheckpointConflict,
    CheckpointManager,
    CheckpointNotFound,
    MemoryStorage,
    RunStoreStorage,
    SqliteStorage,
    open_store,
    run_program,
)
from tests.runtime.pg_helpers import fresh_schema


@pytest.fixture(params=["memory", "sqlite", "store", "postgres"])
def manager(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CheckpointManager]:
    with ExitStack() as stack:
        if request.param == "memory":
            m = CheckpointManager(MemoryStorage(), agent="helper")
        elif request.param == "sqlite":
            m = CheckpointManager(SqliteStorage(tmp_path / "agents.db"), agent="helper")
        else:  # a run store: SQLite, or PostgreSQL (AGENCY_TEST_POSTGRES; skipped without)
            where = tmp_path / "runs.db" if request.param == "store" else None
            store = open_store(where or stack.enter_context(fresh_schema()))
            m = CheckpointManager(RunStoreStorage(store), agent="helper")
        yield m
        m.close()


def conversation(n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = [{"role": "user", "content": "Roll a die for me."}]
    for i in range(n):
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "roll", "arguments": "{}"},
                    }
                ],
            }
        )
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": str(i % 6 + 1)})
    return out


def test_the_seed_flow_save_list_rollback_prune(manager: CheckpointManager) -> None:
    ids = []
    for roundtrip in range(1, 5):
        ids.append(
            manager.save(
                run_id="run-1",
                roundtrip=roundtrip,
                messages=conversation(roundtrip),
                token_usage={"input_tokens": 100 * roundtrip, "output_tokens": 10 * roundtrip},
                session_state={"rolls": roundtrip, "topic": "dice"},
                agent="helper",
            )
        )
    listed = manager.list("run-1")
    assert [c.id for c in listed] == ids
    assert [c.roundtrip for c in listed] == [1, 2, 3, 4]
    assert listed[2].messages == conversation(3)
    assert listed[2].session_state == {"rolls": 3, "topic": "dice"}
    assert listed[2].token_usage == {"input_tokens": 300, "output_tokens": 30}
    assert listed[0].location and listed[0].location.endswith(
        ".py:" + str(listed[0].location).rsplit(":")[-1]
    )

    restored = manager.rollback(ids[1])
    assert restored.id == ids[1] and restored.messages == conversation(2)
    assert [c.id for c in manager.list("run-1")] == ids[:2]
    kept = manager.get(ids[3])  # not destroyed: on the kept branch
    assert kept is not None and kept.messages == conversation(4)

    again = manager.save(
        run_id="run-1",
        roundtrip=3,
        messages=conversation(2) + [{"role": "user", "content": "again"}],
    )
    assert [c.id for c in manager.list("run-1")] == [*ids[:2], again]
    assert manager.get(again).messages[-1] == {"role": "user", "content": "again"}  # type: ignore[union-attr]
    assert manager.resume("run-1").roundtrip == 3

    assert manager.prune(older_than_ms=3_600_000) == 0
    manager.store.flush()
    assert manager.prune(older_than_ms=-1_000) == 5
    assert manager.get(ids[0]) is None
    with pytest.raises(CheckpointNotFound):
        manager.list("run-1")


def test_rollback_with_discard_deletes_the_later_checkpoints(manager: CheckpointManager) -> None:
    ids = [manager.save(run_id="r", messages=conversation(i)) for i in range(4)]
    manager.rollback(ids[2])  # ids[3] kept on branch 0
    manager.rollback(ids[0], discard=True)
    assert [c.id for c in manager.list("r")] == ids[:1]
    assert all(manager.get(i) is None for i in ids[1:])
    nxt = manager.save(run_id="r", messages=conversation(0) + [{"role": "user", "content": "x"}])
    assert [c.id for c in manager.list("r")] == [ids[0], nxt]


def test_rollback_conflicts(manager: CheckpointManager) -> None:
    ids = [manager.save(run_id="r", messages=conversation(i)) for i in range(3)]
    with pytest.raises(CheckpointConflict, match="already the latest"):
        manager.rollback(ids[2])
    manager.rollback(ids[0])
    with pytest.raises(CheckpointConflict, match="kept branch"):
        manager.rollback(ids[2])
    with pytest.raises(CheckpointConflict, match="already the latest"):
        manager.rollback(ids[0])
    with pytest.raises(CheckpointNotFound):
        manager.rollback("nope")
    with pytest.raises(CheckpointNotFound):
        manager.rollback(ids[0] + "9")


def test_history_rewrites_are_recorded(manager: CheckpointManager) -> None:
    msgs = conversation(2)
    manager.save(run_id="r", messages=msgs)
    msgs[0] = {**msgs[0], "content": "replaced"}  # a saved message is changed by replacing it
    b = manager.save(run_id="r", messages=msgs)
    c = manager.save(run_id="r", messages=msgs[2:])  # summarised: dropped the head
    assert manager.get(b).messages[0]["content"] == "replaced"  # type: ignore[union-attr]
    assert manager.get(c).messages == msgs[2:]  # type: ignore[union-attr]


def test_a_roundtrip_stores_what_it_added_not_the_history(manager: CheckpointManager) -> None:
    msgs: list[dict[str, object]] = []
    sizes = []
    for i in range(300):
        msgs.append({"role": "user", "content": f"message {i} " + "x" * 200})
        cid = manager.save(run_id="r", messages=msgs, session_state={"i": i})
        run_id, branch, step = cid.rsplit(".", 2)
        manager.store.flush()
        (batch,) = manager.store.batches(run_id, int(branch), int(step), int(step))
        sizes.append(len(batch.blob))
    assert max(sizes[-10:]) < 400  # one message, not 300
    assert manager.list("r")[150].messages == msgs[:151]


def test_resume_in_a_new_manager(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    first = CheckpointManager(SqliteStorage(db))
    first.save(run_id="job", messages=conversation(1), session_state={"k": 1})
    first.close()
    second = CheckpointManager(SqliteStorage(db))
    resumed = second.resume("job")
    assert resumed.messages == conversation(1) and resumed.session_state == {"k": 1}
    nxt = second.save(run_id="job", messages=conversation(2))
    assert [c.roundtrip for c in second.list("job")] == [1, 2] and nxt.endswith(".0.1")
    second.close()


def test_async_twins() -> None:
    async def flow() -> None:
        m = CheckpointManager()
        a = await m.asave(run_id="x", messages=conversation(1))
        b = await m.asave(run_id="x", messages=conversation(2))
        assert [c.id for c in await m.alist("x")] == [a, b]
        assert (await m.aget(a)) is not None
        assert (await m.arollback(a)).id == a
        assert (await m.aresume("x")).roundtrip == 1
        assert await m.aprune(3_600_000) == 0

    asyncio.run(flow())


def test_the_cli_reads_an_agent_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    m = CheckpointManager(SqliteStorage(db), agent="helper")
    m.save(
        run_id="cli",
        messages=conversation(1),
        session_state={"topic": "dice"},
        token_usage={"prompt_tokens": 7, "completion_tokens": 3},
    )
    run_id = m.list("cli")[0].run_id
    m.finish(run_id)
    m.close()
    out = CliRunner().invoke(cli, ["runs", "--db", str(db), "--json"])
    assert out.exit_code == 0, out.output
    assert [r["id"] for r in json.loads(out.output)] == [run_id]
    shown = CliRunner().invoke(cli, ["show", f"{run_id}:0", "--db", str(db), "--json"])
    assert shown.exit_code == 0, shown.output
    state = json.loads(shown.output)
    assert state["frames"][0]["locals"]["session_state"] == {"topic": "dice"}
    assert state["usage"]["input_tokens"] == 7
    assert [m["role"] for m in state["threads"]["main"]] == ["user", "assistant", "tool"]
    out_file = tmp_path / "cp.json"
    exported = CliRunner().invoke(cli, ["export", run_id, "-o", str(out_file), "--db", str(db)])
    assert exported.exit_code == 0, exported.output
    data = json.loads(out_file.read_text())
    assert data["roundtrip"] == 1 and data["sessionState"] == {"topic": "dice"}
    assert data["messages"] == conversation(1)


def test_an_agency_run_has_no_agent_checkpoints(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    run = run_program(
        examples / "dice.agency", mocks=examples / "dice.mocks.json", db=tmp_path / "r.db"
    )
    m = CheckpointManager(RunStoreStorage(run.store))
    with pytest.raises(CheckpointNotFound, match="not a Python agent"):
        m.list(run.id)
    assert m.get(f"{run.id}.0.0") is None
    m.close()
    run.store.close()


def test_saved_values_are_copied_as_their_json_round_trip_would_be() -> None:
    from enum import IntEnum

    from runtime.agents.manager import CheckpointError

    class Level(IntEnum):
        HIGH = 3

    class Sdk:  # an SDK object: saved by its model_dump
        def model_dump(self, **_: Any) -> dict[str, Any]:
            return {"role": "assistant", "content": "hi"}

    state = {"t": (1, 2.5, None, True), "nested": [{"a": "b"}], 7: "int key", "lvl": Level.HIGH}
    m = CheckpointManager()
    m.save(
        run_id="copy", messages=[Sdk(), {"role": "user", "content": ("x",)}], session_state=state
    )
    cp = m.list("copy")[0]
    assert cp.messages == [
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": ["x"]},
    ]
    assert cp.session_state == json.loads(json.dumps(state))
    state["nested"][0]["a"] = "changed"  # the checkpoint holds a copy
    assert m.list("copy")[0].session_state["nested"] == [{"a": "b"}]
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(CheckpointError, match="cannot be saved as JSON"):
        m.save(run_id="copy", session_state={"loop": loop})
