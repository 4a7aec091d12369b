"""docs/cli.md is the parser's: regenerated, it is the same page, and every option that
`stackmatrix COMMAND --help` prints is in that command's section."""

from __future__ import annotations

import re
import subprocess
import sys
from types import ModuleType

import pytest

from harness.cli import COMMANDS
from tests.conftest import ROOT, load_tool

PAGE = ROOT / "docs" / "cli.md"


def reference() -> ModuleType:
    return load_tool("cli_reference")


def test_the_page_is_what_the_parser_renders() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference().render(), (
        "docs/cli.md is stale: run python tools/cli_reference.py"
    )


def section(name: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## stackmatrix {name}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_of_the_help_is_on_the_page(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", name, "--help"],
        capture_output=True, text=True, timeout=60, check=True, cwd=ROOT,
    )  # fmt: skip
    assert done.stdout.startswith(f"usage: stackmatrix {name} ")
    options = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", done.stdout)) - {"--help"}
    here = section(name)
    missing = sorted(o for o in options if f"`{o}" not in here and f", {o}" not in here)
    assert not missing, f"stackmatrix {name} --help has {missing}, docs/cli.md does not"
