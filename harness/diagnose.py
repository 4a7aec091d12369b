"""A user's log -> the signature, its cause and fix, and the cells that reproduce it. Pure: the
CLI reads the log (in chunks, so any size fits in bounded memory) and the plan.

The verdict is one of: `cause` (a root cause named), `consequence` (only a signature that is
usually the effect of others: the likely causes are listed), `unknown` (a failure no signature
names) and `no_failure` (no failure in the log at all). `harness diagnose` exits 0, 0, 1 and 3
for them; 2 is bad input."""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator, Mapping
from typing import BinaryIO

from harness.advice import read_facts, render_fix
from harness.errors import ConfigError
from harness.model import Diagnosis, Evidence, Plan, Reproducer, Scenario, Verdict
from harness.signatures import UNKNOWN, Catalog, printable

NO_FAILURE = "no_failure"
EXIT = {"cause": 0, "consequence": 0, UNKNOWN: 1, NO_FAILURE: 3}

MAX_REPRODUCERS = 6
_SNIFF = 8192


def reproducers(
    signature: str, plan: Plan, scenarios: Mapping[str, Scenario], *, profile_flag: str
) -> tuple[Reproducer, ...]:
    """Cells of the plan whose scenario expects `signature` for their framework: those that show
    it without a GPU first."""
    found = []
    for cell in plan.cells:
        scen = scenarios.get(cell.scenario)
        if scen is None:
            continue
        for fw, evidence, exp in scen.expect:
            if fw == cell.stack.framework and exp.signature == signature:
                command = f"nox -s reproduce -- {cell.id}{profile_flag}"
                found.append(Reproducer(cell=cell.id, command=command, evidence=evidence))
                break
    found.sort(key=lambda r: (r.evidence is not Evidence.CPU, r.cell))
    return tuple(found[:MAX_REPRODUCERS])


def diagnosis(
    verdict: Verdict,
    catalog: Catalog,
    found: tuple[Reproducer, ...],
    context: Iterable[str] = (),
) -> Diagnosis:
    """The verdict explained; `context` is text around the failure (the log's head and tail)
    that versions and names are read from."""
    if verdict.signature == UNKNOWN and verdict.decisive_line is None:
        return Diagnosis(
            signature=NO_FAILURE,
            title="No failure found",
            cause="The log holds no message of the catalog and no error line.",
            fix=(
                "If the run did fail, pass its whole output with stderr (`cmd 2>&1 | tee x.log`).",
            ),
            stage=None,
            decisive_line=None,
            line_no=None,
            secondary=verdict.secondary,
            fingerprint=None,
            reproduce=(),
            verdict=NO_FAILURE,
        )
    sig = catalog.get(verdict.signature)
    facts = read_facts(verdict.decisive_line, context)
    causes = tuple(c for c in sig.consequence_of if c not in verdict.secondary)
    alone = bool(sig.consequence_of) and not set(sig.consequence_of) & set(verdict.secondary)
    kind = UNKNOWN if sig.id == UNKNOWN else "consequence" if alone else "cause"
    return Diagnosis(
        signature=sig.id,
        title=sig.title,
        cause=sig.cause,
        fix=render_fix(sig, facts),
        stage=sig.stage,
        decisive_line=verdict.decisive_line,
        line_no=verdict.line_no,
        secondary=verdict.secondary,
        fingerprint=verdict.fingerprint,
        reproduce=found,
        verdict=kind,
        likely_causes=causes if alone else (),
        facts=tuple(sorted(facts.items())),
    )


def checked_chunks(stream: BinaryIO, name: str, size: int = 1 << 20) -> Iterator[bytes]:
    """The log in chunks, as UTF-8; refuses empty input and binary data (checked on the first
    chunk). UTF-16 with a byte-order mark (what PowerShell writes on `>`) is decoded."""
    first = stream.read(size)
    if first[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        yield from _utf16(first, stream, size, name)
        return
    first = first.removeprefix(codecs.BOM_UTF8)
    if not first.strip():
        raise ConfigError(f"{name} is empty", help="pass a log file, or pipe one into `-`")
    head = first[:_SNIFF]
    printable = sum(b >= 32 or b in (9, 10, 13, 27) for b in head)
    if b"\0" in head or printable < 0.9 * len(head):
        raise ConfigError(
            f"{name} is not a text log (binary data in its first {len(head)} bytes)",
            help="pass the text log a run printed (e.g. `python train.py 2>&1 | tee run.log`), "
            "not a core dump or archive",
        )
    yield first
    while chunk := stream.read(size):
        yield chunk


def _utf16(first: bytes, stream: BinaryIO, size: int, name: str) -> Iterator[bytes]:
    decoder = codecs.getincrementaldecoder("utf-16")(errors="replace")
    text = decoder.decode(first)
    if not text.strip():
        raise ConfigError(f"{name} is empty", help="pass a log file, or pipe one into `-`")
    yield text.encode()
    while chunk := stream.read(size):
        yield decoder.decode(chunk).encode()
    yield decoder.decode(b"", final=True).encode()


def render_text(d: Diagnosis) -> str:
    """The diagnosis for a terminal: every value from the log goes through `printable`, so no
    escape sequence in a log reaches the terminal."""
    return "\n".join(printable(line) for line in _lines(d)) + "\n"


def _lines(d: Diagnosis) -> list[str]:
    if d.verdict == NO_FAILURE:
        return [f"verdict: no failure found — {d.cause}", *(f"  - {s}" for s in d.fix)]
    lines = [f"signature: {d.signature} — {d.title}"]
    if d.verdict == "consequence":
        lines.append(
            "verdict: a consequence, found alone; likely causes: " + ", ".join(d.likely_causes)
        )
    if d.stage is not None:
        lines.append(f"stage: usually {d.stage.value}")
    if d.decisive_line is not None:
        where = f" (line {d.line_no})" if d.line_no else ""
        lines.append(f"decisive line{where}: {d.decisive_line}")
    if d.fingerprint is not None:
        lines.append(f"fingerprint: {d.fingerprint}")
    if d.secondary:
        lines.append(f"also in the log: {', '.join(d.secondary)}")
    lines.append(f"cause: {d.cause}")
    lines += ["fix:", *(f"  - {step}" for step in d.fix)]
    if d.reproduce:
        lines.append("reproduce:")
        for r in d.reproduce:
            note = "" if r.evidence is Evidence.CPU else "  (needs a GPU)"
            lines.append(f"  {r.command}{note}")
    elif d.signature != "unknown":
        lines.append("reproduce: no cell of this profile reproduces it")
    if d.facts:
        lines.append("read from the log: " + ", ".join(f"{k}={v}" for k, v in d.facts))
    return lines
