"""`wrap_anthropic` on a messages-API client (duck-typed: a fake client, no SDK needed): a
checkpoint after every tool roundtrip, once every `tool_use` has its `tool_result`."""

from __future__ import annotations

from typing import Any

from runtime import CheckpointManager, record_agent, side_effect
from runtime.agents.adapters.anthropic import roundtrip_done, wrap_anthropic


class FakeMessages:
    def __init__(self) -> None:
        self.calls = 0

    def create(self, **kwargs: Any) -> dict[str, Any]:
        self.calls += 1
        done = sum(
            1
            for m in kwargs["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        )
        if done < 2:
            content = [
                {"type": "text", "text": "rolling"},
                {"type": "tool_use", "id": f"tu{done}", "name": "roll", "input": {"n": done}},
            ]
        else:
            content = [{"type": "text", "text": "rolled twice"}]
        return {
            "role": "assistant",
            "content": content,
            "usage": {"input_tokens": 7, "output_tokens": 2},
        }


class FakeAnthropic:
    def __init__(self) -> None:
        self.messages = FakeMessages()


rolled: list[int] = []


@side_effect
def roll(n: int) -> int:
    rolled.append(n)
    return n + 3


def test_an_anthropic_tool_loop_is_checkpointed_per_roundtrip() -> None:
    m = CheckpointManager(agent="claude")
    client = wrap_anthropic(FakeAnthropic())
    with record_agent(m, run_id="a1", agent="claude") as rec:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Roll twice."}]
        while True:
            answer = client.messages.create(model="m", max_tokens=100, messages=messages)
            messages.append({"role": "assistant", "content": answer["content"]})
            uses = [b for b in answer["content"] if b["type"] == "tool_use"]
            if not uses:
                break
            messages.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": b["id"],
                            "content": str(roll(**b["input"])),
                        }
                        for b in uses
                    ],
                }
            )
        assert rec.token_usage == {"input_tokens": 21, "output_tokens": 6}
    cps = m.list("a1")
    assert [c.message_count for c in cps] == [3, 5, 6]  # two roundtrips, then the answer
    assert cps[-1].messages[-1]["content"] == [{"type": "text", "text": "rolled twice"}]
    assert cps[-1].token_usage == {"input_tokens": 21, "output_tokens": 6}
    assert rolled == [0, 1]
    assert m.store.get_run(cps[0].run_id).status == "finished"  # type: ignore[union-attr]


def test_roundtrip_detection() -> None:
    use = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "x"}, {"type": "tool_use", "id": "y"}],
    }
    half = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}
    full = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": t} for t in "xy"]}
    assert not roundtrip_done([use, half]) and roundtrip_done([use, full])
    assert not roundtrip_done([{"role": "user", "content": "hi"}])


class FakeResponses:
    def create(self, **kwargs: Any) -> dict[str, Any]:
        done = sum(1 for i in kwargs["input"] if i.get("type") == "function_call_output")
        if done < 2:
            output = [
                {"type": "function_call", "call_id": f"fc{done}", "name": "roll", "arguments": "{}"}
            ]
        else:
            output = [{"type": "message", "role": "assistant", "content": "done"}]
        return {"output": output, "usage": {"input_tokens": 3, "output_tokens": 1}}


class FakeOpenAIClient:
    def __init__(self) -> None:
        self.chat = None
        self.responses = FakeResponses()


def test_the_openai_responses_loop_is_checkpointed_per_roundtrip() -> None:
    from runtime.agents.adapters.openai import items_roundtrip_done, wrap_openai

    m = CheckpointManager(agent="resp")
    client = wrap_openai(FakeOpenAIClient())
    with record_agent(m, run_id="r1", agent="resp"):
        items: list[dict[str, Any]] = [{"role": "user", "content": "Roll twice."}]
        while True:
            answer = client.responses.create(model="m", input=items)
            items += answer["output"]
            calls = [o for o in answer["output"] if o["type"] == "function_call"]
            if not calls:
                break
            items += [
                {"type": "function_call_output", "call_id": c["call_id"], "output": "4"}
                for c in calls
            ]
    assert [c.message_count for c in m.list("r1")] == [3, 5, 6]
    assert items_roundtrip_done(
        [
            {"type": "function_call", "call_id": "a"},
            {"type": "function_call_output", "call_id": "a"},
        ]
    )
    assert not items_roundtrip_done([{"type": "function_call", "call_id": "a"}])
