"""Golden files: UPDATE_GOLDEN=1 rewrites them (then read the diff before committing)."""

from __future__ import annotations

import os
from pathlib import Path


def check_golden(path: Path, actual: str) -> None:
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}: run with UPDATE_GOLDEN=1 and review it"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"output differs from {path}"
