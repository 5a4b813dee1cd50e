"""`agency serve` over HTTP: a real uvicorn server on 127.0.0.1, every endpoint, bad ids, bad
JSON, pagination, the token, concurrent rollbacks of one run (exactly one wins)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from debugger.cli import cli
from runtime import CheckpointManager, SqliteStorage, run_program
from tests.agents.serving import ROOT, serving


def conversation(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "user", "content": "Roll."}]
    for i in range(n):
        out += [{"role": "assistant", "content": f"rolled {i}"}]
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    db = tmp_path_factory.mktemp("serve") / "runs.db"
    agency = run_program(
        ROOT / "examples" / "dice.agency", mocks=ROOT / "examples" / "dice.mocks.json", db=db
    )
    agency.store.close()
    m = CheckpointManager(SqliteStorage(db), agent="helper")
    runs = {}
    for name in ("one", "two", "race"):
        for i in range(5):
            m.save(
                run_id=name,
                roundtrip=i + 1,
                messages=conversation(i + 1),
                session_state={"i": i},
                token_usage={"input_tokens": i},
            )
        runs[name] = m.list(name)
        m.finish(runs[name][0].run_id)
    m.close()
    with serving(db) as base:
        yield {"base": base, "db": db, "agency": agency.id, "runs": runs}


def get(world: dict[str, Any], path: str, **kw: Any) -> httpx.Response:
    return httpx.get(world["base"] + path, timeout=30, **kw)


def post(world: dict[str, Any], path: str, **kw: Any) -> httpx.Response:
    return httpx.post(world["base"] + path, timeout=30, **kw)


def error_of(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error"]["status"] == status
    return str(body["error"]["message"])


def test_runs_and_pagination(world: dict[str, Any]) -> None:
    r = get(world, "/runs")
    assert r.status_code == 200
    runs = r.json()["runs"]
    assert len(runs) == 4 and r.json()["next"] is None
    assert {x["kind"] for x in runs} == {"agency", "python-agent"}
    first = get(world, "/runs?limit=3").json()
    rest = get(world, "/runs?limit=3&offset=3").json()
    assert first["next"] == 3 and rest["next"] is None
    assert [x["id"] for x in first["runs"] + rest["runs"]] == [x["id"] for x in runs]
    assert "limit" in error_of(get(world, "/runs?limit=0"), 400)
    assert "integer" in error_of(get(world, "/runs?offset=x"), 400)


def test_one_run_and_its_steps(world: dict[str, Any]) -> None:
    run_id = world["runs"]["one"][0].run_id
    r = get(world, f"/runs/{run_id}")
    assert r.status_code == 200 and r.json()["agent"] == "helper"
    assert r.json()["branches"][0]["branch"] == 0
    state = get(world, f"/runs/{run_id}/steps/2").json()
    assert state["threads"]["main"][-1]["content"] == "rolled 2"
    assert state["status"] == "running"  # the agent ran on after this checkpoint
    assert get(world, f"/runs/{run_id}/steps/4").json()["status"] == "finished"  # its last
    assert state["locals"]["session_state"] == {"i": 2}
    agency = get(world, f"/runs/{world['agency']}/steps/0")
    assert agency.status_code == 200 and agency.json()["step"] == 0
    error_of(get(world, "/runs/nope"), 404)
    error_of(get(world, f"/runs/{run_id}/steps/99"), 404)
    error_of(get(world, f"/runs/{run_id}/steps/x"), 400)
    error_of(get(world, f"/runs/{run_id}/steps/0?branch=7"), 404)


def test_checkpoints_and_the_seed_paths(world: dict[str, Any]) -> None:
    cps = world["runs"]["one"]
    run_id = cps[0].run_id
    page = get(world, f"/runs/{run_id}/checkpoints?limit=2&offset=1").json()
    assert [c["id"] for c in page["checkpoints"]] == [c.id for c in cps[1:3]]
    assert page["next"] == 3 and page["checkpoints"][0]["messages"] == conversation(2)
    seed = get(world, f"/agents/helper/checkpoints?runId={run_id}").json()
    assert [c["id"] for c in seed["checkpoints"]] == [c.id for c in cps]
    assert seed["checkpoints"][0]["roundtrip"] == 1
    assert "runId" in error_of(get(world, "/agents/helper/checkpoints"), 400)
    error_of(get(world, f"/agents/other/checkpoints?runId={run_id}"), 404)
    error_of(get(world, "/agents/helper/checkpoints?runId=nope"), 404)
    error_of(get(world, f"/runs/{world['agency']}/checkpoints"), 404)


def test_rollback(world: dict[str, Any]) -> None:
    cps = world["runs"]["two"]
    run_id = cps[0].run_id
    assert "JSON" in error_of(
        post(world, f"/runs/{run_id}/rollback/{cps[2].id}", content=b"{"), 400
    )
    error_of(post(world, f"/runs/{run_id}/rollback/{cps[2].id}", json=[1]), 400)
    error_of(post(world, f"/runs/{run_id}/rollback/{cps[2].id}", json={"discard": "yes"}), 400)
    error_of(post(world, f"/runs/{run_id}/rollback/nope"), 404)
    other = world["runs"]["one"][0]
    error_of(post(world, f"/runs/{run_id}/rollback/{other.id}"), 404)
    error_of(post(world, f"/agents/other/rollback/{cps[2].id}"), 404)

    r = post(world, f"/runs/{run_id}/rollback/{cps[3].id}")
    assert r.status_code == 200, r.text
    assert r.json()["checkpoint"]["id"] == cps[3].id and r.json()["discarded"] is False
    listed = get(world, f"/runs/{run_id}/checkpoints").json()["checkpoints"]
    assert [c["id"] for c in listed] == [c.id for c in cps[:4]]
    r = post(world, f"/agents/helper/rollback/{cps[1].id}", json={"discard": True})
    assert r.status_code == 200 and r.json()["discarded"] is True
    listed = get(world, f"/runs/{run_id}/checkpoints").json()["checkpoints"]
    assert [c["id"] for c in listed] == [c.id for c in cps[:2]]
    assert "latest" in error_of(post(world, f"/runs/{run_id}/rollback/{cps[1].id}"), 409)
    error_of(post(world, f"/runs/{run_id}/rollback/{cps[4].id}"), 404)  # discarded


def test_concurrent_rollbacks_of_one_run_exactly_one_wins(world: dict[str, Any]) -> None:
    cps = world["runs"]["race"]
    target = cps[1].id
    with ThreadPoolExecutor(8) as pool:
        codes = list(
            pool.map(
                lambda _: post(world, f"/agents/helper/rollback/{target}").status_code, range(8)
            )
        )
    assert sorted(codes) == [200] + [409] * 7


def test_unknown_paths_and_methods_answer_json(world: dict[str, Any]) -> None:
    error_of(get(world, "/nowhere"), 404)
    error_of(httpx.delete(world["base"] + "/runs", timeout=30), 405)
    schema = get(world, "/openapi.json").json()
    assert "/agents/{name}/rollback/{checkpointId}" in schema["paths"]


def test_a_token_is_checked_on_every_request(world: dict[str, Any]) -> None:
    with serving(world["db"], "--token", "s3cret") as base:
        assert httpx.get(base + "/runs", timeout=30).status_code == 401
        bad = httpx.get(base + "/openapi.json", headers={"Authorization": "Bearer no"}, timeout=30)
        assert bad.status_code == 401 and "token" in bad.json()["error"]["message"]
        good = httpx.get(base + "/runs", headers={"Authorization": "Bearer s3cret"}, timeout=30)
        assert good.status_code == 200


def test_binding_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    args = ["serve", "--db", str(tmp_path / "x.db"), "--host", "0.0.0.0"]
    out = CliRunner().invoke(cli, args, env={"AGENCY_TOKEN": ""})
    assert out.exit_code != 0 and "--token" in out.output
