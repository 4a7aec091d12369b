"""harness.fetcher against a real HTTP index on loopback (PEP 691 JSON and PEP 503 HTML pages):
wheels land in the cache only with the lock's sha256, each download is counted once."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fetcher import Fetcher, FetchError, fetch
from harness.lock import WheelCache
from harness.model import Lock, LockedWheel

FILES = {f"pkg{i}-1.0-py3-none-any.whl": bytes([i]) * (300_000 + i) for i in range(6)}


class _Index(http.server.BaseHTTPRequestHandler):
    html = False

    def do_GET(self) -> None:
        if self.path.startswith("/simple/"):
            name = self.path.strip("/").split("/")[1]
            files = [f for f in FILES if f.startswith(name.replace("-", "_") + "-")]
            if self.html:
                body = "".join(f'<a href="/files/{f}#sha256=x">{f}</a>' for f in files).encode()
                ctype = "text/html"
            else:
                doc = {"files": [{"filename": f, "url": f"/files/{f}"} for f in files]}
                body, ctype = json.dumps(doc).encode(), "application/vnd.pypi.simple.v1+json"
        elif self.path.startswith("/files/") and self.path[7:] in FILES:
            body, ctype = FILES[self.path[7:]], "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(params=[False, True], ids=["json", "html"])
def index(request: pytest.FixtureRequest) -> Iterator[str]:
    handler = type("H", (_Index,), {"html": request.param})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()
    server.server_close()


def wheel(name: str, data: bytes | None = None) -> LockedWheel:
    body = FILES[name] if data is None else data
    return LockedWheel(
        name=name.split("-", maxsplit=1)[0],
        version="1.0",
        filename=name,
        sha256=hashlib.sha256(body).hexdigest(),
        size=len(FILES[name]),
    )


def lock(index: str, wheels: tuple[LockedWheel, ...]) -> Lock:
    return Lock(
        slug="t", requirements=(), overrides=(), index=index, python="3.11",
        platforms=("any",), wheels=wheels,
    )  # fmt: skip


def test_every_wheel_arrives_hashed_and_counted_once(index: str, tmp_path: Path) -> None:
    cache = WheelCache(tmp_path)
    every = tuple(wheel(n) for n in FILES)
    with Fetcher(cache, jobs=3, env={}) as f:
        f.want(every, index)  # queued for two stacks that share pkg2
        first = f.wait(every[:3], index)
        second = f.wait(every[2:], index)
    assert first == sum(len(FILES[w.filename]) for w in every[:3])
    assert second == sum(len(FILES[w.filename]) for w in every[3:]), "pkg2 counted once"
    for name, data in FILES.items():
        assert (cache.dir / name).read_bytes() == data
        assert cache.sha256(name) == hashlib.sha256(data).hexdigest()
    assert not list(cache.dir.glob(".*part*"))
    assert fetch(lock(index, every), cache) == 0  # all there: nothing fetched


def test_bytes_that_are_not_the_locks_never_enter_the_cache(index: str, tmp_path: Path) -> None:
    cache = WheelCache(tmp_path)
    name = next(iter(FILES))
    bad = wheel(name, b"other bytes")
    with pytest.raises(FetchError, match="has sha256"):
        fetch(lock(index, (bad,)), cache)
    assert not (cache.dir / name).exists()
    assert not list(cache.dir.glob(".*part*"))


def test_a_file_the_index_does_not_serve_is_a_clear_error(index: str, tmp_path: Path) -> None:
    ghost = LockedWheel(
        name="pkg0", version="2.0", filename="pkg0-2.0-py3-none-any.whl", sha256="0" * 64, size=1
    )
    with pytest.raises(FetchError, match="is not on") as err:
        fetch(lock(index, (ghost,)), WheelCache(tmp_path))
    assert err.value.exit_code == 2 and "--relock" in (err.value.help or "")
