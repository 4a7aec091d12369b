"""Classify a log into a failure signature, driven only by scenarios/signatures.yaml.

The scan is built for big logs in bounded memory: the text arrives in blocks; each block is
lower-cased once and searched for the catalog's literal needles (C speed); only the lines
around a needle are normalized and matched against regexes, and each distinct line is matched
once. The root cause is the matching signature with the highest priority (the earliest line of
it); the other signatures seen are secondary. No framework is named here: a new message is a
new pattern in the catalog.
"""

from __future__ import annotations

import hashlib
import re
import signal as signals
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import ConfigError
from harness.loader import Doc, read_yaml
from harness.model import Pattern, Signature, Stage, Verdict
from harness.schema import validate

UNKNOWN = "unknown"
TIMEOUT = "timeout"
BLOCK = 4 << 20  # bytes per scan block
MAX_LINE = 2000  # longer lines are cut before matching (a binary blob, a huge JSON line)

# What a log line carries before its message: ANSI colours; timestamps (ISO, GitHub Actions);
# absl/glog prefixes ("E0000 00:00:1712 12 cuda_dnn.cc:535] ", "W tensorflow/x.cc:12] ");
# pytest's "E   ".
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]")
_PREFIX = re.compile(
    r"^(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?:?\s*)?"
    r"(?:\[\d+\]\s*)?"
    r"(?:[IWEF]\d{4} [\d:.]+\s+\d+\s+\S+:\d+\]\s*"
    r"|[IWEF] (?:\S+\.(?:cc|h|cpp|c|py):\d+\]\s*)"
    r"|E\s{2,})?"
)
_MASK = re.compile(r"0x[0-9a-fA-F]+|(?:/[\w.+-]+)+/?|\d+(?:\.\d+)*")
_ERRORISH = (b"error", b"exception", b"fatal", b"abort", b"failed", b"killed")
_ERRORISH_RE = re.compile(r"(?i)(error|exception|fatal|abort(ed)?|failed|killed)\b")


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    signatures: tuple[Signature, ...]
    noise: tuple[Pattern, ...] = ()

    def get(self, sid: str) -> Signature:
        return next(s for s in self.signatures if s.id == sid)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(s.id for s in self.signatures)


# ---------------------------------------------------------------- the catalog file


def _signal_number(name: str) -> int:
    return int(getattr(signals, name))


def _patterns(
    doc: Doc, items: list[dict[str, str]], path: tuple[str | int, ...]
) -> tuple[Pattern, ...]:
    out = []
    for i, p in enumerate(items):
        try:
            re.compile(p["regex"])
        except re.error as exc:
            raise ConfigError(
                f"pattern is not a valid regular expression: {exc}",
                where=doc.where((*path, i, "regex")),
                help="patterns are Python regexes; escape literal brackets and dots",
            ) from None
        out.append(Pattern(regex=p["regex"], needle=p["needle"]))
    return tuple(out)


def parse_catalog(doc: Doc) -> Catalog:
    validate(doc, "signatures.schema.json")
    seen: set[str] = set()
    sigs = []
    for i, s in enumerate(doc.data["signatures"]):
        if s["id"] in seen:
            raise ConfigError(
                f"signature '{s['id']}' is defined twice",
                where=doc.where(("signatures", i, "id")),
                help="merge the two entries",
            )
        seen.add(s["id"])
        sigs.append(
            Signature(
                id=s["id"],
                title=s["title"],
                stage=Stage(s["stage"]) if s["stage"] else None,
                patterns=_patterns(doc, s["patterns"], ("signatures", i, "patterns")),
                signals=tuple(_signal_number(n) for n in s.get("signals", [])),
                cause=" ".join(s["cause"].split()),
                fix=tuple(s["fix"]),
                frameworks=tuple(s["frameworks"]),
                priority=s["priority"],
                sources=tuple(s["sources"]),
                where=doc.where(("signatures", i)),
            )
        )
    for required in (UNKNOWN, TIMEOUT):
        if required not in seen:
            raise ConfigError(
                f"the catalog has no '{required}' signature",
                where=doc.where(("signatures",)),
                help=f"add an entry with id: {required}",
            )
    noise = _patterns(doc, doc.data.get("noise", []), ("noise",))
    return Catalog(signatures=tuple(sigs), noise=noise)


def read_catalog(path: Path, *, display: str | None = None) -> Catalog:
    return parse_catalog(read_yaml(path, display=display))


# ---------------------------------------------------------------- lines


def normalize(line: str) -> str:
    """A log line without colours, timestamps, C++ log prefixes; whitespace collapsed."""
    text = _ANSI.sub("", line[:MAX_LINE]).strip()
    text = _PREFIX.sub("", text, count=1)
    return " ".join(text.split())


def fingerprint(line: str) -> str:
    """Stable across runs: hex addresses, paths and numbers masked, then hashed."""
    masked = _MASK.sub("#", normalize(line))
    return hashlib.sha256(masked.encode()).hexdigest()[:12]


# ---------------------------------------------------------------- the scan


@dataclass(frozen=True, slots=True)
class _Compiled:
    needles: tuple[tuple[bytes, tuple[tuple[re.Pattern[str], Signature | None], ...]], ...]

    @staticmethod
    def of(catalog: Catalog) -> _Compiled:
        by_needle: dict[bytes, list[tuple[re.Pattern[str], Signature | None]]] = {}
        for p in catalog.noise:
            by_needle.setdefault(p.needle.encode(), []).append((re.compile(p.regex), None))
        for s in catalog.signatures:
            for p in s.patterns:
                by_needle.setdefault(p.needle.encode(), []).append((re.compile(p.regex), s))
        return _Compiled(tuple((k, tuple(v)) for k, v in by_needle.items()))


@dataclass(slots=True)
class _Scan:
    compiled: _Compiled
    first: dict[str, tuple[int, str]] = field(default_factory=dict)  # signature -> (line, text)
    memo: dict[bytes, tuple[str | None, str]] = field(default_factory=dict)
    last_error: tuple[int, str] | None = None
    lines_before: int = 0

    def block(self, data: bytes, nxt: bytes) -> None:
        """One block of whole lines; `nxt` is the line after it (for wrapped messages)."""
        low = data.lower()
        starts: set[int] = set()
        for needle, _ in self.compiled.needles:
            i = low.find(needle)
            while i >= 0:
                start = data.rfind(b"\n", 0, i) + 1
                starts.add(start)
                end = data.find(b"\n", i)
                i = low.find(needle, end if end >= 0 else len(low))
        line_at = _LineCounter(data)
        for start in sorted(starts):
            end = data.find(b"\n", start)
            raw = data[start : end if end >= 0 else len(data)]
            after_end = data.find(b"\n", end + 1) if end >= 0 else -1
            after = data[end + 1 : after_end if after_end >= 0 else len(data)] if end >= 0 else nxt
            sid, text = self._match(raw, after)
            if sid is not None and sid not in self.first:
                self.first[sid] = (self.lines_before + line_at(start), text)
        self._note_error(data, line_at)
        self.lines_before += data.count(b"\n")

    def _match(self, raw: bytes, after: bytes) -> tuple[str | None, str]:
        key = raw + b"\0" + after
        if key not in self.memo:
            self.memo[key] = self._match_uncached(raw, after)
            if len(self.memo) > 100_000:  # bounded memory on logs of endless distinct lines
                self.memo.clear()
        return self.memo[key]

    def _match_uncached(self, raw: bytes, after: bytes) -> tuple[str | None, str]:
        line = normalize(raw.decode("utf-8", "replace"))
        joined = f"{line} {normalize(after.decode('utf-8', 'replace'))}".strip()
        low = joined.lower()
        best: Signature | None = None
        for text in (line, joined):  # a message wrapped onto the next line matches joined
            for needle, pats in self.compiled.needles:
                if needle.decode() not in low:
                    continue
                for rx, sig in pats:
                    if rx.search(text):
                        if sig is None:
                            return None, line  # noise: never decisive
                        if best is None or sig.priority > best.priority:
                            best = sig
            if best is not None:
                return best.id, text
        return None, line

    def _note_error(self, data: bytes, line_at: _LineCounter) -> None:
        low = data.lower()
        at = max(low.rfind(w) for w in _ERRORISH)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            line = normalize(
                data[start : end if end >= 0 else len(data)].decode("utf-8", "replace")
            )
            if _ERRORISH_RE.search(line) and not line.startswith('{"probe"'):
                self.last_error = (self.lines_before + line_at(start), line)
                return
            at = max(low.rfind(w, 0, start) for w in _ERRORISH) if start > 0 else -1


class _LineCounter:
    """Line numbers (1-based) of offsets asked for in increasing order, in one pass."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.line = data, 0, 1

    def __call__(self, offset: int) -> int:
        if offset < self.pos:
            self.pos, self.line = 0, 1
        self.line += self.data.count(b"\n", self.pos, offset)
        self.pos = offset
        return self.line


def _blocks(chunks: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """Whole-line blocks of about BLOCK bytes, each with the first line of the next one."""
    pending = b""
    prev: bytes | None = None
    for chunk in chunks:
        pending += chunk
        if len(pending) < BLOCK:
            continue
        cut = pending.rfind(b"\n") + 1
        if cut == 0:
            cut = len(pending)  # one huge line: split it anyway
        block, pending = pending[:cut], pending[cut:]
        if prev is not None:
            yield prev, block.split(b"\n", 1)[0]
        prev = block
    if pending:
        if prev is not None:
            yield prev, pending.split(b"\n", 1)[0]
        prev = pending
    if prev is not None:
        yield prev, b""


def classify_chunks(
    chunks: Iterable[bytes],
    catalog: Catalog,
    *,
    signal: int | None = None,
    timed_out: bool = False,
) -> Verdict:
    """The verdict on a log given as byte chunks (a file read in pieces)."""
    scan = _Scan(_compiled(catalog))
    for data, nxt in _blocks(chunks):
        scan.block(data, nxt)
    ranked = sorted(scan.first, key=lambda s: (-catalog.get(s).priority, scan.first[s][0]))
    if timed_out:
        ranked.insert(0, TIMEOUT)
    if ranked:
        root = ranked[0]
        line_no, text = scan.first.get(root, (None, None))
        if text is None:
            text = "the run did not finish in time (killed at the wall-clock limit)"
        return Verdict(
            signature=root,
            decisive_line=text,
            line_no=line_no,
            secondary=tuple(s for s in ranked[1:] if s != root),
        )
    by_signal = next((s for s in catalog.signatures if signal in s.signals), None)
    if signal is not None and by_signal is not None:
        name = signals.Signals(signal).name if signal in signals.valid_signals() else str(signal)
        return Verdict(
            signature=by_signal.id,
            decisive_line=f"killed by signal {signal} ({name})",
            line_no=None,
        )
    if scan.last_error is None:
        return Verdict(signature=UNKNOWN, decisive_line=None, line_no=None, fingerprint=None)
    line_no, text = scan.last_error
    return Verdict(
        signature=UNKNOWN, decisive_line=text, line_no=line_no, fingerprint=fingerprint(text)
    )


def classify(
    text: str, catalog: Catalog, *, signal: int | None = None, timed_out: bool = False
) -> Verdict:
    return classify_chunks([text.encode()], catalog, signal=signal, timed_out=timed_out)


_CACHE: dict[int, tuple[Catalog, _Compiled]] = {}


def _compiled(catalog: Catalog) -> _Compiled:
    hit = _CACHE.get(id(catalog))
    if hit is None or hit[0] is not catalog:
        hit = (catalog, _Compiled.of(catalog))
        _CACHE[id(catalog)] = hit
    return hit[1]
