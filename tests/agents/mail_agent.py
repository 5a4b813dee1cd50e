"""A plain OpenAI-SDK agent, recorded: it mails people as the model asks, one tool roundtrip at
a time. `python mail_agent.py DB BASE_URL OUTBOX [PAUSE_AFTER [inside]]`: with PAUSE_AFTER=n it
stops (waits on stdin) right after the n-th email, before the roundtrip's checkpoint, so a test
can kill it there: once the tool has returned (its result journaled), or, with `inside`, while
the tool still runs (the email is out, its result not journaled: in doubt). With
AGENT_STREAM=1 it reads each answer through `chat.completions.stream(...)`; AGENT_STREAM_PAUSE=n
also stops it two events into the n-th answer's stream, so a test can interrupt it there."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from openai import OpenAI

from runtime import record_agent, side_effect
from runtime.agents.adapters.openai import wrap_openai

DB, BASE_URL, OUTBOX = sys.argv[1:4]
PAUSE_AFTER = int(sys.argv[4]) if len(sys.argv) > 4 else 0
INSIDE = sys.argv[5:6] == ["inside"]
REPLAY = os.environ.get("AGENT_REPLAY") == "1"  # answers from the record, nothing performed
NO_DONE = os.environ.get("AGENT_NO_DONE") == "1"  # send_email has no `done=` check
STREAM = os.environ.get("AGENT_STREAM") == "1"
STREAM_PAUSE = int(os.environ.get("AGENT_STREAM_PAUSE") or 0)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "send_email",
            "description": "Send an email.",
            "parameters": {"type": "object", "properties": {"to": {"type": "string"}}},
        },
    }
]


def sent() -> list[str]:
    try:
        with open(OUTBOX, encoding="utf-8") as fh:
            return fh.read().split()
    except FileNotFoundError:
        return []


def pause(where: bool) -> None:
    if where == INSIDE and len(sent()) == PAUSE_AFTER:
        print("PAUSED", flush=True)
        sys.stdin.readline()  # the test kills us here


def send_email(to: str) -> str:
    with open(OUTBOX, "a", encoding="utf-8") as fh:
        fh.write(to + "\n")
    print(f"SENT {to}", flush=True)
    pause(True)
    return f"sent to {to}"


if NO_DONE:  # nothing tells whether an email in doubt went out
    send_email = side_effect(send_email)
else:
    send_email = side_effect(done=lambda to: to in sent())(send_email)


# Ctrl-C raises KeyboardInterrupt, as in a terminal. A job a non-interactive shell starts in the
# background (`pytest … &`) ignores SIGINT, and so does every process it starts, Python included:
# the agent would never see the test's Ctrl-C.
signal.signal(signal.SIGINT, signal.default_int_handler)

client = wrap_openai(OpenAI(base_url=BASE_URL, api_key="test-key", max_retries=0))
asked = 0


def ask(messages: list[dict[str, object]]) -> Any:
    """The model's next message, streamed or not."""
    global asked
    asked += 1
    if not STREAM:
        answer = client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS)
        return answer.choices[0].message
    with client.chat.completions.stream(model="fake-model", messages=messages, tools=TOOLS) as s:
        for n, _ in enumerate(s):
            if n == 2 and asked == STREAM_PAUSE:
                print("STREAMING", flush=True)
                sys.stdin.readline()  # the test interrupts us here
        return s.get_final_completion().choices[0].message


with record_agent(storage=DB, run_id="mailer-1", agent="mailer", replay=REPLAY) as rec:
    messages = rec.messages or [{"role": "user", "content": "Mail everyone on the list."}]
    print(f"START roundtrip {rec.roundtrip} with {len(messages)} messages", flush=True)
    while True:
        message = ask(messages)
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        for call in message.tool_calls:
            result = send_email(**json.loads(call.function.arguments))
            pause(False)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
print("DONE", flush=True)
