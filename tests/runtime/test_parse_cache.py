"""The runtime's own Agency files (the prelude, `std::` modules) are parsed once and their trees
kept where Python keeps bytecode (runtime/language/parse_cache.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from runtime.language import parse_cache
from runtime.language.syntax import parse

SOURCE = (
    "def twice(x: number): number {\n  return x * 2\n}\n\nnode main() {\n  print(twice(2))\n}\n"
)


@pytest.fixture
def bundled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "pycache"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "lib" / "helpers.agency"
    path.parent.mkdir()
    path.write_text(SOURCE, encoding="utf-8")
    return path


def _caches(root: Path) -> list[Path]:
    return sorted(root.rglob(f"*{parse_cache.SUFFIX}"))


def test_a_second_parse_reads_the_tree_back(
    bundled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree, text = parse_cache.parse_bundled(bundled, "<helpers>")
    assert text == SOURCE and tree == parse(SOURCE, "<helpers>")
    (cache,) = _caches(tmp_path / "pycache")
    assert cache.name.startswith("helpers.agency.")

    def no_parse(*_: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(parse_cache, "parse", no_parse)
    again, _ = parse_cache.parse_bundled(bundled, "<helpers>")
    assert again == tree and again.path == "<helpers>"
    assert again.items[0].span == tree.items[0].span


def test_an_edit_parses_again_and_replaces_the_old_cache(bundled: Path, tmp_path: Path) -> None:
    parse_cache.parse_bundled(bundled, "<helpers>")
    (first,) = _caches(tmp_path / "pycache")
    bundled.write_text(SOURCE.replace("x * 2", "x * 3"), encoding="utf-8")
    tree, _ = parse_cache.parse_bundled(bundled, "<helpers>")
    assert tree == parse(SOURCE.replace("x * 2", "x * 3"), "<helpers>")
    (second,) = _caches(tmp_path / "pycache")
    assert second != first


def test_a_damaged_cache_is_parsed_over(bundled: Path, tmp_path: Path) -> None:
    parse_cache.parse_bundled(bundled, "<helpers>")
    (cache,) = _caches(tmp_path / "pycache")
    for damage in (b"", cache.read_bytes()[:40], b"not a pickle at all"):
        cache.write_bytes(damage)
        tree, _ = parse_cache.parse_bundled(bundled, "<helpers>")
        assert tree == parse(SOURCE, "<helpers>")
        assert cache.read_bytes() != damage  # written again


def test_nothing_is_written_when_bytecode_is_not(
    bundled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    tree, _ = parse_cache.parse_bundled(bundled, "<helpers>")
    assert tree == parse(SOURCE, "<helpers>")
    assert not _caches(tmp_path)


def test_a_folder_that_cannot_be_written_only_costs_the_parse(
    bundled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would go")
    monkeypatch.setattr(sys, "pycache_prefix", str(blocked))
    tree, _ = parse_cache.parse_bundled(bundled, "<helpers>")
    assert tree == parse(SOURCE, "<helpers>")


def test_an_edit_to_the_parser_parses_again(
    bundled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parser = tmp_path / "syntax"
    parser.mkdir()
    (parser / "parser.py").write_text("# the parser as it was\n")
    monkeypatch.setattr(parse_cache, "SYNTAX_DIR", parser)
    parse_cache._parser_fingerprint.cache_clear()
    try:
        parse_cache.parse_bundled(bundled, "<helpers>")
        (first,) = _caches(tmp_path / "pycache")
        (parser / "parser.py").write_text("# the parser, edited since\n")
        parse_cache._parser_fingerprint.cache_clear()
        parse_cache.parse_bundled(bundled, "<helpers>")
        (second,) = _caches(tmp_path / "pycache")
        assert second != first
    finally:
        parse_cache._parser_fingerprint.cache_clear()


def test_a_write_cut_short_long_ago_leaves_nothing_behind(bundled: Path, tmp_path: Path) -> None:
    import os
    import time

    parse_cache.parse_bundled(bundled, "<helpers>")
    (cache,) = _caches(tmp_path / "pycache")
    stale, fresh = cache.parent / ".tree-killed", cache.parent / ".tree-writing"
    for left in (stale, fresh):
        left.write_bytes(b"half a pickle")
    hour_ago = time.time() - 7200
    os.utime(stale, (hour_ago, hour_ago))
    bundled.write_text(SOURCE + "\n", encoding="utf-8")  # a new tree is written
    parse_cache.parse_bundled(bundled, "<helpers>")
    assert not stale.exists() and fresh.exists()  # another process may be writing that one
