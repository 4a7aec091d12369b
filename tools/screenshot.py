#!/usr/bin/env python3
"""docs/grid.png: the compatibility grid of reports/index.html, as headless Chromium shows it
(Debian's `chromium` driven by Playwright, as tests/unit/test_report_browser.py does).

`python tools/screenshot.py` (or `nox -s picture`, after `nox -s report`) writes it. The PNG
carries the sha256 of the index.html it shows (a tEXt chunk); tests/unit/test_screenshot.py
fails when the committed report and picture part ways.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "reports" / "index.html"
PICTURE = ROOT / "docs" / "grid.png"
# Each report with its picture: the smoke profile's, and the releases profile's (README's first
# screen), where that report exists.
PICTURES = (
    (PAGE, PICTURE),
    (ROOT / "reports" / "releases" / "index.html", ROOT / "docs" / "releases.png"),
)
KEY = b"stackmatrix-index-sha256"
WIDTH = 1400  # the width the browser test checks the page at
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def page_digest(page: Path = PAGE) -> str:
    return hashlib.sha256(page.read_bytes()).hexdigest()


def with_text(png: bytes, key: bytes, value: str) -> bytes:
    """The PNG with a tEXt chunk right after IHDR (which is 8 + 25 bytes in)."""
    assert png.startswith(PNG_MAGIC)
    data = key + b"\0" + value.encode("ascii")
    chunk = struct.pack(">I", len(data)) + b"tEXt" + data
    chunk += struct.pack(">I", zlib.crc32(b"tEXt" + data) & 0xFFFFFFFF)
    return png[:33] + chunk + png[33:]


def text_of(png: bytes, key: bytes) -> str | None:
    """The value of the tEXt chunk `key`, or None."""
    at = len(PNG_MAGIC)
    while at + 8 <= len(png):
        (size,) = struct.unpack(">I", png[at : at + 4])
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + size]
        if kind == b"tEXt" and data.split(b"\0", 1)[0] == key:
            return data.split(b"\0", 1)[1].decode("ascii", "replace")
        at += 12 + size
    return None


def shoot(page: Path = PAGE) -> bytes:
    """The page's heading, legend and grid (#grid), at WIDTH px, as a PNG."""
    from playwright.sync_api import sync_playwright

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("error: no chromium here\nhelp: sudo apt-get install chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        try:
            view = browser.new_page(viewport={"width": WIDTH, "height": 900})
            view.goto(page.resolve().as_uri())
            box = view.locator("#grid").bounding_box()
            assert box is not None, "index.html has no #grid"
            clip = {"x": 0, "y": 0, "width": WIDTH, "height": box["y"] + box["height"] + 16}
            png: bytes = view.screenshot(clip=clip, full_page=True)
        finally:
            browser.close()
    return with_text(png, KEY, page_digest(page))


def main() -> int:
    for page, picture in PICTURES:
        if not page.is_file():
            continue
        picture.parent.mkdir(exist_ok=True)
        picture.write_bytes(shoot(page))
        print(f"wrote {picture.relative_to(ROOT)} from {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
