"""Provides what a recorded run is on disk and how to read it back: the record format, the run
stores (memory, SQLite) with their migrations, and the read-only `Timeline`. A sibling of
`runtime.vm`: neither imports the other.
"""
