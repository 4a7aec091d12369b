"""Locked wheels into the wheel cache: several at once, hashed as they stream, with progress.

A lock names each wheel's file and sha256; the index's simple API (PEP 691 JSON, else the
PEP 503 HTML page) gives its URL. Each file streams to a private partial name in the cache, its
sha256 computed on the way, and is renamed into place only when the hash is the lock's: the
cache never holds a torn or foreign wheel, and concurrent harness processes may fetch the same
file (the rename is atomic, the bytes identical). `Fetcher.want` queues wheels in the order
given, so the next stack's wheels download while this one builds; `Fetcher.wait` blocks until a
lock's wheels are all in the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import threading
import time
import urllib.error
import urllib.request
import urllib.response
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from packaging.utils import canonicalize_name

from harness.console import Console, human_bytes, human_seconds
from harness.fs import fault_from
from harness.lock import LockError, WheelCache, check_cached
from harness.model import Lock, LockedWheel

JOBS = 4  # parallel downloads: enough to fill a link where one TLS stream does not
CHUNK = 1 << 20
TIMEOUT = 60.0  # seconds without a byte before a download is given up
PAGE_LIMIT = 64 << 20  # an index page larger than this is not one
_JSON = "application/vnd.pypi.simple.v1+json"


class FetchError(LockError):
    """A wheel could not be fetched (the index, the network, or a hash that is not the lock's):
    the stack's failure, as a lock that cannot be resolved is."""


def host_ca(env: Mapping[str, str]) -> Path | None:
    """The CA bundle this host's pip is told to use (PIP_CERT, REQUESTS_CA_BUNDLE,
    SSL_CERT_FILE), if it names a file."""
    for key in ("PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        value = env.get(key)
        if value and Path(value).is_file():
            return Path(value)
    return None


def ssl_context(env: Mapping[str, str]) -> ssl.SSLContext:
    ca = host_ca(env)
    return ssl.create_default_context(cafile=str(ca) if ca else None)


class _Anchors(HTMLParser):
    """PEP 503: every <a href> on a project page, with its text (the file name)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: dict[str, str] = {}
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None and data.strip():
            self.links[data.strip()] = self._href
            self._href = None


def parse_project_page(body: bytes, content_type: str, page_url: str) -> dict[str, str]:
    """file name -> absolute URL (fragment dropped) from a simple-API project page."""
    if content_type.split(";", maxsplit=1)[0].strip() == _JSON:
        doc = json.loads(body)
        raw = {str(f["filename"]): str(f["url"]) for f in doc.get("files", [])}
    else:
        parser = _Anchors()
        parser.feed(body.decode("utf-8", "replace"))
        raw = parser.links
    out = {}
    for name, href in raw.items():
        url = urljoin(page_url, href).split("#", 1)[0]
        if urlsplit(url).scheme in ("https", "http"):
            out[name] = url
    return out


class Fetcher:
    """Downloads locked wheels into a WheelCache, JOBS at a time, with one progress line."""

    def __init__(
        self,
        cache: WheelCache,
        console: Console | None = None,
        *,
        jobs: int = JOBS,
        env: Mapping[str, str] | None = None,
    ):
        self.cache, self.console = cache, console
        self._env = dict(os.environ if env is None else env)
        self._ctx = ssl_context(self._env)
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fetch")
        self._futures: dict[str, Future[int]] = {}
        self._counted: set[str] = set()  # downloads already reported by a `wait`
        self._pages: dict[tuple[str, str], dict[str, str]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.total = 0  # bytes queued
        self.done = 0  # bytes arrived
        self._started = time.monotonic()

    # ------------------------------------------------------------------ queueing and waiting

    def missing(self, wheels: Iterable[LockedWheel]) -> list[LockedWheel]:
        return [w for w in wheels if not (self.cache.dir / w.filename).exists()]

    def want(self, wheels: Sequence[LockedWheel], index: str) -> None:
        """Queue the wheels not yet in the cache nor queued (in this order)."""
        with self._lock:
            for w in self.missing(wheels):
                if w.filename not in self._futures:
                    self.total += w.size
                    self._futures[w.filename] = self._pool.submit(self._one, w, index)

    def wait(self, wheels: Sequence[LockedWheel], index: str, what: str = "wheels") -> int:
        """Every wheel in the cache (queued first if it is not): bytes fetched for them now."""
        self.want(wheels, index)
        with self._lock:
            # each download is counted once, for the first stack that waits on it
            mine = [w.filename for w in wheels if w.filename in self._futures]
            fresh = {name for name in mine if name not in self._counted}
            self._counted |= fresh
            futures = {name: self._futures[name] for name in mine}
        if self.console is not None and not all(f.done() for f in futures.values()):
            with self.console.activity("download", what, self.progress):
                got = {name: f.result() for name, f in futures.items()}
        else:
            got = {name: f.result() for name, f in futures.items()}
        return sum(n for name, n in got.items() if name in fresh)

    def progress(self) -> str:
        with self._lock:
            done, total = self.done, self.total
        seconds = max(time.monotonic() - self._started, 1e-3)
        rate = done / seconds
        eta = f", ETA {human_seconds((total - done) / rate)}" if rate > 0 and total > done else ""
        return f"{human_bytes(done)} of {human_bytes(total)}, {human_bytes(int(rate))}/s{eta}"

    def close(self) -> None:
        """Stop: queued downloads are cancelled and running ones end at their next chunk (their
        partial files removed)."""
        self._stop.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Fetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ one wheel

    def _open(self, url: str, accept: str | None = None) -> urllib.response.addinfourl:
        headers = {"User-Agent": "stackmatrix (wheel fetch)"}
        if accept:
            headers["Accept"] = accept
        req = urllib.request.Request(url, headers=headers)
        resp: urllib.response.addinfourl = urllib.request.urlopen(
            req, timeout=TIMEOUT, context=self._ctx
        )
        return resp

    def url_of(self, wheel: LockedWheel, index: str) -> str:
        key = (index, str(canonicalize_name(wheel.name)))
        with self._lock:
            page = self._pages.get(key)
        if page is None:
            page_url = f"{index.rstrip('/')}/{key[1]}/"
            try:
                with self._open(page_url, f"{_JSON}, text/html;q=0.1") as resp:
                    body = resp.read(PAGE_LIMIT + 1)
                    ctype = resp.headers.get("Content-Type", "")
            except (urllib.error.URLError, OSError) as exc:
                raise FetchError(
                    f"cannot read {page_url}: {exc}",
                    help="is the package index reachable from this machine?",
                ) from None
            if len(body) > PAGE_LIMIT:
                raise FetchError(f"{page_url} is larger than {human_bytes(PAGE_LIMIT)}")
            try:
                page = parse_project_page(body, ctype, page_url)
            except (ValueError, KeyError, TypeError) as exc:
                raise FetchError(f"{page_url} is not a simple-API page: {exc}") from None
            with self._lock:
                self._pages[key] = page
        url = page.get(wheel.filename)
        if url is None:
            raise FetchError(
                f"{wheel.filename} is not on {index}",
                help="the lock names a file its index no longer serves: run `stackmatrix build "
                "--relock` for this stack",
            )
        return url

    def _one(self, wheel: LockedWheel, index: str) -> int:
        dest = self.cache.dir / wheel.filename
        if dest.exists():
            return 0
        url = self.url_of(wheel, index)
        part = dest.with_name(f".{wheel.filename}.part-{os.getpid()}-{threading.get_ident()}")
        h, got = hashlib.sha256(), 0
        try:
            with self._open(url) as resp, part.open("wb") as out:
                while block := resp.read(CHUNK):
                    if self._stop.is_set():
                        raise FetchError(f"{wheel.filename}: download stopped")
                    out.write(block)
                    h.update(block)
                    got += len(block)
                    with self._lock:
                        self.done += len(block)
            if h.hexdigest() != wheel.sha256:
                raise FetchError(
                    f"{wheel.filename} from {url} has sha256 {h.hexdigest()[:16]}…, the lock "
                    f"says {wheel.sha256[:16]}…",
                    help="the index serves other bytes under this name: check the index, or "
                    "run `stackmatrix build --relock` for this stack",
                )
            os.replace(part, dest)
            st = dest.stat()
            self.cache.remember(wheel.filename, [st.st_size, st.st_mtime_ns, wheel.sha256])
            return got
        except OSError as exc:
            fault = fault_from(exc, self.cache.dir)
            if fault is not None:
                raise fault from None
            raise FetchError(
                f"downloading {wheel.filename}: {exc}",
                help="is the package index reachable from this machine? run the same command "
                "again: what arrived is kept",
            ) from None
        finally:
            part.unlink(missing_ok=True)


def fetch(lock: Lock, cache: WheelCache, console: Console | None = None) -> int:
    """Make sure every locked wheel is in the cache with its hash; the bytes downloaded."""
    new_bytes = 0
    if any(not (cache.dir / w.filename).exists() for w in lock.wheels):
        with Fetcher(cache, console) as fetcher:
            new_bytes = fetcher.wait(lock.wheels, lock.index, f"{len(lock.wheels)} wheels")
    check_cached(lock, cache)
    return new_bytes
