"""The real failure logs an NVIDIA H200 gave (reports/evidence/logs/, made by tools/gpu_logs.sh):
the diagnosis still names each as it did there, with the same decisive line."""

from __future__ import annotations

import json

import pytest

from harness.diagnose import diagnosis
from harness.signatures import classify_chunks, read_catalog
from tests.conftest import ROOT

LOGS = ROOT / "reports" / "evidence" / "logs"
# Named there as the table of LOGS/README.md says, except where the catalog has since closed a gap
# the evidence shows: the out-of-bounds CuPy kernel gave cudaErrorInvalidAddressSpace (CUDA error
# 717), `unknown` at the commit that made the evidence, a kernel fault now (its first line).
CASES = sorted(p.stem for p in LOGS.glob("*.log"))
NOW_NAMED = {
    "illegal-address": (
        "illegal_memory_access",
        "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInvalidAddressSpace: "
        "operation not supported on global/shared address space",
    )
}


def test_the_evidence_holds_the_logs_this_test_reads() -> None:
    assert len(CASES) == 8, CASES
    for case in CASES:
        assert (LOGS / f"{case}.json").is_file(), case


@pytest.mark.parametrize("case", CASES)
def test_a_real_gpu_log_is_named_as_on_the_gpu_host(case: str) -> None:
    there = json.loads((LOGS / f"{case}.json").read_text(encoding="utf-8"))
    expected = NOW_NAMED.get(case, (there["signature"], there["decisive_line"]))
    catalog = read_catalog(ROOT / "scenarios" / "signatures.yaml")
    verdict = classify_chunks([(LOGS / f"{case}.log").read_bytes()], catalog)
    here = diagnosis(verdict, catalog, ())
    assert (here.signature, verdict.decisive_line) == expected, case
