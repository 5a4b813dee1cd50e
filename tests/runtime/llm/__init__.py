"""Tests of the LLM layer (runtime/llm)."""
