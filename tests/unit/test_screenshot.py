"""docs/grid.png, README's picture, is the committed reports/index.html as Chromium shows it: it
carries that page's sha256, so a report regenerated without its picture fails here; and the
picture, rendered again from the page, is a PNG of the page's width that shows the grid."""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
from types import ModuleType

import pytest

from tests.conftest import ROOT, load_tool


def tool() -> ModuleType:
    return load_tool("screenshot")


def size(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def test_the_picture_is_of_the_committed_report() -> None:
    shot = tool()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page, picture in shot.PICTURES:
        if not page.is_file():
            continue
        assert shot.text_of(picture.read_bytes(), shot.KEY) == shot.page_digest(page), (
            f"{picture.name} is not of {page}: run python tools/screenshot.py"
        )
        assert "![" in readme.split(f"docs/{picture.name}")[0], f"README shows no {picture.name}"


def test_the_digest_chunk_round_trips() -> None:
    shot = tool()
    png = shot.PICTURE.read_bytes()
    again = shot.with_text(png, b"another-key", "abc")
    assert shot.text_of(again, b"another-key") == "abc"
    assert shot.text_of(png, b"another-key") is None


def test_the_page_renders_to_the_picture_size() -> None:
    shot = tool()
    have = shutil.which("chromium") or shutil.which("chromium-browser")
    if have is None or importlib.util.find_spec("playwright") is None:
        if os.environ.get("HARNESS_REQUIRE_BROWSER") == "1":
            pytest.fail("HARNESS_REQUIRE_BROWSER=1 but no chromium or playwright here")
        pytest.skip("needs Debian's chromium and the playwright package")
    png = shot.shoot()
    width, height = size(png)
    assert width == shot.WIDTH and 300 < height < 4000
    assert size(shot.PICTURE.read_bytes()) == (width, height)
