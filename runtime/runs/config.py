"""Provides a run's configuration (model, provider, base URL, …) as recorded, and how a resume's
configuration differs from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runtime.errors import AgencyError
from runtime.language.program import load_program
from runtime.llm.registry import config_of, resolve_model


def _config_value(config: dict[str, Any], key: str) -> Any:
    value = config.get(key)
    return None if value in ("", None) else value


def config_differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """What differs between the model/provider/tools configuration a run was recorded with and
    the one it would go on with, in words."""
    out = []
    for key, label in (
        ("provider", "provider"),
        ("model", "model"),
        ("base_url_host", "base URL host"),
        ("tools", "tools"),
    ):
        was, now = _config_value(recorded, key), _config_value(current, key)
        if key in ("base_url_host", "tools") and now is None:
            continue  # not given now: the recorded one is used
        if was != now:
            out.append(f"{label} {json.dumps(was)} then, {json.dumps(now)} now")
    if "mocks" in current and current.get("mocks") != recorded.get("mocks"):
        out.append("the scripted model answers (--mock) differ")
    return out


def current_config(
    model_spec: str | None, base_url: str | None, mocks: list[Any] | None
) -> tuple[Any, dict[str, Any]]:
    model = resolve_model(model_spec, mocks=mocks, base_url=base_url)
    config = dict(config_of(model))
    if mocks is not None:
        config["mocks"] = mocks
    return model, config


def program_of(run: Any) -> Any:
    """The run's program as its source is now (a relative path is taken from the directory the
    run was started in, wherever resume or replay are)."""
    checkpoint = (run.config or {}).get("from_checkpoint")
    if checkpoint:
        where = f" ({checkpoint})" if isinstance(checkpoint, str) else ""
        raise AgencyError(
            f"run {run.id} was started from a checkpoint file{where}: resume and replay "
            "re-execute a run from its start, which this one does not have; run it again with "
            "`agency run --checkpoint FILE`"
        )
    path = Path(run.source_path)
    cwd = (run.meta or {}).get("cwd")
    if not path.is_absolute() and cwd and Path(cwd).resolve() != Path.cwd().resolve():
        path = Path(cwd) / path
    if not path.exists():
        raise AgencyError(f"{run.source_path}: the program of run {run.id} is not there any more")
    return load_program(path, reuse=True)  # only run (compiled once per process)
