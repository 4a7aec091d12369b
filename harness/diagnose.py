"""A user's log -> the signature, its cause and fix, and the cells that reproduce it. Pure: the
CLI reads the log (in chunks, so any size fits in bounded memory) and the plan."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import BinaryIO

from harness.errors import ConfigError
from harness.model import Diagnosis, Evidence, Plan, Reproducer, Scenario, Verdict
from harness.signatures import Catalog

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


def diagnosis(verdict: Verdict, catalog: Catalog, found: tuple[Reproducer, ...]) -> Diagnosis:
    sig = catalog.get(verdict.signature)
    return Diagnosis(
        signature=sig.id,
        title=sig.title,
        cause=sig.cause,
        fix=sig.fix,
        stage=sig.stage,
        decisive_line=verdict.decisive_line,
        line_no=verdict.line_no,
        secondary=verdict.secondary,
        fingerprint=verdict.fingerprint,
        reproduce=found,
    )


def checked_chunks(stream: BinaryIO, name: str, size: int = 1 << 20) -> Iterator[bytes]:
    """The log in chunks; refuses empty input and binary data (checked on the first chunk)."""
    first = stream.read(size)
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


def render_text(d: Diagnosis) -> str:
    lines = [f"signature: {d.signature} — {d.title}"]
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
    return "\n".join(lines) + "\n"
