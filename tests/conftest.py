"""Suite-wide fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _scratch_working_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test starts in a scratch directory, never in the checkout: a test that runs a program
    which writes a relative path (an example's `write("deleted.log", …)`, an export's `-o`) leaves
    nothing in the repository, whichever test forgot to `chdir`. Tests that need the checkout name
    it from `__file__`."""
    before = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    try:
        yield
    finally:
        os.chdir(before)
