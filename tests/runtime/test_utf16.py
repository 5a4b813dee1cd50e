"""Tests of runtime.vm.utf16: string positions as JavaScript's UTF-16 code units."""

from __future__ import annotations

import pickle
import sqlite3

from hypothesis import given
from hypothesis import strategies as st

from runtime.vm import utf16

# Text with ASCII, Latin-1, other BMP characters and astral ones (emoji), no lone surrogates.
TEXT = st.text(
    alphabet=st.sampled_from(["a", "Z", " ", "é", "ÿ", "日", "Ж", "😀", "𝄞", "\U0010ffff"]),
    max_size=30,
)


def units(s: str) -> bytes:
    return s.encode("utf-16-le", "surrogatepass")


@given(TEXT)
def test_length_counts_code_units(s: str) -> None:
    assert utf16.length(s) == len(units(s)) // 2
    assert utf16.bmp(s) == all(ord(c) <= 0xFFFF for c in s)


@given(TEXT)
def test_a_string_that_also_holds_its_utf8_copy_counts_the_same(s: str) -> None:
    # Pickling a string or binding it to SQLite (recording does both) can leave a UTF-8 copy
    # in the string object, which grows its size: what it is made of has not changed.
    s = "".join(list(s))  # a string of its own, whatever hypothesis shares
    pickle.dumps(s)
    sqlite3.connect(":memory:").execute("SELECT ?", (s,)).fetchone()
    assert utf16.length(s) == len(units(s)) // 2
    assert utf16.bmp(s) == all(ord(c) <= 0xFFFF for c in s)


def test_an_emoji_string_pickled_mid_run_keeps_its_positions() -> None:
    face = "".join(["hi ", chr(0x1F600), "!"])
    pickle.dumps(face)
    assert (utf16.length(face), utf16.bmp(face)) == (6, False)


@given(TEXT, st.integers(0, 70), st.integers(0, 70))
def test_cuts_are_unit_slices_and_rejoin(s: str, a: int, b: int) -> None:
    n = utf16.length(s)
    a, b = min(a, n), min(b, n)
    a, b = min(a, b), max(a, b)
    left, mid, right = utf16.cut(s, 0, a), utf16.cut(s, a, b), utf16.cut(s, b, n)
    assert units(mid) == units(s)[2 * a : 2 * b]
    assert utf16.mend(left + mid + right) == s  # the halves of a cut pair join up again


@given(TEXT)
def test_unit_and_code_point_reads(s: str) -> None:
    data = units(s)
    for i in range(utf16.length(s)):
        unit = int.from_bytes(data[2 * i : 2 * i + 2], "little")
        assert utf16.code_unit(s, i) == unit
        assert ord(utf16.unit_at(s, i)) == unit
        point = utf16.code_point(s, i)
        assert point == unit or (0xD800 <= unit < 0xDC00 and point > 0xFFFF)
    assert "".join(utf16.units_list(s)) == "".join(
        utf16.unit_at(s, i) for i in range(len(data) // 2)
    )


@given(TEXT, st.integers(0, 40))
def test_index_conversions_round_trip(s: str, i: int) -> None:
    i = min(i, len(s))
    unit = utf16.to_unit_index(s, i)
    assert unit == utf16.length(s[:i])
    assert utf16.to_index(s, unit) == i


def test_mend_leaves_other_strings_alone() -> None:
    assert utf16.mend("plain") == "plain"
    assert utf16.mend("ça été") == "ça été"
    assert utf16.mend("\ude00\ud83d") == "\ude00\ud83d"  # a low then a high: no pair
    assert utf16.mend("x\ud83d\ude00") == "x😀"


def test_a_recorded_run_counts_an_emoji_string_the_same_after_it_was_stored() -> None:
    # Recording pickles the values a run writes, and pickling may leave a UTF-8 copy inside
    # the very string the program goes on using: its positions must not change with it.
    import tempfile

    from runtime.language.program import compile_source
    from runtime.record.store import MemoryStore
    from runtime.runs.recording import record_program
    from runtime.runs.runner import RunConfig, new_machine

    source = """node main() {
  const face = "hi 😀!"
  let before = face.length
  let n = 0
  for (i in range(3000)) {
    n = n + 1
  }
  return [before, face.length, face.indexOf("!"), face.slice(3, 5), face.charCodeAt(4)]
}
"""
    program = compile_source(source, "face.agency")
    with tempfile.TemporaryDirectory() as tmp:
        config = RunConfig(model_spec="sim", root=tmp, quiet=True)
        bare = new_machine(program, config)
        bare.run()
        rec = record_program(program, config, MemoryStore())
    want = [6, 6, 5, "😀", 0xDE00]
    assert list(bare.result) == want
    assert list(rec.machine.result) == want
