"""Provides `CONTEXT`, the Click context settings every `agency` command shares (`-h` as well
as `--help`, and help text wrapped at 100 columns)."""

from __future__ import annotations

from typing import Any

__all__ = ["CONTEXT"]

CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
