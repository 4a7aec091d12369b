"""Classify a log into a failure signature, driven only by scenarios/signatures.yaml.

The scan is built for big logs in bounded memory: the text arrives in blocks; each block is
lower-cased once and searched for all the catalog's literal needles at once (an Aho-Corasick
automaton); only lines holding a needle are normalized and matched against regexes, and each
distinct message is matched once. The root cause is the matching signature with the highest
priority (the earliest line of it); the other signatures seen are secondary. No framework is
named here: a new message is a new pattern in the catalog.
"""

from __future__ import annotations

import hashlib
import re
import signal as signals
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick, Implementation

from harness import inputs, regexcheck
from harness.codes import ErrorRow, name_patterns, read_table, table_bytes, wrapper_patterns
from harness.errors import ConfigError
from harness.loader import Doc, parse_yaml
from harness.model import Pattern, Signature, Stage, Verdict
from harness.schema import validate

UNKNOWN = "unknown"
TIMEOUT = "timeout"
HOST_OOM = "host_oom"  # what an engine's OOM kill is, where the catalog has it
BLOCK = 4 << 20  # bytes per scan block
MAX_LINE = 2000  # longer lines are cut before matching (a binary blob, a huge JSON line)
WINDOW = MAX_LINE // 2  # a longer line is matched in a window around each needle found in it
SLICE = 1 << 20  # bytes of a block searched at once: the hit lists stay small on any block
MEMO = 100_000  # distinct lines remembered; past it the memos start again (bounded memory)

# What a log line carries before its message: ANSI colours; timestamps (ISO, GitHub Actions);
# absl/glog prefixes ("E0000 00:00:1712 12 cuda_dnn.cc:535] ", "W tensorflow/x.cc:12] ");
# pytest's "E   ".
# Every escape sequence (CSI, OSC, DCS/SOS/PM/APC strings, two-byte ESC) and the other control
# characters: none may reach a terminal, and none is part of a message.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[()][A-Z0-9]|\x1b[@-_]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
# absl/glog's line prefix: level, date, time, thread, file:line ("E0000 00:00:1712 12 x.cc:535]")
_ABSL = r"[IWEF]\d{4} [\d:.]+\s+\d+\s+\S+:\d+\]"
_PREFIX = re.compile(
    r"^(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?:?\s*)?"
    r"(?:\[\d+\]\s*)?"
    r"(?:" + _ABSL + r"\s*"
    r"|[IWEF] (?:\S+\.(?:cc|h|cpp|c|py):\d+\]\s*)"
    r"|E\s{2,})?"
)
# Docker Compose's prefix on each line of a service's output ("ollama  | ", "api-1  | "; v1
# wrote "api_1  | "): the line after it is the program's own, with its own log prefix.
_COMPOSE = re.compile(r"[A-Za-z0-9][\w.-]*\s+\| ")
# A program that relays another's output through absl/glog logging writes its own prefix, at
# its own level, before each relayed line with that line's prefix (AlphaFold's run_docker.py:
# logging.info of each container line, "I0725 13:13:22.066839 1397 run_docker.py:200]
# 2021-07-25 03:13:22.065889: E external/.../cuda_driver.cc:625] failed to ..."): the relayed
# line is the message, at its own level.
_RELAY = re.compile(
    r"\s*" + _ABSL + r"\s*(?=\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d\S*:? [IWEF] |" + _ABSL + ")"
)
_RELAY_START = frozenset("IWEF \t")  # what a line _RELAY matches can start with
# BuildKit's plain progress output: each line a RUN step prints after the step's number and the
# seconds since it started ("#12 3.456 ImportError: ..."), as `docker build` writes it to a log
_BUILDKIT = re.compile(r"#\d+ \d+\.\d+ ")
# Typographic quotes, as a forum or a word processor turns a log's ' and " into them
# ("couldn\u2018t communicate"): read as the plain ones the messages have.
_QUOTES: tuple[tuple[bytes, bytes], ...] = (
    ("\u2018".encode(), b"'"), ("\u2019".encode(), b"'"),
    ("\u201c".encode(), b'"'), ("\u201d".encode(), b'"'),
)  # fmt: skip
# An info or warning line of absl/glog/TF ("W0000 00:00:...", "2024-.. W tensorflow/..."), or
# ONNX Runtime's ("2023-05-25 13:45:37.14 [W:onnxruntime:Default, file.cc:1671 Fn] ...": its
# severities V, I, W, E, F; onnxruntime/core/common/logging/sinks/ostream_sink.cc), or NeMo's
# ("[NeMo W 2024-09-10 03:10:16 der:185] ...": its level's initial, then the time).
_SOFT = re.compile(
    r"^\s*(?:\d{4}-\d\d-\d\d[ T][\d:.,]+Z?:?\s*)?(?:\[\d+\]\s*)?"
    r"(?:[IW](?:\d{4} [\d:.]+\s+\d+\s+\S+:\d+\]| \S+:\d+\])"
    r"(?!\s*OP_REQUIRES failed at |\s*[A-Za-z_][\w.]*(?:Error|Exception): )"
    r"|\[[VIW]:onnxruntime:|\[NeMo [DIW] \d{4}-\d\d-\d\d )"
)
# (but not TensorFlow's W line for an op that failed: tensorflow/core/framework/op_kernel.cc
# CtxFailureWithWarning logs LOG(WARNING) << "OP_REQUIRES failed at " ... and sets the kernel's
# status, which the step then raises: "W .../op_kernel.cc:1763] OP_REQUIRES failed at
# concat_op.cc:158 : Resource exhausted: OOM when allocating tensor ..." is the op's failure,
# nor an exception line a program relays at its own info level: AlphaFold's run_docker.py logs
# each line of the container's traceback with logging.info, "I0716 21:59:58.942886 1396
# run_docker.py:180] RuntimeError: cuSolver internal error", google-deepmind/alphafold#11)
# ... or a line whose log level, written before any error word of it, is info or debug, and
# whose message does not start with one: Python's logging ("INFO:root:", "2024-01-04
# 21:51:17,793 - INFO - "), vLLM's ("INFO 12-19 22:58:27 model_runner.py:1415] "), loguru's
# ("| INFO     |"), bracketed ones ("[INFO]", "::INFO -->"), logfmt's ("level=info": Go's slog
# and logrus, as ollama and the container toolkit write). Not WARN: NCCL, log4j and others
# report failures at that level ("include/socket.h:344 WARN Socket creation failed"); and not
# "INFO:tensorflow:Error reported to Coordinator", TF 1.x's error at the info level.
_LEVEL = re.compile(
    r"(?:^|(?<=[\s\[(|:]))(?:INFO|DEBUG|TRACE|NOTICE)(?=[\s\])|:-]|$)"
    r"|(?i:\blevel=\"?(?:info|debug|trace)\b)"
)
_LEVEL_HEAD = 40  # characters after the level that are the message's start
_LEVEL_SPAN = 120  # characters of a line its level is looked for in
# torch's warnings (TORCH_WARN) end "(Triggered internally at ...)"; its errors do not
_TORCH_WARN = "(triggered internally at "
_MASK = re.compile(r"0x[0-9a-fA-F]+|(?:/[\w.+-]+)+/?|\d+(?:\.\d+)*")
_TRACEBACK = b"Traceback (most recent call last):"
_TRACEBACK_BYTES = 1 << 16  # of a traceback, looked through for its last frame
_TRACEBACK_LINES = 64  # lines after the last frame looked through for the exception line
# An exception line by its shape: the exception's (dotted) name, a colon, its message. It ends
# the traceback even where indented lines follow it: TensorFlow's "...errors_impl.UnknownError:
# 2 root error(s) found." lists each root error indented under it ("  (0) Unknown: Failed to get
# convolution algorithm..."), then "0 successful operations." (tensorflow/python/client/session.py)
_EXCEPTION_LINE = re.compile(rb"[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt): ")
# The header Python's warnings module writes for a warning ("x.py:1070: UserWarning: msg",
# warnings.formatwarning), which it follows with the warning's source line, indented: that line
# is code ('  "The following exception is not an EOF exception.")'), not an error of its own
_WARNING_HEAD = re.compile(rb"\.py:\d+: (?:[A-Z]\w*)?Warning: ")
# "panic": Go's runtime (the device plugin, the container toolkit) and Rust's ("panicked at")
_ERRORISH = (b"error", b"exception", b"fatal", b"abort", b"failed", b"killed", b"panic")
_ERRORISH_LONGEST = max(map(len, _ERRORISH))
_ERRORISH_REV = re.compile(b"|".join(re.escape(w[::-1]) for w in _ERRORISH))  # the words reversed
# ... but not a count of none: "Tests failed: 0", "0 failed", "errors=0", a JSON or YAML key's
# '"failed": 0', nor "(nonfatal)"
_ERRORISH_RE = re.compile(
    r"(?i)(?<!\b0 )(error|exception|(?<!non)(?<!non-)fatal|abort(ed)?|failed|killed|panic(ked)?)\b"
    # ... nor a file's name (error.json, fatal.log), nor a rate ("Validation error: 84.6%")
    r"(?![\"']?\s*[:=]?\s*(0(?![\w.])|\d+(\.\d+)? ?%)|\.[a-z]{2,4}\b)"
    # an error enum's name, as CUDA's and others' are printed bare: CUDA_ERROR_INVALID_HANDLE
    r"|(?-i:\b[A-Z][A-Z0-9]*_ERROR_[A-Z0-9_]+\b)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    signatures: tuple[Signature, ...]
    noise: tuple[Pattern, ...] = ()
    # of the catalog file and NVIDIA's error table (both decide verdicts): a change to either
    # re-judges cached runs
    digest: str = ""
    # NVIDIA's error names and numbers (harness.codes): (pattern, signature id)
    coded: tuple[tuple[Pattern, str], ...] = ()

    def get(self, sid: str) -> Signature:
        return next(s for s in self.signatures if s.id == sid)

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(s.id for s in self.signatures)


# ---------------------------------------------------------------- the catalog file


def _signal_number(name: str) -> int:
    return int(getattr(signals, name))


_KINDS = ("alone", "cue", "arms", "armed")  # what a signature's pattern may be besides a cause


def _patterns(
    doc: Doc,
    items: list[dict[str, Any]],
    path: tuple[str | int, ...],
    *,
    of_signature: bool = False,
) -> tuple[Pattern, ...]:
    """The patterns at `path`; `of_signature`: a signature's, which alone may mark `alone:
    false`, a `cue` or what it `arms` (a noise pattern is never a cause, and a code is always
    one)."""
    out = []
    for i, p in enumerate(items):
        # `alone: true` is every pattern's default; any other `alone`, a cue, a sign that arms
        # and an armed warning are a signature's own, and a pattern is at most one of them
        kinds = [k for k in _KINDS if k in p and (k != "alone" or p[k] is not True)]
        if kinds and not of_signature:
            raise ConfigError(
                f"`{kinds[0]}` is for a signature's patterns only",
                where=doc.where((*path, i, kinds[0])),
                help="remove it here; a noise pattern is never a cause, and a code is always one",
            )
        if len(kinds) > 1:
            raise ConfigError(
                f"a pattern is at most one of a warning no failure alone, a cue, a sign that "
                f"arms warnings and an armed warning; this one has {' and '.join(kinds)}",
                where=doc.where((*path, i, kinds[-1])),
                help="give each its own pattern",
            )
        why = regexcheck.problem(p["regex"], p["needle"])
        if why is not None:
            raise ConfigError(
                f"pattern {why}",
                where=doc.where((*path, i, "regex")),
                help="patterns run on RE2 and are written in the syntax RE2 and Python's re "
                "share: no look-around, backreferences or nested quantifiers; escape literal "
                "brackets and dots; the needle is a lower-case piece of the regex's own text that "
                "every match holds",
            )
        out.append(
            Pattern(
                regex=p["regex"],
                needle=p["needle"],
                alone=p.get("alone", True),
                cue=tuple(p.get("cue", ())),
                arms=tuple(p.get("arms", ())),
                armed=p.get("armed", False),
            )
        )
    return tuple(out)


def parse_catalog(doc: Doc, table: tuple[ErrorRow, ...] | None = None) -> Catalog:
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
                patterns=_patterns(
                    doc, s["patterns"], ("signatures", i, "patterns"), of_signature=True
                ),
                signals=tuple(_signal_number(n) for n in s.get("signals", [])),
                cause=" ".join(s["cause"].split()),
                fix=tuple(s["fix"]),
                frameworks=tuple(s["frameworks"]),
                priority=s["priority"],
                sources=tuple(s["sources"]),
                where=doc.where(("signatures", i)),
                consequence_of=tuple(s.get("consequence_of", [])),
                advice=tuple((k, tuple(v)) for k, v in s.get("advice", {}).items()),
            )
        )
    for required in (UNKNOWN, TIMEOUT):
        if required not in seen:
            raise ConfigError(
                f"the catalog has no '{required}' signature",
                where=doc.where(("signatures",)),
                help=f"add an entry with id: {required}",
            )
    for i, s in enumerate(doc.data["signatures"]):
        for other in s.get("consequence_of", []):
            if other not in seen:
                raise ConfigError(
                    f"signature '{s['id']}' is a consequence of '{other}', which is not defined",
                    where=doc.where(("signatures", i, "consequence_of")),
                    help="name signatures of this catalog",
                )
        for j, pat in enumerate(s["patterns"]):
            for key, what in (("cue", "a cue of '{}' explains"), ("arms", "a sign of '{}' arms")):
                for other in pat.get(key, []):
                    if other not in seen:
                        raise ConfigError(
                            f"{what.format(s['id'])} '{other}', which is not defined",
                            where=doc.where(("signatures", i, "patterns", j, key)),
                            help="name signatures of this catalog",
                        )
    armed = {other for s in sigs for p in s.patterns for other in p.arms}
    for i, s in enumerate(sigs):
        for j, pat in enumerate(s.patterns):
            if pat.armed and s.id not in armed:
                raise ConfigError(
                    f"an `armed` warning of '{s.id}' is armed by no pattern, so it never counts",
                    where=doc.where(("signatures", i, "patterns", j, "armed")),
                    help=f"add the sign that arms it (`arms: [{s.id}]`), or remove the pattern",
                )
    noise = _patterns(doc, doc.data.get("noise", []), ("noise",))
    codes = doc.data.get("codes", [])
    wrappers = zip([c["api"] for c in codes], _patterns(doc, codes, ("codes",)), strict=True)
    rows = read_table() if table is None else table
    coded = [(p, sid) for p, sid in (*name_patterns(rows), *wrapper_patterns(wrappers, rows))]
    return Catalog(
        signatures=tuple(sigs), noise=noise, coded=tuple(c for c in coded if c[1] in seen)
    )


def read_catalog(path: Path, *, display: str | None = None) -> Catalog:
    name = display or str(path)
    raw = inputs.read_regular(
        path, limit=inputs.YAML_LIMIT, display=name, help="the catalog is scenarios/signatures.yaml"
    )
    catalog = parse_catalog(parse_yaml(inputs.decode(raw, name), name))
    digest = catalog_digest(raw, table_bytes())
    return Catalog(
        signatures=catalog.signatures, noise=catalog.noise, digest=digest, coded=catalog.coded
    )


def catalog_digest(catalog: bytes, table: bytes) -> str:
    """sha256 over the catalog file's and the error table's own sha256s (so no two pairs of
    files share one byte string)."""
    h = hashlib.sha256()
    for part in (catalog, table):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()


# ---------------------------------------------------------------- lines


def printable(text: str) -> str:
    """Text with every escape sequence and control character removed (for a terminal)."""
    return _ANSI.sub("", text)


def normalize(line: str) -> str:
    """A log line without colours, timestamps, C++ log prefixes; whitespace collapsed."""
    text = _uncomposed(_ANSI.sub("", line[:MAX_LINE]).strip())
    text = _PREFIX.sub("", text, count=1)
    return " ".join(text.split())


def _uncomposed(text: str) -> str:
    """`text` without the prefix a tool that passed the line on wrote before it: BuildKit's step
    and time, Docker Compose's service, a relaying logger's own (_RELAY)."""
    if text[:1] == "#":
        m = _BUILDKIT.match(text)
        if m is not None:
            text = text[m.end() :]
    if "| " in text[:80]:
        m = _COMPOSE.match(text)
        if m is not None:
            text = text[m.end() :]
    if text[:1] in _RELAY_START:
        m = _RELAY.match(text)
        if m is not None:
            return text[m.end() :]
    return text


def fingerprint(line: str) -> str:
    """Stable across runs: hex addresses, paths and numbers masked, then hashed."""
    masked = _MASK.sub("#", normalize(line))
    return hashlib.sha256(masked.encode()).hexdigest()[:12]


def _cleaned(head: bytes, whole: bytes) -> tuple[str, str]:
    """`head` (a line's first MAX_LINE bytes) decoded without escape sequences, and normalized
    `whole`; a line of printable ASCII (most are) needs no escape-sequence pass."""
    if not head.translate(None, _PRINTABLE):  # no escape sequence, no control character
        text = _uncomposed(head.decode("ascii"))
        line = text.strip()
        m = _PREFIX.match(line)
        if m is not None and m.end():
            line = line[m.end() :]
        if "  " in line or line[:1] == " ":
            line = " ".join(line.split())
        return text, line
    decoded = _uncomposed(_ANSI.sub("", head.decode("utf-8", "replace")))
    return decoded, normalize(decoded if whole is head else whole.decode("utf-8", "replace"))


_PRINTABLE = bytes(range(0x20, 0x7F))
_ZEROS = bytes.maketrans(b"0123456789", b"0" * 10)
_NO_DIGITS = str.maketrans("", "", "0123456789")
# What a line is (_Scan._match): an error, an info or warning line, a match by a pattern that
# is no failure alone, by a cue (Pattern.cue: a sign of the setting, never a failure), or by a
# sign that arms later warnings (Pattern.arms), or by a warning only such a sign makes one
# (Pattern.armed)
ERROR, SOFT, CONTEXT, CUE, ARM, ARMED = 0, 1, 2, 3, 4, 5
_NOISE: tuple[str | None, str, int] = (None, "", SOFT)


# ---------------------------------------------------------------- the scan


_AUTOMATON = Implementation.ContiguousNFA  # see _Compiled


@dataclass(frozen=True, slots=True)
class _Compiled:
    """The catalog ready to scan: one automaton over every needle (hundreds of MB/s whatever
    the number of needles), each needle's regexes, and which needles can still change the
    verdict once a signature has been seen (`needles_of`). `within` finds the needles of one
    normalized line in one call; `noise` pairs each noise regex with the needle every match
    of it holds (None where that is not certain: the regex is always run). A needle's regexes
    are compiled when a line first holds it (`rules`): most needles of a log never appear.

    The automata are contiguous NFAs, not DFAs: on 787 needles one builds in 3 ms where a DFA
    took 20 ms (and one is built each time the needles still open change), and it scanned the
    stress inputs as fast or faster (a dense log 171-195 MB/s against 122-154, a log without a
    needle 214-272 against 224-261; bench/classify_bench.py's inputs, this VM, 2026-11-28)."""

    automaton: BytesAhoCorasick
    # needle -> (regex, its signature, what a match is: ERROR for a cause alone, else CONTEXT
    # (Pattern.alone false), CUE (Pattern.cue), ARM (Pattern.arms) or ARMED (Pattern.armed))
    needles: tuple[tuple[str, tuple[tuple[str, Signature, int], ...]], ...]
    noise: tuple[tuple[str | None, regexcheck.Compiled], ...]
    needles_of: dict[str, tuple[int, ...]]  # signature id -> indexes of the needles that name it
    within: AhoCorasick
    # automata over the needles that can still change the verdict: (automaton or None when
    # none can, index in it -> index in `needles`), by the tuple of those needles' indexes
    active: dict[tuple[int, ...], tuple[BytesAhoCorasick | None, tuple[int, ...]]]
    reach: int  # the longest needle's length: a slice is searched this far past its end
    # Whether the noise check treats every digit alike (no digit in a noise regex or needle):
    # then lines alike but for their digits (timestamps, counters) are noise or not together.
    noise_blind: bool
    # signature -> the signatures whose later failure a cue of it explains (Pattern.cue)
    cues: dict[str, frozenset[str]]
    # signature -> the signatures whose later warnings a sign of it arms (Pattern.arms)
    arms: dict[str, frozenset[str]]
    # needle index -> its regexes compiled (None until a line holds the needle)
    ready: list[tuple[tuple[regexcheck.Compiled, Signature, int], ...] | None]

    @staticmethod
    def of(catalog: Catalog) -> _Compiled:
        by_needle: dict[str, list[tuple[str, Signature, int]]] = {}
        cues: dict[str, set[str]] = {}
        arms: dict[str, set[str]] = {}
        pairs = [(p, s) for s in catalog.signatures for p in s.patterns]
        pairs += [(p, catalog.get(sid)) for p, sid in catalog.coded]
        for p, s in pairs:
            how = (
                CUE if p.cue else ARM if p.arms else ARMED if p.armed
                else ERROR if p.alone else CONTEXT
            )  # fmt: skip
            if p.cue:
                cues.setdefault(s.id, set()).update(p.cue)
            if p.arms:
                arms.setdefault(s.id, set()).update(p.arms)
            by_needle.setdefault(p.needle, []).append((p.regex, s, how))
        needles = tuple((k, tuple(v)) for k, v in by_needle.items())
        words = [k for k, _ in needles] or ["\0"]
        automaton = BytesAhoCorasick([w.encode() for w in words], implementation=_AUTOMATON)
        within = AhoCorasick(words, implementation=_AUTOMATON)
        noise = tuple(
            (
                p.needle if regexcheck.always_holds(p.regex, p.needle) else None,
                regexcheck.compile_rx(p.regex),
            )
            for p in catalog.noise
        )
        needles_of: dict[str, list[int]] = {}
        for i, (_, pats) in enumerate(needles):
            for _, s, _ in pats:
                needles_of.setdefault(s.id, []).append(i)
        every = tuple(range(len(needles)))
        return _Compiled(
            automaton,
            needles,
            noise,
            {k: tuple(v) for k, v in needles_of.items()},
            within,
            {every: (automaton, every)},
            max(len(w.encode()) for w in words),  # in bytes: the slices are bytes
            all(
                regexcheck.digit_blind(p.regex) and p.needle == p.needle.translate(_NO_DIGITS)
                for p in catalog.noise
            ),
            {k: frozenset(v) for k, v in cues.items()},
            {k: frozenset(v) for k, v in arms.items()},
            [None] * len(needles),
        )

    def rules(self, idx: int) -> tuple[tuple[regexcheck.Compiled, Signature, int], ...]:
        """Needle `idx`'s (regex, signature, kind) rules, compiled the first time they are
        asked for."""
        got = self.ready[idx]
        if got is None:
            pats = self.needles[idx][1]
            got = tuple((regexcheck.compile_rx(rx), s, how) for rx, s, how in pats)
            self.ready[idx] = got
        return got

    def automaton_of(
        self, done: list[bool], ascii_only: bool = False
    ) -> tuple[BytesAhoCorasick | None, tuple[int, ...]]:
        """The automaton over the needles not done (built once per set, in milliseconds);
        `ascii_only`: for text of ASCII bytes alone, where a needle with any other byte cannot
        be (glibc's translated signal names): without them the automaton is smaller (when it
        was a DFA they had made it scan ASCII logs 8-13 % slower)."""
        todo = tuple(
            i
            for i, d in enumerate(done)
            if not d and (not ascii_only or self.needles[i][0].isascii())
        )
        hit = self.active.get(todo)
        if hit is None:
            words = [self.needles[i][0].encode() for i in todo]
            built = BytesAhoCorasick(words, implementation=_AUTOMATON) if words else None
            hit = self.active[todo] = (built, todo)
        return hit

    def is_noise(self, line: str, low: str) -> bool:
        """Whether a noise regex matches `line` (one whose needle is not in it cannot)."""
        return any((n is None or n in low) and rx.search(line) for n, rx in self.noise)

    def present(self, low: str) -> list[int]:
        """Indexes (in catalog order) of the needles in `low`."""
        return sorted({i for i, _, _ in self.within.find_matches_as_indexes(low, overlapping=True)})


def _span(data: bytes, pos: int) -> tuple[int, int]:
    """The line around `pos`, or a window of it: a line longer than 2 * WINDOW is matched in
    pieces, so an error at the end of a huge line is found and the work per hit is bounded."""
    lo = max(0, pos - WINDOW)
    start = data.rfind(b"\n", lo, pos) + 1 or lo
    hi = min(len(data), pos + WINDOW)
    end = data.find(b"\n", pos, hi)
    return start, hi if end < 0 else end


@dataclass(slots=True)
class _Scan:
    compiled: _Compiled
    # signature -> (line, text) of its first line: in an error line, or only in warning lines
    strong: dict[str, tuple[int, str]] = field(default_factory=dict)
    soft: dict[str, tuple[int, str]] = field(default_factory=dict)
    # ... or only by a pattern that is no failure alone (Pattern.alone False: CONTEXT)
    context: dict[str, tuple[int, str]] = field(default_factory=dict)
    # ... or only by a cue (Pattern.cue: CUE)
    cue: dict[str, tuple[int, str]] = field(default_factory=dict)
    # signature -> the first sign that armed its warnings (Pattern.arms: ARM), and the first of
    # its `armed` warnings after that sign (Pattern.armed: ARMED)
    armed: dict[str, tuple[int, str]] = field(default_factory=dict)
    after_arm: dict[str, tuple[int, str]] = field(default_factory=dict)
    memo: dict[bytes, tuple[str | None, str, int]] = field(default_factory=dict)
    # a line's first MAX_LINE bytes with every digit 0 -> whether it is noise (`noise_blind`)
    noise: dict[bytes, bool] = field(default_factory=dict)
    # (line, line after, line before or None) already recorded: the same again changes nothing
    seen: set[tuple[bytes, bytes, bytes | None]] = field(default_factory=set)
    last_error: tuple[int, str] | None = None
    # the previous block ended inside a traceback, before its exception line
    in_traceback: bool = False
    lines_before: int = 0
    tail: bytes = b""  # the last line of the previous block
    # needles every signature of which has been seen in an error line: more hits change nothing
    done: list[bool] = field(default_factory=list)

    def block(self, data: bytes, nxt: bytes) -> None:
        """One block of whole lines; `nxt` is the line after it (for wrapped messages). Linear:
        the block is searched a slice at a time, only for the needles that can still change the
        verdict; each hit costs a bounded window, and a line (with the lines around it) seen
        before is not looked at again, so a dense log costs its distinct lines."""
        if not self.done:
            self.done = [False] * len(self.compiled.needles)
        low = data.lower()
        line_at = _LineCounter(data)
        done, last, cur_end, size = self.done, -1, -1, len(data)
        plain = data.isascii()
        pos = 0
        while pos < size:
            automaton, index = self.compiled.automaton_of(done, plain)
            if automaton is None:  # every needle is done: nothing in the block can matter
                break
            stop = min(size, pos + SLICE)
            hits = automaton.find_matches_as_indexes(low[pos : stop + self.compiled.reach])
            far = -1  # the last hit's end: the hits come in order, none overlapping another
            for local, first, e in hits:
                s = first + pos
                if s >= stop:  # the next slice's: searched again from where this one ended
                    break
                far = e
                if s < cur_end or done[index[local]]:
                    continue
                lo = s - WINDOW if s > WINDOW else 0
                start = data.rfind(b"\n", lo, s) + 1 or lo
                hi = s + WINDOW if s + WINDOW < size else size
                end = data.find(b"\n", s, hi)
                if end < 0:
                    end = hi
                cur_end = end + 1
                if start <= last:
                    continue
                self._line(data, nxt, (start, end), last, line_at)
                last = start
            pos = max(stop, far + pos)
        self._note_error(data, low, line_at)
        self._note_raised(data, line_at)
        self.lines_before += data.count(b"\n")
        self.tail = data[_span(data, len(data.rstrip(b"\n")))[0] :].rstrip(b"\n")

    def _line(
        self,
        data: bytes,
        nxt: bytes,
        span: tuple[int, int],
        last: int,
        line_at: _LineCounter,
    ) -> None:
        """Record the hit line data[start:end] (`span`), and the line before it where it may be the
        start of a message wrapped before its needle; `last` is the previous hit line's start."""
        start, end = span
        # A line alike but for its digits was noise (_match's memo): so is this one, and it is
        # not looked at again, nor joined to the line before it (a message wrapped onto a noise
        # line is one no catalog message is). Logs of NCCL or TF set-up lines are mostly these.
        shape = None
        if self.compiled.noise_blind:
            shape = data[start : min(end, start + MAX_LINE)].translate(_ZEROS)
            if self.noise.get(shape):
                return
        before: int | None = None
        if start == 0 and self.tail:  # the line before is the previous block's last
            prev = self.tail
        elif start > 0 and data[start - 1] == 10:
            # The line before too: a message wrapped before its needle ("...`GLIBCXX_3.4.3"
            # / "0' not found") matches only as the two lines joined.
            before = 0
            if start > 1:
                lo = start - 1 - WINDOW if start - 1 > WINDOW else 0
                before = data.rfind(b"\n", lo, start - 1) + 1 or lo
            prev = data[before : start - 1] if last < before < start - 1 else b""
        else:
            prev = b""
        raw = data[start:end]
        if end >= len(data) - 1:  # the block's last line is followed by the next block's first
            after = nxt
        elif data[end] != 10:  # a window inside a long line
            after = b""
        else:
            hi = end + 1 + WINDOW
            stop = data.find(b"\n", end + 1, hi)
            after = data[end + 1 : stop if stop >= 0 else hi]
        key = (raw, after, prev or None)
        if key in self.seen:  # the same lines again: the same verdicts, recorded already
            return
        if len(self.seen) >= MEMO:
            self.seen.clear()
        self.seen.add(key)
        if prev:
            if before is None:
                self._record(prev, raw, self.lines_before)
            else:
                self._record(prev, raw, before, line_at)
        self._record(raw, after, start, line_at, shape)

    def _record(
        self,
        raw: bytes,
        after: bytes,
        at: int,
        line_at: _LineCounter | None = None,
        shape: bytes | None = None,
    ) -> None:
        sid, text, kind = self._match(raw, after, shape)
        if sid is None:
            return
        if kind >= ARM:  # rare: the line's number is counted only where it is needed
            line = at if line_at is None else self.lines_before + line_at(at)
            self._arming(sid, text, kind, line)
            return
        hits = (self.strong, self.soft, self.context, self.cue)[kind]
        if sid not in hits:
            hits[sid] = (at if line_at is None else self.lines_before + line_at(at), text)
            if not kind:
                self._mark_done(sid)

    def _arming(self, sid: str, text: str, kind: int, line: int) -> None:
        """A sign that arms signatures' warnings (ARM), or an armed warning (ARMED): a failure
        only after a sign that armed its signature."""
        if kind == ARM:
            for other in self.compiled.arms[sid]:
                if other not in self.armed:
                    self.armed[other] = (line, text)
                    self.seen.clear()  # a warning seen before the sign counts again after it
        elif sid in self.armed and sid not in self.after_arm and self.armed[sid][0] < line:
            self.after_arm[sid] = (line, text)

    def _mark_done(self, sid: str) -> None:
        for idx in self.compiled.needles_of.get(sid, ()):
            pats = self.compiled.needles[idx][1]
            self.done[idx] = all(s.id in self.strong for _, s, _ in pats)

    def _match(
        self, raw: bytes, after: bytes, shape: bytes | None = None
    ) -> tuple[str | None, str, int]:
        """(signature or None, the text it matched, ERROR, SOFT (an info/warning line) or CONTEXT
        (a match by a pattern that is no failure alone));
        the text is the normalized line where no signature matches (empty for a noise line
        known by its shape: a line alike but for its digits was noise). `shape`: raw's, where
        the caller made it already."""
        if self.compiled.noise_blind:
            if shape is None:
                shape = raw[:MAX_LINE].translate(_ZEROS)
            if self.noise.get(shape):
                return _NOISE
        # Key without a leading timestamp/log prefix: repeated messages differ only there.
        cut = raw.find(b"] ", 0, 160)
        key = raw[cut + 2 :] if cut >= 0 else raw
        key += b"\0" + after[:MAX_LINE]
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = self._match_uncached(raw, after, shape)
            if len(self.memo) > MEMO:  # bounded memory on logs of endless distinct lines
                self.memo.clear()
        return hit

    def _match_uncached(
        self, raw: bytes, after: bytes, shape: bytes | None
    ) -> tuple[str | None, str, int]:
        head = raw[:MAX_LINE]
        decoded, line = _cleaned(head, head)
        low = line.lower()
        noise = self.compiled.is_noise(line, low)
        if shape is not None:
            if len(self.noise) >= MEMO:
                self.noise.clear()
            self.noise[shape] = noise
        if noise:
            return None, line, SOFT  # looks like an error, never is
        soft = bool(_SOFT.match(decoded)) or "warning" in low or _TORCH_WARN in low
        if not soft:
            level = _LEVEL.search(decoded, 0, _LEVEL_SPAN)
            soft = level is not None and not _ERRORISH_RE.search(
                decoded, 0, level.end() + _LEVEL_HEAD
            )
        nxt: str | None = None
        # A message wrapped onto the next line: by a terminal (mid-word) or by a formatter.
        for step in range(3):
            if step == 0:
                text = line
            else:
                if nxt is None:
                    nxt = _cleaned(after[:MAX_LINE], after)[1]
                text = line + nxt if step == 1 else f"{line} {nxt}"
                low = text.lower()
            joined = text is not line
            best: Signature | None = None
            how = ERROR
            for idx in self.compiled.present(low):
                for rx, sig, kind in self.compiled.rules(idx):
                    if best is not None and sig.priority <= best.priority:
                        continue
                    m = rx.search(text)
                    # joined text counts only for a match across the break
                    if m and (not joined or m.start() < len(line) < m.end()):
                        best, how = sig, kind
            if best is not None:
                return best.id, text, (SOFT if soft else ERROR) if how == ERROR else how
        return None, line, SOFT if soft else ERROR

    def _note_error(self, data: bytes, low: bytes, line_at: _LineCounter) -> None:
        """Remember the block's last error-like line (the decisive line of an `unknown`); only
        the last few candidates are looked at, so noisy logs stay linear."""
        limit = len(low)
        for _ in range(64):
            at = _last_errorish(low, limit)
            if at < 0:
                return
            start, stop = _span(data, at)
            raw = data[start:stop]
            line = normalize(raw.decode("utf-8", "replace"))
            # a signature's line is explained; an info/warning line is not a failure
            sid, _, soft = self._match(raw, b"")
            if (
                sid is None and not soft and _ERRORISH_RE.search(line)
                and line[:8] != '{"probe"' and not _warned_source(data, start)
            ):  # fmt: skip
                self.last_error = (self.lines_before + line_at(start), line)
                return
            limit = start

    def _note_raised(self, data: bytes, line_at: _LineCounter) -> None:
        """The exception line that ends the block's last Python traceback is an error line,
        whatever its words: `libcudnn.cudnnStatusArchMismatch` or `KeyboardInterrupt` say
        "error" nowhere. It is the decisive line of an `unknown` when no later error was seen.
        The exception line is the first line after the last frame that is not indented and not
        followed by an indented line (a frame's line wrapped by a terminal is), or that has an
        exception's shape (_EXCEPTION_LINE) whatever follows it. A traceback the block ends
        inside goes on in the next block: its frames, then its exception line."""
        went_on, self.in_traceback = self.in_traceback, False
        at = data.rfind(_TRACEBACK)
        if at >= 0:
            frame = data.rfind(b'\n  File "', at, at + _TRACEBACK_BYTES)
            if frame < 0:  # its header ends the block: the frames are in the next one
                self.in_traceback = not data[at + len(_TRACEBACK) :].strip()
                return
        elif went_on:
            # the rest of the previous block's traceback: more frames, or the exception line
            frame = data.rfind(b'\n  File "', 0, _TRACEBACK_BYTES)
            if frame < 0 and data.startswith(b'  File "'):
                frame = 0
        else:
            return
        pos = data.find(b"\n", frame + 1) + 1 if frame >= 0 else 0
        for _ in range(_TRACEBACK_LINES):
            if (pos <= 0 and frame >= 0) or pos >= len(data):
                # the block ends before the exception line: look for it in the next one
                self.in_traceback = pos >= len(data)
                return
            stop = data.find(b"\n", pos)
            stop = len(data) if stop < 0 else stop
            raw = data[pos:stop].rstrip(b"\r")
            follows = data[stop + 1 : stop + 2]
            if (
                raw
                and raw[:1] not in b" \t"
                and (follows not in (b" ", b"\t") or _EXCEPTION_LINE.match(raw))
            ):
                break
            pos = stop + 1
        else:
            return
        line_no = self.lines_before + line_at(pos)
        if self.last_error is not None and self.last_error[0] >= line_no:
            return
        line = normalize(raw.decode("utf-8", "replace"))
        sid, _, soft = self._match(raw, b"")
        if sid is None and not soft and line:
            self.last_error = (line_no, line)


def _warned_source(data: bytes, start: int) -> bool:
    """Whether the line at `start` is the source line Python's warnings module prints under a
    warning's header: indented, right after a line with the header's shape."""
    if start < 2 or data[start : start + 2] != b"  ":
        return False
    before = data.rfind(b"\n", 0, start - 1) + 1
    return _WARNING_HEAD.search(data, before, start - 1) is not None


def _last_errorish(low: bytes, limit: int) -> int:
    """Where the last of the _ERRORISH words that ends by `limit` ends in `low`, less one (-1:
    none). Searched backwards a window at a time (each four times the last) for every word in
    one pass (_ERRORISH_REV over the window reversed), so a block's last error-like line costs
    the distance back to it, whichever words the block holds."""
    hi, size = limit, 1 << 12
    while hi > 0:
        lo = max(0, hi - size)
        m = _ERRORISH_REV.search(low[lo:hi][::-1])
        if m is not None:
            return hi - m.start() - 1
        # a word that starts before lo ends before lo + its length - 1
        hi, size = (lo + _ERRORISH_LONGEST - 1 if lo else 0), size * 4
    return -1


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


def _unix(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks with every \\r\\n and lone \\r as \\n (a progress bar redrawn with \\r is one
    line per redraw, so an error printed after it is a line of its own), and typographic quotes
    as plain ones (_QUOTES)."""
    carry = b""
    for piece in chunks:
        chunk = carry + piece
        carry = b"\r" if chunk.endswith(b"\r") else b""
        chunk = (chunk[:-1] if carry else chunk).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if not chunk.isascii() and b"\xe2\x80" in chunk:  # isascii: a word at a time
            for curly, plain in _QUOTES:
                chunk = chunk.replace(curly, plain)
        yield chunk
    if carry:
        yield b"\n"


def _blocks(chunks: Iterable[bytes]) -> Iterator[tuple[bytes, bytes]]:
    """Whole-line blocks of about BLOCK bytes, each with the first line of the next one."""
    parts: list[bytes] = []
    size = 0
    prev: bytes | None = None
    for chunk in _unix(chunks):
        parts.append(chunk)
        size += len(chunk)
        if size < BLOCK or (b"\n" not in chunk and size < 16 * BLOCK):
            continue  # a long line grows without being copied again
        pending = b"".join(parts)
        cut = pending.rfind(b"\n") + 1 or len(pending)  # one huge line: split it anyway
        block, rest = pending[:cut], pending[cut:]
        parts, size = ([rest] if rest else []), len(rest)
        if prev is not None:
            yield prev, block.split(b"\n", 1)[0]
        prev = block
    pending = b"".join(parts)
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
    oom_killed: bool = False,
) -> Verdict:
    """The verdict on a log given as byte chunks (a file read in pieces).

    A signature seen only in warning lines (TF/absl I or W level, "Warning") is the cause only
    when nothing failed after it: a later error no signature names makes the verdict `unknown`,
    with the warned signature as secondary (a "driver too old" warning before a KeyError).
    `oom_killed`: the engine says the kernel killed the run for memory (Docker's
    State.OOMKilled): that is the cause, whatever the log printed before it."""
    scan = _Scan(_compiled(catalog))
    for data, nxt in _blocks(chunks):
        scan.block(data, nxt)
    return _verdict(scan, catalog, signal=signal, timed_out=timed_out, oom_killed=oom_killed)


def _verdict(
    scan: _Scan, catalog: Catalog, *, signal: int | None, timed_out: bool, oom_killed: bool
) -> Verdict:
    """The verdict of a finished scan (classify_chunks)."""

    def rank(hits: dict[str, tuple[int, str]]) -> list[str]:
        return sorted(hits, key=lambda s: (-catalog.get(s).priority, hits[s][0]))

    # An `armed` warning after a sign that armed it (Pattern.arms) is a failure as any warning
    # is: the cause where no error line follows it.
    for s, hit in scan.after_arm.items():
        if s not in scan.strong and s not in scan.soft:
            scan.soft[s] = hit
    # A warning that is no failure alone (Pattern.alone false) is the cause of a failure after
    # it that no signature names (an error line); beside a signature, it is only secondary.
    context = [s for s in rank(scan.context) if s not in scan.strong and s not in scan.soft]
    error = scan.last_error
    if not scan.strong and error is not None:
        scan.strong = {s: scan.context[s] for s in context if scan.context[s][0] < error[0]}
        context = [s for s in context if s not in scan.strong]
    strong, soft = rank(scan.strong), [s for s in rank(scan.soft) if s not in scan.strong]
    if strong:  # something failed for sure: warnings before it compete on priority
        scan.strong = {**{s: scan.soft[s] for s in soft}, **scan.strong}
        strong, soft = rank(scan.strong), context
        # ... and a warning that is no failure alone is the cause of the failure after it that
        # the catalog calls its consequence (Paddle's cuDNN version warning, then cuDNN
        # failing), a cue of the failure after it that the cue explains (a prompt inside a
        # container, then no driver found)
        at, first = scan.strong[strong[0]][0], strong[0]
        effects = catalog.get(first).consequence_of
        cause = next((s for s in context if s in effects and scan.context[s][0] < at), None)
        if cause is not None:
            scan.strong[cause] = scan.context[cause]
            strong, soft = [cause, *strong], [s for s in context if s != cause]
        else:
            explains = scan.compiled.cues
            cause = next(
                (
                    s
                    for s in rank(scan.cue)
                    if s not in scan.strong and first in explains.get(s, ()) and scan.cue[s][0] < at
                ),
                None,
            )
            if cause is not None:
                scan.strong[cause] = scan.cue[cause]
                strong = [cause, *strong]
    if timed_out:
        text = "the run did not finish in time (killed at the wall-clock limit)"
        return Verdict(
            signature=TIMEOUT, decisive_line=text, line_no=None, secondary=(*strong, *soft)
        )
    if oom_killed and HOST_OOM in catalog.ids:
        text = "killed for memory: the run reached its memory limit (the engine's OOMKilled)"
        others = tuple(s for s in (*strong, *soft) if s != HOST_OOM)
        return Verdict(signature=HOST_OOM, decisive_line=text, line_no=None, secondary=others)
    by_signal = next((s for s in catalog.signatures if signal in s.signals), None)
    if strong and by_signal is not None and by_signal.priority > catalog.get(strong[0]).priority:
        # The process died of a signal the catalog names: that death is evidence too, and it
        # outranks a line the process went on after (TF logs cuInit's failure, then runs on
        # the CPU until a truncated library kills it with SIGBUS).
        return _by_signal(by_signal, signal, tuple(s for s in strong if s != by_signal.id))
    if strong:
        line_no, text = scan.strong[strong[0]]
        return Verdict(
            signature=strong[0], decisive_line=text, line_no=line_no, secondary=(*strong[1:], *soft)
        )
    error = scan.last_error
    if soft and (error is None or error[0] <= scan.soft[soft[0]][0]):
        line_no, text = scan.soft[soft[0]]
        return Verdict(
            signature=soft[0], decisive_line=text, line_no=line_no, secondary=(*soft[1:],)
        )
    if by_signal is not None:
        return _by_signal(by_signal, signal, tuple(soft))
    if error is None:
        return Verdict(signature=UNKNOWN, decisive_line=None, line_no=None, secondary=tuple(soft))
    return Verdict(
        signature=UNKNOWN,
        decisive_line=error[1],
        line_no=error[0],
        secondary=tuple(soft),
        fingerprint=fingerprint(error[1]),
    )


def _by_signal(sig: Signature, signal: int | None, secondary: tuple[str, ...]) -> Verdict:
    assert signal is not None  # only a signal's own signature gets here
    name = signals.Signals(signal).name if signal in signals.valid_signals() else str(signal)
    return Verdict(
        signature=sig.id,
        decisive_line=f"killed by signal {signal} ({name})",
        line_no=None,
        secondary=secondary,
    )


def classify(
    text: str,
    catalog: Catalog,
    *,
    signal: int | None = None,
    timed_out: bool = False,
    oom_killed: bool = False,
) -> Verdict:
    return classify_chunks(
        [text.encode()], catalog, signal=signal, timed_out=timed_out, oom_killed=oom_killed
    )


_CACHE: dict[int, tuple[Catalog, _Compiled]] = {}


def _compiled(catalog: Catalog) -> _Compiled:
    hit = _CACHE.get(id(catalog))
    if hit is None or hit[0] is not catalog:
        hit = (catalog, _Compiled.of(catalog))
        _CACHE[id(catalog)] = hit
    return hit[1]
