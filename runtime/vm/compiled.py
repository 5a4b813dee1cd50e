"""Provides the optional compiled interpreter: the machine's hot modules built with mypyc.

`make compiled` (`main(["build"])`) compiles `MODULES` into `_native/`
beside this file, with a manifest recording the SHA-256 of every source the build read: the
compiled modules and the `runtime` modules they import (whose types and constants the compiled
code relies on). Importing `runtime.vm` calls `use_compiled()`, which puts a finder for those
modules first on `sys.meta_path` only if the manifest matches this interpreter and every source
is unchanged. Otherwise the `.py` files run as they are, with one line on stderr naming what
changed: a stale build is not an error, but silently losing the speed-up (or measuring the old
code) would be worse than a line that says `make compiled` again. `AGENCY_PURE_PYTHON=1` turns
the build off without a word (the benchmark's pure column, a test's reference run).

Nothing here needs a compiler unless `build()` runs: without `_native/` the cost is one failed
`open()`, and a plain `pip install` never contains one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

# What is compiled: the machine's class chain and its frames (their attributes become native
# fields; a compiled class's base must be compiled too) and the method calls it makes. Not
# `operations`: compiled callers would call its functions directly, past the module's globals,
# which a test replaces to inject a fault into the machine (test_builtin_sweep).
MODULES = (
    "runtime.vm.frames",
    "runtime.vm.methods",
    "runtime.vm.machine_state",
    "runtime.vm.calls",
    "runtime.vm.machine",
)
GROUP = "runtime.vm.native"  # mypyc's shared library: runtime.vm.native__mypyc
ROOT = Path(__file__).resolve().parents[2]  # the directory holding `runtime/`
NATIVE = Path(__file__).resolve().parent / "_native"
MANIFEST = "manifest.json"
PURE_ENV = "AGENCY_PURE_PYTHON"
FORMAT = 1


def source_file(module: str, root: Path = ROOT) -> Path | None:
    """The file of the module named `module` under `root`, if it has one there."""
    base = root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def sources_of(modules: Sequence[str], root: Path = ROOT) -> list[str]:
    """The compiled modules' files and those of the `runtime` modules they import, relative to
    `root`, sorted."""
    import ast

    found: set[Path] = set()
    for module in modules:
        path = source_file(module, root)
        assert path is not None, module
        found.add(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps = [source_file(alias.name, root) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from runtime.vm import builtins` reads the module, not the package
                deps = [
                    source_file(f"{node.module}.{a.name}", root) or source_file(node.module, root)
                    for a in node.names
                ]
            else:
                continue
            found.update(p for p in deps if p is not None and p.is_relative_to(root / "runtime"))
    return sorted(p.relative_to(root).as_posix() for p in found)


def digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def ext_suffix() -> str:
    import sysconfig

    return str(sysconfig.get_config_var("EXT_SUFFIX"))


def read_manifest(native: Path) -> dict[str, Any] | None:
    try:
        text = (native / MANIFEST).read_text(encoding="utf-8")
    except OSError:
        return None
    import json

    data = json.loads(text)
    return data if isinstance(data, dict) else None


def stale_reason(manifest: dict[str, Any], native: Path, root: Path = ROOT) -> str | None:
    """Why the build in `native` must not be used here, or None if it can be."""
    if manifest.get("format") != FORMAT or manifest.get("ext_suffix") != ext_suffix():
        return f"it was built for another Python ({manifest.get('ext_suffix')})"
    for name in manifest["files"].values():
        if not (native / name).is_file():
            return f"{name} is missing"
    for rel, sha in manifest["sources"].items():
        path = root / rel
        if not path.is_file() or digest(path) != sha:
            return f"{rel} changed since it was built"
    return None


class NativeFinder:
    """A `sys.meta_path` finder for the compiled modules of one build (name -> extension)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        import importlib.machinery
        import importlib.util

        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def finder_for(native: Path = NATIVE, root: Path = ROOT) -> NativeFinder | None:
    """The finder for a fresh build in `native`; None (with a line on stderr if there is a
    build, but a stale one) when the pure-Python modules must run."""
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        return None
    manifest = read_manifest(native)
    if manifest is None:
        return None
    why = stale_reason(manifest, native, root)
    if why is not None:
        sys.stderr.write(
            f"agency: not using the compiled interpreter ({why}); running pure Python."
            " `make compiled` rebuilds it, `make clean` removes it\n"
        )
        return None
    return NativeFinder({name: native / file for name, file in manifest["files"].items()})


def use_compiled() -> bool:
    """Put the compiled modules first on the import path when a fresh build is present (before
    any of them is imported). True if they will be used."""
    if any(isinstance(f, NativeFinder) for f in sys.meta_path):
        return True
    finder = finder_for()
    if finder is None:
        return False
    sys.meta_path.insert(0, finder)
    return True


def active() -> bool:
    """True if the machine running in this process is the compiled one."""
    machine = sys.modules.get("runtime.vm.machine")
    return machine is not None and not str(machine.__file__).endswith(".py")


def build(native: Path = NATIVE, root: Path = ROOT) -> None:
    """Compile `MODULES` with mypyc into `native` (needs mypy and a C compiler)."""
    import json
    import shutil
    import tempfile

    from mypyc.build import mypycify
    from setuptools import Distribution

    paths = [str(source_file(m, root)) for m in MODULES]
    sources = sources_of(MODULES, root)
    hashes = {rel: digest(root / rel) for rel in sources}
    with tempfile.TemporaryDirectory(prefix="agency-mypyc-") as tmp:
        cwd = os.getcwd()
        os.chdir(root)  # mypy reads pyproject.toml's settings and names modules from here
        try:
            extensions = mypycify(paths, opt_level="3", group_name=GROUP, target_dir=tmp)
            dist = Distribution({"name": "agency-compiled", "ext_modules": extensions})
            cmd: Any = dist.get_command_obj("build_ext")
            cmd.build_lib = str(Path(tmp) / "lib")
            cmd.build_temp = str(Path(tmp) / "temp")
            dist.run_command("build_ext")
        finally:
            os.chdir(cwd)
        files: dict[str, str] = {}
        for ext in extensions:
            built = Path(cmd.get_ext_fullpath(ext.name))
            files[ext.name.removesuffix(".__init__")] = built.name
        if any(hashes[rel] != digest(root / rel) for rel in sources):
            raise SystemExit("a source changed while it was being compiled: build again")
        clean(native)
        native.mkdir(parents=True)
        for ext in extensions:
            shutil.copy2(cmd.get_ext_fullpath(ext.name), native)
    manifest = {"format": FORMAT, "ext_suffix": ext_suffix(), "files": files, "sources": hashes}
    (native / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def clean(native: Path = NATIVE) -> None:
    """Remove the compiled build (the pure-Python modules run again)."""
    import shutil

    shutil.rmtree(native, ignore_errors=True)


def main(argv: Sequence[str]) -> int:
    usage = "usage: main(['build' | 'clean' | 'status'])"
    if len(argv) != 1 or argv[0] not in ("build", "clean", "status"):
        print(usage, file=sys.stderr)
        return 2
    if argv[0] == "build":
        build()
        print(f"compiled {', '.join(MODULES)} into {NATIVE}")
    elif argv[0] == "clean":
        clean()
    else:
        manifest = read_manifest(NATIVE)
        why = "no build" if manifest is None else stale_reason(manifest, NATIVE)
        print("compiled build: " + ("fresh" if why is None else f"not used ({why})"))
    return 0
