"""NVIDIA's error enumerations as catalog patterns.

harness/resources/nvidia_errors.json is generated from the headers (and, for NVML, the Python
bindings) in NVIDIA's wheels by tools/nvidia_errors.py: every cudaError_t, CUresult,
cudnnStatus_t, ncclResult_t and nvmlReturn_t with its number, name, doc string (NVML's: its
text) and the signature it is evidence of. Here each row with a signature becomes a pattern for
its name (and for its message where that is distinctive), and each of the catalog's `codes`
wrappers ("cuda runtime error (98)", "error == cudaSuccess (8 vs. 0)") becomes one pattern per
code, so a number is classified like its name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from harness.model import Pattern

CODE = r"(?P<code>\d+)"
HEX_CODE = r"0x(?P<hexcode>[0-9a-fA-F]+)"  # a code printed with %x ("0x2", "0x64")
# Runtime numbers before CUDA 10.1 apply where today's number means nothing for the stack.
_FALLBACK = {"runtime": "runtime_legacy"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorRow:
    api: str  # runtime, runtime_legacy, driver, cudnn, cudnn8, nccl, nvml
    code: int
    name: str
    message: str
    signature: str | None
    match_message: str | None


def parse_table(doc: Mapping[str, Any]) -> tuple[ErrorRow, ...]:
    return tuple(
        ErrorRow(
            api=r["api"],
            code=int(r["code"]),
            name=r["name"],
            message=r["message"],
            signature=r["signature"],
            match_message=r.get("match_message"),
        )
        for r in doc["errors"]
    )


@cache
def table_bytes() -> bytes:
    """The shipped table's file (I/O: a package resource); part of the catalog's digest."""
    return resources.files("harness").joinpath("resources/nvidia_errors.json").read_bytes()


@cache
def read_table() -> tuple[ErrorRow, ...]:
    """The shipped table, parsed."""
    return parse_table(json.loads(table_bytes().decode("utf-8")))


def by_code(table: Iterable[ErrorRow], api: str) -> dict[int, ErrorRow]:
    """`api`'s codes that name a signature (a legacy number where today's names none)."""
    rows = [r for r in table if r.signature is not None]
    out = {r.code: r for r in rows if r.api == _FALLBACK.get(api)}
    out.update({r.code: r for r in rows if r.api == api})
    return out


def name_patterns(table: Iterable[ErrorRow]) -> tuple[tuple[Pattern, str], ...]:
    """Each enumerator name (and distinctive message) with a signature -> (pattern, signature)."""
    out: dict[str, tuple[Pattern, str]] = {}
    for r in table:
        if r.signature is None:
            continue
        out[r.name] = (Pattern(needle=r.name.lower(), regex=rf"\b{r.name}\b"), r.signature)
        if r.name.startswith("CUDNN_STATUS_"):  # as bindings spell it: cudnnStatusArchMismatch
            camel = "cudnnStatus" + "".join(w.title() for w in r.name[13:].split("_"))
            out[camel] = (Pattern(needle=camel.lower(), regex=rf"\b{camel}\b"), r.signature)
        if r.name.startswith("NVML_ERROR_"):  # as pynvml raises it: NVMLError_DriverNotLoaded
            camel = "NVMLError_" + "".join(w.title() for w in r.name[11:].split("_"))
            out[camel] = (Pattern(needle=camel.lower(), regex=rf"\b{camel}\b"), r.signature)
        if r.match_message:
            rx = "(?i:" + re.escape(r.match_message) + ")"
            out[r.match_message] = (Pattern(needle=r.match_message.lower(), regex=rx), r.signature)
    return tuple(out.values())


def wrapper_patterns(
    wrappers: Iterable[tuple[str, Pattern]], table: Iterable[ErrorRow]
) -> tuple[tuple[Pattern, str], ...]:
    """Each wrapper (api, pattern holding `(?P<code>\\d+)`, or `0x(?P<hexcode>[0-9a-fA-F]+)` for a
    code printed in hexadecimal) expanded into one pattern per signature."""
    rows = tuple(table)
    out = []
    for api, p in wrappers:
        # One regex per signature (its codes as one alternation), not one per code: a line
        # holding the wrapper's needle then runs a few regexes, however many codes there are.
        codes: dict[str, list[int]] = {}
        for code, row in sorted(by_code(rows, api).items()):
            codes.setdefault(str(row.signature), []).append(code)
        for sig, nums in codes.items():
            nums_rx = "0*(?:" + "|".join(map(str, nums)) + ")"
            hex_rx = "0[xX]0*(?i:" + "|".join(f"{n:x}" for n in nums) + ")"
            regex = _ended(p.regex, CODE, nums_rx, "(?:[^0-9]|$)")
            regex = _ended(regex, HEX_CODE, hex_rx, "(?:[^0-9a-fA-F]|$)")
            out.append((Pattern(needle=p.needle, regex=regex), sig))
    return tuple(out)


def _ended(regex: str, token: str, codes: str, end: str) -> str:
    """`token` in `regex` replaced by `codes`, where a code ends: \\b where (?!\\d) was before
    RE2, which has no look-ahead; at the end of the regex (a `\\b` of its own included), `end`:
    any character but a digit, or the line's end, as (?!\\d) said. A letter may follow a code
    there: ollama's C message runs into the next Go log line without its newline ("failed to
    get device context 46time=2024-09-04T...")."""
    for tail in (token + "\\b", token):
        if regex.endswith(tail):
            return regex[: -len(tail)] + codes + end
    return regex.replace(token, codes + "\\b")
