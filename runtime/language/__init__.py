"""Provides the language: syntax, scope analysis, bytecode and the compiler, and the prelude.

The bottom of the runtime's layers after `runtime.errors`: it imports nothing else of the runtime.
"""
