"""The real failure logs an NVIDIA H200 gave (reports/evidence/logs/, made by tools/gpu_logs.sh):
each is named as a person reading it would name it, the same here as there, with the framework
read from the log."""

from __future__ import annotations

import json

import pytest

from harness.advice import read_facts
from harness.diagnose import diagnosis
from harness.signatures import classify_chunks, read_catalog
from tests.conftest import ROOT

LOGS = ROOT / "reports" / "evidence" / "logs"
# case -> (signature, verdict, framework the log shows): what the log says happened, judged from
# the log and from what the case did (tools/gpu_logs.sh), not copied from the diagnosis
NAMED = {
    # its log holds only CUDNN_STATUS_INTERNAL_ERROR: out of memory is a likely cause, not a fact
    "cudnn-handle-oom": ("cudnn_init_failure", "consequence", None),
    "cupy-oom": ("gpu_oom", "cause", "cupy"),
    "illegal-address": ("illegal_memory_access", "cause", "cupy"),
    "jax-healthy": ("no_failure", "no_failure", None),
    "jax-no-gpu": ("no_gpu_or_driver", "cause", "jax"),
    "jax-oom": ("gpu_oom", "cause", "jax"),
    "jax-prealloc-oom": ("gpu_oom", "cause", None),  # XLA's own lines: no framework named
    "nccl-duplicate-gpu": ("nccl_error", "cause", "torch"),
    "nccl-no-interface": ("nccl_error", "cause", "torch"),
    "torch-device-assert": ("illegal_memory_access", "cause", "torch"),
    "torch-healthy": ("no_failure", "no_failure", None),
    "torch-no-gpu": ("no_gpu_or_driver", "cause", "torch"),
    "torch-oom": ("gpu_oom", "cause", "torch"),
    "torch-preload-old-cudnn": ("cudnn_version_mismatch", "cause", "torch"),
    "torch-stub-libcuda": ("stub_driver", "cause", "torch"),
}
CASES = sorted(p.stem for p in LOGS.glob("*.log"))


def test_the_evidence_holds_the_logs_this_test_reads() -> None:
    assert sorted(NAMED) == CASES, CASES
    for case in CASES:
        assert (LOGS / f"{case}.json").is_file(), case


@pytest.mark.parametrize("case", CASES)
def test_a_real_gpu_log_is_named_as_on_the_gpu_host(case: str) -> None:
    there = json.loads((LOGS / f"{case}.json").read_text(encoding="utf-8"))
    signature, verdict, framework = NAMED[case]
    assert (there["signature"], there["verdict"]) == (signature, verdict), case
    catalog = read_catalog(ROOT / "scenarios" / "signatures.yaml")
    text = (LOGS / f"{case}.log").read_bytes()
    found = classify_chunks([text], catalog)
    here = diagnosis(found, catalog, (), text.decode("utf-8", "replace").splitlines())
    assert (here.signature, here.verdict, found.decisive_line) == (
        signature,
        verdict,
        there["decisive_line"],
    ), case
    assert read_facts(found.decisive_line, text.decode().splitlines()).get("framework") == framework


def test_the_framework_is_a_package_not_a_folder_of_another_path() -> None:
    # the H200's CuPy lives in /opt/torch/.venv: its log named torch there (cupy-oom.json)
    line = '  File "/opt/torch/.venv/lib/python3.12/site-packages/cupy/cuda/memory.pyx", line 1'
    assert read_facts(None, [line])["framework"] == "cupy"
    elsewhere = '  File "/opt/torch/.venv/bin/x.py", line 1'
    assert read_facts(None, [elsewhere]).get("framework") is None
    assert read_facts("torch.OutOfMemoryError: CUDA out of memory.", [])["framework"] == "torch"
    assert (
        read_facts("2026 tensorflow/core/common_runtime/gpu/gpu_device.cc:2022] x", [])["framework"]
        == "tensorflow"
    )
