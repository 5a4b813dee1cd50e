"""An OpenAI-SDK agent loop against a fake OpenAI-compatible server on 127.0.0.1: checkpointed
after every tool roundtrip, killed mid-run (after a side-effecting tool, before its roundtrip's
checkpoint), resumed in a new process: no email is sent twice, and the run is one run."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")

from runtime import CheckpointManager, SqliteStorage, record_agent  # noqa: E402
from runtime.agents.adapters.openai import roundtrip_done  # noqa: E402
from runtime.agents.record import CUT  # noqa: E402
from tests.agents.fake_openai import FakeOpenAI  # noqa: E402
from tests.agents.serving import ROOT, wait_for_exit, wait_for_line  # noqa: E402

AGENT = Path(__file__).with_name("mail_agent.py")


def start(db: Path, url: str, outbox: Path, *extra: str, **env_vars: str) -> subprocess.Popen[str]:
    env = dict(
        os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1", **env_vars
    )
    return subprocess.Popen(
        [sys.executable, str(AGENT), str(db), url, str(outbox), *extra],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.parametrize("where", ["after", "inside"])
def test_killed_and_resumed_agent_sends_every_email_once(tmp_path: Path, where: str) -> None:
    db, outbox = tmp_path / "runs.db", tmp_path / "outbox.txt"
    with FakeOpenAI(emails=3) as fake:
        first = start(db, fake.url, outbox, "2", where)
        wait_for_line(first, "PAUSED")
        first.send_signal(signal.SIGKILL)
        first.wait()
        assert outbox.read_text().split() == ["person1@example.com", "person2@example.com"]
        served_before = len(fake.requests)

        second = start(db, fake.url, outbox)
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 0, out
        assert "START roundtrip 1 with 3 messages" in out
        assert "SENT person2" not in out  # the journal gave its result back, or done() said so
        assert outbox.read_text().split() == [f"person{i}@example.com" for i in (1, 2, 3)]
        # the answer paid for before the kill (asking for person2's email) was not asked again
        assert len(fake.requests) - served_before == 2

    m = CheckpointManager(SqliteStorage(db))
    cps = m.list("mailer-1")
    assert [c.roundtrip for c in cps] == [1, 2, 3, 4]
    final = cps[-1].messages
    assert final[-1] == {"role": "assistant", "content": "Sent 3 emails."}
    results = [x["content"] for x in final if x["role"] == "tool"]
    assert results[0] == "sent to person1@example.com" and len(results) == 3
    assert results[1] == ("sent to person2@example.com" if where == "after" else None)
    run = m.store.get_run(cps[0].run_id)
    assert run is not None and run.status == "finished" and run.meta["agent"] == "mailer"
    assert sum(1 for e in m.store.effects(run.id) if not e.key.endswith(":intent")) == 3
    assert cps[0].location and cps[0].location.startswith(str(AGENT))
    m.close()


def test_an_agent_interrupted_mid_stream_asks_again_and_mails_everyone_once(
    tmp_path: Path,
) -> None:
    db, outbox = tmp_path / "runs.db", tmp_path / "outbox.txt"
    with FakeOpenAI(emails=3) as fake:
        first = start(db, fake.url, outbox, AGENT_STREAM="1", AGENT_STREAM_PAUSE="2")
        wait_for_line(first, "STREAMING")  # two events into the answer asking for person2
        first.send_signal(signal.SIGINT)
        assert wait_for_exit(first) != 0
        assert outbox.read_text().split() == ["person1@example.com"]
        m = CheckpointManager(SqliteStorage(db))
        run = m.find_run("mailer-1")
        assert run is not None and run.status == "interrupted"
        cut = m.store.llm_calls(run.id)[-1].response[CUT]
        assert cut["reason"] == "closed before its end" and len(cut["events"]) >= 2
        m.close()

        second = start(db, fake.url, outbox, AGENT_STREAM="1")
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 0, out
        assert "START roundtrip 1 with 3 messages" in out
        assert outbox.read_text().split() == [f"person{i}@example.com" for i in (1, 2, 3)]
        assert len(fake.requests) == 2 + 3  # the cut answer was asked for again
    m = CheckpointManager(SqliteStorage(db))
    assert [c.roundtrip for c in m.list("mailer-1")] == [1, 2, 3, 4]
    assert m.list("mailer-1")[-1].messages[-1] == {"role": "assistant", "content": "Sent 3 emails."}
    m.close()


def test_an_effect_in_doubt_without_a_done_check_is_never_run_again(tmp_path: Path) -> None:
    db, outbox = tmp_path / "runs.db", tmp_path / "outbox.txt"
    with FakeOpenAI(emails=3) as fake:
        # killed inside send_email: the second email is out, its result never journaled
        first = start(db, fake.url, outbox, "2", "inside", AGENT_NO_DONE="1")
        wait_for_line(first, "PAUSED")
        first.send_signal(signal.SIGKILL)
        first.wait()
        second = start(db, fake.url, outbox, AGENT_NO_DONE="1")
        out, _ = second.communicate(timeout=120)
        assert second.returncode != 0, out
        assert "SENT" not in out  # not sent a second time, nor the third one sent
        assert outbox.read_text().split() == ["person1@example.com", "person2@example.com"]
        assert "EffectInDoubt: the side-effecting tool send_email" in out
        assert "send_email(to='person2@example.com'), in roundtrip 2" in out  # which call
        assert "@side_effect(done=" in out  # how to say whether it happened

        m = CheckpointManager(SqliteStorage(db))
        run = m.find_run("mailer-1")
        assert run is not None and run.status == "failed" and "EffectInDoubt" in str(run.error)
        assert [c.roundtrip for c in m.list("mailer-1")] == [1]
        m.close()

        # with a `done=` check (the outbox has it) the agent goes on, sending nothing twice
        third = start(db, fake.url, outbox)
        out, _ = third.communicate(timeout=120)
        assert third.returncode == 0, out
        assert outbox.read_text().split() == [f"person{i}@example.com" for i in (1, 2, 3)]


def test_replay_answers_from_the_record_and_performs_nothing(tmp_path: Path) -> None:
    db, outbox = tmp_path / "runs.db", tmp_path / "outbox.txt"
    with FakeOpenAI(emails=2) as fake:
        run = start(db, fake.url, outbox)
        out, _ = run.communicate(timeout=120)
        assert run.returncode == 0, out
    sent = outbox.read_text()
    with socket.socket() as sock:  # a port nobody listens on: any model call would fail
        sock.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    proc = subprocess.run(
        [sys.executable, str(AGENT), str(db), nowhere, str(outbox)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), AGENT_REPLAY="1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SENT" not in proc.stdout and "DONE" in proc.stdout
    assert outbox.read_text() == sent


def test_roundtrip_detection_waits_for_every_tool_result() -> None:
    call = {"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]}
    assert not roundtrip_done([{"role": "user", "content": "x"}])
    assert not roundtrip_done([call, {"role": "tool", "tool_call_id": "a"}])
    assert roundtrip_done(
        [call, {"role": "tool", "tool_call_id": "a"}, {"role": "tool", "tool_call_id": "b"}]
    )


def test_record_agent_as_a_decorator_and_by_hand() -> None:
    m = CheckpointManager(agent="hand")

    @record_agent(m, run_id="deco")
    def agent() -> None:
        from runtime import current_recording

        rec = current_recording()
        assert rec is not None
        rec.checkpoint([{"role": "user", "content": "one"}], session_state={"n": 1})
        rec.checkpoint([{"role": "user", "content": "one"}, {"role": "assistant", "content": "2"}])

    agent()
    cps = m.list("deco")
    assert [c.roundtrip for c in cps] == [1, 2] and cps[1].session_state == {"n": 1}
    assert json.dumps(cps[1].messages)
    assert m.store.get_run(cps[0].run_id).status == "finished"  # type: ignore[union-attr]


def test_an_async_openai_client_is_recorded_too(tmp_path: Path) -> None:
    import asyncio

    from openai import AsyncOpenAI

    from runtime import side_effect
    from runtime.agents.adapters.openai import wrap_openai

    outbox: list[str] = []

    @side_effect
    def send_email(to: str) -> str:
        outbox.append(to)
        return f"sent to {to}"

    async def agent(url: str) -> None:
        client = wrap_openai(AsyncOpenAI(base_url=url, api_key="k", max_retries=0))
        with record_agent(m, run_id="async-1", agent="mailer"):
            messages: list[dict[str, object]] = [{"role": "user", "content": "Mail them."}]
            while True:
                answer = await client.chat.completions.create(model="fake", messages=messages)
                message = answer.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    break
                for call in message.tool_calls:
                    result = send_email(**json.loads(call.function.arguments))
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        await client.close()

    m = CheckpointManager()
    with FakeOpenAI(emails=2) as fake:
        asyncio.run(agent(fake.url))
    assert [c.message_count for c in m.list("async-1")] == [3, 5, 6]
    assert outbox == ["person1@example.com", "person2@example.com"]
    calls = m.store.llm_calls(m.list("async-1")[0].run_id)
    assert len(calls) == 3
    assert calls[0].response["choices"][0]["message"]["tool_calls"][0]["id"] == "call_1"


def test_a_run_its_agent_still_records_cannot_be_rolled_back_over_http(tmp_path: Path) -> None:
    import httpx

    from tests.agents.serving import serving

    db, outbox = tmp_path / "runs.db", tmp_path / "outbox.txt"
    with FakeOpenAI(emails=3) as fake:
        agent = start(db, fake.url, outbox, "3", "after")
        try:
            wait_for_line(agent, "PAUSED")  # two checkpoints saved, the agent alive
            with serving(db) as base:
                url = f"{base}/agents/mailer/checkpoints?runId=mailer-1"
                cps = httpx.get(url, timeout=30).json()["checkpoints"]
                assert [c["roundtrip"] for c in cps] == [1, 2]
                target = f"{base}/agents/mailer/rollback/{cps[0]['id']}"
                busy = httpx.post(target, timeout=30)
                assert busy.status_code == 409, busy.text
                assert "another process owns it" in busy.json()["error"]["message"]
                agent.send_signal(signal.SIGKILL)
                agent.wait()
                done = httpx.post(target, timeout=30)  # a dead owner's claim is taken over
                assert done.status_code == 200, done.text
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
