"""Provides the virtual machine: values, frames, the write log, the machine, its state codec,
checkpoints, the effect journal and the builtins. Imports `runtime.language`, `runtime.llm` and
`runtime.errors`; never `runtime.record` or `runtime.runs`.
"""
