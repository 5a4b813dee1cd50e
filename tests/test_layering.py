"""The runtime (and the debugger's pure session model) never import the UI libraries."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The debugger's pure model and what it shares with the widgets: no UI library either.
PURE = ("session.py", "commands.py", "formatting.py", "errors.py")
UI = re.compile(r"^\s*(from|import)\s+(textual|rich)\b", re.M)


def runtime_modules() -> list[str]:
    mods = []
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods.append(".".join(parts))
    return mods


def test_no_ui_import_statements_in_runtime() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in [*(ROOT / "runtime").rglob("*.py"), *(ROOT / "debugger" / m for m in PURE)]
        if p.exists() and UI.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_importing_the_runtime_loads_no_ui_library() -> None:
    mods = runtime_modules() + [f"debugger.{m[:-3]}" for m in PURE]
    code = (
        "import importlib, sys\n"
        f"for m in {mods!r}:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "", f"UI modules loaded: {out.stdout.strip()}"
