"""Provides runs: driving a machine, recording it into a store, rebuilding a machine at a step,
forking, resuming and replaying, and the ownership of a live run. Joins `runtime.vm` and
`runtime.record`.
"""
