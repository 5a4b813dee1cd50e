"""`ByIdentity` derives a value once per object, tells equal objects apart, and stays bounded."""

from __future__ import annotations

from runtime.language.identity import ByIdentity


def test_values_are_kept_per_object_not_per_equal_object() -> None:
    made: list[list[int]] = []
    memo: ByIdentity[list[int], int] = ByIdentity(2)

    def total(xs: list[int]) -> int:
        made.append(xs)
        return sum(xs)

    a, b = [1, 2], [1, 2]
    assert memo.get(a, total) == 3 and memo.get(a, total) == 3
    assert memo.get(b, total) == 3  # equal, not the same: derived again
    assert made == [a, b] and made[0] is a and made[1] is b
    c = [5]
    assert memo.get(c, total) == 5  # a third: the two kept are dropped first
    assert len(memo.kept) == 1
    assert memo.get(a, total) == 3 and len(made) == 4
