"""Python agents on the timeline: a `CheckpointManager` that saves a plain Python agent's state
after every tool roundtrip into a run store, auto-checkpointing (`record`) and adapters for the
OpenAI and Anthropic SDKs' tool loops.

A Python agent's run is a run like any other in the store: one step per roundtrip, its messages
as the run's message thread, its session state and token usage as the step's variables. So
`agency runs`, `agency show`, `agency prune` and `agency debugger --trace` read it as they read
an Agency program's run.
"""
