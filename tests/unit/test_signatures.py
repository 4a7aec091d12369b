"""The signature catalog and the classifier: real public logs (tests/fixtures/logs/, each with
its source), the traps of real logs, and the mechanics (blocks, memory, fingerprints)."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from harness import codes, signatures
from harness.errors import ConfigError
from harness.loader import parse_yaml
from harness.model import Pattern
from harness.regexcheck import compile_rx, digit_blind
from harness.scenarios import SIGNATURE_IDS
from harness.signatures import (
    classify,
    classify_chunks,
    fingerprint,
    normalize,
    parse_catalog,
    read_catalog,
)
from tests.conftest import ROOT, load_tool
from tests.unit.golden import check_golden

CATALOG = read_catalog(ROOT / "scenarios" / "signatures.yaml")
LOGS = ROOT / "tests" / "fixtures" / "logs"
CASES = sorted(p.stem for p in LOGS.glob("*.log"))
# Cases where the classifier's answer differs from the label, each with why (closing note).
# Fixtures the catalog is known to get wrong (none now: the last one, a "driver too old" line
# that had lost its UserWarning prefix, is read as torch's warning by its "(Triggered internally
# at ...)" ending, so the KeyError after it is the verdict)
KNOWN_MISSES: set[str] = set()


def meta(case: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((LOGS / f"{case}.meta.json").read_text())
    return data


def test_the_catalog_defines_every_required_signature_with_sources() -> None:
    assert CATALOG.ids >= SIGNATURE_IDS
    for sig in CATALOG.signatures:
        assert sig.sources and all(s.startswith("https://") for s in sig.sources), sig.id
        assert sig.fix and sig.cause, sig.id
        assert sig.patterns or sig.id == "unknown" or sig.signals, sig.id


def test_the_corpus_covers_every_signature_with_real_sources() -> None:
    seen = {str(meta(c)["signature"]) for c in CASES}
    assert seen >= SIGNATURE_IDS
    for case in CASES:
        assert str(meta(case)["source"]).startswith("https://"), case


@pytest.mark.parametrize("case", CASES)
def test_real_logs_are_classified(case: str) -> None:
    text = (LOGS / f"{case}.log").read_text(encoding="utf-8", errors="replace")
    verdict = classify(text, CATALOG)
    label = meta(case)
    check_golden(LOGS / f"{case}.expected.json", json.dumps(verdict.to_json(), indent=1) + "\n")
    if case in KNOWN_MISSES:
        assert verdict.signature != label["signature"], f"{case} is fixed: drop it from the misses"
        return
    assert verdict.signature == label["signature"]
    assert verdict.decisive_line is not None or verdict.signature == "unknown"


@pytest.mark.parametrize("case", CASES)
def test_every_regex_match_holds_its_needle(case: str) -> None:
    """The pre-filter is only sound if a line a regex matches contains the pattern's needle."""
    for raw in (LOGS / f"{case}.log").read_text(encoding="utf-8", errors="replace").splitlines():
        line = normalize(raw)
        for sig in CATALOG.signatures:
            for p in sig.patterns:
                if compile_rx(p.regex).search(line):
                    assert p.needle in line.lower(), (sig.id, p.needle, line)


# ---------------------------------------------------------------- traps of real logs


def verdict_of(*lines: str) -> tuple[str, str | None, tuple[str, ...]]:
    v = classify("\n".join(lines) + "\n", CATALOG)
    return v.signature, v.decisive_line, v.secondary


MISMATCH = (
    "2021-01-05 10:00:01.123456: E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Loaded "
    "runtime CuDNN library: 8.0.4 but source was compiled with: 8.1.0.  CuDNN library needs to "
    "have matching major version and equal or higher minor version."
)


def test_root_cause_outranks_its_consequence_and_is_named_with_it() -> None:
    sig, line, secondary = verdict_of(
        "2021-01-05 10:00:00.1: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] "
        "TF-TRT Warning: Could not find TensorRT",
        MISMATCH,
        "tensorflow.python.framework.errors_impl.UnknownError:  Failed to get convolution "
        "algorithm. This is probably because cuDNN failed to initialize",
    )
    assert sig == "cudnn_version_mismatch"
    assert line is not None and line.startswith("Loaded runtime CuDNN library: 8.0.4")
    assert secondary == ("cudnn_init_failure",)


def test_colours_prefixes_and_pytest_markers_do_not_hide_a_message() -> None:
    for wrapped in (
        "\x1b[31mRuntimeError\x1b[0m: CUDA out of memory. Tried to allocate 2.00 GiB",
        "E0000 00:00:1712345678.123456 1234 cuda_dnn.cc:535] CUDA out of memory. Tried",
        "2024-05-01T10:00:00.1234567Z E       RuntimeError: CUDA out of memory. Tried",
    ):
        assert verdict_of(wrapped)[0] == "gpu_oom", wrapped


def test_a_message_wrapped_mid_word_still_matches() -> None:
    sig, line, _ = verdict_of(
        "ImportError: /opt/conda/lib/libstdc++.so.6: version `GLIBCXX_3.4.3",
        "0' not found (required by /opt/conda/lib/python3.10/site-packages/x.so)",
    )
    assert sig == "undefined_symbol" and line is not None and "GLIBCXX_3.4.30" in line


def test_a_traceback_source_line_is_not_the_decisive_line() -> None:
    _, line, _ = verdict_of(
        "Traceback (most recent call last):",
        '  File "probe.py", line 3, in cudnn_api',
        '    raise RuntimeError("no libcudnn found: not loaded by the framework")',
        "RuntimeError: no libcudnn found: not loaded by the framework",
    )
    assert line == "RuntimeError: no libcudnn found: not loaded by the framework"


def test_noise_alone_is_not_a_cause() -> None:
    sig, line, _ = verdict_of(
        "2024-01-01 10:00:00.1: E external/local_xla/xla/stream_executor/cuda/cuda_dnn.cc:9261] "
        "Unable to register cuDNN factory: Attempting to register factory for plugin cuDNN "
        "when one has already been registered",
        "Epoch 1/2",
    )
    assert sig == "unknown" and line is None


def test_a_warning_is_not_the_cause_of_a_later_unrelated_failure() -> None:
    sig, line, secondary = verdict_of(
        "/x/torch/cuda/__init__.py:52: UserWarning: CUDA initialization: The NVIDIA driver on "
        "your system is too old (found version 10010).",
        "  return torch._C._cuda_getDeviceCount() > 0",
        "Traceback (most recent call last):",
        "KeyError: 'classes'",
    )
    assert (sig, line, secondary) == ("unknown", "KeyError: 'classes'", ("driver_too_old",))


def test_a_warning_is_the_cause_when_nothing_else_failed() -> None:
    sig, _, _ = verdict_of(
        "2019-11-20 17:45:31.698108: W tensorflow/stream_executor/platform/default/"
        "dso_loader.cc:55] Could not load dynamic library 'libcudart.so.10.1'; dlerror: "
        "libcudart.so.10.1: cannot open shared object file: No such file or directory",
        "2019-11-20 17:45:31.698128: I tensorflow/stream_executor/cuda/cudart_stub.cc:29] "
        "Ignore above cudart dlerror if you do not have a GPU set up on your machine.",
        "Num GPUs Available:  0",
    )
    assert sig == "cuda_runtime_missing"


@pytest.mark.parametrize(
    "line",
    [
        # vLLM's logger ("%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s")
        "INFO 12-19 22:58:27 model_runner.py:1415] Capturing cudagraphs for decoding. If "
        "out-of-memory error occurs during cudagraph capture, consider decreasing it.",
        # Python's logging, loguru, a bracketed level, logfmt (Go's slog, logrus)
        "INFO:root:all 4 shards loaded; the retry after the last connection error went through",
        "2024-01-04 21:51:17.793 | DEBUG    | app.worker:run:12 - handled an exception, going on",
        "[2024-01-04 21:51:17,793]::[InvokeAI]::INFO --> Patchmatch initialized, one optional "
        "download failed and was retried",
        'time=2024-07-04T17:13:20.134+08:00 level=DEBUG source=gpu.go:385 msg="Unable to load '
        'nvcuda" error="wrong library"',
        # torch's warnings end "(Triggered internally at ...)" (c10's TORCH_WARN)
        "Plan failed with a cudnnException: CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR: "
        "cudnnFinalize Descriptor Failed cudnn_status: CUDNN_STATUS_NOT_SUPPORTED (Triggered "
        "internally at ../aten/src/ATen/native/cudnn/Conv_v8.cpp:919.)",
    ],
)  # fmt: skip
def test_an_info_or_debug_line_or_a_torch_warning_is_no_error_line(line: str) -> None:
    assert verdict_of(line, "Epoch 1/2") == ("unknown", None, ())


@pytest.mark.parametrize(
    "line",
    [
        # the level is info, but the message starts with the error (TF 1.x's Coordinator)
        "INFO:tensorflow:Error reported to Coordinator: <class 'tensorflow.python.framework."
        "errors_impl.InvalidArgumentError'>, Incompatible shapes: [80,1] vs. [160,1]",
        # WARN is the level NCCL and log4j report failures at
        "host:1:1 [0] include/socket.h:344 WARN Socket creation failed : Address family not "
        "supported by protocol",
        "2024-01-01T00:00:00,000 [WARN ] W-9000-resnet_1.0 BatchAggregator - Load model failed: "
        "resnet, error: Worker died.",
        # an error word before the level
        "ERROR 12-19 22:58:27 engine.py:12] INFO about the failed request follows",
    ],
)  # fmt: skip
def test_a_line_whose_level_does_not_clear_it_stays_an_error_line(line: str) -> None:
    sig, decisive, _ = verdict_of(line, "Epoch 1/2")
    assert sig == "unknown" and decisive is not None


def test_a_silent_death_by_signal_is_classified_by_the_signal() -> None:
    v = classify("import ok\n", CATALOG, signal=7)
    assert (v.signature, v.decisive_line) == ("corrupt_library", "killed by signal 7 (SIGBUS)")
    assert classify("import ok\n", CATALOG, signal=4).signature == "arch_unsupported"
    assert classify("import ok\n", CATALOG, signal=11).signature == "unknown"


def test_a_death_by_signal_outranks_a_lesser_line_the_process_went_on_after() -> None:
    """TF logs cuInit's failure at E level on a host without a driver and goes on on the CPU;
    when a truncated library then kills it with SIGBUS, the signal is the cause."""
    cuinit = (
        "E0000 00:00:1795670209.628317       1 cuda_platform.cc:52] failed call to cuInit: "
        "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n"
    )
    v = classify(cuinit, CATALOG, signal=7)
    assert (v.signature, v.decisive_line) == ("corrupt_library", "killed by signal 7 (SIGBUS)")
    assert v.secondary == ("no_gpu_or_driver",)
    # without the signal the line is the cause; a higher-ranked line beats the signal
    assert classify(cuinit, CATALOG).signature == "no_gpu_or_driver"
    assert classify(MISMATCH + "\n", CATALOG, signal=4).signature == "cudnn_version_mismatch"


def test_a_timeout_is_timeout_whatever_the_log_says() -> None:
    v = classify(MISMATCH + "\n", CATALOG, timed_out=True)
    assert v.signature == "timeout" and v.secondary == ("cudnn_version_mismatch",)


def test_an_engine_oom_kill_is_host_oom_whatever_the_log_says() -> None:
    """Docker's State.OOMKilled (the kernel ended the container at its memory limit): the
    cause, with what the log said before as secondary; a catalog without host_oom falls back
    to the signal."""
    cuinit = "E cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)\n"
    v = classify(cuinit + MISMATCH + "\n", CATALOG, signal=9, oom_killed=True)
    assert v.signature == "host_oom" and "OOMKilled" in (v.decisive_line or "")
    assert v.secondary == ("cudnn_version_mismatch", "no_gpu_or_driver")
    assert classify("", CATALOG, signal=9, oom_killed=True).signature == "host_oom"
    assert classify("", CATALOG, signal=9).signature == "unknown"  # a SIGKILL alone says no more
    bare = dataclasses.replace(
        CATALOG, signatures=tuple(s for s in CATALOG.signatures if s.id != "host_oom")
    )
    assert classify(MISMATCH, bare, signal=9, oom_killed=True).signature == "cudnn_version_mismatch"


@pytest.mark.parametrize(
    ("line", "signature"),
    [
        ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: {{function_node "
         "__wrapped__Fill_device_/job:localhost/replica:0/task:0/device:CPU:0}} OOM when "
         "allocating tensor with shape[4294967296] and type uint8 on /job:localhost/replica:0/"
         "task:0/device:CPU:0 by allocator cpu [Op:Fill] name: ", "host_oom"),
        ("ResourceExhaustedError: OOM when allocating tensor with shape[64,3,224,224] and type "
         "float on /job:localhost/replica:0/task:0/device:CPU:0 by allocator mklcpu", "host_oom"),
        ("ResourceExhaustedError: OOM when allocating tensor with shape[64,3,224,224] and type "
         "float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
         "gpu_oom"),
    ],
)  # fmt: skip
def test_tensorflow_names_the_allocator_that_ran_out(line: str, signature: str) -> None:
    assert classify(line + "\n", CATALOG).signature == signature


def test_unknown_failures_cluster_by_fingerprint() -> None:
    a = classify("ValueError: bad shape (3, 4) at 0x7f12ab in /a/b.py:12\n", CATALOG)
    b = classify("x\nValueError: bad shape (5, 6) at 0x7f99cd in /c/d.py:99\n", CATALOG)
    c = classify("KeyError: 'classes'\n", CATALOG)
    assert a.signature == b.signature == c.signature == "unknown"
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert a.fingerprint == fingerprint("ValueError: bad shape (3, 4) at 0x7f12ab in /a/b.py:12")


# ---------------------------------------------------------------- mechanics


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(CASES), cuts=st.lists(st.integers(1, 400), min_size=1, max_size=30))
# Found by Hypothesis: a message wrapped across a block boundary lost its second half.
@example(case="numpy_abi__torch-numpy2-array-api-not-found-webui", cuts=[360, 75])
def test_the_verdict_does_not_depend_on_how_the_log_is_cut(case: str, cuts: list[int]) -> None:
    data = (LOGS / f"{case}.log").read_bytes()
    whole = classify_chunks([data], CATALOG)
    old = signatures.BLOCK
    signatures.BLOCK = 256  # many blocks even for a small log
    try:
        pieces, i = [], 0
        for n in cuts * (len(data) // max(sum(cuts), 1) + 1):
            pieces.append(data[i : i + n])
            i += n
        pieces.append(data[i:])
        cut = classify_chunks(pieces, CATALOG)
    finally:
        signatures.BLOCK = old
    assert (cut.signature, cut.decisive_line, cut.line_no) == (
        whole.signature,
        whole.decisive_line,
        whole.line_no,
    )


def test_a_block_of_ascii_is_scanned_for_ascii_needles_and_the_others_in_theirs() -> None:
    """An ASCII block is scanned without the needles that hold other bytes (glibc's translated
    signal names): they cannot be in it. A block with other bytes is scanned for them all, here
    after ASCII blocks that had no error, and after one that had."""
    noise = b"Epoch 1/2 step 12: loss=0.1234\n" * (signatures.BLOCK // 32 + 1)
    crash = "Results saved to runs/detect/exp29\n\u6bb5\u9519\u8bef\n".encode()
    assert classify_chunks([noise, crash], CATALOG).signature == "native_crash"
    oom = b"RuntimeError: CUDA error: out of memory\n"
    assert classify_chunks([oom + noise, crash], CATALOG).signature == "gpu_oom"
    killed = "Loading model...\n\u0423\u0431\u0438\u0442\u043e\n".encode()
    assert classify_chunks([noise, killed], CATALOG).signature == "host_oom"


def test_memory_stays_bounded_on_a_big_log() -> None:
    line = b"step 1234: loss=0.1234 lr=0.001 error_rate=0.02 cuda:0 mem 1234MiB\n"
    block = line * (1 << 20 // len(line))  # 1 MiB
    tracemalloc.start()
    try:
        v = classify_chunks((block for _ in range(48)), CATALOG)  # 48 MiB, one MiB at a time
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert v.signature == "unknown"
    assert peak < 4 * signatures.BLOCK + (8 << 20), peak


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "signatures:\n  - {id: x, title: t, stage: null, priority: 1, frameworks: [any],"
            ' patterns: [{needle: "abc", regex: "a(b"}], cause: c, fix: [f],'
            " sources: [https://e.x]}\nschema: 1\n",
            "sig.yaml:2:102: error: pattern is not a valid regular expression: missing ), "
            "unterminated subpattern at position 1",
        ),
        (
            "schema: 1\nsignatures:\n  - {id: x, title: t, stage: null, priority: 1, frameworks:"
            " [any], patterns: [], cause: c, fix: [f], sources: [https://e.x]}\n",
            "sig.yaml:3:3: error: the catalog has no 'unknown' signature",
        ),
    ],
)
def test_a_bad_catalog_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_catalog(parse_yaml(text, "sig.yaml"))
    assert err.value.render().splitlines()[0] == message


def test_a_needle_must_be_lowercase() -> None:
    text = (ROOT / "scenarios" / "signatures.yaml").read_text()
    text = text.replace('needle: "bus error"', 'needle: "Bus error"', 1)
    with pytest.raises(ConfigError, match="Bus error"):
        parse_catalog(parse_yaml(text, "signatures.yaml"))


def test_catalog_file_is_what_the_harness_reads(tmp_path: Path) -> None:
    assert read_catalog(ROOT / "scenarios" / "signatures.yaml").ids == CATALOG.ids


def test_the_digest_changes_with_the_catalog_and_with_nvidias_error_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both files decide verdicts, and the digest is in every cell's cache key."""
    yaml = (ROOT / "scenarios" / "signatures.yaml").read_bytes()
    path = tmp_path / "signatures.yaml"
    path.write_bytes(yaml)
    base = read_catalog(path).digest
    assert base == CATALOG.digest
    path.write_bytes(yaml + b"\n# a comment\n")
    assert read_catalog(path).digest != base
    path.write_bytes(yaml)
    table = codes.table_bytes()
    monkeypatch.setattr(signatures, "table_bytes", lambda: table + b"\n")
    assert read_catalog(path).digest != base
    assert signatures.catalog_digest(b"ab", b"c") != signatures.catalog_digest(b"a", b"bc")


def test_an_error_at_the_end_of_a_huge_line_is_found_in_linear_time() -> None:
    line = b"RuntimeError: CUDA error: out of memory; " * 200_000 + b"invalid device function\n"
    v = classify_chunks([line[i : i + (1 << 20)] for i in range(0, len(line), 1 << 20)], CATALOG)
    assert v.signature == "arch_unsupported"


def test_a_carriage_return_ends_a_line() -> None:
    bar = "100%|##########| 50/50 [00:01<00:00]\r" * 100
    v = classify(bar + "RuntimeError: CUDA error: invalid device function\n", CATALOG)
    assert v.signature == "arch_unsupported" and v.decisive_line is not None
    assert v.decisive_line.startswith("RuntimeError")


def test_nvidia_numbers_map_like_names() -> None:
    for line, sig in [
        ("RuntimeError: cuda runtime error (98) : invalid device at x.cu:1", "arch_unsupported"),
        ("cudaRuntimeGetVersion() failed with error #35", "driver_too_old"),
        ("CudaAPIError: [34] Call to cuInit", "stub_driver"),
        ("E   CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED", "cudnn_missing"),
    ]:
        assert classify(line + "\n", CATALOG).signature == sig, line


# Each kernel fault (CUDA 700, 714-719) as a real log printed it: by runtime name, driver name,
# number or cudaGetErrorString text.
KERNEL_FAULTS = (
    # reports/evidence/logs/illegal-address.log (a CuPy kernel writing out of bounds, on an H200)
    "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorInvalidAddressSpace: "
    "operation not supported on global/shared address space",
    # taichi-dev/taichi#6558
    "[E 11/09/22 18:29:11.702 82470] [cuda_driver.h:operator()@88] CUDA Error "
    "CUDA_ERROR_INVALID_ADDRESS_SPACE: operation not supported on global/shared address space "
    "while calling stream_synchronize (cuStreamSynchronize)",
    # NVIDIA-AI-IOT/CUDA-PointPillars#113
    "Cuda failure: operation not supported on global/shared address space at line 286 in file "
    "/home/seecar/Documents/pointpillars/pointpillar.cpp error status: 717",
    # JuliaGPU CuArrays README ("Current Limitations")
    "ERROR: CUDA error: invalid program counter (code #718, ERROR_INVALID_PC)",
    # AlexeyAB/darknet#8656
    "CUDA Error: an illegal instruction was encountered: Resource temporarily unavailable",
    # NVIDIA/TensorRT-LLM#11313
    "Search for `cudaErrorIllegalInstruction' in "
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.",
    # facebookresearch/DeepSDF#40
    "RuntimeError: CUDA error: unspecified launch failure",
    # pytorch/pytorch#2567 (CUDA 8's number for cudaErrorLaunchFailure: the text decides)
    "RuntimeError: cuda runtime error (4) : unspecified launch failure at "
    "/home/ubuntu/pytorch/torch/lib/THC/THCTensorCopy.cu:85",
    # MegviiRobot/MegBA#43
    "  what():  after reduction step 1: cudaErrorMisalignedAddress: misaligned address",
)


@pytest.mark.parametrize("line", KERNEL_FAULTS)
def test_every_kernel_fault_is_an_illegal_memory_access(line: str) -> None:
    assert verdict_of(line)[0] == "illegal_memory_access"


def test_a_code_printed_in_hexadecimal_is_read_as_one() -> None:
    """A wrapper's `0x(?P<hexcode>...)` (FFmpeg's NVENC: "0x%x") expands to each code in hex:
    0x2 is CUDA_ERROR_OUT_OF_MEMORY, 0x64 (100) CUDA_ERROR_NO_DEVICE; 0x20 (32) is no code of
    a signature, 0x2a is not 0x2, and 2 written in decimal is not this wrapper's form."""
    line = "[h264_nvenc @ 0x7f61] Failed creating CUDA context for NVENC: "
    assert verdict_of(line + "0x2")[0] == "gpu_oom"
    assert verdict_of(line + "0X02")[0] == "gpu_oom"
    assert verdict_of(line + "0x64")[0] == "no_gpu_or_driver"
    assert verdict_of(line + "0x20")[0] == "unknown"
    assert verdict_of(line + "0x2a")[0] == "unknown"
    assert verdict_of(line + "2")[0] == "unknown"


def test_nvml_codes_are_read_from_the_table_like_cudas() -> None:
    """NVML's nvmlReturn_t (api `nvml`, from nvidia-ml-py's pynvml.py) by name, by pynvml's
    exception class and by number in ollama's wrappers; a code without a signature (3, Not
    Supported) and a number outside the enum stay unknown."""
    assert verdict_of("nvmlInit_v2 err: 18")[0] == "driver_library_mismatch"
    assert verdict_of("nvml vram init failure: 9")[0] == "no_gpu_or_driver"
    assert verdict_of("nvmlInit_v2 err: 15")[0] == "gpu_hardware_fault"
    assert verdict_of("nvmlInit_v2 err: 3")[0] == "unknown"
    assert verdict_of("nvmlInit_v2 err: 181")[0] == "unknown"
    assert (
        verdict_of(
            "pynvml.NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch."
        )[0]
        == "driver_library_mismatch"
    )
    assert verdict_of("pynvml.nvml.NVMLError_GpuIsLost: GPU is lost")[0] == "gpu_hardware_fault"
    assert verdict_of("NVML_ERROR_CORRUPTED_INFOROM")[0] == "gpu_hardware_fault"
    assert verdict_of("pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded")[0] == (
        "no_gpu_or_driver"
    )


def test_the_nvml_rows_come_from_pynvml() -> None:
    """tools/nvidia_errors.py reads pynvml.py's constants and the texts its NVMLError prints."""
    tool = load_tool("nvidia_errors")
    source = (
        "NVML_ERROR_DRIVER_NOT_LOADED         = 9\n"
        "NVML_ERROR_IN_USE                    = 19\n"
        "class NVMLError(Exception):\n"
        "    _errcode_to_string = {\n"
        '        NVML_ERROR_DRIVER_NOT_LOADED:   "Driver Not Loaded",\n'
        "        }\n"
    )
    assert tool._nvml(source) == [
        ("NVML_ERROR_DRIVER_NOT_LOADED", 9, "Driver Not Loaded"),
        ("NVML_ERROR_IN_USE", 19, ""),
    ]
    table = json.loads((ROOT / "harness/resources/nvidia_errors.json").read_text())
    nvml = {r["name"]: r for r in table["errors"] if r["api"] == "nvml"}
    assert nvml["NVML_ERROR_LIB_RM_VERSION_MISMATCH"]["code"] == 18
    assert nvml["NVML_ERROR_DRIVER_NOT_LOADED"]["signature"] == "no_gpu_or_driver"
    assert nvml["NVML_ERROR_NOT_SUPPORTED"]["signature"] is None


def test_kernel_faults_are_named_by_every_code_nvidia_gives_them() -> None:
    # no public log of 714 was found: its names and numbers come from NVIDIA's headers
    for line in (
        "RuntimeError: CUDA error: hardware stack error",
        "cudaErrorHardwareStackError",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA error 714: hardware stack error",
        "CUDA error 717: oops",
        "(CUDA error 719)",
    ):
        assert verdict_of(line)[0] == "illegal_memory_access", line


@pytest.mark.parametrize(
    ("line", "sig"),
    [
        # NVRTC without its builtins: WisconsinAIVision/yolact_edge#186, darglein/ADOP#63,
        # nanoporetech/dorado#1319
        (
            "RuntimeError: nvrtc: error: failed to open libnvrtc-builtins.so.11.1.",
            "cuda_runtime_missing",
        ),
        (
            "  what():  nvrtc: error: failed to open libnvrtc-builtins.so.11.2.",
            "cuda_runtime_missing",
        ),
        (
            "[2025-04-07 09:19:51.219] [warning] Caught Torch error 'nvrtc: error: failed to open "
            "libnvrtc-builtins.so.12.8.",
            "cuda_runtime_missing",
        ),
        # XLA without libdevice: jax-ml/jax#989, TensorFlow's pip install guide (Ubuntu 22.04)
        (
            "RuntimeError: Internal: libdevice not found at ./libdevice.10.bc",
            "cuda_runtime_missing",
        ),
        (
            "InternalError: libdevice not found at ./libdevice.10.bc [Op:__some_op]",
            "cuda_runtime_missing",
        ),
        # cudaErrorSystemNotReady (802): pytorch/pytorch#35710, haotian-liu/LLaVA#683,
        # microsoft/lisa#2823 (only a warning, and nothing failed after it)
        (
            "RuntimeError: cuda runtime error (802) : system not yet initialized at "
            "/opt/conda/conda-bld/pytorch_1579022034529/work/aten/src/THC/THCGeneral.cpp:50",
            "fabric_manager_not_running",
        ),
        (
            'CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "cudaSetDevice'
            '(currentDevice)" ',
            "fabric_manager_not_running",
        ),
        (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
            "functions before calling NumCudaDevices() that might have already set an error? "
            "Error 802: system not yet initialized",
            "fabric_manager_not_running",
        ),
        (
            "/home/l****t/.local/lib/python3.6/site-packages/torch/cuda/__init__.py:80: "
            "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did "
            "you run some cuda functions before calling NumCudaDevices() that might have already "
            "set an error? Error 802: system not yet initialized (Triggered internally at  "
            "../c10/cuda/CUDAFunctions.cpp:112.)",
            "fabric_manager_not_running",
        ),
    ],
)
def test_run_time_compiler_parts_and_a_system_not_ready(line: str, sig: str) -> None:
    assert verdict_of(line)[0] == sig


@pytest.mark.parametrize("case", CASES)
def test_the_verdict_does_not_depend_on_the_search_slice(case: str) -> None:
    """The block is searched a slice at a time; a needle across a slice's end is still found."""
    data = (LOGS / f"{case}.log").read_bytes()
    whole = classify_chunks([data], CATALOG)
    old = signatures.SLICE
    signatures.SLICE = 61  # a prime: slices end inside needles
    try:
        sliced = classify_chunks([data], CATALOG)
    finally:
        signatures.SLICE = old
    assert sliced == whole


def test_a_repeated_line_is_judged_again_with_a_new_neighbour() -> None:
    """Lines seen before are skipped only with the same lines around them: the same message
    wrapped onto a different next line is read again."""
    repeated = "ImportError: /usr/lib/libstdc++.so.6: version `GLIBCXX_3.4.3"
    v = classify(f"{repeated}\nok\n" * 3 + f"{repeated}\n0' not found\n", CATALOG)
    w = classify(f"{repeated}0' not found\n", CATALOG)
    assert v.signature == w.signature != "unknown"


def test_an_error_at_the_end_of_a_huge_line_across_slices_is_found() -> None:
    line = b"RuntimeError: CUDA error: out of memory; " * 60_000 + b"invalid device function\r\n"
    old = signatures.SLICE
    signatures.SLICE = 4099
    try:
        v = classify_chunks([line[i : i + 65536] for i in range(0, len(line), 65536)], CATALOG)
    finally:
        signatures.SLICE = old
    assert v.signature == "arch_unsupported"
    assert v.secondary == ("gpu_oom",)


def test_digit_blind_regexes_are_told_apart() -> None:
    assert all(map(digit_blind, [r"NCCL INFO ", r"^raise [\w.]+\(", r"\d{2}:\d+", r"[+-:]x{3}"]))
    assert not any(map(digit_blind, [r"libcuda\.so\.1", r"[0-5]", r"[^7]", r"(a)\1"]))


@pytest.mark.parametrize(
    ("regex", "expected"),
    [(r"out of memory \(\d\)", "unknown"), (r"out of memory \(7\)", "gpu_oom")],
)
def test_a_line_alike_but_for_its_digits_is_noise_only_by_its_own_digits(
    regex: str, expected: str
) -> None:
    """Noise decided once per shape (digits as 0) only where no noise regex names a digit."""
    catalog = dataclasses.replace(CATALOG, noise=(Pattern(regex=regex, needle="out of memory"),))
    text = "".join(f"RuntimeError: CUDA error: out of memory ({n})\n" for n in (7, 8))
    assert classify(text, catalog).signature == expected


def test_the_shipped_noise_rules_are_digit_blind() -> None:
    """One noise rule that names a digit turns off the per-shape shortcut for every log: a noise
    rule with "to 0" cut the classifier's speed on distinct lines to a quarter."""
    assert signatures._compiled(CATALOG).noise_blind


# ---------------------------------------------------------------- message families (issue 24)


def test_a_launcher_wrapper_is_never_the_decisive_line_when_the_nccl_error_inside_is_known() -> (
    None
):
    nccl = "[0] misc/socket.cc:71 NCCL WARN socketProgress: Connection closed by remote peer x<1>"
    for wrapper in (
        (
            "torch.multiprocessing.spawn.ProcessRaisedException:",
            "",
            "-- Process 0 terminated with the following error:",
        ),
        ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",),
    ):
        sig, line, _ = verdict_of(nccl, "Traceback (most recent call last):", *wrapper)
        assert (sig, line) == ("nccl_error", nccl[4:])


def test_the_bfc_allocators_not_a_failure_warning_is_no_oom_but_its_failure_is() -> None:
    warned = (
        "2020-06-01 20:07:58.089327: W tensorflow/core/common_runtime/bfc_allocator.cc:239] "
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate 45.53MiB with freed_by_count=0."
        " The caller indicates that this is not a failure, but may mean that there could be "
        "performance gains if more memory were available."
    )
    assert verdict_of(warned, "Epoch 1/10", "10/10 [====] - loss: 0.1") == ("unknown", None, ())
    failed = (
        "2024-01-01 10:00:00.1: W external/local_tsl/tsl/framework/bfc_allocator.cc:485] "
        "Allocator (GPU_0_bfc) ran out of memory trying to allocate 20.00MiB (rounded to "
        "20971520)requested by op Conv2D"
    )
    assert verdict_of(failed)[0] == "gpu_oom"


def test_container_toolkit_lines() -> None:
    # the toolkit's own info line is no failure
    assert verdict_of("Auto-detected mode as 'legacy'") == ("unknown", None, ())
    for line in (
        "nvidia-container-cli: detection error: nvml error: unknown error: unknown.",
        "nvidia-container-cli: ldcache error: open failed: /sbin/ldconfig.real: no such file",
    ):
        assert verdict_of(line)[0] == "container_gpu_access"
    too_old = "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.2, please"
    assert verdict_of(too_old)[0] == "driver_too_old"


def test_no_cuda_gpus_are_available_is_no_gpu() -> None:
    assert verdict_of("RuntimeError: No CUDA GPUs are available")[0] == "no_gpu_or_driver"


def test_cublas_create_internal_error_stays_unknown() -> None:
    """cublasCreate's CUBLAS_STATUS_INTERNAL_ERROR comes from out of memory, from a GPU the build
    has no code for and from driver/toolkit mismatches alike: no signature claims it."""
    line = (
        "RuntimeError: CUDA error: CUBLAS_STATUS_INTERNAL_ERROR when calling `cublasCreate(handle)`"
    )
    assert verdict_of(line)[0] == "unknown"


@pytest.mark.parametrize(
    ("lines", "sig"),
    [
        # NCCL's shared-memory transport (NVIDIA/nccl#342, #328; pytorch/torchtitan#853)
        (
            ["include/shm.h:28 NCCL WARN Call to posix_fallocate failed: No space left on device"],
            "shm_exhausted",
        ),
        (
            [
                "node08:27106:27302 [0] include/shm.h:27 NCCL WARN Call to shm_open failed : "
                "Permission denied"
            ],
            "shm_exhausted",
        ),
        (
            [
                "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                "NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for details), "
                "NCCL version 2.20.5",
                "ncclSystemError: System call (e.g. socket, malloc) or external library call "
                "failed or device error.",
                "Last error:",
                "Error while creating shared memory segment /dev/shm/nccl-1YsMbG (size 7340384)",
            ],
            "shm_exhausted",
        ),
        # the driver and its kernel module disagree, as libnvidia-container and the kernel say it
        # (saharmor/dalle-playground#104)
        (
            [
                "nvidia-container-cli: initialization error: nvml error: driver/library version "
                "mismatch: unknown"
            ],
            "driver_library_mismatch",
        ),
        (
            [
                "NVRM: API mismatch: the client has the version 515.48.07, but",
                "NVRM: this kernel module has the version 510.73.05.  Please",
            ],
            "driver_library_mismatch",
        ),
        # NVIDIA's Kubernetes device plugin without NVML in its pod (NVIDIA/k8s-device-plugin#23,
        # awslabs/amazon-eks-ami#1744)
        (
            ["loading NVML", "Failed to start nvml with error:  could not load NVML library"],
            "container_gpu_access",
        ),
        (
            [
                "E0402 12:47:47.247405       1 factory.go:112] Incompatible platform detected",
                "E0402 12:47:47.247409       1 factory.go:113] If this is a GPU node, did you "
                "configure the NVIDIA Container Toolkit?",
            ],
            "container_gpu_access",
        ),
        # XLA's replica failed on exhausted device memory, the message wrapped (jax-ml/jax#788)
        (
            [
                "2019-06-13 01:17:08.886805: E external/org_tensorflow/tensorflow/compiler/xla/"
                "python/local_client.cc:672] Execution of replica 0 failed: Resource exhausted: "
                "Out ",
                "of memory while trying to allocate 5520758552 bytes.",
            ],
            "gpu_oom",
        ),
        # cuDNN 8's status names, and as a binding spells them (rbgirshick/fast-rcnn#44,
        # hannes-brt/cudnn-python-wrappers#11)
        (
            [
                "F0601 cudnn_conv_layer.cpp:32] Check failed: status == CUDNN_STATUS_SUCCESS "
                "(6 vs. 0)  CUDNN_STATUS_ARCH_MISMATCH"
            ],
            "arch_unsupported",
        ),
        (
            ["    raise cudnnExceptions[status]", "libcudnn.cudnnStatusArchMismatch"],
            "arch_unsupported",
        ),
        (["RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED"], "gpu_oom"),
        # torch's NCCL watchdog as its C++ prints it, and nccl-tests' check (instructlab/training
        # #520, NVIDIA/nccl#473)
        (
            [
                "terminate called after throwing an instance of 'c10::DistBackendError'",
                "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread "
                "terminated with exception: [Rank 3] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                "Timeout(ms)=1) ran for 90 milliseconds before timing out.",
            ],
            "nccl_error",
        ),
        (["fastmoe: Test NCCL failure common.cu:777 'unhandled system error'"], "nccl_error"),
        # JAX: a CUDA library its plugin cannot load, and no GPU backend at all (magenta/mt3#145,
        # kuprel/min-dalle#22)
        (
            [
                "WARNING:jax._src.xla_bridge:CUDA backend failed to initialize: Unable to load "
                "CUDA. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)"
            ],
            "cuda_runtime_missing",
        ),
        (
            [
                "RuntimeError: Unable to initialize backend 'cuda': Unable to load cuSPARSE. Is "
                "it installed? (you may need to uninstall the failing plugin package)"
            ],
            "cuda_runtime_missing",
        ),
        (
            [
                "WARNING:absl:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 "
                "and rerun for more info.)"
            ],
            "no_gpu_or_driver",
        ),
        # the second round of unseen threads: nvidia-smi without its kernel module
        # (CachyOS/linux-cachyos#118)
        (
            [
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                "Make sure that the latest NVIDIA driver is installed and running."
            ],
            "no_gpu_or_driver",
        ),
        # XLA without ptxas (its own message; older jaxlib's NOT_FOUND)
        (
            [
                "jaxlib.xla_extension.XlaRuntimeError: UNAVAILABLE: No PTX compilation provider "
                "is available. Neither ptxas/nvlink nor nvjtlink is available."
            ],
            "cuda_runtime_missing",
        ),
        (
            [
                "jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: Couldn't find a suitable "
                "version of ptxas. The following locations were considered: /usr/local/cuda/bin"
            ],
            "cuda_runtime_missing",
        ),
        # bfloat16 on a GPU cuBLAS has no such kernel for (opendatalab/MinerU#1508); the status
        # alone, without bfloat16, names no cause
        (
            [
                "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling "
                "`cublasGemmStridedBatchedEx(handle, opa, opb, (int)m, (int)n, (int)k, "
                "(void*)&falpha, a, CUDA_R_16BF, (int)lda, stridea, b, CUDA_R_16BF, (int)ldb, "
                "strideb, (void*)&fbeta, c, CUDA_R_16BF, (int)ldc, stridec, (int)num_batches, "
                "compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`"
            ],
            "arch_unsupported",
        ),
        (
            [
                "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling "
                "`cublasSgemm(handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`"
            ],
            "unknown",
        ),
        # the third round: Windows DLLs torch preloads, and cuDNN's zlib (pytorch/builder#955,
        # PaddlePaddle/PaddleOCR#8400)
        (
            [
                "OSError: [WinError 126] The specified module could not be found. Error loading "
                '"C:\\w\\b\\windows\\conda\\envs\\testenv\\lib\\site-packages\\torch\\lib\\'
                'cudnn_cnn_infer64_8.dll" or one of its dependencies.'
            ],
            "cudnn_missing",
        ),
        (
            [
                "OSError: [WinError 126] The specified module could not be found. Error loading "
                '"C:\\Python310\\lib\\site-packages\\torch\\lib\\caffe2_nvrtc.dll" or one of its '
                "dependencies."
            ],
            "cuda_runtime_missing",
        ),
        (
            ["Could not locate zlibwapi.dll. Please make sure it is in your library path!"],
            "cudnn_missing",
        ),
        # the stub libcuda as TF/XLA number cuInit's failure (jax-ml/jax#7600); another number
        # is no driver still
        (["failed call to cuInit: UNKNOWN ERROR (34)"], "stub_driver"),
        (["failed call to cuInit: UNKNOWN ERROR (303)"], "no_gpu_or_driver"),
        # a CUDA extension built without the toolkit (deepspeedai/DeepSpeed#3411)
        (
            [
                "op_builder.builder.MissingCUDAException: CUDA_HOME does not exist, unable to "
                "compile CUDA op(s)"
            ],
            "cuda_runtime_missing",
        ),
        (
            [
                "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA "
                "install root."
            ],
            "cuda_runtime_missing",
        ),
        (
            [
                "/opt/conda/lib/python3.8/site-packages/deepspeed/ops/csrc/includes/"
                "custom_cuda_layers.h:12:10: fatal error: curand_kernel.h: No such file or "
                "directory",
                "ninja: build stopped: subcommand failed.",
            ],
            "cuda_runtime_missing",
        ),
        # Apptainer --nv on a host with no driver; NCCL's InfiniBand transport giving up
        # (NVIDIA/nccl#1664)
        (
            [
                "INFO:    Could not find any NVIDIA binaries on this host!",
                "WARNING: Could not find any NVIDIA libraries on this host!",
            ],
            "no_gpu_or_driver",
        ),
        (
            [
                "NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 "
                "len=32696 vendor err 129 (Send)"
            ],
            "nccl_error",
        ),
    ],
)
def test_the_families_of_issue_24s_unseen_threads(lines: list[str], sig: str) -> None:
    assert verdict_of(*lines)[0] == sig


# Issue 24's fourth round: the three signatures the third round lacked (NVIDIA's enum texts and
# numbers, today's and CUDA 10's; the Xid catalog; XLA's and torch's own messages), then the
# families of the round's misses (each from the component that prints it).
FOURTH_ROUND = [
    (["RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"], "gpu_busy"),
    (
        [
            "THCudaCheck FAIL file=THCStorage.cu line=66 error=46 : all CUDA-capable devices are "
            "busy or unavailable"
        ],
        "gpu_busy",
    ),
    (["cudaErrorDevicesUnavailable"], "gpu_busy"),
    (["failed call to cuCtxCreate: CUDA_ERROR_DEVICE_UNAVAILABLE"], "gpu_busy"),
    (["RuntimeError: CUDA error: uncorrectable ECC error encountered"], "gpu_hardware_fault"),
    (
        [
            "RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
            "x.cpp:265"
        ],
        "gpu_hardware_fault",
    ),
    (["CUDA error 214: cudaErrorECCUncorrectable"], "gpu_hardware_fault"),
    (
        ["Cuda failure 'uncorrectable NVLink error detected during the execution'"],
        "gpu_hardware_fault",
    ),
    (
        ["[ 269.5] NVRM: Xid (PCI:0000:2b:00): 79, pid=1, GPU has fallen off the bus."],
        "gpu_hardware_fault",
    ),
    (
        ["NVRM: Xid (PCI:0000:10:1c): 95, pid=1896, Uncontained: FBHUB. RST: Yes"],
        "gpu_hardware_fault",
    ),
    (
        [
            "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the "
            "system to recover this GPU"
        ],
        "gpu_hardware_fault",
    ),
    (["RuntimeError: CUDA error: invalid device ordinal"], "invalid_device_ordinal"),
    (
        ["RuntimeError: cuda runtime error (10) : invalid device ordinal at Module.cpp:33"],
        "invalid_device_ordinal",
    ),
    (
        ["InvalidArgumentError: Invalid device ordinal value (1). Valid range is [0, 0]."],
        "invalid_device_ordinal",
    ),
    (
        [
            "RuntimeError: Attempting to deserialize object on CUDA device 2 but "
            "torch.cuda.device_count() is 1. Please use torch.load with map_location"
        ],
        "invalid_device_ordinal",
    ),
    (["nvidia-container-cli: device error: 1: unknown device: unknown"], "invalid_device_ordinal"),
    (
        [
            "RuntimeError: (PreconditionNotMet) The third-party dynamic library (cudnn64_7.dll) "
            "that Paddle depends on is not configured correctly. (error code is 126)"
        ],
        "cudnn_missing",
    ),
    (
        [
            "PreconditionNotMetError: The third-party dynamic library "
            "(cublas64_118.dll;cublas64_11.dll) that Paddle depends on is not configured "
            "correctly. (error code is 126)"
        ],
        "cuda_runtime_missing",
    ),
    (["error: Can't find libdevice directory ${CUDA_DIR}/nvvm/libdevice"], "cuda_runtime_missing"),
    (
        [
            "W0000 00:00:1739677334.594935 3089 gpu_backend_lib.cc:617] libdevice is required by "
            "this HLO module but was not found at ./libdevice.10.bc"
        ],
        "cuda_runtime_missing",
    ),
    (
        [
            "Non-zero status code returned while running ReduceSum node. onnxruntime::BFCArena::"
            "AllocateRawInternal Failed to allocate memory for requested buffer of size 939524096"
        ],
        "gpu_oom",
    ),
    (
        [
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine."
        ],
        "gpu_oom",
    ),
    (["/usr/local/cuda/lib64/libcudnn.so: file not recognized: File truncated"], "corrupt_library"),
    (
        [
            "RuntimeError: cuDNN version incompatibility: PyTorch was compiled against (8, 3, 2) "
            "but linked against (8, 0, 3)"
        ],
        "cudnn_version_mismatch",
    ),
    (
        [
            "RuntimeError: DataLoader worker (pid 47) is killed by signal: Bus",
            "error. It is possible that dataloader's workers are out of shared",
            "memory. Please try to raise your shared memory limit.",
        ],
        "shm_exhausted",
    ),
    (
        [
            "ERROR: LoadError: CUDA 10.0 is not supported by",
            "your driver (which supports up to 9.0)",
        ],
        "driver_too_old",
    ),
    (["Failed to initialize NVML: Function Not Found"], "driver_library_mismatch"),
    (["Error! Bad return status for module build on kernel: 5.13.18 (x86_64)"], "no_gpu_or_driver"),
    (
        ["UnknownError (see above for traceback): ncclCommInitRank failed: unhandled cuda error"],
        "nccl_error",
    ),
    (
        [
            "docker: Error response from daemon: OCI runtime create failed: "
            'container_linux.go:349: starting container process caused "exec: \\"nvidia-smi\\": '
            "executable file not found "
            'in $PATH": unknown.'
        ],
        "container_gpu_access",
    ),
]


# The fifth round's families, each from the component that prints it.
FIFTH_ROUND = [
    (
        [
            "CUDA error 222 at ggml-cuda.cu:1835: the provided PTX was compiled with an "
            "unsupported toolchain."
        ],
        "driver_too_old",
    ),
    (["CUDA_ERROR_UNSUPPORTED_PTX_VERSION"], "driver_too_old"),
    (
        ["Error: llama runner process has terminated: signal: illegal instruction (core dumped)"],
        "arch_unsupported",
    ),
    (
        ["cupy_backends.cuda.libs.nccl.NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error"],
        "nccl_error",
    ),
    (
        [
            "F0426 19:12:07.087769 28996 hl_cuda_cudnn.cc:171] Check failed: [cudnn init] "
            "libcudnn v7 with header v5 unmatched!"
        ],
        "cudnn_version_mismatch",
    ),
    (["Return value 46 from 'cudaStreamCreate(&kernel_stream)'.  Exiting."], "gpu_busy"),
    (
        ["stderr: nvidia-container-cli: initialization error: nvml error: driver not loaded"],
        "no_gpu_or_driver",
    ),
    (
        [
            "stderr: nvidia-container-cli: initialization error: load library failed: "
            "libnvidia-ml.so.1: cannot open shared object file"
        ],
        "container_gpu_access",
    ),
    (
        ["nvidia-container-cli: initialization error: nvml error: driver/library version mismatch"],
        "driver_library_mismatch",
    ),
    (
        [
            "cv2.error: OpenCV(4.4.0) private.cuda.hpp:106: error: (-216:No CUDA support) The "
            "library is compiled without CUDA support in function 'throw_no_cuda'"
        ],
        "no_gpu_or_driver",
    ),
    (
        [
            "numba.cuda.cudadrv.error.NvvmSupportError: libNVVM cannot be found. Do `conda install "
            "cudatoolkit`:"
        ],
        "cuda_runtime_missing",
    ),
    (
        [
            "error: command '/usr/local/cuda-10.0:/bin/nvcc' failed with exit status 1",
            "unable to execute '/usr/local/cuda-10.0:/bin/nvcc': No such file or directory",
        ],
        "cuda_runtime_missing",
    ),
    (
        ["Exception: Error compiling program: nvrtc: error: failed to load builtins"],
        "cuda_runtime_missing",
    ),
    (
        [
            'Thread 787 "python" received signal SIGBUS, Bus error.',
            "0x00007f6b59544f3b in ncclShmOpen(char*, unsigned long, void**, void**, int) ()",
        ],
        "shm_exhausted",
    ),
    (
        [
            "mxnet.base.MXNetError: Check failed: exec_ctx.dev_id < device_count_ (1 vs. 1) "
            "Invalid GPU Id: 1, Valid device id should be less than device_count: 1"
        ],
        "invalid_device_ordinal",
    ),
]


# The sixth round's families, each in the words of the component's source (the comments in
# scenarios/signatures.yaml name them).
SIXTH_ROUND = [
    (["RuntimeError: Library cublas64_11.dll is not found or cannot be loaded"],
     "cuda_runtime_missing"),
    (["RuntimeError: Library libcublas.so.12 is not found or cannot be loaded"],
     "cuda_runtime_missing"),
    (["RuntimeError: (PreconditionNotMet) Cannot load cudnn shared library. Cannot invoke "
      "method cudnnGetVersion."], "cudnn_missing"),
    (["[E] Error[9]: IBuilder::buildSerializedNetwork: Error Code 9: API Usage Error (Target GPU "
      "SM 61 is not supported by this TensorRT release.)"], "arch_unsupported"),
    (["[F] [TRT] Assertion failed: Unsupported SM."], "arch_unsupported"),
    (["ggml_init_cublas: no CUDA devices found, CUDA will be disabled"], "no_gpu_or_driver"),
    (["[188497.595099] NVRM: No NVIDIA graphics adapter probed!"], "no_gpu_or_driver"),
    (["NVRM: The NVIDIA probe routine was not called for 2 device(s)."], "no_gpu_or_driver"),
    (["[rank3]:[W101 00:00:00.000000000 socket.cpp:489] [c10d] waitForInput: socket "
      "SocketImpl(fd=9, addr=[node1]:5000, remote=[node0]:29500) timed out after 600000ms"],
     "timeout"),
    (["torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 3/4 "
      "clients joined."], "timeout"),
    (["failed: INTERNAL: NCCL operation ncclGroupEnd() failed: unhandled system error. 'Error",
      "while creating shared memory segment /dev/shm/nccl-abc123 (size 9437184), error: No space"],
     "shm_exhausted"),
    (['docker: Error response from daemon: could not select device driver "cdi" with '
      "capabilities: []."], "container_gpu_access"),
    (["NCCL failure common.cu:512 'unhandled system error'"], "nccl_error"),
    (["NVRM: Xid (PCI:0000:41:00): 119, pid=812, name=python3, Timeout after 6s of waiting for "
      "RPC response from GPU1 GSP!"], "gpu_hardware_fault"),
    (["NVRM: nvAssertFailedNoLog: Assertion failed: Back to back GSP RPC timeout detected! GPU "
      "marked for reset @ kernel_gsp.c:1900"], "gpu_hardware_fault"),
    (["[2024-01-01 00:00:00] CUDA error: error code 34"], "stub_driver"),
]  # fmt: skip


SEVENTH_ROUND = [
    (["numba.cuda.cudadrv.driver.LinkerError: [222] Call to cuLinkAddData results in "
      "UNKNOWN_CUDA_ERROR"], "driver_too_old"),
    (["ERROR: This container was built for NVIDIA Driver Release 530.30 or later, but",
      "       version 470.82 was detected and compatibility mode is UNAVAILABLE."],
     "driver_too_old"),
    (["       [[CUDA Driver UNAVAILABLE (cuInit(0) returned 804)]]"], "driver_too_old"),
    (["RuntimeError: This cuML installation is missing the necessary PTX files that are <=60."],
     "arch_unsupported"),
    (["NVRTC compilation error: nvrtc: error: invalid value for --gpu-architecture (-arch)"],
     "arch_unsupported"),
    (["CUDA Error: out of memory"], "gpu_oom"),
    (["pynvml.NVMLError: NVML_ERROR_LIB_RM_VERSION_MISMATCH"], "driver_library_mismatch"),
    (["[enforce fail at common_cudnn.h:102] version_match. cuDNN compiled (7605) and runtime "
      "(7102) versions mismatch"], "cudnn_version_mismatch"),
    (["[10:00:00] src/storage/storage.cc:118: Compile with USE_CUDA=1 to enable GPU usage"],
     "no_gpu_or_driver"),
    (["[ WARN:0] global dnn.cpp (1429) setUpNet DNN module was not built with CUDA backend; "
      "switching to CPU"], "no_gpu_or_driver"),
    (["ImportError: Could not find 'cudart64_90.dll'. TensorFlow requires that this DLL be "
      "installed in a directory that is named in your %PATH% environment variable."],
     "cuda_runtime_missing"),
    (["ImportError: Could not find 'cudnn64_7.dll'. TensorFlow requires that this DLL be "
      "installed in a directory that is named in your %PATH% environment variable."],
     "cudnn_missing"),
    (["node2:811:900 [1] include/socket.h:361 NCCL WARN Call to connect timeout : Connection "
      "refused"], "nccl_error"),
]  # fmt: skip


EIGHTH_ROUND = [
    (["amrex::Abort::0::CUDA error 2 in file ../Src/Base/AMReX_Arena.cpp line 201: out of "
      "memory !!!"], "gpu_oom"),
    (["Exception: Error initializing FFT: 2"], "gpu_oom"),
    (["cufft: CUFFT_ALLOC_FAILED"], "gpu_oom"),
    (["E external/xla/xla/stream_executor/cuda/cuda_blas.cc:190] failed to create cublas "
      "handle: CUBLAS_STATUS_NOT_INITIALIZED"], "gpu_oom"),
    (["RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling "
      "`cublasCreate(handle)`"], "gpu_oom"),
    (["Uncaught exception: Turing Tensor Core operations must be run on a machine with compute "
      "capability at least 75."], "arch_unsupported"),
    (['Error: DriverError(CUDA_ERROR_NOT_FOUND, "named symbol not found") when loading '
      "affine_bf16"], "arch_unsupported"),
    (["RuntimeError: This version of jaxlib was built using AVX instructions, which your CPU "
      "and/or operating system do not support."], "arch_unsupported"),
    (["The TensorFlow library was compiled to use AVX instructions, but these aren't available "
      "on your machine."], "arch_unsupported"),
    (["  CUDA enabled but no NVIDIA GPU architecture currently enabled and"],
     "no_gpu_or_driver"),
    (["UserWarning: Specified provider 'CUDAExecutionProvider' is not in available provider "
      "names.Available providers: 'CPUExecutionProvider'"], "no_gpu_or_driver"),
    (["jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
      "PjRT_Client_Connect"], "timeout"),
]  # fmt: skip
NINTH_ROUND = [
    (["nvcc fatal   : Unsupported gpu architecture 'compute_89'"], "arch_unsupported"),
    (["UserWarning: Found GPU0 Quadro K4000 which is of cuda capability 3.0.",
      "    PyTorch no longer supports this GPU because it is too old."], "arch_unsupported"),
    (["trtexec: error while loading shared libraries: libnvinfer.so.8: cannot open shared "
      "object file: No such file or directory"], "cuda_runtime_missing"),
    (["        libcublasLt.so.12 => not found"], "cuda_runtime_missing"),
    (["ptxas application ptx input, line 9; fatal   : Unsupported .version 8.3; current version "
      "is '8.1'"], "driver_too_old"),
    (["ValueError: failed to create device: MAX doesn't support your current NVIDIA GPU driver. "
      "MAX requires a minimum driver version of 550 and CUDA version 12.4."], "driver_too_old"),
    (["ERROR: for train  Cannot create container for service train: Unknown runtime specified "
      "nvidia"], "container_gpu_access"),
    (["RuntimeError: operator torchvision::roi_align does not exist"], "undefined_symbol"),
    (["RuntimeError: No such operator torchvision::nms"], "undefined_symbol"),
    (["OSError: libtorch_cuda.so: cannot open shared object file: No such file or directory"],
     "undefined_symbol"),
]  # fmt: skip
# Round ten: each line as its source writes it (ollama's discover/gpu_info_*.c formats, glog's
# CHECK_EQ text with a CUresult, nvidia-docker 1.x's check, XLA's platform manager, ggml's
# CUDA error report), not as a collected log has it.
TENTH_ROUND = [
    (["time=2025-01-01T00:00:00.000Z level=INFO source=gpu.go:612 msg=\"Unable to load cudart "
      "library /usr/lib/x86_64-linux-gnu/libcuda.so.570.00.00: cuda driver library init failure: "
      "100\""], "no_gpu_or_driver"),
    (["msg=\"Unable to load cudart library libcudart.so.12: cudart init failure: 100\""],
     "no_gpu_or_driver"),
    (["msg=\"Unable to load cudart library /usr/lib/ollama/cuda_v12/libcudart.so.12: your nvidia "
      "driver is too old or missing.  If you have a CUDA GPU please upgrade to run ollama\""],
     "driver_too_old"),
    (["msg=\"unable to load cuda driver library\" library=nvcuda.dll error=\"symbol lookup for "
      "cuCtxCreate_v3 failed: The specified procedure could not be found.\""], "driver_too_old"),
    (["F0101 00:00:00.000000 1 cuda_driver.cc:100] Check failed: CUDA_SUCCESS == "
      "cuCtxSetCurrent(context) (0 vs. 216)"], "gpu_busy"),
    (["Check failed: CUDA_SUCCESS == cuMemAlloc(&ptr, bytes) (0 vs. 2)"], "gpu_oom"),
    (["nvidia-docker | 2016/04/21 21:41:35 Error: unsupported CUDA version: driver 7.0 < image "
      "7.5"], "driver_too_old"),
    (["Error: unsupported CUDA version: driver 0.0 < image 8.0.61"], "no_gpu_or_driver"),
    (["RuntimeError: Unable to initialize backend 'cuda': NOT_FOUND: Could not find registered "
      "platform with name: \"cuda\". Available platform names are: Host Interpreter"],
     "no_gpu_or_driver"),
    (["CUDA error: CUBLAS_STATUS_NOT_INITIALIZED",
      "  current device: 0, in function cublas_handle at ggml/src/ggml-cuda/common.cuh:663",
      "  cublasCreate_v2(&cublas_handles[device])"], "gpu_oom"),
]  # fmt: skip
# Round eleven: Windows' loader error 193 as Python raises it, the web UI's torch check as it
# prints the failed command, TensorRT-LLM's and FasterTransformer's CUDA checks, the NGC
# containers' GPU check (its two lines), and Cython's ValueError for a numpy struct that shrank.
ELEVENTH_ROUND = [
    (["OSError: [WinError 193] %1 is not a valid Win32 application. Error loading "
      "\"C:\\venv\\lib\\site-packages\\torch\\lib\\c10.dll\" or one of its dependencies."],
     "corrupt_library"),
    (["RuntimeError: Error running command.",
      "Command: \"C:\\sd\\venv\\Scripts\\python.exe\" -c \"import torch; assert "
      "torch.cuda.is_available(), 'Torch is not able to use GPU; add --skip-torch-cuda-test to "
      "COMMANDLINE_ARGS variable to disable this check'\"",
      "Error code: 1"], "no_gpu_or_driver"),
    (["RuntimeError: [TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMalloc(ptr, n): out of "
      "memory (/src/cpp/include/tensorrt_llm/common/cudaUtils.h:157)"], "gpu_oom"),
    (["terminate called after throwing an instance of 'std::runtime_error'",
      "  what():  [FT][ERROR] CUDA runtime error: out of memory /src/fastertransformer/utils/"
      "allocator.h:181"], "gpu_oom"),
    (["WARNING: Detected NVIDIA GeForce RTX 5090 GPU, which is not yet supported in this "
      "version of the container",
      "ERROR: No supported GPU(s) detected to run this container"], "arch_unsupported"),
    (["ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 "
      "from C header, got 88 from PyObject"], "numpy_abi"),
]  # fmt: skip
# Round twelve (its "before" kept as the hold-out of the eleventh round's catalog): GNU ld's
# missing -l, FFmpeg's and DALI's video libraries, CTranslate2's and Vulkan's out of memory,
# MuJoCo's EGL, torch.compile's Triton minimum.
TWELFTH_ROUND = [
    (["/usr/bin/ld: cannot find -lcublas: No such file or directory"], "cuda_runtime_missing"),
    (["[h264_cuvid @ 0x55d0c0] Cannot load libnvcuvid.so.1",
      "[h264_cuvid @ 0x55d0c0] Failed loading nvcuvid."], "container_gpu_access"),
    (["[hevc_nvenc @ 0x5610] Cannot load libnvidia-encode.so.1"], "container_gpu_access"),
    (["RuntimeError: Critical error when building pipeline: Error when constructing operator: "
      "readers__Video encountered: Assert on \"lib_handle_\" failed: Failed to load "
      "libnvcuvid.so, needed by the VideoReader operator."], "container_gpu_access"),
    (["RuntimeError: CUDA failed with error out of memory"], "gpu_oom"),
    (["vkAllocateMemory failed: VK_ERROR_OUT_OF_DEVICE_MEMORY"], "gpu_oom"),
    (["ImportError: Cannot initialize a EGL device display. This likely means that your EGL "
      "driver does not support the PLATFORM_DEVICE extension, which is required for creating a "
      "headless rendering context."], "no_gpu_or_driver"),
    (["RuntimeError: Found Tesla P100-PCIE-16GB which is too old to be supported by the triton "
      "GPU compiler, which is used as the backend. Triton only supports devices of CUDA "
      "Capability >= 7.0, but your device is of CUDA capability 6.0"], "arch_unsupported"),
]  # fmt: skip
THIRTEENTH_ROUND = [
    (["zeyer@cn-234 ~ % nvidia-smi",
      "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error"],
     "gpu_hardware_fault"),
    (["WARNING: The NVIDIA Driver was not detected.  GPU functionality will not be available.",
      "   Use 'nvidia-docker run' to start this container; see"], "container_gpu_access"),
    (['"segfault at 0 ip 00007fce957b5216 sp 00007fccd9ff1480 error 4 in '
      '_pywrap_tensorflow_internal.so[7fce90acb000+2aa45000]"'], "native_crash"),
    (["2024/01/14 19:50:06 gpu.go:138: CUDA GPU is too old. Falling back to CPU mode. Compute "
      "Capability detected: 5.2"], "arch_unsupported"),
    (["/x/cudf/utils/gpu_utils.py:88: UserWarning: A GPU with NVIDIA Pascal\u2122 (Compute "
      "Capability 6.0) or newer architecture is required."], "arch_unsupported"),
    (["ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'"], "arch_unsupported"),
    (["Error: timed out waiting for llama runner to start - progress 0.00 -"], "timeout"),
    (["d13186ffee3a:57:75 [0] misc/topo.cc:22 NCCL WARN Could not find real path of "
      "/sys/class/pci_bus/0000:02/../../0000:02:00.0",
      "d13186ffee3a:57:75 [0] NCCL INFO init.cc:876 -> 2"], "nccl_error"),
    (["ggml_backend_cuda_buffer_type_alloc_buffer: allocating 35533.34 MiB on device 0: "
      "cudaMalloc failed: out of memory"], "gpu_oom"),
    (['level=DEBUG source=gpu.go:533 msg="Unable to load cudart" library=/usr/lib/libcudart.so '
      'error="cudart init failure: 999"'], "no_gpu_or_driver"),
    (["E tensorflow/stream_executor/cuda/cuda_dnn.cc:319] Loaded runtime CuDNN l",
      "ibrary: 7.4.1 but source was compiled with: 7.6.4.  CuDNN library major and minor"],
     "cudnn_version_mismatch"),
]  # fmt: skip
FOURTEENTH_ROUND = [
    # (torch.autocast's "but CUDA is not available. Disabling" was here as no driver; since round
    # 78 it is no failure alone: SEVENTY_EIGHTH_ROUND and test_benign_lines_of_round_78_...)
    (["Fra:0 Mem:44.57M (Peak 44.57M) | Time:00:00.12 | Scene | Initializing",
      "Error: Found no Cycles device of the specified type"], "no_gpu_or_driver"),
    (["nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02 don't "
      "match with driver version 530.41.03. Please update with matching NVIDIA driver package."],
     "fabric_manager_not_running"),
    (["[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0",
      "               NVRM: (PCI ID: 10de:26b5) installed in this system has",
      "               NVRM: fallen off the bus and is not responding to commands."],
     "gpu_hardware_fault"),
    (["Illegal address in CUDA queue copy_from_device (integrator_shade_surface)"],
     "illegal_memory_access"),
    (["RuntimeError: cuBLAS failed with status CUBLAS_STATUS_NOT_SUPPORTED"], "arch_unsupported"),
    (["RuntimeError: CUDA error: the launch timed out and was terminated"], "timeout"),
]  # fmt: skip
FIFTEENTH_ROUND = [
    (["Could not load library libcudnn_cnn_train.so.8. Error: /usr/local/cuda/lib64/libcudnn_cnn_"
      "train.so.8: undefined symbol: _ZN5cudnn3cnn5infer22queryClusterPropertiesERPhS3_, version "
      "libcudnn_cnn_infer.so.8"], "cudnn_version_mismatch"),
    (["RuntimeError: Internal Triton PTX codegen error:",
      "ptxas /tmp/filelSnH8K, line 6; error   : PTX .version 7.4 does not support .target sm_89",
      "ptxas fatal   : Ptx assembly aborted due to errors"], "arch_unsupported"),
    (["RuntimeError: jaxlib/cuda/versions_helpers.cc:81: operation cusparseGetProperty("
      "MAJOR_VERSION, &major) failed: The cuSPARSE library was not found."],
     "cuda_runtime_missing"),
    (["Resolving Linux kernel version...", "Could not resolve Linux kernel version",
      "Stopping NVIDIA persistence daemon..."], "no_gpu_or_driver"),
    (["2025-04-22 11:29:23.766139: W external/xla/xla/stream_executor/cuda/cuda_asm_compiler.cc:"
      "280] Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 12.0",
      "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to load PTX text as a module: "
      "CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid"], "arch_unsupported"),
]  # fmt: skip
SIXTEENTH_ROUND = [
    (["trt_infer: 6: The engine plan file is generated on an incompatible device, expecting "
      "compute 7.2 got compute 8.7, please rebuild."], "arch_unsupported"),
    (["RuntimeError: FlashAttention only supports Ampere GPUs or newer."], "arch_unsupported"),
    (["    The CUDA driver was found, but it is too old. The CUDA driver on your system supports "
      "CUDA version 5.5. The required CUDA version"], "driver_too_old"),
    (["d:\\a\\koboldcpp\\ggml\\src\\ggml-cuda\\mmv.cu:51: ERROR: CUDA kernel mul_mat_vec has no "
      "device code compatible with CUDA arch 520. ggml-cuda.cu was compiled for: 600"],
     "arch_unsupported"),
    (["  File \"~/cuda/_cuda/ccuda.pyx:424, in cuda._cuda.ccuda.cuPythonInit()",
      "RuntimeError: Failed to dlopen libcuda.so"], "no_gpu_or_driver"),
    (["CUDA SETUP: WARNING! libcuda.so not found! Do you have a CUDA driver installed? If you are "
      "on a cluster, make sure you are on a CUDA machine!"], "no_gpu_or_driver"),
    (["Unable to determine the device handle for GPU0: 0000:C1:00.0: Unknown Error",
      "No devices were found"], "no_gpu_or_driver"),
    (["Failed to initialize NVML: GPU access blocked by the operating system"], "no_gpu_or_driver"),
    (['OSError: [WinError 127] The specified procedure could not be found. Error loading "C:\\x\\'
      'site-packages\\nvidia\\cudnn\\bin\\cudnn_cnn64_9.dll" or one of its dependencies.'],
     "cudnn_version_mismatch"),
    (['OSError: [WinError 127] The specified procedure could not be found. Error loading "C:\\x\\'
      'site-packages\\torch\\lib\\c10_cuda.dll" or one of its dependencies.'], "undefined_symbol"),
    (['2024-08-16 15:41:33.79 [E:onnxruntime:Default, provider_bridge_ort.cc:1992 onnxruntime::'
      'TryGetProviderInfo_CUDA] provider_bridge_ort.cc:1637 onnxruntime::ProviderLibrary::Get '
      '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
      '"C:\\env\\lib\\site-packages\\onnxruntime\\capi\\onnxruntime_providers_cuda.dll"'],
     "cuda_runtime_missing"),
]  # fmt: skip
SEVENTEENTH_ROUND = [
    (["DLL load failed while importing exllamav2_ext: The specified procedure could not be found."],
     "undefined_symbol"),
    (["RuntimeError: GPUs with compute capability below 7.0 are not supported."],
     "arch_unsupported"),
    (["  - package cudatoolkit-11.6.0-habf752d_9 has constraint __cuda >=11.6.0 conflicting with "
      "__cuda-10.2-0"], "driver_too_old"),
    (["modprobe: ERROR: could not insert 'nvidia': Key was rejected by service"],
     "no_gpu_or_driver"),
    (["Kernel module load error: Operation not permitted"], "no_gpu_or_driver"),
    (["   ERROR: modpost: GPL-incompatible module nvidia.ko uses GPL-only symbol '__rcu_read_lock'",
      "make: *** [Makefile:82: modules] Error 2"], "no_gpu_or_driver"),
    (['    raise RuntimeError("Failed to infer device type")',
      "RuntimeError: Failed to infer device type"], "no_gpu_or_driver"),
]  # fmt: skip
EIGHTEENTH_ROUND = [
    (['GpuArrayException: Could not load "nvrtc64_70.dll": The specified module could not be '
      "found."], "cuda_runtime_missing"),
]  # fmt: skip
# The nineteenth round's families, each from the component that prints it (the comments in
# scenarios/signatures.yaml name the source).
NINETEENTH_ROUND = [
    (["Allocation on device 0 would exceed allowed memory. (out of memory)",
      "Currently allocated     : 5.96 GiB"], "gpu_oom"),
    (["ValueError: Free memory on device (67.24/79.25 GiB) on startup is less than desired GPU "
      "memory utilization (0.9, 71.33 GiB). Decrease GPU memory utilization or reduce GPU memory "
      "used by other processes."], "gpu_oom"),
    (["  traceback : Signal 11 (SIGSEGV) received by PID 6421"], "native_crash"),
    (["E1212 03:27:33.598000 4609 torch/distributed/elastic/multiprocessing/api.py:863] failed "
      "(exitcode: -11) local_rank: 2 (pid: 4677) of binary: /usr/bin/python"], "native_crash"),
    (["*** SIGSEGV (@0x0) received by PID 12 (TID 0x7f00) from PID 0; stack trace: ***"],
     "native_crash"),
    (["[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a5b6c]"], "native_crash"),
    (["Windows fatal exception: access violation"], "native_crash"),
    (["Process finished with exit code -1073741819 (0xC0000005)"], "native_crash"),
    (["horovod.common.exceptions.HorovodInternalError: ncclAllReduce failed: unhandled cuda "
      "error"], "nccl_error"),
    (["E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2432] Execution of replica 1 "
      "failed: INTERNAL: custom call 'xla.gpu.all_reduce' failed: NCCL operation ncclGroupEnd() "
      "failed: unhandled cuda error."], "nccl_error"),
    (["ERROR: The kernel module failed to load, because it was not signed by a key that is "
      "trusted by the kernel. Please try installing the driver again."], "no_gpu_or_driver"),
    (["2020-12-01 15:51:57.871503: F tensorflow/compiler/tf2tensorrt/stub/nvinfer_stub.cc:49] "
      "getInferLibVersion symbol not found.", "Aborted (core dumped)"], "cuda_runtime_missing"),
    (["WARNING: Could not find any nv files on this host!"], "container_gpu_access"),
    # torch's NCCL watchdog: a collective ran past the process group's timeout
    (["[E ProcessGroupNCCL.cpp:567] [Rank 1] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67434 milliseconds before "
      "timing out."], "timeout"),
]  # fmt: skip
# The twentieth round's families (older stacks among them), each from the component that prints
# it
TWENTIETH_ROUND = [
    (["slurmstepd: error: NVML: Failed to get usage(15): GPU is lost"], "gpu_hardware_fault"),
    (["python3: relocation error: /x/nvidia/cudnn/lib/libcudnn_cnn_infer.so.8: symbol "
      "_Z20traceback_iretf_implPKcRKN5cudnn16InternalStatus_tEb, version libcudnn_ops_infer.so.8 "
      "not defined in file libcudnn_ops_infer.so.8 with link time reference"],
     "cudnn_version_mismatch"),
    (["2018-06-18 21:54:33.740368: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1406] "
      "Ignoring visible gpu device (device: 0, name: GeForce GT 750M, pci bus id: 0000:01:00.0, "
      "compute capability: 3.0) with Cuda compute capability 3.0. The minimum required Cuda "
      "capability is 3.5."], "arch_unsupported"),
    (["CUDA failure 2: out of memory ; GPU=0 ; hostname=pc ; expr=cudaMalloc((void**) &p, n)"],
     "gpu_oom"),
    (["initCnmem: cnmemInit call failed! Reason=CNMEM_STATUS_OUT_OF_MEMORY. numdev=1"], "gpu_oom"),
    (["ERROR (theano.sandbox.cuda): nvcc compiler not found on $PATH. Check your nvcc "
      "installation and try again."], "cuda_runtime_missing"),
    (["docker: Error response from daemon: create nvidia_driver_375.66: VolumeDriver.Create: "
      "internal error, check logs for details."], "container_gpu_access"),
]  # fmt: skip
# The twenty-first round's families (serving, HPC libraries, self-hosted containers, threads in
# other languages), each from the component that prints it
TWENTY_FIRST_ROUND = [
    (["numba.cuda.cudadrv.driver.CudaAPIError: [-1] Call to cuInit results in "
      "UNKNOWN_CUDA_ERROR"], "stub_driver"),
    (["LoadError: Error -1 calling cuDriverGetVersion"], "stub_driver"),
    (["cupy.cuda.memory.OutOfMemoryError: out of memory to allocate 163840000 bytes (total "
      "1673061376 bytes)"], "gpu_oom"),
    (["cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,024 bytes (allocated so "
      "far: 0 bytes)."], "gpu_oom"),
    (["ResourceExhaustedError: Out of memory error on GPU 0. Cannot allocate 48.473877MB memory "
      "on GPU 0, 7.900513GB memory has been allocated and available memory is only 29.437500MB."],
     "gpu_oom"),
    (["[TensorRT] ERROR: ../rtSafe/safeRuntime.cpp (25) - Cuda Error in allocate: 2 (out of "
      "memory)"], "gpu_oom"),
    (["call to cuStreamSynchronize returned error 700: Illegal address during kernel execution"],
     "illegal_memory_access"),
    (["Kokkos::Cuda::initialize ERROR: likely mismatch of architecture"], "arch_unsupported"),
    (["RuntimeError: Expected is_sm90 || is_sm8x || is_sm75 to be true, but got false.  (Could "
      "this error message be improved?)"], "arch_unsupported"),
    (["ERROR: Detected NVIDIA Quadro M1000M GPU, which is not supported by this container"],
     "arch_unsupported"),
    (["RuntimeError: NumPy was built with baseline optimizations: (X86_V2) but your machine "
      "doesn't support: (X86_V2)."], "arch_unsupported"),
    (["x.h:6:10: fatal error: cuda_profiler_api.h: No such file or directory"],
     "cuda_runtime_missing"),
    (["modprobe: FATAL: Module nvidia_drm not found in directory /lib/modules/5.2.13-200.fc30"],
     "no_gpu_or_driver"),
    (["jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: No visible GPU devices."],
     "no_gpu_or_driver"),
    (["ValueError: torch.cuda.is_available() should be True but is False. xformers' memory "
      "efficient attention is only available for GPU"], "no_gpu_or_driver"),
    (["E1111 15:42:00.882297 20327 analysis_config.cc:73] Please compile with gpu to "
      "EnableGpu()"], "no_gpu_or_driver"),
    (["Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all"],
     "container_gpu_access"),
    (["[h264_nvenc @ 0x55d] Cannot load libcuda.so.1"], "container_gpu_access"),
]  # fmt: skip
# The twenty-second round's families (cut short when the search budget ran out)
TWENTY_SECOND_ROUND = [
    (["[11,526ms] [Error] [omni.physx.plugin] PhysX error: SynchronizeStreams cuEventRecord "
      "failed with error 700"], "illegal_memory_access"),
    (["CUDA Exception: Warp Illegal Address"], "illegal_memory_access"),
    (["ImportError: libcudnn-a2b758a6.so.7.0.3: cannot open shared object file: No such file or "
      "directory"], "cudnn_missing"),
    (["/x/trepl/init.lua:384: /x/cudnn/ffi.lua:1278: 'libcudnn (R4) not found in library path."],
     "cudnn_missing"),
    (["XlaRuntimeError: INTERNAL: external/xla/service/gpu/nccl_utils.cc:245: NCCL operation "
      "ncclCommInitRank(comm.get(), nranks, id, rank) failed: unhandl"], "nccl_error"),
    (["graph/topo.h:230 NCCL WARN Could not find NET with id 0"], "nccl_error"),
    (["E external/org_tensorflow/tensorflow/stream_executor/gpu/asm_compiler.cc:93] You are "
      "using ptxas 8.x, but TF requires ptxas 9.x (and strongly prefers >= 9.2.88).",
      "Aborted (core dumped)"], "cuda_runtime_missing"),
]  # fmt: skip
TWENTY_THIRD_ROUND = [
    (["RuntimeError: unable to write to file </torch_1509_1969058146>"], "shm_exhausted"),
    (["slurmstepd: error: pyxis:     [ERROR] Command not found: nvidia-container-cli, see "
      "https://github.com/NVIDIA/libnvidia-container",
      "slurmstepd: error: pyxis:     [ERROR] /etc/enroot/hooks.d/98-nvidia.sh exited with return "
      "code 1"], "container_gpu_access"),
    (["Could not load library zlibwapi.dll. Error code 193. Please verify that the library is "
      "built correctly for your processor architecture (32-bit, 64-bit)"], "corrupt_library"),
    (["/usr/bin/ld: cannot find -lcudnn", "collect2: error: ld returned 1 exit status"],
     "cudnn_missing"),
    (["external/xla/xla/service/gpu/nccl_utils.cc:133: NCCL operation ncclGetUniqueId(&id) "
      "failed: Unable to load NCCL library. Multi-GPU collectives will not work.;"],
     "cuda_runtime_missing"),
    (['Unable to find nvrtc lib under the names ["nvrtc", "nvrtc64"]. Please open GitHub issue.'],
     "cuda_runtime_missing"),
    (["ImportError: cannot import name 'BUFSIZE' from 'numpy' (/v/numpy/__init__.py)"],
     "numpy_abi"),
    (["AttributeError: `np.float_` was removed in the NumPy 2.0 release. Use `np.float64` "
      "instead."], "numpy_abi"),
    (["OSError: Could not find compatible tinycudann extension for compute capability 75."],
     "arch_unsupported"),
    (["  GPU 00000000:01:00.0: In use by another client",
      "FATA[0008] Error applying MIG configuration with hooks: error resetting all GPUs: exit "
      "status 255"], "gpu_busy"),
    (["Exception has occurred: OSError",
      "libtorch_cuda_cu.so: cannot open shared object file: No such file or directory"],
     "undefined_symbol"),
    (["jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CustomCall failed: jaxlib/cuda/"
      "cusolver_kernels.cc:79: operation cudaMemcpyAsync(buffers[1], buffers[0], "
      "SizeOfCusolverType(d.type) * d.n, cudaMemcpyDeviceToDevice, stream) failed: out of "
      "memory"], "gpu_oom"),
    (["RuntimeError: mmdet3d/ops/spconv/src/indice_cuda.cu 124",
      "cuda execution failed with error 2"], "gpu_oom"),
    (["torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: "
      "device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at \"../aten/src/ATen/cuda/"
      "CUDAContext.cpp\":50, please report a bug to PyTorch."], "invalid_device_ordinal"),
    (["GPUAccelerator can not run on your system since the accelerator is not available. The "
      "following accelerator(s) is available and can be passed into `accelerator` argument of "
      "`Trainer`: ['cpu']."], "no_gpu_or_driver"),
    (["NotImplementedError: Unsloth: No NVIDIA GPU found? Unsloth currently only supports GPUs!"],
     "no_gpu_or_driver"),
    (['Unable to find cuda lib under the names ["cuda", "nvcuda"]. Please open GitHub issue.'],
     "no_gpu_or_driver"),
]  # fmt: skip
TWENTY_FOURTH_ROUND = [
    (["ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "],
     "shm_exhausted"),
    (["tritonclient.utils.InferenceServerException: Failed to increase the shared memory pool "
      "size for key 'triton_python_backend_shm_region_2' to 67108864 bytes. If you are running "
      "Triton inside docker, use '--shm-size' flag to control the shared memory region size. "
      "Error: No space left on device"], "shm_exhausted"),
    (["[    9.424670] NVRM: API mismatch: the client 'kwin_wayland' (pid 1005)",
      "               NVRM: has the version 595.84, but this kernel module has"],
     "driver_library_mismatch"),
    (["The Compose file './docker-compose.yaml' is invalid because:",
      "services.sd.deploy.resources.reservations value Additional properties are not allowed "
      "('devices' was unexpected)"], "container_gpu_access"),
    (['Error: setting up CDI devices: failed to inject devices: failed to stat CDI host device '
      '"/dev/dri/renderD129": no such file or directory'], "container_gpu_access"),
    (["Error: stat nvidia.com/gpu=0: no such file or directory"], "container_gpu_access"),
    (["Error response from daemon: nvidia-container-cli: initialization error: WSL environment "
      "detected but no adapters were found"], "no_gpu_or_driver"),
    (["[hevc_nvenc @ 000001f2768adcc0] Driver does not support the required nvenc API version. "
      "Required: 12.2 Found: 12.1"], "driver_too_old"),
    (["22:45:40.550: error:   The minimum required Nvidia driver for nvenc is 471.41 or newer"],
     "driver_too_old"),
    (["CUDA error: Insufficient CUDA driver: 9020"], "driver_too_old"),
    (["Driver does not support CUDA 5.5 API! Update your nVidia driver!"], "driver_too_old"),
    (["[04/25/2024-15:52:54] [TRT] [E] 1: Unsupported SM: 0x601"], "arch_unsupported"),
    (["Check failed: (cufftPlanMany(&plan, 1, &n, __null, 0, 0, __null, 0, 0, CUFFT_R2C, hw)) "
      "== CUFFT_SUCCESS (2 vs. 0)"], "gpu_oom"),
    (["ERROR: out of memory in /opt/relion/src/acc/acc_projector_impl.h at line 74 (error-code "
      "2)"], "gpu_oom"),
    (["[11/22/2024-13:40:47] [E] Error[1]: [defaultAllocator.cpp::allocate::31] Error Code 1: "
      "Cuda Runtime (out of memory)",
      "[11/22/2024-13:40:47] [E] Error[10]: IBuilder::buildSerializedNetwork: Error Code 10: "
      "Internal Error (Could not find any implementation for node {ForeignNode[/1/Slice_4]}.)"],
     "gpu_oom"),
    (["seyun:17283:17549 [3] include/socket.h:371 WARN Connection closed by remote peer",
      "seyun:17283:17549 [3] INFO transport/net_socket.cu:166 -> 2"], "nccl_error"),
]  # fmt: skip
TWENTY_FIFTH_ROUND = [
    (["[2023-04-21 19:17:31] Error: NCCL error 2 'unhandled system error' - "
      "/marian/src/training/communicator_nccl.h:43: ncclGroupEnd()"], "nccl_error"),
    (["OSError: (External)  Nccl error, unhandled cuda error  (at "
      "/paddle/paddle/fluid/platform/collective_helper.cc:100)"], "nccl_error"),
    (['Driver Failure: Failed to create container configuration for image '
      '"nvidia/cuda:12.0.0-base-ubuntu20.04" ("sha256:612aabcfe238"): requested docker runtime',
      '"nvidia" was not found'], "container_gpu_access"),
    (["MemoryError: std::bad_alloc: RMM failure at:/env/include/rmm/mr/device/"
      "pool_memory_resource.hpp:182: Maximum pool size exceeded"], "gpu_oom"),
    (["2022-09-21 17:26:50,238 - distributed.worker - WARNING - RMM allocation of 2.73 GiB "
      "failed, spill-on-demand couldn't find any device memory to spill:"], "gpu_oom"),
    (["21:39:09 ERROR    Uncaught exception: Could not allocate memory: E:\\ngp\\dependencies\\"
      "tiny-cuda-nn\\include\\tiny-cuda-nn/gpu_memory.h:109 cudaMalloc(&rawptr, "
      "n_bytes+DEBUG_GUARD_SIZE*2) failed with error out of memory"], "gpu_oom"),
    (["LowLevelFatalError [File:Unknown] [Line: 279]",
      "Out of Device Memory, Requested=24000.00Kb MemTypeIndex=7"], "gpu_oom"),
    (["Runtime Error: CUDA error: device side assert triggered"], "illegal_memory_access"),
    (["Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)"],
     "native_crash"),
    (["Warp CUDA error: Could not open libcuda.so.",
      "Warp CUDA error: Function cuDriverGetVersion_f: a suitable driver entry point was not "
      "found"], "no_gpu_or_driver"),
    (["\u2502    could not load library \"libcuda\"",
      "\u2502    dlopen(libcuda.dylib, 1): image not found"], "no_gpu_or_driver"),
    (["    The CUDA driver could not be loaded. The library name used was 'nvcuda.dll'. The "
      "error was:"], "no_gpu_or_driver"),
    (["RuntimeError: Cuda error: 209[cudaLaunchKernel(func, gridSize, blockSize, args, 0, "
      "stream);]"], "arch_unsupported"),
    (["RuntimeError: Error while calling cudaMalloc(&data, new_size*sizeof(float)) in file",
      "/dlib/cuda/gpu_data.cpp:218. code: 2, reason: out of memory"], "gpu_oom"),
]  # fmt: skip
TWENTY_SIXTH_ROUND = [
    (["ImportError: libcudss.so.0: cannot open shared object file: No such file or directory"],
     "cuda_runtime_missing"),
    (["ERROR 04-23 19:30:01 pynccl.py:53] Failed to load NCCL library from libnccl.so.2 .It is "
      "expected if you are not running on NVIDIA/AMD GPUs.Otherwise please set the environment "
      "variable VLLM_NCCL_SO_PATH to point to the correct nccl library path."],
     "cuda_runtime_missing"),
    (["RuntimeError: --cpp_ext was requested, but nvcc was not found.  Are you sure your "
      "environment has nvcc available?"], "cuda_runtime_missing"),
    (["I c:\\tf_jenkins\\home\\workspace\\tensorflow\\stream_executor\\dso_loader.cc:119] "
      "Couldn't open CUDA library cudnn64_5.dll"], "cudnn_missing"),
    (["I tensorflow/stream_executor/dso_loader.cc:99] Couldn't open CUDA library libcudart.so.8.0. "
      "LD_LIBRARY_PATH: "], "cuda_runtime_missing"),
    (["ImportError: Could not find 'nvcuda.dll'. TensorFlow requires that this DLL be installed in "
      "a directory that is named in your %PATH% environment variable."], "no_gpu_or_driver"),
    (["NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that "
      "the NVIDIA Display Driver is properly installed and present in your system."],
     "no_gpu_or_driver"),
    (["  Error:   \u00d7 Cannot install environment 'default'",
      "    \u2570\u2500\u25b6 Virtual package '__cuda' does not match any of the available virtual "
      "packages on your machine: [__glibc=2.39=0, __unix=0=0]"], "no_gpu_or_driver"),
    (["RuntimeError: Unknown backend gpu"], "no_gpu_or_driver"),
    (["RuntimeError: Unknown backend: 'gpu' requested, but no platforms that are instances of "
      "gpu are present. Platforms present are: cpu"], "no_gpu_or_driver"),
    (["pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested GPUs: [0]",
      " But your machine only has: []"], "no_gpu_or_driver"),
    (["MisconfigurationException('You requested gpu: [0, 1, 2, 3, 4, 5, 6, 7]\\n But your "
      "machine only has: [0]"], "invalid_device_ordinal"),
    (["ERRO[0000] failed to generate CDI spec: failed to create edits common for entities: "
      "failed to get libraries for driver version: failed to locate libcuda.so"],
     "container_gpu_access"),
    (["OSError: [WinError 1455] The paging file is too small for this operation to complete",
      'Error loading "E:\\env\\lib\\site-packages\\torch\\lib\\cudnn_cnn_train64_8.dll" or one '
      "of its dependencies."], "host_oom"),
    (["RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't "
      "allocate memory: you tried to allocate 2359296 bytes. Error code 12 (Cannot allocate "
      "memory)"], "host_oom"),
    (["[441280.839852] Out of memory: Killed process 698405 (python) total-vm:49978204kB, "
      "anon-rss:12918388kB"], "host_oom"),
    (["Out of memory: Kill process 7248 (python3) score 266 or sacrifice child"], "host_oom"),
    (["      Reason:       OOMKilled"], "host_oom"),
]  # fmt: skip
TWENTY_SEVENTH_ROUND = [
    (["Predicting DataLoader 0:   0%|   | 0/1 [00:00<?, ?it/s]| WARNING: ran out of memory, "
      "skipping batch"], "gpu_oom"),
    (["CudaCustomAllocator out of memory", " [requestedSpace:             148560384 B]"],
     "gpu_oom"),
    (["terminate called after throwing an instance of 'thrust::system::system_error'",
      "  what():  parallel_for failed: out of memory"], "gpu_oom"),
    (["CUDA error: build/xgboost/plugin/updater_gpu/src/device_helpers.cuh(386): out of memory"],
     "gpu_oom"),
    (["ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
      "Your Tesla T4 GPU has compute capability 7.5."], "arch_unsupported"),
    (["RuntimeError: torch._scaled_mm is only supported on CUDA devices with compute capability "
      ">= 9.0 or 8.9, or ROCm MI300+"], "arch_unsupported"),
    (["CMake Error at mindspore/ccsrc/CMakeLists.txt:40 (message):",
      "  Failed to find cudnn library file, please set environment variable"], "cudnn_missing"),
    (["  what():  Error: CPU can't allocate memory. Tried to allocate 1490116.1 GB"],
     "host_oom"),
    (["RuntimeError: Runtime error: unhandled system error",
      "        ncclGroupEnd() at ResourceManagerCore(/hugectr/HugeCTR/src/resource_managers/"
      "resource_manager_core.cpp:176)"], "nccl_error"),
    (["0:00:00.018838900  4136    2063fd649d0 WARN              cudaloader gstcudaloader.c:169:"
      "gst_cuda_load_library: Could not open library nvcuda.dll, 'nvcuda.dll': The specified "
      "module could not be found."], "no_gpu_or_driver"),
    (["[hevc_nvenc @ 0x55ca461fa380] Cannot load libnvidia-encode.so.1"], "container_gpu_access"),
]  # fmt: skip
TWENTY_EIGHTH_ROUND = [
    # Windows words error 1455 in its own language: the code decides
    (["OSError: [WinError 1455] \u9875\u9762\u6587\u4ef6\u592a\u5c0f\uff0c\u65e0\u6cd5\u5b8c\u6210"
      "\u64cd\u4f5c\u3002 Error loading \"D:\\Anaconda3\\lib\\site-packages\\torch\\lib\\"
      "cudnn_cnn_infer64_8.dll\" or one of its dependencies."], "host_oom"),
    (["/var/spool/slurmd/job00191/slurm_script: line 28:  8156 Killed                  python3 "
      "main.py",
      "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=191.batch cgroup. Some of your "
      "processes may have been killed by the cgroup out-of-memory handler."], "host_oom"),
    (["slurmstepd: error: Detected 2 oom_kill events in StepId=7.0. Some of your processes may "
      "have been killed by the cgroup out-of-memory handler."], "host_oom"),
    (["[2023-11-13 16:59:55,650] [ERROR] [launch.py:320:sigkill_handler] ['/opt/conda/bin/"
      "python', '-u', 'train.py', '--local_rank=1'] exits with return code = -9"], "host_oom"),
    (["subprocess.CalledProcessError: Command '['/usr/bin/python3', '-m', 'autotrain.trainers."
      "clm']' died with <Signals.SIGKILL: 9>."], "host_oom"),
    (["  exitcode  : -9 (pid: 12345)", "  error_file: <N/A>",
      "  traceback : Signal 9 (SIGKILL) received by PID 12345"], "host_oom"),
    (["nvmlInit_v2 err: 18",
      'time=2024-02-14T22:41:55.630Z level=INFO source=gpu.go:300 msg="Unable to load CUDA '
      'management library /nix/store/x/lib/libnvidia-ml.so.545.29.06: nvml vram init failure: '
      '18"'], "driver_library_mismatch"),
    (['time=2024-02-14T22:41:55.630Z level=INFO source=gpu.go:300 msg="Unable to load CUDA '
      'management library /usr/lib/libnvidia-ml.so.1: nvml vram init failure: 9"'],
     "no_gpu_or_driver"),
    (["Error: crun: executable file `nvidia-smi` not found in $PATH: No such file or directory: "
      "OCI runtime attempted to invoke a command that was not found"], "container_gpu_access"),
    (["dgl._ffi.base.DGLError: [14:00:04] /opt/dgl/src/runtime/c_runtime_api.cc:82: Check "
      "failed: allow_missing: Device API cuda is not enabled. Please install the cuda version "
      "of dgl."], "no_gpu_or_driver"),
    (["WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:",
      "    PyTorch 2.1.0+cu121 with CUDA 1201 (you have 2.1.0+cpu)",
      "    Python  3.10.11 (you have 3.10.6)"], "no_gpu_or_driver"),
    (["I tensorflow/core/common_runtime/gpu/gpu_device.cc:611] Ignoring gpu device (device: 0, "
      "name: GRID K520, pci bus id: 0000:00:03.0) with Cuda compute capability 3.0. The minimum "
      "required Cuda capability is 3.5."], "arch_unsupported"),
    (["RuntimeError: Library libcublas.so.12 is not found"], "cuda_runtime_missing"),
    (["2023-02-23 22:37:08.403079: F external/org_tensorflow/tensorflow/compiler/xla/service/"
      "gpu/nvptx_compiler.cc:454] ptxas returned an error during compilation of ptx to sass: "
      "'INTERNAL: Failed to launch ptxas'  If the error message indicates that a file could "
      "not be written, please verify that sufficient filesystem space is provided."],
     "cuda_runtime_missing"),
]  # fmt: skip
TWENTY_NINTH_ROUND = [
    (["  File \"/usr/lib/python3.6/multiprocessing/popen_fork.py\", line 66, in _launch",
      "    self.pid = os.fork()", "OSError: [Errno 12] Cannot allocate memory"], "host_oom"),
    ([">>> model = trt_pose.models.resnet18_baseline_att(18, 42).cuda().eval()", "Killed"],
     "host_oom"),
    (["Killed", "gmake[2]: *** [CMakeFiles/onnxruntime_providers_cuda.dir/build.make:6203: x.cu.o]"
      " Error 137"], "host_oom"),
    (["AttributeError: /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1: undefined symbol: "
      "nvmlDeviceGetMemoryInfo_v2"], "driver_too_old"),
    (["2025-12-18 09:53:11 [8,503ms] [Error] [gpu.foundation.plugin] The currently installed "
      "NVIDIA graphics driver is unsupported or has known issues.", "",
      "Reason for failure: The minimum Omniverse RTX requirement", "Installed driver: 535.18"],
     "driver_too_old"),
    (["nvcc fatal   : Value 'sm_75' is not defined for option 'gpu-architecture'"],
     "arch_unsupported"),
    (["ERROR: Your GPU does not support Int8 Matmul!"], "arch_unsupported"),
    (["ImportError: /venv/lib/python3.6/site-packages/cupy_backends/cuda/libs/cusparse.cpython-"
      "36m-x86_64-linux-gnu.so: symbol cusparseDenseToSparse_convert version libcusparse.so.11 "
      "not defined in file libcusparse.so.11 with link time referenc"], "undefined_symbol"),
    (["cuda-0   Error CUDA mining: CUDA error in func init at line 126 out of memory"], "gpu_oom"),
    (["02/15/2020 15:10:09 MainProcess     _training_0     multithreading  run     DEBUG    Error "
      "in thread (_training_0): You do not have enough GPU memory available to train the "
      "selected model at the selected settings."], "gpu_oom"),
    (["[h264_nvenc @ 0x7f616007d540] Failed creating CUDA context for NVENC: 0x2"], "gpu_oom"),
    (["[hevc_nvenc @ 0x55d0] Failed creating CUDA context for NVENC: 0x64"], "no_gpu_or_driver"),
    (["PxgCudaDeviceMemoryAllocator fail to allocate memory 339738624 bytes!! Result = 2"],
     "gpu_oom"),
    (["::16674:17023 [0] graph/search.cc:703 NCCL WARN XML Import Channel : dev 1 not found."],
     "nccl_error"),
    (["Platform::WindowlessEglApplication::tryCreateContext(): unable to find CUDA device 0 "
      "among 2 EGL devices in total", "WindowlessContext: Unable to create windowless context"],
     "no_gpu_or_driver"),
    (["WARNING:lerobot.configs.policies:Device 'cuda' is not available. Switching to 'cpu'."],
     "no_gpu_or_driver"),
    (["[07/14/2021-14:31:41] [W] [TRT] TensorRT was linked against cuDNN 8.1.0 but loaded cuDNN "
      "8.0.2",
      "[07/14/2021-14:32:05] [E] [TRT] C:\\source\\rtSafe\\cuda\\cudaConvolutionRunner.cpp (483) - "
      "Cudnn Error in nvinfer1::rt::cuda::CudnnConvolutionRunner::executeConv: 8 "
      "(CUDNN_STATUS_EXECUTION_FAILED)"], "cudnn_version_mismatch"),
    (["CUDA error: Illegal address in cuMemcpyDtoH( (char *)mem.host_pointer + offset, "
      "(CUdeviceptr)mem.device_pointer + offset, size), line 970",
      "CUDA error at cuCtxCreate: Illegal address"], "illegal_memory_access"),
]  # fmt: skip
THIRTIETH_ROUND = [
    (["error: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'"],
     "cuda_runtime_missing"),
    (['2025-12-30 17:14:59.7454928 [E:onnxruntime:Golang onnxruntime environment, '
      'provider_bridge_ort.cc:2002 onnxruntime::CudaProviderFactoryCreator::Create] '
      '[ONNXRuntimeError] : 1 : FAIL : Error loading "E:\\app\\onnxruntime_providers_cuda.dll" '
      'which depends on "cublasLt64_12.dll" which is missing. (Error 126: "The specified module '
      'could not be found.")'], "cuda_runtime_missing"),
    (['Error loading "C:\\x\\onnxruntime_providers_cuda.dll" which depends on "cudnn64_9.dll" '
      'which is missing.'], "cudnn_missing"),
    (["- Could not find cuDNN 6."], "cudnn_missing"),
    (["ERROR: Compute capability 7.0.0 is not supported by CUDA 13.0.0"], "arch_unsupported"),
    (["machine [0] misc/ibvwrap.cu:269 WARN Call to ibv_create_qp failed",
      "Failed, NCCL error test_nccl.c:99 'unhandled system error'"], "nccl_error"),
    (["error: undefined reference to `c10::Error::Error(std::__cxx11::basic_string<char, "
      "std::char_traits<char>, std::allocator<char> > const&, void const*)'"],
     "undefined_symbol"),
    (["ERROR: Unable to load the kernel module 'nvidia.ko'.  This happens most frequently when "
      "this kernel module was built against the wrong or improperly configured kernel sources"],
     "no_gpu_or_driver"),
    (["modprobe: ERROR: could not insert 'nvidia_331_updates_uvm': No such device"],
     "no_gpu_or_driver"),
    (["Nov 13 22:33:04 devserver-fast systemd-modules-load[500]: Failed to insert module "
      "'nvidia_uvm': No such device"], "no_gpu_or_driver"),
    (["kern: warning: [2023-09-14T03:08:37.411164757Z]: NVRM: The NVIDIA GPU 0000:00:10.0 (PCI "
      "ID: 10de:1b38)\\x0aNVRM: installed in this system is not supported by the\\x0aNVRM: NVIDIA "
      "535.54.03 driver release."], "no_gpu_or_driver"),
    (["pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded"], "no_gpu_or_driver"),
    (["Error in torch_tensor_cpp(data, dtype, device, requires_grad, pin_memory) : ",
      "  PyTorch is not linked with support for cuda devices"], "no_gpu_or_driver"),
    (["RuntimeError: Cannot initialize CUDA without ATen_cuda library. PyTorch splits its "
      "backend into two shared libraries: a CPU library and a CUDA library"], "no_gpu_or_driver"),
    (["2024-04-22T07:54:43.030732Z  WARN apply_execution_providers: ort::execution_providers: An "
      "error occurred when attempting to register `CUDAExecutionProvider`: CUDA execution "
      "provider is not enabled in this build."], "no_gpu_or_driver"),
    (["/project/sherpa-onnx/csrc/session.cc:GetSessionOptionsImpl:167 ",
      "Please compile with -DSHERPA_ONNX_ENABLE_GPU=ON. Available providers: "
      "CPUExecutionProvider, .", "Fallback to cpu!"], "no_gpu_or_driver"),
]  # fmt: skip
THIRTY_FIRST_ROUND = [
    (["Failed reason:[f 0201 21:46:46.675946 64 cuda_flags.cc:25] Check failed: count>0  No "
      "device found."], "no_gpu_or_driver"),
    (["[02:55:03] src/base.cc:49: GPU context requested, but no GPUs found."],
     "no_gpu_or_driver"),
    (["RuntimeError: /io/build/temp.linux-x86_64-cpython-37/spconv/build/core_cc/src/csrc/sparse/"
      "all/SpconvOps/SpconvOps_get_indice_pairs.cc(65)", "not implemented for CPU ONLY build."],
     "no_gpu_or_driver"),
    (["OSError: Unknown compute capability. Ensure PyTorch with CUDA support is installed."],
     "no_gpu_or_driver"),
    (["terminate called after throwing an instance of 'std::runtime_error'",
      "  what():  src/spconv/src/spconvlib/spconv/csrc/sparse/convops/convops/ConvTunerSimple/"
      "ConvTunerSimple_cached_get_nvrtc_params.cc(18)",
      "not implemented in c++, must be overrided in python!!!"], "arch_unsupported"),
    (["cuBLAS API failed with status 15", "error detectedA: torch.Size([304, 4096])"],
     "arch_unsupported"),
    (["GPUassert: out of memory pcdet/ops/iou3d_nms/src/iou3d_nms.cpp 103"], "gpu_oom"),
    (["numpy.core._exceptions.MemoryError: Unable to allocate 502. MiB for an array with shape "
      "(512, 512, 251) and data type float64"], "host_oom"),
    (["Loading checkpoint shards:  97%|  | 29/30 [00:35<00:01,  1.39s/it]Killed."], "host_oom"),
    (["/bin/sh: 1: /usr/bin/nvcc: not found", "ninja: build stopped: subcommand failed."],
     "cuda_runtime_missing"),
    (["bash: nvcc: command not found"], "cuda_runtime_missing"),
    (["gsplat: No CUDA toolkit found. gsplat will be disabled.", "Traceback (most recent call "
      "last):", '  File "x.py", line 1, in <module>', "RuntimeError: rasterization failed"],
     "cuda_runtime_missing"),
    (["Exception: \"XGBoostError('[09:10:41] /opt/conda/work/src/common/device_helpers.cuh:132: "
      "NCCL failure :unhandled system error /opt/conda/work/src/common/device_helpers.cu(67)"],
     "nccl_error"),
    (["99:\tlearn: 0.0502894\ttotal: 204ms\tremaining: 0us",
      "Process finished with exit code -1073740791 (0xC0000409)"], "native_crash"),
    (["subprocess.CalledProcessError: Command '['python.exe', 'flux_train.py']' returned "
      "non-zero exit status 3221225477."], "native_crash"),
    (["TypeError: expected np.ndarray (got numpy.ndarray)"], "numpy_abi"),
    # TensorFlow's W line for an op that failed is the op's failure, whatever came after it
    (["2022-08-16 15:44:19.209599: W tensorflow/core/framework/op_kernel.cc:1763] OP_REQUIRES "
      "failed at concat_op.cc:158 : Resource exhausted: OOM when allocating tensor with "
      "shape[1,280,512,928,32] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
      "allocator GPU_0_bfc",
      "2022-08-16 15:44:46.276663: F tensorflow/stream_executor/cuda/cuda_dnn.cc:88] Check "
      "failed: narrow == wide (-1946157056 vs. 2348810240)checked narrowing failed"], "gpu_oom"),
]  # fmt: skip
THIRTY_SECOND_ROUND = [
    (["2021-07-10 19:06:52.915444: F external/org_tensorflow/tensorflow/compiler/xla/service/gpu/"
      "nvptx_compiler.cc:480] ptxas returned an error during compilation of ptx to sass: "
      "'Internal: Failed to launch ptxas'  If the error message indicates that a file could not "
      "be written, please verify that sufficie"], "cuda_runtime_missing"),
    (["Non-OK-status: GpuLaunchKernel (FillPhiloxRandomKernelLaunch <Distribution>, num_blocks, "
      "block_size, 0, d.stream (), gen, data, size, dist) status: Internal: out of memory"],
     "gpu_oom"),
    (["The node was low on resource: memory.",
      "Killing container with id docker://notebook:Need to kill Pod"], "host_oom"),
    (["command terminated with exit code 137"], "host_oom"),
    (["srun: error: gpu07: task 0: Exited with exit code 137"], "host_oom"),
    (["Warning: An unexpected error occurred during CUDA execution. The CUDA error",
      "Error using arrayfun",
      "The kernel execution failed because the CUDA driver timeout was encountered."],
     "timeout"),
]  # fmt: skip
THIRTY_THIRD_ROUND = [
    (["Error at line 124 of c:\\users\\sam\\lighthouse2\\lib\\rendercore_optix7\\rendercore.cpp:",
      "optixInit()", "OPTIX_ERROR_UNSUPPORTED_ABI_VERSION (7801)"], "driver_too_old"),
    (["/root/code/EnvGS/submodule/diff-surfel-tracing/optix_tracer/optix_wrapper.cpp:175 Optix "
      "Error: 'Unsupported ABI version'", "Segmentation fault"], "driver_too_old"),
    (["Optix call (optixInit()) failed with code 7801 (line 150)",
      "terminate called without an active exception"], "driver_too_old"),
    (["Uncaught exception: Optix call 'optixInit()' failed."], "driver_too_old"),
    (['Unable to dynamically load the "cudnn" shared library - searched for library names: '
      '["libcudnn.so", "libcudnn64.so", "libcudnn.so.11"]'], "cudnn_missing"),
    (['Unable to dynamically load the "cublas" shared library - searched for library names: '
      '["cublas", "cublas64", "cublas64_12"]'], "cuda_runtime_missing"),
    (['panicked at src\\lib.rs:181:5: Unable to dynamically shared library - searched for library '
      'names: ["cufft64.dll", "cufft64_13.dll"]'], "cuda_runtime_missing"),
    (["Error: Could not load library libcudnn_cnn_infer.so.8"], "cudnn_missing"),
    (['CUDA error at /libnd4j/blas/cuda/NativeOps.cu:1861 code=77(<unknown>) "dZ"',
      "Exception in thread \"main\" java.lang.RuntimeException: cudaStreamSynchronize(...) "
      "failed"], "illegal_memory_access"),
    (["Cuda driver error 804 in call at file",
      "'/home/u/lammps/lib/gpu/geryon/nvd_device.h' in line 333."], "driver_too_old"),
    (["std/barrier(16): catastrophic error: #error directive: \"CUDA synchronization primitives "
      "are only supported for sm_70 and up.\""], "arch_unsupported"),
    (["jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: cuSolver has not been "
      "initialized"], "gpu_oom"),
    (["CUDA error !!!!! <out of memory> !!!!! ", "at CUDA call error code: # 2402"], "gpu_oom"),
    (["22/11/10 13:59:15 | INFO | root | Failed (CUDA out of memory) on sequence hipAB-900 of "
      "length 918."], "gpu_oom"),
    (["RuntimeError: cuda_malloc(): out of memory!"], "gpu_oom"),
]  # fmt: skip
THIRTY_FOURTH_ROUND = [
    (["[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)",
      "==== backtrace (tid:   3095) ====", " 1 0x000000000008170d ncclGroupEnd()  ???:0"],
     "shm_exhausted"),
    (["2020-02-23 02:17:51.838293: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] "
      "Could not dlopen library 'libcuda.so.1'; dlerror: libcuda.so.1: cannot open shared object "
      "file: No such file or directory; LD_LIBRARY_PATH: /.singularity.d/libs",
      "2020-02-23 02:17:51.838316: E tensorflow/stream_executor/cuda/cuda_driver.cc:318] failed "
      "call to cuInit: UNKNOWN ERROR (303)"], "container_gpu_access"),
    (["ValueError: Error when loading parameters from params_shard_46.bin: [13:57:02] /workspace/"
      "tvm/src/runtime/cuda/cuda_device_api.cc:129: InternalError: Check failed: (e == "
      "cudaSuccess || e == cudaErrorCudartUnloading) is false: CUDA: out of memory"], "gpu_oom"),
    (["AssertionError: Trying to use CUDA, but CUDA is not available."], "no_gpu_or_driver"),
    (["CUDA not available - defaulting to CPU. Note: This module is much faster with a GPU."],
     "no_gpu_or_driver"),
    (["Nvcc fatal : Value \u2018sm_75\u2019 is not defined for option "
      "\u2018gpu-architecture\u2019"], "arch_unsupported"),
    (["RuntimeError: [TM][ERROR] CUDA runtime error: API call is not supported in the installed "
      "CUDA driver /lmdeploy/src/turbomind/utils/allocator.h:163 "], "driver_too_old"),
    (["Faiss assertion 'err__ == cudaSuccess' failed in virtual void faiss::gpu::"
      "StandardGpuResourcesImpl::initializeForDevice(int) at /project/faiss/faiss/gpu/"
      "StandardGpuResources.cpp:312; details: CUDA error 2 out of memory"], "gpu_oom"),
    (["RuntimeError: Error in void faiss::gpu::allocMemorySpaceV(faiss::gpu::MemorySpace, void**, "
      "size_t) at gpu/utils/MemorySpace.cpp:26: Error: 'err == cudaSuccess' failed: failed to "
      "cudaMalloc 47064032 bytes (error 2 out of memory)"], "gpu_oom"),
    (["fail type FlatData dev 2 space Device stream 0 size 2764800000 bytes (cudaMalloc error out "
      "of memory [2])"], "gpu_oom"),
]  # fmt: skip
THIRTY_FIFTH_ROUND = [
    (["FATAL: Error inserting nvidia (/lib/modules/2.6.18-194.11.3.el5/kernel/drivers/video/"
      "nvidia.ko): No such device", "NVIDIA: failed to load the NVIDIA kernel module.",
      "Failed to allocate an RM client"], "no_gpu_or_driver"),
    (["ERROR: Failed to run `/usr/sbin/dkms build -m nvidia -v 418.40.04 -k",
      "       5.3.0-1020-azure`: "], "no_gpu_or_driver"),
    (["NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
      "   [[ System not yet initialized (error 802) ]]"], "fabric_manager_not_running"),
]  # fmt: skip
THIRTY_SIXTH_ROUND = [
    (["docker: Error response from daemon: failed to create task for container: failed to create "
      "shim task: OCI runtime create failed: failed to create NVIDIA Container Runtime: failed to "
      "construct OCI spec modifier: requirements not met: unsatisfied condition: cuda>=12.2 "
      "(cuda=11.4): unknown."], "driver_too_old"),
]  # fmt: skip
THIRTY_SEVENTH_ROUND = [
    (["Exception: Error synchronizing on event for CCMA: CUDA error (700) at /home/u/OpenMM-7.1.1-"
      "Source/platforms/cuda/src/CudaIntegrationUtilities.cpp:736"], "illegal_memory_access"),
    (["AMGX ERROR: Error initializing amgx core.",
      "Failed while initializing CUDA runtime in cudaRuntimeGetVersion"], "no_gpu_or_driver"),
    (["RuntimeError: Error in faiss::gpu::GpuIndex::GpuIndex(faiss::gpu::GpuResources*, int, "
      "faiss::MetricType, float, faiss::gpu::GpuIndexConfig) at gpu/GpuIndex.cu:49: Error: "
      "'device_ < getNumDevices()' failed: Invalid GPU device 1"], "invalid_device_ordinal"),
    (["Faiss assertion 'cudaMalloc(p, size) == cudaSuccess' failed in void faiss::gpu::"
      "allocMemorySpace(faiss::gpu::MemorySpace, void**, size_t) at utils/MemorySpace.cpp:20; "
      "details: Failed to cudaMalloc 16000000000 bytes", "Aborted"], "gpu_oom"),
    (["gpu-st-p4d-24xlarge-25:15647:15647 [0] external/nccl_archive/src/init.cc:1075 NCCL WARN "
      "Cuda failure 'out of memory'",
      "2022-10-13 04:16:09.849660: E external/org_tensorflow/tensorflow/compiler/xla/pjrt/"
      "pjrt_stream_executor_client.cc:2130] Execution of replica 0 failed: INTERNAL: external/"
      "org_tensorflow/tensorflow/compiler/xla/service/gpu/nccl_utils.cc:266: NCCL operation "
      "ncclCommInitRank(comm.get(), nranks, id, rank) failed: unhandled cuda error"], "gpu_oom"),
    (["ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
      "Memory on the node (IP: 192.168.0.107, ID: fc2b) where the task (actor ID: f9cc, "
      "name=SimEnv.__init__, pid=4331, memory used=2.22GB) was running was 59.49GB / 62.58GB "
      "(0.950744), which exceeds the memory usage threshold of 0.95."], "host_oom"),
    # AlphaFold's run_docker.py relays each container line through absl at INFO
    (["I0725 13:13:22.066373 139761799472960 run_docker.py:200] 2021-07-25 03:13:22.065889: W "
      "external/org_tensorflow/tensorflow/stream_executor/gpu/asm_compiler.cc:235] Falling back "
      "to the CUDA driver for PTX compilation; ptxas does not support CC 8.6",
      "I0725 13:13:22.066839 139761799472960 run_docker.py:200] 2021-07-25 03:13:22.066559: E "
      "external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_driver.cc:625] failed to get "
      "PTX kernel \"shift_right_logical_3\" from module: CUDA_ERROR_NOT_FOUND: named symbol not "
      "found"], "arch_unsupported"),
]  # fmt: skip
THIRTY_EIGHTH_ROUND = [
    (["INFO:    Setting --writable-tmpfs (required by nvidia-container-cli)",
      "FATAL:   container creation failed: exec: \"/usr/bin/nvidia-container-cli\": stat /usr/bin/"
      "nvidia-container-cli: no such file or directory"], "container_gpu_access"),
    (["$ singularity shell --nv ubuntu-latest.simg",
      "ERROR  : Target /var/lib/singularity/mnt/final/usr/bin/nvidia-smi doesn't exist",
      "ABORT  : Retval = 255"], "container_gpu_access"),
    (['ERROR: could not load library "C:\\Users\\u\\.julia\\artifacts\\2ab9\\bin\\'
      'cudnn_cnn_infer64_8.dll"', "The specified module could not be found."], "cudnn_missing"),
    (['ERROR: could not load library "C:\\Users\\u\\.julia\\artifacts\\7c1f\\bin\\cublas64_11.dll"',
      "The specified module could not be found."], "cuda_runtime_missing"),
    (["  nvcc error   : 'cicc' died due to signal 9 (Kill signal)"], "host_oom"),
    (["c++: fatal error: Killed signal terminated program cc1plus",
      "compilation terminated."], "host_oom"),
    (["Loading model...", "已杀死"], "host_oom"),
    (["Loading model...", "Убито"], "host_oom"),
    (["Results saved to runs/detect/exp29", "段错误"], "native_crash"),
    (["./run.sh: line 3:  1234 Speicherzugriffsfehler  (Speicherabzug geschrieben) python x.py"],
     "native_crash"),
    (["Ошибка сегментирования (стек памяти сброшен на диск)"], "native_crash"),
    (["2024/01/26 09:54:34 gpu.go:258: INFO Discovered GPU libraries: [/usr/lib/x86_64-linux-gnu/"
      "libnvidia-ml.so.545.29.06]", "SIGSEGV: segmentation violation",
      "PC=0x7180ec649a70 m=17 sigcode=1", "signal arrived during cgo execution"], "native_crash"),
    (["RuntimeError: (Unavailable) Memory map failed when create shared memory.",
      "  [Hint: Expected ptr != ((void *) -1), but received ptr:0xffffffffffffffff == ((void *) "
      "-1):0xffffffffffffffff.] (at /paddle/paddle/fluid/memory/allocation/mmap_allocator.cc:81)"],
     "shm_exhausted"),
    (["Sep 04 13:10:56 FORGE ollama[841963]: cuda driver library failed to get device context "
      "46time=2024-09-04T13:10:56.080-04:00 level=WARN source=gpu.go:400 msg=\"error looking up "
      "nvidia GPU memory\""], "gpu_busy"),
]  # fmt: skip
THIRTY_NINTH_ROUND = [
    (["  Warning  Failed     10s (x2 over 10s)  kubelet            Error: failed to create "
      "containerd task: failed to create shim task: OCI runtime create failed: could not apply "
      "required modification to OCI specification: error modifying OCI spec: failed to inject CDI "
      "devices: unresolvable CDI devices management.nvidia.com/gpu=GPU-e78e68c0-4e6a-737e-f9cc-"
      "4223fe50aead"], "container_gpu_access"),
    (["Error: container create failed: time=\"2024-11-12T14:03:56Z\" level=error msg=\"runc "
      "create failed: unable to start container process: error during container init: error "
      "running hook #0: error running hook: exit status 1, stdout: , stderr: nvidia-container-"
      "cli.real: error parsing IMEX info: unsupported IMEX channel value: all\\n\""],
     "container_gpu_access"),
    (["Test CUDA failure common.cu:1007 'CUDA-capable device(s) is/are busy or unavailable'",
      "[Sun Jan 11 09:52:01 2026] NVRM: nvAssertOkFailedNoLog: Assertion failed: Reset required "
      "[NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874"],
     "gpu_hardware_fault"),
    (["/buildAgent/work/99bede84aa0a52c2/source/physx/src/gpu/PxPhysXGpuModuleLoader.cpp (148) : "
      "internal error : libcuda.so!",
      "[Warning] [carb.gym.plugin] Failed to create a PhysX CUDA Context Manager. Falling back to "
      "CPU."], "no_gpu_or_driver"),
    (["2025-04-23 20:35:34.618070: F external/xla/xla/service/gpu/autotuning/"
      "gemm_fusion_autotuner.cc:1099] Non-OK-status: executable.status()",
      "Status: INTERNAL: ptxas exited with non-zero error code 139, output:  - Failure occur"],
     "native_crash"),
    (['    raise ValueError(f"Unsupported CUDA architecture: {arch}")',
      "ValueError: Unsupported CUDA architecture: sm120"], "arch_unsupported"),
    # BuildKit's step and time before each line of a RUN step's output
    (["#0 920.0 stderr: Traceback (most recent call last):",
      '#0 920.0   File "<string>", line 1, in <module>',
      "#0 920.0 AssertionError: Torch is not able to use GPU; add --skip-torch-cuda-test to "
      "COMMANDLINE_ARGS variable to disable this check"], "no_gpu_or_driver"),
]  # fmt: skip
FORTIETH_ROUND = [
    (["/usr/lib/python3/dist-packages/torch/cuda/__init__.py:88: UserWarning: CUDA    "
      "install.py:114",
      "           initialization: Unexpected error from cudaGetDeviceCount(). Did you run some "
      "cuda functions",
      "           before calling NumCudaDevices() that might have already set an error? Error 804: "
      "forward",
      "           compatibility was attempted on non supported HW (Triggered internally at"],
     "driver_too_old"),
    (["Out of memory:Killed process 4242\uff08python\uff09total-vm:112518872kB"], "host_oom"),
    (["RuntimeError: DataLoader worker (pid 20978) is killed by signal: Killed."], "host_oom"),
    (["    (error_index, name)", "Exception: process 1 terminated with signal SIGKILL"],
     "host_oom"),
    (["[LightGBM] [Info] This is the GPU trainer!!", "Met Exceptions:", "No OpenCL device found"],
     "no_gpu_or_driver"),
    (["CatboostError: catboost/libs/train_lib/train_model.cpp:800: Can't load GPU learning "
      "library. Module was not compiled or CUDA version/driver  is incompatible with package"],
     "backend_init_failure"),
    (["RuntimeError: Exception occured! file=/rapids/cuml/cpp/include/cuml/common/"
      "cuml_allocator.hpp line=109: FAIL: call='cudaMalloc(&ptr, n)'. Reason:out of memory"],
     "gpu_oom"),
    (["\u2716 C:\\Users\\me\\AppData\\Local\\R\\win-library\\4.4\\torch/lib\\lantern.dll - "
      "The specified procedure could not be found."], "undefined_symbol"),
    (['docker: Error response from daemon: failed to create shim: OCI runtime create failed: '
      'container_linux.go:380: starting container process caused: process_linux.go:545: container '
      'init caused: rootfs_linux.go:76: mounting "/usr/lib/aarch64-linux-gnu/libcudnn.so.8.2.1" to '
      'rootfs at "/usr/lib/aarch64-linux-gnu/libcudnn.so.8.2.1" caused: mount through procfd: not '
      'a directory: unknown.'], "container_gpu_access"),
]  # fmt: skip
FORTY_FIRST_ROUND = [
    (["RuntimeError: 0 active drivers ([]). There should only be one."], "no_gpu_or_driver"),
    (["/opt/conda/lib/python3.10/site-packages/cudf/utils/_numba.py:110: UserWarning: Using CUDA "
      "toolkit version (12, 3) with CUDA driver version (12, 2) requires minor version "
      "compatibility, which is not yet supported for CUDA driver versions 12.0 and above.",
      "  warnings.warn("], "driver_too_old"),
    # CUDA error 803, as cuda.h words it: the display driver's and the CUDA driver's versions differ
    (["UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run "
      "some cuda functions before calling NumCudaDevices() that might have already set an error? "
      "Error 803: system has unsupported display driver / cuda driver combination"],
     "driver_library_mismatch"),
    (["RuntimeError: CUDA driver error: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"],
     "driver_library_mismatch"),
    (["Feb 02 09:52:07 node slurmd[12912]: slurmd: fatal: can't stat gres.conf file /dev/nvidia0: "
      "No such file or directory"], "no_gpu_or_driver"),
    (["Platform::WindowlessEglApplication::tryCreateContext(): no EGL devices found"],
     "no_gpu_or_driver"),
    (["worker-1:25:25 [0] init.cc:981 NCCL WARN Invalid rank requested : 2/2"], "nccl_error"),
    (["Message: Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with "
      "err: rpc error: code = Unknown desc = Unable to retrieve list of available devices: error "
      "creating nvml.Device 5: nvml: GPU is lost, which is unexpected"], "gpu_hardware_fault"),
    (["[app ready]", "[Fatal] Crash detected in pid 4242 thread 4243",
      "[Fatal] Thread backtrace follows:"], "native_crash"),
    (["[error] CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed [cuda_shader_native.cpp:66]",
      "[warning] The PTX version is not supported by the installed CUDA driver. Trying to patch "
      "the PTX to make it compatible with the driver."], "driver_too_old"),
]  # fmt: skip
FORTY_SECOND_ROUND = [
    (["kernel: NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by "
      "previous Xid 145"], "gpu_hardware_fault"),
    (["kernel: NVRM: Xid (PCI:0000:ed:00): 149, pid=1818992, name=python3, NETIR_LINK_EVT"],
     "gpu_hardware_fault"),
    (["[Wed Jun 24 15:44:20 2026] NVRM: Xid (PCI:0000:70:00): 13, Graphics SM Warp Exception on "
      "(GPC 2, TPC 7, SM 1): MMU Fault"], "illegal_memory_access"),
    (["vkCreateInstance failed -9", "vkCreateInstance failed -9", "invalid gpu device"],
     "no_gpu_or_driver"),
    (['RuntimeError: [/opt/dali/dali/core/device_guard.cc:31] Assert on "cuInitChecked()" '
      "failed: Failed to load libcuda.so. Check your library paths and if the driver is "
      "installed correctly."], "no_gpu_or_driver"),
    (["ValueError: This CTranslate2 package was not compiled with CUDA support"],
     "no_gpu_or_driver"),
    (["RuntimeError: Attempting to deserialize object on a CUDA device but "
      "torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use "
      "torch.load with map_location=torch.device('cpu') to map your storages to the CPU."],
     "no_gpu_or_driver"),
    (["ROCk module is NOT loaded, possibly no GPU devices"], "no_gpu_or_driver"),
    (["RuntimeError: MPS backend out of memory (MPS allocated: 8.93 GB, other allocations: "
      "120.39 MB, max allowed: 9.07 GB). Tried to allocate 25.00 MB on private pool."],
     "gpu_oom"),
    (['"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"',
      "Aborted (core dumped)"], "arch_unsupported"),
    (["C++ Call Stacks (More useful to developers):",
      "0   std::string paddle::platform::GetTraceBackString<char const*>(char const*&&, char "
      "const*, int)",
      "2   paddle::platform::dynload::EnforceCUDNNLoaded(char const*)"], "cudnn_missing"),
    (["text-embeddings-1  | Error: Could not create backend",
      "text-embeddings-1  |     Could not start backend: Runtime compute cap 52 is not compatible "
      "with compile time compute cap 75"], "arch_unsupported"),
]  # fmt: skip
# Round forty-four's families (their real lines, from the threads each pattern cites)
FORTY_FOURTH_ROUND = [
    (["Feb 24 11:16:31 adl systemd[1]: ollama.service: A process of this unit has been killed by "
      "the OOM killer.",
      "Feb 24 11:16:32 adl systemd[1]: ollama.service: Failed with result 'oom-kill'."],
     "host_oom"),
    (["[ERROR] MD(14433,7fea2effd700,python):2021-12-12-14:13:43.932.181 [mindspore/ccsrc/minddata/"
      "dataset/util/arena.cc:250] Init] cudaHostAlloc failed, ret[2], out of memory"], "host_oom"),
    (["distributed.nanny - WARNING - Worker exceeded 95% memory budget. Restarting"], "host_oom"),
    (["RuntimeError: assertion `CUDNN_VERSION == cudnnGetVersion()' failed at ../../dnn/src/cuda/"
      "handle.cpp:58: megdnn::cuda::HandleImpl::HandleImpl(megcoreComputingHandle_t)",
      "extra message: cudnn version mismatch: compiled with 8101; detected 8204 at runtime, may "
      "caused by customized environment"], "cudnn_version_mismatch"),
    (["Could not load library cudnn_cnn_infer64_8.dll. Error code 127"], "cudnn_version_mismatch"),
    (['OSError: [WinError 127] The specified procedure could not be found. Error loading "C:\\x\\'
      'torch\\lib\\cudnn_adv_infer64_8.dll" or one of its dependencies.'],
     "cudnn_version_mismatch"),
    (["OSError: (External)  Nccl error, invalid data type, detail: Resource temporarily "
      "unavailable"], "nccl_error"),
    (["RuntimeError: NCCL_ERROR: b'unhandled system error'"], "nccl_error"),
    (["RuntimeError: Distributed package doesn't have NCCL built in"], "nccl_error"),
    (["CUDA error (C:/a/xformers/xformers/third_party/flash-attention/hopper\\flash_fwd_launch_"
      "template.h:188): invalid argument"], "arch_unsupported"),
    (["SetKernelsGpuData copy to cData failed invalid device symbol",
      "autodock_gpu_64wi: ./cuda/kernels.cu:130: void SetKernelsGpuData(GpuData*): Assertion `0' "
      "failed."], "arch_unsupported"),
    (["cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_INVALID_OPTION (5)"],
     "arch_unsupported"),
    (["D:\\a\\_work\\1\\s\\onnxruntime\\python\\onnxruntime_pybind_state.cc:857 onnxruntime::"
      "python::CreateExecutionProviderInstance CUDA_PATH is set but CUDA wasnt able to be loaded. "
      "Please install the correct version of CUDA andcuDNN as mentioned in the GPU requirements "
      "page"], "cuda_runtime_missing"),
    (['[ONNXRuntimeError] : 1 : FAIL : Error loading "C:\\x\\onnxruntime_providers_cuda.dll" '
      'which depends on "cublasLt64_12.dll" which is missing. (Error 126: "The specified module '
      'could not be found.")'], "cuda_runtime_missing"),
    (['[ONNXRuntimeError] : 1 : FAIL : Error loading "C:\\x\\onnxruntime_providers_cuda.dll" '
      'which depends on "cudnn64_9.dll" which is missing. (Error 126: "The specified module '
      'could not be found.")'], "cudnn_missing"),
    (["cupy_backends.cuda.libs.nvrtc.NVRTCError: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (7)"],
     "cuda_runtime_missing"),
    (["E0000 00:00:1743713172.513857  698835 pjrt_stream_executor_client.cc:3072] Execution of "
      "replica 0 failed: DEADLINE_EXCEEDED: GetKeyValue() timed out with key: devices=[0,1]; "
      "stream=0 and duration: 10m"], "timeout"),
    (["tabby_1  | CUDA error 2 at /root/workspace/crates/llama-cpp-bindings/llama.cpp/ggml-cuda.cu:"
      "7641: out of memory", "tabby_1  | current device: 0"], "gpu_oom"),
]  # fmt: skip
# Round forty-five's families
FORTY_FIFTH_ROUND = [
    ([".../torch/cuda/__init__.py:187: UserWarning: CUDA initialization: The NVIDIA driver on your",
      "system is too old (found version 12040). ...", "AssertionError: CUDA not available"],
     "driver_too_old"),
    (["/buildAgent/work/45f70df4210b2e3e/source/cudamanager/src/CudaContextManager.cpp (635) : "
      "warning : CUDA driver version is 11020, expected at least 11040."], "driver_too_old"),
    (["Invalid handle. Cannot load symbol cublasLtCreate", "Aborted (core dumped)"],
     "cuda_runtime_missing"),
    (["ValueError: Requested float16 compute type, but the target device or backend do not "
      "support efficient float16 computation."], "arch_unsupported"),
    (["FATAL: this function is for sm80, but was built for sm750"], "arch_unsupported"),
    (["Your session crashed after using all available RAM. If you are interested in access to "
      "high-RAM runtimes, you may want to check out Colab Pro."], "host_oom"),
    (["8dbe9e7102e4:176:194 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 "
      "both on CUDA device 1cb00000", "8dbe9e7102e4:176:194 [0] NCCL INFO init.cc:840 -> 5"],
     "nccl_error"),
    (["F1009 20:20:52.853183 23838 WindowlessContext.cpp:113] Check failed: eglDevId < numDevices "
      "[EGL] Could not find an EGL device for CUDA device 0"], "no_gpu_or_driver"),
    (["socket.timeout: timed out"], "timeout"),
    (["mlagents.envs.exception.UnityTimeOutException: The Unity environment took too long to "
      "respond."], "timeout"),
    (["Singularity> python3 test_train_q.py",
      "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA "
      "GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"],
     "container_gpu_access"),
]  # fmt: skip
# Round forty-six's families
FORTY_SIXTH_ROUND = [
    (["E tensorflow/stream_executor/cuda/cuda_driver.cc:328] failed call to cuInit: "
      "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected",
      "E tensorflow/stream_executor/cuda/cuda_diagnostics.cc:313] kernel version 455.32.0 does "
      "not match DSO version 460.73.1 -- cannot find working devices in this configuration"],
     "driver_library_mismatch"),
    (["kernel: NVRM: The NVIDIA GPU 0000:09:00.0 (PCI ID: 10de:1d01)",
      "             NVRM: installed in this system is not supported by open",
      "             NVRM: nvidia.ko because it does not include the required GPU",
      "             NVRM: System Processor (GSP).",
      "kernel: nvidia 0000:09:00.0: probe with driver nvidia failed with error -1",
      "kernel: NVRM: The NVIDIA probe routine failed for 1 device(s).",
      "kernel: NVRM: None of the NVIDIA devices were initialized."], "no_gpu_or_driver"),
    (["[    3.513141] NVRM: Open nvidia.ko is only ready for use on Data Center GPUs."],
     "no_gpu_or_driver"),
    (["could not insert 'nvidia': Exec format error",
      "nvidia: version magic '5.4.18-100.fc30.x86_64 SMP mod_unload ' should be "
      "'5.4.18-200.fc31.x86_64 SMP mod_unload '"], "no_gpu_or_driver"),
    (["[95755.008691] nvidia_uvm: Unknown symbol radix_tree_preloads (err -2)"],
     "no_gpu_or_driver"),
    (["modprobe: ERROR: could not insert 'nvidia_331_uvm': Function not implemented",
      "cudaGetDeviceCount returned 30"], "no_gpu_or_driver"),
    (["cv2.error: OpenCV(4.4.0) /home/ycc/opencv-4.4.0/modules/dnn/src/dnn.cpp:2353: error: "
      "(-216:No CUDA support) OpenCV was not built to work with the selected device. Please check "
      "CUDA_ARCH_PTX or CUDA_ARCH_BIN in your build configuration. in function 'initCUDABackend'"],
     "arch_unsupported"),
    (["ptxas-blackwell fatal   : Value 'sm_110a' is not defined for option 'gpu-name'"],
     "arch_unsupported"),
    (["FATAL: kernel `fmha_cutlassF_f16_aligned_64x128_rf_sm80` is for sm80-sm100, but was built "
      "for sm50"], "arch_unsupported"),
    (["thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: "
      "GpuTools(Cuda(NoBinaryForGpu))', /root/halo2/src/arithmetic.rs:356:53"], "arch_unsupported"),
    (["ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU "
      "with cuda>=11.0"], "arch_unsupported"),
    (["Using gpu device 1: Tesla K20Xm (CNMeM is disabled, cuDNN Version is too old. Update to "
      "v5, was 3007.)"], "cudnn_version_mismatch"),
    (["Using gpu device 0: GeForce GTX 1060 (CNMeM is enabled with initial size: 100 MB, cuDNN "
      "Mixed dnn version. The header is from one version, but we link with a different version "
      "(6021, 5005))"], "cudnn_version_mismatch"),
    (["...share/lua/5.1/cudnn/ffi.lua:1618: These bindings are for CUDNN 5.x (5005 <= "
      "cudnn.version > 6000) , while the loaded CuDNN is version: 6021"],
     "cudnn_version_mismatch"),
    (["MemoryError: Error allocating 147865600 bytes of device memory (out of memory)."],
     "gpu_oom"),
]  # fmt: skip
# Round forty-seven's families
FORTY_SEVENTH_ROUND = [
    (["2022-08-23 10:02:11.1: F tensorflow/stream_executor/lib/statusor.cc:34] Attempting to "
      "fetch value instead of handling error Internal: no supported devices found for platform "
      "CUDA", "Fatal Python error: Aborted"], "no_gpu_or_driver"),
    (["[2024-11-12 20:14:07.174] [error] Invalid CUDA device index '0' from device string "
      '"cuda:0", there are 0 visible CUDA devices.'], "no_gpu_or_driver"),
    (['[error] Invalid CUDA device index "1" from device string ,1,2, there are 1 visible CUDA '
      "devices."], "invalid_device_ordinal"),
    (["NvRmMemInitNvmap failed with No such file or directory",
      "356: Memory Manager Not supported"], "container_gpu_access"),
    (["onnxruntime::CudaCall(...) CUDNN failure 4000: unrecognized error code ; GPU=0 ; "
      "hostname=b8ba6e13da2b ; file=/workspace/onnxruntime/core/providers/cuda/nn/conv.cc"],
     "cudnn_init_failure"),
]  # fmt: skip
# Families found among the corpus' own misses (messages two or more threads labelled alike)
CORPUS_MINED = [
    (["2024-06-14 10:00:00.000000: E external/local_xla/xla/stream_executor/cuda/cuda_driver.cc:"
      "282] failed call to cuInit: CUDA_ERROR_NOT_FOUND: named symbol not found"],
     "container_gpu_access"),
    (["RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
      "before calling NumCudaDevices() that might have already set an error? Error 500: named "
      "symbol not found"], "container_gpu_access"),
    (['time="2024-03-04T16:08:34Z" level=info msg="Starting dcgm-exporter"',
      "Error: Failed to initialize NVML",
      'time="2024-03-04T16:08:34Z" level=fatal msg="Error starting nv-hostengine: DCGM '
      'initialization error"'], "container_gpu_access"),
    (["RuntimeError: Background workers died. Look for the error message further up! If there "
      "is none then your RAM was full and the worker was killed by the OS. Use fewer workers or "
      "get more RAM in that case!"], "host_oom"),
    (["[11:54:41.413540][error] This program needs a CUDA-Enabled GPU (with at least compute "
      "capablility 2.0)."], "no_gpu_or_driver"),
    # a bare SIGBUS: /dev/shm in 5 of the 6 public threads that print only it
    (["Loading the graph...", "Bus error (core dumped)"], "shm_exhausted"),
    (["(RayWorker pid=4711) Fatal Python error: Bus error"], "shm_exhausted"),
    # a kernel a newer toolkit built than the driver loads (4 of 6 threads)
    (["[rank0]: RuntimeError: CUDA error: device kernel image is invalid"], "driver_too_old"),
    (["RuntimeError: Triton Error [CUDA]: device kernel image is invalid"], "driver_too_old"),
    (["E external/xla/xla/stream_executor/cuda/cuda_driver.cc:864] failed to load PTX text as a "
      "module: CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid"], "unknown"),
    # NVML refused the GPU's device nodes (every such corpus thread a container's)
    (["$ podman run --rm --security-opt=label=disable nvidia/cuda:11.0-base nvidia-smi",
      "Failed to initialize NVML: Insufficient Permissions"], "container_gpu_access"),
    (["gpu-feature-discovery: 2022/03/13 12:09:51 Unexpected error: Error generating NVML labels: "
      "Error generating common labels: Error getting device: nvml: Insufficient Permissions"],
     "container_gpu_access"),
    (["pynvml.NVMLError_NoPermission: Insufficient Permissions"], "unknown"),
    # a jax-cuda plugin of another release than jaxlib
    (["Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()",
      "TypeError: register_custom_call_target(): incompatible function arguments. The following "
      "argument types are supported:"], "backend_init_failure"),
]  # fmt: skip
# Rounds forty-nine and fifty (logs from threads unseen before, each family from its component's
# own message)
FORTY_NINTH_ROUND = [
    (["[2023-04-16 21:36:16,042] [INFO] [comm.py:586:init_distributed] Initializing TorchBackend",
      "memory allocation of 2097152 bytes failed"], "host_oom"),
    (["Conv1D on GPU currently requires the cuDNN library which is not integrated in this build"],
     "cudnn_missing"),
    (['[CUDA] Error gpu 1: <cryptonight_extra_cpu_init>:193 "out of memory"',
      "terminate called after throwing an instance of 'std::runtime_error'",
      "  what():  [CUDA] Error: out of memory"], "gpu_oom"),
    (["WARN: NVML: can't get GPU #0, error code 15",
      "WARN: WATCHDOG: T-Rex has a problem with GPU, terminating..."], "gpu_hardware_fault"),
    (["Faulting module name: c10.dll, version: 0.0.0.0, time stamp: 0x6655ec14",
      "Exception code: 0xc0000005"], "native_crash"),
    (["Process finished with error code: 0xC0000409"], "native_crash"),
    # the catalog's branches that lacked their needle, now patterns of their own
    (["  what():  exclusive_scan failed to synchronize: cudaErrorIllegalAddress: an illegal "
      "memory access"], "illegal_memory_access"),
    (["Exception: (cuda_get_device_count_wrapper) error( cudaErrorStubLibrary"], "stub_driver"),
    (["Loaded runtime CuDNN library: 7.2.1 but source was compiled with: 7.4.1.  CuDNN library "
      "major and minor version needs to match or have higher minor version"],
     "cudnn_version_mismatch"),
    (["Kokkos::Cuda::initialize ERROR: running kernels compiled for compute capability 8.6 on "
      "device with compute capability 7.5 is not supported by CUDA!"], "arch_unsupported"),
]  # fmt: skip
FIFTIETH_ROUND = [
    (["mujoco.FatalError: Could not allocate memory"], "host_oom"),
    (["ERROR: RMM call in line 68of file managed_allocator.cuh failed with result "
      "RMM_ERROR_OUT_OF_MEMORY (4)  Attempted to allocate: 4000000000 bytes."], "gpu_oom"),
    (["2024-11-20 20:37:20.877478: W external/xla/xla/hlo/transforms/simplifiers/hlo_"
      "rematerialization.cc:3020] Can't reduce memory use below 2.12GiB (2278089352 bytes) by "
      "rematerialization; only reduced to 5.65GiB (6063398400 bytes), down from 5.70GiB",
      "E1120 20:37:33.901627  165263 hlo_lexer.cc:443] Failed to parse int literal: 8945"],
     "gpu_oom"),
    (["RuntimeError: exception occurred! file=std_comms.hpp, NCCL error encountered at: "
      "file=std_comms.hpp line=334: call='ncclBroadcast(buff)', Reason=4:invalid argument"],
     "nccl_error"),
    (["UserWarning: Failed to import the CUDA driver interface, with an error message indicating "
      "that the version of your CUDA header does not match the version of your CUDA driver.",
      "ImportError: _driver.so: undefined symbol: cuDevicePrimaryCtxRelease_v2"],
     "driver_too_old"),
    (["OsError: [WinError -1073741795] Windows Error 0xc000001d"], "arch_unsupported"),
    (["cuBLAS error 15 at ggml-cuda.cu:7398: the requested functionality is not supported"],
     "arch_unsupported"),
]  # fmt: skip
FIFTY_FIRST_ROUND = [
    (["RuntimeError: CuPy failed to load nvrtc64_120_0.dll: FileNotFoundError: Could not find "
      "module 'nvrtc64_120_0.dll' (or one of its dependencies)."], "cuda_runtime_missing"),
    (["tensorflow.python.framework.errors_impl.InternalError: cudaGetDevice() failed. Status: "
      "cudaGetErrorString symbol not found."], "cuda_runtime_missing"),
    (["ffmpeg: error while loading shared libraries: libnppig.so.11: cannot open shared object "
      "file: No such file or directory"], "cuda_runtime_missing"),
    (["2022-08-01 17:28:07.861579: E external/org_tensorflow/tensorflow/stream_executor/cuda/"
      "cuda_asm_compiler.cc:57] cuLinkAddData fails. This is usually caused by stale driver "
      "version."], "driver_too_old"),
    (["[ERROR] not all local fabric manager instances finished their configuration",
      "[ERROR] failed to configure all the available GPUs or NVSwitches"],
     "fabric_manager_not_running"),
    (["[E] [TRT] safeRuntime.cpp (25) - Cuda Error in nvinfer1::internal::DefaultAllocator::"
      "allocate: 2 (out of memory)",
      "[E] [TRT] Internal error: could not find any implementation for node conv0_fwd"],
     "gpu_oom"),
    (["CUDA error at /home/code/colmap/src/mvs/gpu_mat.h:167 - out of memory"], "gpu_oom"),
    (["fish: Job 1, 'python a.py' terminated by signal SIGSEGV (Address boundary error)"],
     "native_crash"),
    (["2024-04-12 23:39:41.656900: E external/xla/xla/pjrt/distributed/client.cc:96] "
      "Coordination service agent in error status: DEADLINE_EXCEEDED: Deadline Exceeded"],
     "timeout"),
    # the shell's "Killed" in more of glibc's translations
    (["Caching all 373 images.", "Processus arrêté"], "host_oom"),
    (["Terminado (killed)"], "host_oom"),
    (["Вбито"], "host_oom"),
    (["Σκοτώθηκε"], "host_oom"),
]  # fmt: skip
FIFTY_THIRD_ROUND = [
    (["rocBLAS error: Cannot read C:\\Users\\u\\AppData\\Local\\Programs\\Ollama\\rocm\\/rocblas/"
      "library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1031"],
     "arch_unsupported"),
    (["Entry Point Not Found : The procedure entry point roclabs_bfdot_64 could not be located in "
      "the dynamic link library (...\\lib\\ollama\\hip_blas.dll)"], "undefined_symbol"),
    (["Error: llama runner process has terminated: exit status 0xc0000139"], "undefined_symbol"),
    (["Process finished with exit code -1073741511"], "undefined_symbol"),
    (["Ultralytics YOLOv8.1.3 Python-3.10.11 torch-2.1.0+cpu",
      "An Error occurred: Invalid CUDA 'device=0' requested. Use 'device=cpu' or pass valid CUDA "
      "device(s) if available, i.e. 'device=0' or 'device=0,1,2,3' for Multi-GPU."],
     "no_gpu_or_driver"),
    (["See https://pytorch.org/get-started/locally/ for up-to-date torch install instructions if "
      "no CUDA devices are seen by torch."], "no_gpu_or_driver"),
    (["Error response from daemon: linux runtime spec devices: error gathering device "
      "information while adding custom device \"/dev/nvidia-uvm-tools\": lstat "
      "/dev/nvidia-uvm-tools: no such file or directory"], "no_gpu_or_driver"),
    # a warning that an optional extension did not load, then an error no signature names
    (["/x/torchvision/io/image.py:13: UserWarning: Failed to load image Python extension: "
      "/x/torchvision/image.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev",
      "RuntimeError: Couldn't load custom C++ ops."], "undefined_symbol"),
    # from the corpus' own misses: the driver's NVML library as ctypes fails to load it
    (["  File \"/env/lib/python3.8/site-packages/pynvml.py\", line 608, in nvmlInit",
      "OSError: libnvidia-ml.so.1: cannot open shared object file: No such file or directory"],
     "no_gpu_or_driver"),
    # ... torch's out-of-memory text as ComfyUI shows its first line, and cuBLAS' status in newer
    # TensorFlow's words
    (["2024-12-16 17:10:56,767 - root - ERROR - !!! Exception during processing !!! Allocation "
      "on device "], "gpu_oom"),
    (["Error occurred when executing CogVideoDecode:", "", "Allocation on device", ""], "gpu_oom"),
    (["E external/local_xla/xla/stream_executor/cuda/cuda_blas.cc:190] failed to create cublas "
      "handle: the library was not initialized"], "gpu_oom"),
    (["    raise NvvmSupportError(errmsg % e)",
      "OSError: libnvvm.so: cannot open shared object file: No such file or directory",
      "", "During handling of the above exception, another exception occurred:", ""],
     "cuda_runtime_missing"),
]  # fmt: skip
FIFTY_FOURTH_ROUND = [
    (["ValueError: The model's max seq len (32768) is larger than the maximum number of tokens "
      "that can be stored in KV cache (7344). Try increasing `gpu_memory_utilization` or "
      "decreasing `max_model_len` when initializing the engine."], "gpu_oom"),
    (["ValueError: To serve at least one request with the models's max seq len (32768), (2.00 GB "
      "KV cache is needed, which is larger than the available KV cache memory (0.78 GB). Try "
      "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
      "engine."], "gpu_oom"),
]  # fmt: skip
FIFTY_SIXTH_ROUND = [
    # TensorRT's check that CUDA works, its cudaError_t classified by number (35: the driver)
    (["[04/15/2023-04:37:46] [W] [TRT] CUDA initialization failure with error: 35. Please check "
      "your CUDA installation:  http://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html",
      "&&&& FAILED TensorRT.sample_onnx_mnist [TensorRT v8600] # ./sample_onnx_mnist"],
     "driver_too_old"),
    (["ERROR: Cuda initialization failure with error 35. Please check cuda installation:  "
      "http://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html.",
      "Segmentation fault (core dumped)"], "driver_too_old"),
    (["[TRT] CUDA initialization failure with error: 100. Please check your CUDA installation"],
     "no_gpu_or_driver"),
    # torch.distributed.elastic's failure table with its rows run together, lower-cased
    (["rank2 (local rank: 2)exitcode: -9 (pid: 36071)error file: <N/A>",
      "traceback : signal 9 (SIGKILL) received by PID 36071"], "host_oom"),
    # a launcher's report of a worker SIGBUS killed: /dev/shm, as a bare "Bus error" is read
    (["2023-08-11T06:42:43.498333Z ERROR shard-manager: text_generation_launcher: Shard process "
      "was signaled to shutdown with signal 7 rank=1"], "shm_exhausted"),
    (["    exitcode  : -7 (pid: 54)", "    traceback : Signal 7 (SIGBUS) received by PID 54"],
     "shm_exhausted"),
    (["[2023-06-01 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['python', 'train.py'] "
      "exits with return code = -7"], "shm_exhausted"),
    # bitsandbytes' CUDA set-up without libcudart, Unsloth without a GPU, cumm without the arch
    (["CUDA SETUP: Problem: The main issue seems to be that the main CUDA runtime library was not "
      "detected.", "CUDA SETUP: Setup Failed!"], "cuda_runtime_missing"),
    (["NotImplementedError: Unsloth currently only works on NVIDIA GPUs and Intel GPUs."],
     "no_gpu_or_driver"),
    (["this arch isn't supported!",
      "/io/build/ConvKernel_conv_kernel.cu:104: void cumm::conv::main::conv_kernel(ConvParams): "
      "block: [6,0,0], thread: [0,0,0] Assertion `0` failed."], "arch_unsupported"),
]  # fmt: skip
FIFTY_SEVENTH_ROUND = [
    # Windows' commit limit as Rust's io::Error prints it, and the JVM's own out-of-memory report
    (["OSError: The paging file is too small for this operation to complete. (os error 1455)"],
     "host_oom"),
    (["# There is insufficient memory for the Java Runtime Environment to continue.",
      "# Native memory allocation (malloc) failed to allocate 56 bytes for AllocateHeap",
      "subprocess.CalledProcessError: Command '['./bazel-2.0.0-linux-x86_64', 'version']' "
      "returned non-zero exit status 37."], "host_oom"),
    # NVRTC's builtins DLL on Windows; Numba's loader without NVVM
    (["RuntimeError: nvrtc: error: failed to open nvrtc-builtins64_121.dll.",
      "  Make sure that nvrtc-builtins64_121.dll is installed correctly."], "cuda_runtime_missing"),
    (["    raise OSError('library %s not found' % lib)", "OSError: library nvvm not found"],
     "cuda_runtime_missing"),
    # torch's cuDNN check as an app prints it, a space lost
    (["[Voice Changer] post_update_settings ex: cuDNN version incompatibility: PyTorchwas compiled "
      " against (8, 7, 0) but found runtime version (8, 6, 0)."], "cudnn_version_mismatch"),
    # an old Warp on a driver without cuGetProcAddress (before CUDA 11.3)
    (["Warp CUDA error: Failed to get function cuGetProcAddress",
      "Warp 0.10.1 initialized:", "   CUDA devices not available"], "driver_too_old"),
    # torch.distributed.elastic's agent line for a worker the kernel killed (SIGKILL) or SIGBUS
    (["E0204 21:34:02.943000 6578 torch/distributed/elastic/multiprocessing/api.py:742] failed "
      "(exitcode: -9) local_rank: 1 (pid: 6702) of fn: worker_entrypoint (start_method: spawn)"],
     "host_oom"),
    (["E0204 21:34:02.943000 6578 torch/distributed/elastic/multiprocessing/api.py:742] failed "
      "(exitcode: -7) local_rank: 0 (pid: 6702) of binary: /usr/bin/python"], "shm_exhausted"),
]  # fmt: skip
FIFTY_EIGHTH_ROUND = [
    # zsh's and fish's reports of a SIGKILL, and runc's container init killed at its limit
    (["[1]    26478 killed     python test.py"], "host_oom"),
    (["Loading checkpoint shards:   0%|          | 0/3 [00:00<?, ?it/s][1]    26478 killed     "
      "python test.py"], "host_oom"),
    (["fish: Job 1, 'python train.py' terminated by signal SIGKILL (Forced quit)"], "host_oom"),
    (["Warning  Failed  113s   kubelet  Error: container create failed: time=\"2022-09-14T11:35:"
      "13Z\" level=error msg=\"runc create failed: unable to start container process: container "
      "init was OOM-killed (memory limit too low?)\""], "host_oom"),
    # HAMi's vGPU limit, and MindSpore's numbered CUDA failure
    (["[HAMI-core ERROR (pid:30 thread=140382094939712 allocator.c:53)]: Device 0 OOM 3171158016 "
      "/ 3145728000", "RuntimeError: CUDA error: unrecognized error code"], "gpu_oom"),
    (["The cudaStreamCreateWithFlags failed, ret[2], out of memory"], "gpu_oom"),
    # Fabric Manager on an NVLink 5 system without ib_umad; LLVM's PTX too old for the GPU
    (["Jul 20 16:15:36 edge-1:  Kernel module \"ib_umad\" has not been loaded, fabric manager "
      "cannot be started"], "fabric_manager_not_running"),
    (["LLVM Fatal Error while compiling target binary for module: jit_iota",
      "Reason: PTX version 8.8 does not support target 'sm_107a'."], "arch_unsupported"),
]  # fmt: skip
SIXTIETH_ROUND = [
    # torch's cuDNN check before 1.8 (one number per version) and before 1.0 ("mismatch")
    (["RuntimeError: cuDNN version incompatibility: PyTorch was compiled against 7401 but linked "
      "against 7301"], "cudnn_version_mismatch"),
    (["RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7005 but linked against "
      "7103"], "cudnn_version_mismatch"),
    # PaddlePaddle on Windows when no cuDNN DLL was found, the traceback cut before its end
    (["W0804 21:55:45.073442 12172 dynamic_loader.cc:238] Note: [Recommend] copy cudnn into CUDA "
      "installation directory. ", "Traceback (most recent call last):",
      '  File "train.py", line 53, in <module>'], "cudnn_missing"),
    # Numba's library check, Julia's CUDA.jl without a toolkit its driver runs
    (["        Trying to open library...       ERROR: failed to open nvvm:",
      "Could not find module 'nvvm.dll' (or one of its dependencies)."], "cuda_runtime_missing"),
    (["Error: CUDA driver 8.0.0 is not compatible with any supported CUDA toolkit (11.4.4, 11.5.2 "
      "or 12.3.1)"], "driver_too_old"),
    # OpenCV 2.4 built without CUDA; an older JAX asked for its GPU backend
    (["OpenCV Error: No GPU support (The library is compiled without CUDA support) in setDevice, "
      "file /build/opencv/modules/dynamicuda/include/opencv2/dynamicuda/dynamicuda.hpp, line 84"],
     "no_gpu_or_driver"),
    (["  what():  /build/dynamicuda.hpp:84: error: (-216) The library is compiled without CUDA "
      "support in function setDevice", "Aborted (core dumped)"], "no_gpu_or_driver"),
    (["    raise RuntimeError(f\"Unknown backend {platform}\")",
      "RuntimeError: Unknown backend GPU"], "no_gpu_or_driver"),
    # TF 2.x's XLA cluster without ptxas; vLLM without a platform, then a failure it explains
    (["NotFoundError: 2 root error(s) found.", "  (0) Not found: ./bin/ptxas not found",
      "\t [[{{node cluster_0_1/xla_compile}}]]"], "cuda_runtime_missing"),
    (["INFO 05-20 20:12:25 [__init__.py:252] No platform detected, vLLM is running on "
      "UnspecifiedPlatform", "RuntimeError: Device string must not be empty"], "no_gpu_or_driver"),
]  # fmt: skip
SIXTY_FIRST_ROUND = [
    # torch's allocator's account of an OOM whose first words an app re-cased; NumPy's message
    # without its exception's name
    (["RUNTIME ERROR: cuda out of memory. Tried to allocate 312.00 MiB (GPU 0; 11.17 GiB total "
      "capacity; 1.55 GiB already allocated; 124.69 MiB free; 1.65 GiB reserved in total by "
      "PyTorch)"], "gpu_oom"),
    (["Fehler Im 3. Schritt - Transkription", "Unable to allocate 2.42 GiB for an array with "
      "shape (1, 1625405, 400) and data type float32"], "host_oom"),
    # torch's NCCL heartbeat monitor
    (["[rank0]:[E608 14:09:10.210136079 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID 0(default_pg)"
      " Rank 0] ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in "
      "monitoring enqueued collectives."], "timeout"),
    # ONNX Runtime's CUDA provider DLL stays a missing CUDA library
    (['2024-06-03 12:26:18.3 [E:onnxruntime:Default, provider_bridge_ort.cc:1534 onnxruntime::'
      'TryGetProviderInfo_CUDA] provider_bridge_ort.cc:1209 onnxruntime::ProviderLibrary::Get '
      '[ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to load '
      '"C:\\ort\\capi\\onnxruntime_providers_cuda.dll"'], "cuda_runtime_missing"),
]  # fmt: skip
SIXTY_SECOND_ROUND = [
    # JetBrains' run console after a SIGKILL; an older modprobe without the module
    (["Process finished with exit code 137 (interrupted by signal 9: SIGKILL)"], "host_oom"),
    (["+ sudo modprobe nvidia_drm", "modprobe: FATAL: Module nvidia_drm not found."],
     "no_gpu_or_driver"),
]  # fmt: skip
SIXTY_THIRD_ROUND = [
    # cuDNN 8 sub-libraries of two releases, as a post spaced glibc's text; AITemplate's device
    # check; ggml loading weights into host memory it cannot get
    (["Could not load library libcudnn_cnn_train.so.8.     Error: /env/lib/libcudnn_ops_train.so"
      ".8 :undefined symbol: _ZN5cudnn3ops26JoinInternalPriorityStreamEP12cudnnContexti , "
      "version libcudnn_ops_infer.so.8"], "cudnn_version_mismatch"),
    (["[18:41:36] model_interface.cu:91: Error: DeviceMalloc(&result, n_bytes) API call failed: "
      "out of memory at model_interface.cu, line49"], "gpu_oom"),
    (["alloc_tensor_range: failed to allocate CPU buffer of size 437944320",
      "llama_model_load: error loading model: unable to allocate CPU buffer"], "host_oom"),
]  # fmt: skip
SIXTY_FOURTH_ROUND = [
    # bash's job line cut after "Killed"; Slurm's accounting over a step's memory limit; older
    # ggml's context in host memory
    (["cli_demo.sh: line 5: 12989 Killed"], "host_oom"),
    (["slurmstepd: error: Job 7518 exceeded memory limit (626359956 > 512000000), being killed",
      "slurmstepd: error: Exceeded job memory limit"], "host_oom"),
    (["slurmstepd: error: StepId=5.0 exceeded memory limit (626359956 > 512000000), being "
      "killed"], "host_oom"),
    (["GGML_ASSERT: /project/llama.cpp-230511/ggml.c:4411: ctx->mem_buffer != NULL",
      "Aborted"], "host_oom"),
]  # fmt: skip
SIXTY_FIFTH_ROUND = [
    # XLA's cudart stub without libcudart; a replica's VM out of memory; markdown's lost quotes
    # around a libstdc++ version; Keras 2's multi_gpu_model on a machine with fewer GPUs
    (["RuntimeError: jaxlib/cuda/versions_helpers.cc:38: operation cudaRuntimeGetVersion(&versi"
      "on) failed: Error loading CUDA libraries. GPU will not be used."], "cuda_runtime_missing"),
    (["E0000 00:00:1761686162.245829   20217 cuda_executor.cc:1309] INTERNAL: CUDA Runtime error:"
      " Failed call to cudaGetRuntimeVersion: Error loading CUDA libraries. GPU will not be used."
      ": Error loading CUDA libraries. GPU will not be used."], "cuda_runtime_missing"),
    (["The replica master 0 ran out-of-memory and exited with a non-zero status of 247."],
     "host_oom"),
    (["ImportError: /env/lib/libstdc++.so.6: version GLIBCXX_3.4.29 not found (required by "
      ".cache/torch_extensions/nvdiffrast_plugin/nvdiffrast_plugin.so)"], "undefined_symbol"),
    (["ValueError: To call `multi_gpu_model` with `gpus=2`, we expect the following devices to "
      "be available: ['/cpu:0', '/gpu:0', '/gpu:1']. However this machine only has: ['/cpu:0', "
      "'/gpu:0']. Try reducing `gpus`."], "invalid_device_ordinal"),
]  # fmt: skip
SIXTY_SIXTH_ROUND = [
    # the toolkit's hook refusing --gpus in CDI or CSV mode; FFmpeg's NVENC: the encode library
    # missing (a post lost the line's "["), and the driver refusing the SDK's structure version
    (["docker: Error response from daemon: failed to create task for container: ... error "
      "running prestart hook #0: exit status 1, stdout: , stderr: Using requested mode 'cdi'",
      "invoking the NVIDIA Container Runtime Hook directly (e.g. specifying the docker --gpus "
      "flag) is not supported. Please use the NVIDIA Container Runtime (e.g. specify the "
      "--runtime=nvidia flag) instead"], "container_gpu_access"),
    (["h264_nvenc @ 0x55855d101140] Cannot load libnvidia-encode.so.1",
      "[h264_nvenc @ 0x55855d101140] The minimum required Nvidia driver for nvenc is 418.30 or "
      "newer"], "container_gpu_access"),
    (["[h264_nvenc @ 000001e8482050c0] Cannot get the preset configuration: invalid version (15)",
      "[21:40:25] encavcodecInit: avcodec_open failed"], "driver_too_old"),
]  # fmt: skip
SIXTY_SEVENTH_ROUND = [
    # torchvision's and PyG's check of their CUDA against torch's: another version, or none
    (["RuntimeError: Detected that PyTorch and torch_sparse were compiled with different CUDA "
      "versions. PyTorch has CUDA version 10.2 and torch_sparse has CUDA version 11.1. Please "
      "reinstall the torch_sparse that matches your PyTorch install."], "undefined_symbol"),
    (["RuntimeError: Detected that PyTorch and torchvision were compiled with different CUDA "
      "major versions. PyTorch has CUDA Version=11.7 and torchvision has CUDA Version=12.1. "
      "Please reinstall the torchvision that matches your PyTorch install."], "undefined_symbol"),
    (["RuntimeError: Detected that PyTorch and torch_sparse were compiled with different CUDA "
      "versions. PyTorch has CUDA version 10.1 and torch_sparse has CUDA version 0.0. Please "
      "reinstall the torch_sparse that matches your PyTorch install."], "no_gpu_or_driver"),
    # HugeCTR's CUDA check
    (["Runtime error: out of memory /mnt/HugeCTR/HugeCTR/include/general_buffer.hpp:64"],
     "gpu_oom"),
]  # fmt: skip
SEVENTIETH_ROUND = [
    # web servers' supervisors on a SIGKILLed worker; gunicorn's timeout before it
    (["[2024-02-15 02:53:01 +0000] [1] [ERROR] Worker (pid:7) was sent SIGKILL! Perhaps out of "
      "memory?"], "host_oom"),
    (["ERROR:    Worker 0 (pid:4242) exited with code -9. Perhaps out of memory?"], "host_oom"),
    (["[2025-01-02 10:00:00 +0000] [12] [CRITICAL] WORKER TIMEOUT (pid:68)",
      "[2025-01-02 10:00:01 +0000] [12] [ERROR] Worker (pid:68) was sent SIGKILL! Perhaps out of "
      "memory?"], "timeout"),
    # Python's subprocess finding no nvcc
    (["FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'"], "cuda_runtime_missing"),
    (["FileNotFoundError: [Errno 2] No such file or directory: '/usr/local/cuda/bin/nvcc'"],
     "cuda_runtime_missing"),
    # ONNX Runtime's arena after its function's whole signature; a size no GPU has is no OOM
    (["UNAVAILABLE: Internal: onnx runtime error 6: Exception during initialization: /workspace/"
      "onnxruntime/onnxruntime/core/framework/bfc_arena.cc:331 void* onnxruntime::BFCArena::"
      "AllocateRawInternal(size_t, bool) Failed to allocate memory for requested buffer of size "
      "314572800"], "gpu_oom"),
    (["Status Message: bfc_arena.cc:368 void* onnxruntime::BFCArena::AllocateRawInternal(size_t, "
      "bool) Failed to allocate memory for requested buffer of size 4547406516732812544"],
     "unknown"),
    # the kernel's PCIe error reporting for the GPU's function
    (["[  +0.000844] nvidia 0000:03:00.0: AER: can't recover (no error_detected callback)",
      "[  +0.000001] pcieport 0000:00:03.0: AER: device recovery failed"], "gpu_hardware_fault"),
    (["pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0",
      "nvidia 0000:01:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction "
      "Layer, (Requester ID)"], "gpu_hardware_fault"),
]  # fmt: skip
SEVENTY_FIRST_ROUND = [
    # torch.distributed's NCCL backend without a CUDA device
    (["ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!"],
     "no_gpu_or_driver"),
    # xFormers' attention operators for a GPU newer than their kernels; LLVM not knowing it
    (["NotImplementedError: No operator found for `memory_efficient_attention_forward` with "
      "inputs:", "`cutlassF-pt` is not supported because:",
      "    requires device with capability <= (9, 0) but your GPU has capability (12, 0) "
      "(too new)"], "arch_unsupported"),
    (["'sm_120' is not a recognized processor for this target (ignoring processor)",
      "LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.shfl.sync.bfly.i32"], "arch_unsupported"),
    # bitsandbytes finding no libcudart; DirectML's allocator out of GPU memory
    (["CUDA_SETUP: WARNING! libcudart.so not found in any environmental path. Searching "
      "/usr/local/cuda/lib64...", "WARNING: No libcudart.so found! Install CUDA or the cudatoolkit "
      "package (anaconda)!"], "cuda_runtime_missing"),
    (["RuntimeError: Could not allocate tensor with 530841600 bytes. There is not enough GPU "
      "video memory available!"], "gpu_oom"),
]  # fmt: skip
SEVENTY_SECOND_ROUND = [
    # containerd without the NVIDIA runtime's entry; pynvml without libnvidia-ml
    (["Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox "
      "runtime: no runtime for \"nvidia\" is configured"], "container_gpu_access"),
    (["DEBUG 08-29 04:29:54 [__init__.py:99] CUDA platform is not available because: NVML "
      "Shared Library Not Found"], "no_gpu_or_driver"),
    # Blender Cycles' PTX newer than the driver's JIT
    (["Failed to load CUDA kernel from '/opt/blender/3.2/scripts/addons/cycles/lib/"
      "kernel_compute_75.ptx' (Unsupported PTX version)"], "driver_too_old"),
    # CUDA.jl's pool and a driver call's out of memory
    (["Out of GPU memory trying to allocate 8.016 MiB",
      "Effective GPU memory usage: 91.54% (14.446 GiB/15.782 GiB)"], "gpu_oom"),
    (["terminate called after throwing an instance of 'optix::Exception'",
      "  what():  Memory allocation failed (Details: Function \"RTresult _rtBufferCreate(...)\" "
      "caught exception: Encountered a CUDA error: cudaDriver().CuDevicePrimaryCtxRetain( "
      "&context, dev.get() ) returned (2): Out of memory"], "gpu_oom"),
    # DJL without libcudart; ollama on a CPU without AVX
    (["ai.djl.util.cuda.CudaUtils               : cudart library not found."],
     "cuda_runtime_missing"),
    (["time=2024-09-16T10:00:00.000Z level=WARN source=gpu.go:222 msg=\"CPU does not have "
      "minimum vector extensions, GPU inference disabled\" required=avx detected=\"no vector "
      "extensions\""], "arch_unsupported"),
]  # fmt: skip
SEVENTY_FOURTH_ROUND = [
    # Docker's device-driver refusal where a page dropped the empty driver's quotes; TF finding
    # the kernel module but no /dev/nvidia0 (a container without --gpus)
    (["docker: Error response from daemon: could not select device driver with capabilities: "
      "[[gpu]]."], "container_gpu_access"),
    (["2019-01-13 12:15:38.188659: E tensorflow/stream_executor/cuda/cuda_driver.cc:300] failed "
      "call to cuInit: UNKNOWN ERROR (-1)",
      "2019-01-13 12:15:38.188700: I tensorflow/stream_executor/cuda/cuda_diagnostics.cc:157] no "
      "NVIDIA GPU device is present: /dev/nvidia0 does not exist"], "container_gpu_access"),
    # TF's BFC allocator's dump on a failed allocation, the log cut before its last line
    (["2019-03-12 09:31:29.783797: I tensorflow/core/common_runtime/bfc_allocator.cc:674] 2 "
      "Chunks of size 536870912 totalling 1.00GiB",
      "2019-03-12 09:31:29.783824: I tensorflow/core/common_runtime/bfc_allocator.cc:678] Sum "
      "Total of in-use chunks: 11.51GiB"], "gpu_oom"),
    # torch's NCCL error relaying NCCL's last error: a CUDA allocation failed
    (["torch.distributed.DistBackendError: NCCL error in: /opt/conda/conda-bld/pytorch/work/"
      "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, unhandled cuda error (run with "
      "NCCL_DEBUG=INFO for details), NCCL version 2.19.3",
      "ncclUnhandledCudaError: Call to CUDA function failed.", "Last error:",
      "Cuda failure 2 'out of memory'"], "gpu_oom"),
    # the MPS client's codes: no connection to the daemon, the clients' limit reached
    (["[error] Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
      "before calling NumCudaDevices() that might have already set an error? Error 805: MPS "
      "client failed to connect to the MPS control daemon or the MPS server"],
     "backend_init_failure"),
    (["RuntimeError: CUDA driver error: CUDA_ERROR_MPS_MAX_CLIENTS_REACHED"], "gpu_busy"),
]  # fmt: skip
SEVENTY_FIFTH_ROUND = [
    # NumPy 2's message from its second line; ggml's CUDA start failing with cudaErrorUnknown
    (["NumPy 2.0.1 as it may crash. To support both 1.x and 2.x",
      "versions of NumPy, modules must be compiled with NumPy 2.0.",
      "Some module may need to rebuild instead e.g. with 'pybind11>=2.12'."], "numpy_abi"),
    (["llama-cpp    | ggml_cuda_init: failed to initialize CUDA: unknown error",
      "llama-cpp    | llm_load_tensors: offloading 80 repeating layers to GPU"],
     "backend_init_failure"),
    # Paddle's warning that it has no libcudnn, then a Python warning whose source line says
    # "exception": the warning's code, not the failure
    (["W0830 15:39:10.332166  1746 dynamic_loader.cc:179] Failed to find dynamic library: "
      "libcudnn.so ( libcudnn.so: cannot open shared object file: No such file or directory ) ",
      "/home/u/anaconda3/lib/python3.6/site-packages/paddle/fluid/executor.py:1070: UserWarning: "
      "The following exception is not an EOF exception.",
      '  "The following exception is not an EOF exception.")'], "cudnn_missing"),
]  # fmt: skip
SEVENTY_SIXTH_ROUND = [
    # DeepStream's cuInit code; FFmpeg's NVENC out of sessions; GROMACS with no GPU detected
    (["nvbufsurftransform:cuInit failed : 804 "], "driver_too_old"),
    (["2022/12/08 14:32:09 [h264_nvenc @ 00000273a548f1c0] OpenEncodeSessionEx failed: out of "
      "memory (10): (no details)",
      "2022/12/08 14:32:09 [h264_nvenc @ 00000273a548f1c0] No capable devices found"], "gpu_busy"),
    (["Range checking error (possible bug):",
      "Device ID 0 did not correspond to any of the 0 detected device(s)"], "no_gpu_or_driver"),
    # C++'s operator new failing (host memory), not RMM's bad_alloc of a CUDA allocation
    (["(pid=5135) terminate called after throwing an instance of 'std::bad_alloc'",
      "(pid=5135)   what():  std::bad_alloc"], "host_oom"),
    (["MemoryError: std::bad_alloc: cudaErrorMemoryAllocation: out of memory"], "gpu_oom"),
]  # fmt: skip
SEVENTY_SEVENTH_ROUND = [
    # modprobe without "Module "; the driver's library in a VM with no GPU passed through;
    # Taichi without libcuda; a program's own "CUDA not available", then a failure
    (["modprobe: ERROR: could not find module by name 'nvidia'",
      "modprobe: FATAL: nvidia_drm not found in directory /lib/modules/5.5.9-zen1-2-zen"],
     "no_gpu_or_driver"),
    (["NVIDIA: no NVIDIA devices found",
      "THCudaCheck FAIL file=torch/csrc/autograd/engine.cpp line=352 error=30 : unknown error",
      "RuntimeError: cuda runtime error"], "no_gpu_or_driver"),
    (["[W 12/22/24 10:19:01.532 18257] [cuda_driver.cpp:load_lib@36] libcuda.so lib not found.",
      "[W 12/22/24 10:19:01.532 18257] [misc.py:adaptive_arch_select@758] Arch=[<Arch.cuda: 3>] "
      "is not supported, falling back to CPU"], "no_gpu_or_driver"),
    (["Warp 0.6.1 initialized:", "   CUDA not available", "   Devices:",
      "Error executing job with overrides: ['gpu=0']"], "no_gpu_or_driver"),
]  # fmt: skip
SEVENTY_EIGHTH_ROUND = [
    # TensorFlow's NCCL op relaying NCCL's text; DeepSpeed's launcher on a worker's SIGSEGV
    (["tensorflow.python.framework.errors_impl.InternalError: 2 root error(s) found.",
      "  (0) Internal:  unhandled cuda error",
      "         [[node Adam/NcclAllReduce (defined at workspace/gpu_tests/test_gpus.py:60) ]]"],
     "nccl_error"),
    (["[2023-07-10 04:26:35,999] [ERROR] [launch.py:324:sigkill_handler] ['/venv/bin/python3.10', "
      "'-u', 'trainCLM.py', '--local_rank=1'] exits with return code = -11"], "native_crash"),
    # torch.autocast without CUDA, then a failure no signature names
    (["/venv/lib/python3.10/site-packages/torch/amp/autocast_mode.py:250: UserWarning: User "
      "provided device_type of 'cuda', but CUDA is not available. Disabling",
      "RuntimeError: Expected all tensors to be on the same device"], "no_gpu_or_driver"),
]  # fmt: skip
EIGHTIETH_ROUND = [
    # the kernel's one-line summary of an OOM kill, where a page quotes only that line of dmesg
    (["[Fri Sep 16 10:37:38 2022] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset="
      "37a209c3c5f0,mems_allowed=0-1,oom_memcg=/docker/37a209c3c5f0,task_memcg=/docker/37a209c3"
      "c5f0,task=python,pid=19712,uid=0"], "host_oom"),
    # nvcc's front end out of host memory in a docker build (BuildKit's step prefix)
    (["#26 98.16 /usr/local/lib/python3.10/dist-packages/torch/include/c10/util/StringUtil.h(68): "
      "catastrophic error: out of memory", "#26 98.16     return _str(_str(ss, t), args...);"],
     "host_oom"),
    # torch.cuda.nvtx's stub in a CPU-only torch
    (["RuntimeError: NVTX functions not installed. Are you sure you have a CUDA build?"],
     "no_gpu_or_driver"),
    # torch's cuFFT check with CUFFT_INTERNAL_ERROR (CUDA 11.7's cuFFT on an RTX 40 GPU), as a
    # traceback ends and as an application relays it
    (["    return _VF.stft(input, n_fft, hop_length, win_length, window,  # type: ignore[attr-"
      "defined]", "RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR"], "arch_unsupported"),
    (["[ERROR] Get target tone color error cuFFT error: CUFFT_INTERNAL_ERROR"], "arch_unsupported"),
    (["OSError: (External) CUFFT error(5). ", "  [Hint: 'CUFFT_INTERNAL_ERROR'. Driver or internal "
      "cuFFT library error] (at /paddle/paddle/phi/kernels/funcs/cufft_util.h:127)"],
     "arch_unsupported"),
    # control: cuFFT's allocation failure stays the GPU's memory
    (["RuntimeError: cuFFT error: CUFFT_ALLOC_FAILED"], "gpu_oom"),
]  # fmt: skip
EIGHTY_FIRST_ROUND = [
    # frameworks built without CUDA, asked for the GPU: Caffe's stub (glog's F line, then the
    # abort), MXNet's storage, Qiskit Aer's CPU package
    (["F0107 18:26:07.968050  3245 common.cpp:66] Cannot use GPU in CPU-only Caffe: check mode.",
      "*** Check failure stack trace: ***", "Aborted (core dumped)"], "no_gpu_or_driver"),
    (["mxnet.base.MXNetError: [16:53:11] src/storage/storage.cc:43: Please compile with CUDA "
      "enabled"], "no_gpu_or_driver"),
    (['RuntimeError: Simulation device "GPU" is not supported on this system'], "no_gpu_or_driver"),
    # PennyLane Lightning's state vector larger than the GPU
    (["pennylane_lightning_gpu.lightning_gpu_qubit_ops.PLException: [/x/pennylane_lightning_gpu/"
      "src/util/DataBuffer.hpp][Line:37][Method:DataBuffer]: Error in PennyLane Lightning: out of "
      "memory"], "gpu_oom"),
    # control: another of Lightning's errors is none of these
    (["RuntimeError: [StateVectorCudaManaged.hpp][Line:2407][Method:applyParametricPauliGeneral"
      "Gate_]: Error in PennyLane Lightning: custatevec invalid value"], "unknown"),
]  # fmt: skip
EIGHTY_SECOND_ROUND = [
    # Taichi asked for CUDA that it cannot use
    (["In [2]: ti.init(arch=ti.cuda)",
      "[W 06/24/21 15:54:08.105 4009] [__init__.py:adaptive_arch_select@656] Arch=[<Arch.cuda: "
      "5>] is not supported, falling back to CPU", "[Taichi] Starting on arch=x64"],
     "no_gpu_or_driver"),
    # Ethash miners whose DAG does not fit in the GPU: ethminer, T-Rex, nanominer, lolMiner
    (["Using device: GeForce GTX 760 (Compute 3.0)",
      "CUDA error in func 'ethash_cuda_miner::init' at line 243 : out of memory."], "gpu_oom"),
    (["20211120 10:10:12 TREX: Can't find nonce with device [ID=0, GPU #0], Device does not have "
      "enough free memory to hold the DAG for epoch 270. Required: 3.11 GB, free: 3.10 GB."],
     "gpu_oom"),
    (["2019-04-13 19:53:21: <error> device: 1; Error: not enough memory on GPU 1 to create DAG. "
      "Current epoch requires 3039 MB memory for DAG file but this device has only 2048 MB."],
     "gpu_oom"),
    (["GPU 0: insufficient memory for DAG epoch 391.",
      "GPU 0: will be in Zombie mode with reduced hashrate.",
      "GPU 0: Allocation of DAG failed with error: Memory object allocation failure"], "gpu_oom"),
]  # fmt: skip
EIGHTY_THIRD_ROUND = [
    # the NVIDIA HPC SDK's OpenACC runtime and Tinker9, for a GPU their build has no code for
    (["This file was compiled: -acc=gpu -gpu=cc60 -gpu=cc70",
      "Rebuild the application with -gpu=cc86 to use NVIDIA Tesla GPU 0"], "arch_unsupported"),
    (["Terminating with uncaught exception :  The code base should be updated for compute "
      "capability 86; Please refer to the NVIDIA Cuda-C Programming Guide at gpu_card.cpp:162"],
     "arch_unsupported"),
    # Paddle's wheel built for other architectures than the GPU's
    ([" The GPU architecture in your current machine is Pascal, which is not compatible with "
      "Paddle installation with arch: 70 75 80 86 , it is recommended to install the "
      "corresponding wheel package according to the installation information on the official "
      "Paddle website."], "arch_unsupported"),
    # OpenMM, for a device index Slurm's renumbering hid
    (["    this = _openmm.new_Context(*args)",
      "simtk.openmm.OpenMMException: Illegal value for DeviceIndex: 6"], "invalid_device_ordinal"),
    # no nvcc where OpenMM's compiler path says
    (["CUDA platform error: Error launching CUDA compiler: 32512",
      "sh: /usr/local/cuda/bin/nvcc: No such file or directory"], "cuda_runtime_missing"),
    # nvidia-docker 1.x without the NVIDIA kernel module
    (["nvidia-docker | 2016/07/13 23:40:32 Error: Could not load UVM kernel module"],
     "no_gpu_or_driver"),
]  # fmt: skip
EIGHTY_FOURTH_ROUND = [
    # Knet.jl: its allocator, and the runtime's legacy cudaErrorNoDevice through its wrapper
    (["ERROR: Out of gpu memory"], "gpu_oom"),
    (["ERROR: InitError: cudart.cudaRuntimeGetVersion error 38",
      " [1] gpu(::Bool) at /KUFS/scratch/ikesen16/.julia/newnode/v0.6/Knet/src/gpu.jl:13"],
     "no_gpu_or_driver"),
    # MATLAB's gpuArray and MatConvNet's workspace out of GPU memory
    (["Error using vl_nnconv",
      "Out of memory on device. To view more detail about available memory on the GPU,",
      "use 'gpuDevice()'. If the problem persists, reset the GPU by calling"], "gpu_oom"),
    (["Error using vl_nnconv",
      "vl::impl::nnconv_forward_blas: getWorkspace [out of memory error]"], "gpu_oom"),
    # ONNX Runtime's older CUDA provider without a CUDA DLL
    (["  Message=[ErrorCode:NoSuchFile] kernel32.LoadLibrary():'cublas64_91.dll' not found. CUDA "
      "is required for GPU execution. . Verify it is available in the system "
      "directory=C:\\Windows\\system32. Else copy it to the output folder."],
     "cuda_runtime_missing"),
    # Open3D's ops built for another torch
    (["Exception: Version mismatch: Open3D needs PyTorch version 1.7.*, but version 1.8.2 is "
      "installed!"], "undefined_symbol"),
    # TensorFlow 1.x asked for a GPU where it has only CPUs (a tuning-half miss); a GPU it has
    # but not the one asked for is no such verdict
    (["InvalidArgumentError (see above for traceback): Cannot assign a device for operation "
      "'b_1': Operation was explicitly assigned to /device:GPU:0 but available devices are [ "
      "/job:localhost/replica:0/task:0/cpu:0 ]. Make sure the device specification refers to a "
      "valid device."], "no_gpu_or_driver"),
    (["Cannot assign a device to node 'MatMul': Could not satisfy explicit device specification "
      "'/device:GPU:0' because no devices matching that specification are registered in this "
      "process"], "no_gpu_or_driver"),
    (["InvalidArgumentError: Cannot assign a device for operation a: Operation was explicitly "
      "assigned to /device:GPU:1 but available devices are [ "
      "/job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:GPU:0 "
      "]."], "unknown"),
]  # fmt: skip
EIGHTY_FIFTH_ROUND = [
    # a CDI spec newer than the engine's CDI library reads (Podman's registry refresh, and its
    # debug line); another vendor's spec is no verdict on NVIDIA's
    (["The following error was triggered when refreshing the CDI registry: failed to load CDI "
      "Spec failed to parse CDI Spec \"/etc/cdi/nvidia.yaml\": failed to unmarshal CDI Spec: "
      "error unmarshaling JSON: while decoding JSON: json: unknown field \"additionalGids\""],
     "container_gpu_access"),
    (["DEBU[0000] The following errors were triggered when creating the CDI registry: "
      "map[/etc/cdi/nvidia.yaml:[failed to load CDI Spec: failed to parse CDI Spec "
      "\"/etc/cdi/nvidia.yaml\": failed to unmarshal CDI Spec: error unmarshaling JSON: while "
      "decoding JSON: json: unknown field \"hostPath\"]]"], "container_gpu_access"),
    (["failed to parse CDI Spec \"/etc/cdi/amd.yaml\": failed to unmarshal CDI Spec: error "
      "unmarshaling JSON: while decoding JSON: json: unknown field \"hostPath\""], "unknown"),
    # libnvidia-container on a driver older than its minimum; its other detection errors stay
    # the container's
    (["docker: Error response from daemon: OCI runtime create failed: container_linux.go:367: "
      "starting container process caused: process_linux.go:495: container init caused: Running "
      "hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: "
      "detection error: nvml error: function not found: unknown."], "driver_too_old"),
    (["stderr: nvidia-container-cli: detection error: nvml error: unknown error: unknown."],
     "container_gpu_access"),
    (["stderr: nvidia-container-cli: detection error: driver error: timed out: unknown"],
     "container_gpu_access"),
    (["nvidia-container-cli: detection error"], "container_gpu_access"),
    # llama.cpp's compute buffers beside the weights, as LM Studio and llama-server print it
    (["Failed to load model",
      "Failed to initialize the context: failed to allocate compute pp buffers"], "gpu_oom"),
    (["llama_init_from_model: failed to initialize the context: failed to allocate compute pp "
      "buffers"], "gpu_oom"),
]  # fmt: skip
SIXTY_NINTH_ROUND = [
    # the shell finds no nvidia-smi: bash's, dash's and zsh's words; in a container's prompt
    (["$ nvidia-smi", "/usr/bin/bash: line 138: nvidia-smi: command not found"],
     "no_gpu_or_driver"),
    (["/__w/_temp/7ce10603.sh: 2: nvidia-smi: not found"], "no_gpu_or_driver"),
    (["zsh: command not found: nvidia-smi"], "no_gpu_or_driver"),
    (["root@00921839c781:/anomalib# nvidia-smi", "bash: nvidia-smi: command not found"],
     "container_gpu_access"),
    # torch's architecture warning without its first line
    (["The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 "
      "sm_86 sm_90.", "If you want to use the NVIDIA GeForce RTX 5060 Ti GPU with PyTorch"],
     "arch_unsupported"),
]  # fmt: skip
LATER_ROUNDS = [
    *FOURTH_ROUND,
    *FIFTH_ROUND,
    *SIXTH_ROUND,
    *SEVENTH_ROUND,
    *EIGHTH_ROUND,
    *NINTH_ROUND,
    *TENTH_ROUND,
    *ELEVENTH_ROUND,
    *TWELFTH_ROUND,
    *THIRTEENTH_ROUND,
    *FOURTEENTH_ROUND,
    *FIFTEENTH_ROUND,
    *SIXTEENTH_ROUND,
    *SEVENTEENTH_ROUND,
    *EIGHTEENTH_ROUND,
    *NINETEENTH_ROUND,
    *TWENTIETH_ROUND,
    *TWENTY_FIRST_ROUND,
    *TWENTY_SECOND_ROUND,
    *TWENTY_THIRD_ROUND,
    *TWENTY_FOURTH_ROUND,
    *TWENTY_FIFTH_ROUND,
    *TWENTY_SIXTH_ROUND,
    *TWENTY_SEVENTH_ROUND,
    *TWENTY_EIGHTH_ROUND,
    *TWENTY_NINTH_ROUND,
    *THIRTIETH_ROUND,
    *THIRTY_FIRST_ROUND,
    *THIRTY_SECOND_ROUND,
    *THIRTY_THIRD_ROUND,
    *THIRTY_FOURTH_ROUND,
    *THIRTY_FIFTH_ROUND,
    *THIRTY_SIXTH_ROUND,
    *THIRTY_SEVENTH_ROUND,
    *THIRTY_EIGHTH_ROUND,
    *THIRTY_NINTH_ROUND,
    *FORTIETH_ROUND,
    *FORTY_FIRST_ROUND,
    *FORTY_SECOND_ROUND,
    *FORTY_FOURTH_ROUND,
    *FORTY_FIFTH_ROUND,
    *FORTY_SIXTH_ROUND,
    *FORTY_SEVENTH_ROUND,
    *FORTY_NINTH_ROUND,
    *FIFTIETH_ROUND,
    *FIFTY_FIRST_ROUND,
    *FIFTY_THIRD_ROUND,
    *FIFTY_FOURTH_ROUND,
    *FIFTY_SIXTH_ROUND,
    *FIFTY_SEVENTH_ROUND,
    *FIFTY_EIGHTH_ROUND,
    *SIXTIETH_ROUND,
    *SIXTY_FIRST_ROUND,
    *SIXTY_SECOND_ROUND,
    *SIXTY_THIRD_ROUND,
    *SIXTY_FOURTH_ROUND,
    *SIXTY_FIFTH_ROUND,
    *SIXTY_SIXTH_ROUND,
    *SIXTY_SEVENTH_ROUND,
    *SIXTY_NINTH_ROUND,
    *SEVENTIETH_ROUND,
    *SEVENTY_FIRST_ROUND,
    *SEVENTY_SECOND_ROUND,
    *SEVENTY_FOURTH_ROUND,
    *SEVENTY_FIFTH_ROUND,
    *SEVENTY_SIXTH_ROUND,
    *SEVENTY_SEVENTH_ROUND,
    *SEVENTY_EIGHTH_ROUND,
    *EIGHTIETH_ROUND,
    *EIGHTY_FIRST_ROUND,
    *EIGHTY_SECOND_ROUND,
    *EIGHTY_THIRD_ROUND,
    *EIGHTY_FOURTH_ROUND,
    *EIGHTY_FIFTH_ROUND,
    *CORPUS_MINED,
]


@pytest.mark.parametrize(
    "lines",
    [
        # JAX logs each backend it cannot start at INFO level (jax/_src/xla_bridge.py)
        ["I0101 00:00:00.000000 1 xla_bridge.py:863] Unable to initialize backend 'rocm': "
         "NOT_FOUND: Could not find registered platform with name: \"rocm\". Available platform "
         "names are: CUDA",
         "Unable to initialize backend 'tpu': INTERNAL: Failed to open libtpu.so: libtpu.so: "
         "cannot open shared object file: No such file or directory"],
        # xformers without Triton (xformers' warning, then the ImportError it caught)
        ["A matching Triton is not available, some optimizations will not be enabled.",
         "Error caught was: No module named 'triton'"],
        # Cython's harmless warning, which NumPy itself filters (numpy/__init__.py)
        ["/venv/lib/python3.6/importlib/_bootstrap.py:219: RuntimeWarning: numpy.dtype size "
         "changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from "
         "PyObject"],
        # bitsandbytes' banner, printed on every import (0.35-0.41)
        ["===================================BUG REPORT===================================",
         "Welcome to bitsandbytes. For bug reports, please submit your error trace to: "
         "https://github.com/TimDettmers/bitsandbytes/issues",
         "================================================================================",
         "CUDA SETUP: CUDA runtime path found: /opt/cuda/lib64/libcudart.so"],
        # DeepStream's first run, before it has built its TensorRT engine
        ["ERROR: Deserialize engine failed because file path: /opt/nvidia/deepstream/x/"
         "model_b1_gpu0_fp32.engine open error"],
        # the NGC containers' GPU check where it only warns
        ["WARNING: Detected NVIDIA GB10 GPU, which is not yet supported in this version of the "
         "container"],
        # TF's device count in a child forked after CUDA started (DeepVariant's workers)
        ["E tensorflow/compiler/xla/stream_executor/cuda/cuda_driver.cc:1278] could not "
         "retrieve CUDA device count: CUDA_ERROR_NOT_INITIALIZED: initialization error"],
        # Weights & Biases retrying an upload
        ["wandb: Network error (TransientError), entering retry loop."],
        # TensorFlow 2.4's ptxas fall-back: it compiles with the driver and goes on
        ["2020-12-14 01:30:45.379556: W tensorflow/stream_executor/gpu/asm_compiler.cc:235] Your "
         "CUDA software stack is old. We fallback to the NVIDIA driver for some compilation. "
         "Update your CUDA version to get the best performance. The ptxas error was: ptxas fatal"
         "   : Value 'sm_86' is not defined for option 'gpu-name'"],
        # Open MPI's note on the help messages it folded
        ['[g0004:10079] Set MCA parameter "orte_base_help_aggregate" to 0 to see all help / '
         "error messages"],
        # nccl-tests' result table header (two columns are named "error")
        ["#       size         count    type   redop    root     time   algbw   busbw  error     "
         "time   algbw   busbw  error"],
        # HandBrake probing for NVENC's library at start (no encoder asked for it)
        ["Cannot load libnvidia-encode.so.1", "[08:14:27] hb_init: starting libhb thread"],
        # ONNX Runtime's own warning level ("[W:onnxruntime:..."), a provider it goes on without
        ["2023-05-25 13:45:37.1493312 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:1671 "
         "onnxruntime::python::CreateInferencePybindStateModule] Init provider bridge failed."],
        # Triton's GPU metrics: a reading the GPU does not support (NVML_ERROR_NOT_SUPPORTED)
        ["E0220 07:59:01.944339 1 metrics.cc:238] failed to get energy consumption for GPU 0, "
         "NVML_ERROR 3"],
        # TensorRT's cuDNN linked-vs-loaded warning on a run that goes on
        ["[W] [TRT] TensorRT was linked against cuDNN 8.1.0 but loaded cuDNN 8.0.2"],
        # GPT4All's bindings trying their CUDA backends before a run on the CPU
        ["Failed to load libllamamodel-mainline-cuda.so: dlopen: libcuda.so.1: cannot open "
         "shared object file: No such file or directory"],
        # spconv's prebuilt wheel on a GPU it JIT-compiles for
        ["[WARNING]your gpu arch (8, 9) isn't compiled in prebuilt, may cause invalid device "
         "function. available: {(6, 1), (7, 0), (8, 0), (8, 6)}"],
        # Ray's AMD GPU probe on a machine without amdgpu
        ["cat: /sys/module/amdgpu/initstate: No such file or directory",
         "ERROR:root:Driver not initialized (amdgpu not found in modules)"],
        # the loader going on without a library LD_PRELOAD names
        ["ERROR: ld.so: object 'libcaffe2_gpu.so' from LD_PRELOAD cannot be preloaded (cannot "
         "open shared object file): ignored."],
        # DGL without its optional tensor adapter for the installed torch (0.6-0.8, and later)
        ["[23:48:28] //dgl/src/runtime/tensordispatch.cc:43: TensorDispatcher: dlopen failed: "
         "/env/lib/python3.8/site-packages/dgl/tensoradapter/pytorch/libtensoradapter_pytorch_"
         "1.9.0.so: cannot open shared object file: No such file or directory"],
        ["[10:07:13] /opt/dgl/src/runtime/tensordispatch.cc:43: Could not open file: "
         "libtensoradapter_pytorch_2.1.0.so: cannot open shared object file: No such file or "
         "directory. This does not affect DGL's but might impact its performance."],
        # cuDNN 8's probe of cuBLAS on Windows for a symbol older cuBLAS lacks
        ["Could not load symbol cublasGetSmCountTarget from cublas64_11.dll. Error code 127"],
        # Open MPI's openib BTL on a device UCX serves, and the count of its folded help notes
        ["WARNING: There was an error initializing an OpenFabrics device.",
         "  Local host:   log02", "  Local device: mlx5_0",
         "[log02:869941] 3 more processes have sent help message help-mpi-btl-openib.txt / error "
         "in device init"],
        # hashcat's watchdog setting, T-Rex going on without NVML, the device plugin's printed
        # configuration, TF Lite's GPU delegate falling back to OpenGL
        ["Watchdog: Temperature abort trigger set to 90c"],
        ["20201211 21:00:17 WARN: NVML error, code 1",
         "20201211 21:00:17 WARN: Can't initialize NVML. GPU monitoring will be disabled."],
        ['    "failOnInitError": false,'],
        ["ERROR: Can not open OpenCL library on this device - libOpenCL.so: cannot open shared "
         "object file: No such file or directory", "ERROR: Falling back to OpenGL"],
        # the source line Python's warnings module shows under a warning
        ["/env/torchvision/io/image.py:11: UserWarning: Failed to load image Python extension: ",
         "  warn(f\"Failed to load image Python extension: {e}\")"],
        # an optional extension that did not load, and SAM 2 going on without its own
        ["/opt/conda/lib/python3.10/site-packages/ecmwflibs/__init__.py:81: UserWarning: /lib/"
         "x86_64-linux-gnu/libgobject-2.0.so.0: undefined symbol: ffi_type_uint32, version "
         "LIBFFI_BASE_7.0", "  warnings.warn(str(e))"],
        ["/sam2/sam2_video_predictor.py:786: UserWarning: /sam2/sam2/_C.so: undefined symbol: "
         "_ZN3c106detail23torchInternalAssertFailEPKcS2_jS2_",
         "Skipping the post-processing step due to the error above. You can still use SAM 2 and "
         "it's OK to ignore the error above, although some post-processing functionality may be "
         "limited (which doesn't affect the results in most cases)."],
        # NeMo's warning level ("[NeMo W <time> <module>:<line>]")
        ["[NeMo W 2024-09-10 03:10:16 der:185] Check if each ground truth RTTMs were present in "
         "the provided manifest file. Skipping calculation of Diariazation Error Rate"],
    ],
)  # fmt: skip
def test_backends_and_optimizations_a_run_does_without_are_noise(lines: list[str]) -> None:
    assert verdict_of(*lines, "Epoch 1/2") == ("unknown", None, ())


def test_nccl_info_lines_stay_noise_and_its_topology_warning_is_a_failure() -> None:
    """NCCL_DEBUG=INFO's set-up lines, arrows and error traces included, are noise; a PCI path
    it cannot resolve ends its initialization (ncclSystemError)."""
    info = [
        "gpu1:1:1 [0] NCCL INFO Channel 00/02 : 0[1000] -> 1[2000] via P2P/IPC",
        "gpu1:1:1 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1",
        "x:1:1 [0] NCCL INFO init.cc:876 -> 2",
    ]
    topo = "gpu1:1:1 [0] misc/topo.cc:22 NCCL WARN Could not find real path of /sys/class/pci_bus/0"
    assert verdict_of(*info, "Epoch 1/2") == ("unknown", None, ())
    assert verdict_of(*info, topo)[:2] == ("nccl_error", topo)


def test_a_warning_that_is_no_failure_alone_needs_a_failure_after_it() -> None:
    """TensorFlow's PTX JIT warning (`alone: false`): a run that goes on is no failure, even
    where the log lost the line's W prefix; one that fails after it (an error enum's name is
    an error line) has it as the cause."""
    jit = (
        "TensorFlow was not built with CUDA kernel binaries compatible with compute capability "
        "9.0. CUDA kernels will be jit-compiled from PTX, which could take 30 minutes or longer."
    )
    assert verdict_of(jit, "Epoch 1/2 - loss: 0.3") == ("unknown", None, ())
    assert verdict_of(f"W0000 00:00:1.6 1 gpu_device.cc:2431] {jit}")[0] == "unknown"
    assert verdict_of(jit, "", "CUDA_ERROR_INVALID_HANDLE")[:2] == ("arch_unsupported", jit)
    oom = verdict_of(jit, "RuntimeError: CUDA error: out of memory")
    assert (oom[0], oom[2]) == ("gpu_oom", ("arch_unsupported",)), "a named failure is the cause"
    assert verdict_of("CUDA_ERROR_INVALID_HANDLE", jit)[0] == "unknown", "a failure before it"
    xla = (
        "W external/xla/xla/stream_executor/cuda/cuda_asm_compiler.cc:280] Falling back to the "
        "CUDA driver for PTX compilation; ptxas does not support CC 12.0"
    )
    assert verdict_of(xla, "step 1: loss 0.3") == ("unknown", None, ())


def test_tensorrts_memory_errors_while_it_times_tactics_are_no_failure_alone() -> None:
    """TensorRT's builder logs an allocation it could not make at error level and skips that
    tactic; the build goes on. Its out-of-memory is the cause only where the build then fails."""
    tactic = [
        "[12/09/2022-20:25:24] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error "
        "Code 2: OutOfMemory (no further information)",
        "[12/09/2022-20:25:24] [TRT] [W] Requested amount of GPU memory (17179869184 bytes) could "
        "not be allocated. There may not be enough free memory for allocation to succeed.",
        "[12/09/2022-20:25:25] [TRT] [W] Skipping tactic 8 due to insufficient memory on requested "
        "size of 17179869184 detected for tactic 0x000000000000003c.",
    ]
    assert verdict_of(*tactic, "[TRT] [I] Engine built in 92.1 s.") == ("unknown", None, ())
    failed = (
        "[11/22/2024-13:40:47] [E] Error[10]: IBuilder::buildSerializedNetwork: Error Code 10: "
        "Internal Error (Could not find any implementation for node {ForeignNode[/1/Slice_4]}.)"
    )
    assert verdict_of(*tactic, failed)[:2] == ("gpu_oom", tactic[0])


def test_a_warning_no_failure_alone_is_the_cause_of_its_consequence() -> None:
    """Paddle's cuDNN version warning runs on; then cuDNN failing (cudnn_init_failure, which the
    catalog calls a consequence of cudnn_version_mismatch) has it as the cause. A failure that
    is no consequence of it keeps it secondary; after the failure, it is not its cause."""
    warn = (
        "W1215 22:57:15.662986 24484 gpu_resources.cc:217] WARNING: device: 0. The installed "
        "Paddle is compiled with CUDNN 8.4, but CUDNN version in your machine is 8.2, which may "
        "cause serious incompatible bug. Please recompile or reinstall Paddle with compatible "
        "CUDNN version."
    )
    failed = "OSError: (External) CUDNN error(1), CUDNN_STATUS_NOT_INITIALIZED."
    assert verdict_of(warn, "step 1: loss 0.3") == ("unknown", None, ())
    got = verdict_of(warn, failed)
    assert (got[0], got[2]) == ("cudnn_version_mismatch", ("cudnn_init_failure",))
    oom = verdict_of(warn, "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert (oom[0], oom[2]) == ("gpu_oom", ("cudnn_version_mismatch",))
    assert verdict_of(failed, warn)[0] == "cudnn_init_failure"


def test_a_cue_names_the_cause_only_of_its_consequence() -> None:
    """A prompt inside a container (a `cue` of container_gpu_access) is no failure: a run that
    goes on, or fails with an error no signature names, keeps its verdict; "no driver" after it
    (the signature the cue lists) is the container that was not given the GPU; before it, it is
    not."""
    prompt = "root@f14d48a29224:/cppflow/examples/mnist/build# ./example"
    none = (
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
        "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx"
    )
    assert verdict_of(prompt, "step 1: loss 0.3") == ("unknown", None, ())
    assert verdict_of(prompt, "KeyError: 'model'")[:2] == ("unknown", "KeyError: 'model'")
    got = verdict_of(prompt, none)
    assert (got[0], got[2]) == ("container_gpu_access", ("no_gpu_or_driver",))
    assert verdict_of(none, prompt)[0] == "no_gpu_or_driver", "a cue after the failure"
    assert verdict_of("Singularity> python3 train.py", none)[0] == "container_gpu_access"
    assert verdict_of("$ docker run -it gpt-2 bash", none)[0] == "container_gpu_access"
    assert verdict_of("root@myhost:~# python x.py", none)[0] == "no_gpu_or_driver", "a host's name"
    oom = verdict_of(prompt, "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert oom[0] == "gpu_oom", "a failure that is no consequence of it"


@pytest.mark.parametrize(
    "key", ["alone: false", "cue: [no_gpu_or_driver]", "arms: [cudnn_missing]", "armed: true"]
)
def test_alone_false_and_cue_are_refused_outside_a_signatures_patterns(
    tmp_path: Path, key: str
) -> None:
    text = (ROOT / "scenarios" / "signatures.yaml").read_text()
    bad = text.replace(
        '{needle: "tensorrt", regex: "TF-TRT Warning: Could not find TensorRT"}',
        '{needle: "tensorrt", regex: "TF-TRT Warning: Could not find TensorRT", ' + key + "}",
    )
    assert bad != text
    (tmp_path / "signatures.yaml").write_text(bad)
    with pytest.raises(ConfigError, match="for a signature's patterns only") as err:
        read_catalog(tmp_path / "signatures.yaml")
    assert err.value.where is not None and err.value.where.line is not None


def test_a_cue_of_a_signature_the_catalog_lacks_is_refused_where_it_is(tmp_path: Path) -> None:
    text = (ROOT / "scenarios" / "signatures.yaml").read_text()
    bad = text.replace("cue: [no_gpu_or_driver]}", "cue: [no_such_signature]}", 1)
    assert bad != text
    (tmp_path / "signatures.yaml").write_text(bad)
    with pytest.raises(ConfigError, match="no_such_signature") as err:
        read_catalog(tmp_path / "signatures.yaml")
    assert err.value.where is not None and err.value.where.line is not None


def test_the_joints_between_chained_exceptions_are_not_the_error() -> None:
    """A traceback cut after Python's (or JAX's) line between two chained exceptions: the
    decisive line of the `unknown` is the exception before it, not the joint."""
    first = "KeyError: 'model'"
    for joint in (
        "During handling of the above exception, another exception occurred:",
        "The above exception was the direct cause of the following exception:",
        "For simplicity, JAX has removed its internal frames from the traceback of the following "
        "exception. Set JAX_TRACEBACK_FILTERING=off to include these.",
    ):
        got = verdict_of("Traceback (most recent call last):", '  File "a.py", line 1', first,
                         "", joint, "")  # fmt: skip
        assert got[:2] == ("unknown", first), joint


def test_a_count_of_no_failures_is_not_an_error_line() -> None:
    summary = ["Tests run:     12", "Tests passed:  11", "Tests failed:  0", "0 failed, 3 passed"]
    assert verdict_of(*summary, "errors=0") == ("unknown", None, ())
    assert verdict_of(*summary, "Tests failed: 2")[1] == "Tests failed: 2"
    assert verdict_of("Error: 0.5 above the tolerance")[1] == "Error: 0.5 above the tolerance"
    reply = "INFO:torch.distributed.elastic:Setting worker0 reply file to: /tmp/t/0/error.json"
    assert verdict_of(reply) == ("unknown", None, ()), "a file's name is no error"
    assert verdict_of("the run ended in an error.")[1] == "the run ended in an error."


def test_a_rate_of_errors_is_not_an_error_line() -> None:
    """A metric named error (TF's MNIST example: "Minibatch error: 85.9%") is no failure; an
    error line that goes on past a number still is."""
    rates = ["Minibatch loss: 8.334, learning rate: 0.010000", "Minibatch error: 85.9%",
             "Validation error: 84.6%", "Test error: 1 %"]  # fmt: skip
    assert verdict_of(*rates) == ("unknown", None, ())
    assert verdict_of("Error: 85 percent of the heap")[1] == "Error: 85 percent of the heap"


def test_a_json_key_counting_no_failures_is_not_an_error_line() -> None:
    """A JSON or YAML key that counts no failures (a passing diagnostic's summary) is no failure;
    a count of some still is an error line."""
    summary = ['  "passed": 6,', '  "failed": 0,', "  'errors': 0", "failed: 0"]
    assert verdict_of(*summary) == ("unknown", None, ())
    assert verdict_of('  "failed": 2,')[1] == '"failed": 2,'


def test_a_relayed_exception_at_the_info_level_is_an_error_line() -> None:
    """A program that logs another's traceback line by line at its own info level (AlphaFold's
    run_docker.py) still shows the exception; a plain info line stays soft, and a corrected PCIe
    error on the GPU is no failure."""
    line = "I0716 21:59:58.942886 139668 run_docker.py:180] RuntimeError: cuSolver internal error"
    assert verdict_of(line)[1] == "RuntimeError: cuSolver internal error"
    info = "I0716 21:59:58.942201 139668 run_docker.py:180] Loading the model"
    assert verdict_of(info)[1] is None
    corrected = "nvidia 0000:01:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer"
    assert verdict_of(corrected)[0] != "gpu_hardware_fault"


def test_benign_lines_of_round_78_are_no_failure() -> None:
    """torch.autocast without CUDA runs on the CPU, and old NCCL's missing-InfiniBand warning
    falls back to sockets: neither alone is a failure."""
    autocast = (
        "/venv/lib/python3.10/site-packages/torch/amp/autocast_mode.py:250: UserWarning: User "
        "provided device_type of 'cuda', but CUDA is not available. Disabling"
    )
    assert verdict_of(autocast, "FID:  27.1") == ("unknown", None, ())
    ibverbs = "C4140-V100-1:24:201 [0] misc/ibvwrap.cu:61 WARN Failed to open libibverbs.so[.1]"
    assert (
        verdict_of(ibverbs, "C4140-V100-1:24:201 [0] INFO Using internal Network Socket")[1] is None
    )


def test_cuda_not_available_alone_is_no_failure() -> None:
    """A program's "CUDA not available" on a line of its own is the cause only of a failure
    after it; a run that goes on without CUDA and ends well is no failure."""
    ran_on = verdict_of("Warp 0.6.1 initialized:", "   CUDA not available", "done")
    assert ran_on == ("unknown", None, ())  # no failure: nothing decisive, nothing secondary
    assert verdict_of("   CUDA not available", "Error: step 3 failed")[0] == "no_gpu_or_driver"


def test_the_source_line_under_a_python_warning_is_no_error_line() -> None:
    """Python's warnings module prints the warning's source line, indented, under its header:
    code, however it reads. The same line after any other line is still an error line."""
    head = "/venv/lib/python3.8/site-packages/pkg/executor.py:1070: UserWarning: slow path taken"
    source = '  "The following exception is not an EOF exception.")'
    assert verdict_of(head, source)[1] is None
    assert verdict_of("Running step 3", source)[1] == source.strip()


def test_tensorflow_profiler_without_cupti_is_no_failure() -> None:
    """TensorFlow's profiler logs CUPTI's failure at the error level and the run goes on; an
    error line after it is still the failure."""
    cupti = (
        "E tensorflow/core/profiler/internal/gpu/cupti_tracer.cc:1415] function "
        "cupti_interface_->Subscribe( &subscriber_, (CUpti_CallbackFunc)ApiCallback, this)"
        "failed with error CUPTI could not be loaded or symbol could not be found."
    )
    assert verdict_of(cupti) == ("unknown", None, ())
    assert verdict_of(cupti, "RuntimeError: boom")[1] == "RuntimeError: boom"


def test_keras_multi_gpu_model_without_the_cpu_is_not_a_missing_gpu() -> None:
    """Keras' own bug (its list of devices found lacks the CPU, keras-team/keras#13302) is not a
    GPU index the machine lacks."""
    line = (
        "ValueError: To call `multi_gpu_model` with `gpus=4`, we expect the following devices "
        "to be available: ['/cpu:0', '/gpu:0', '/gpu:1', '/gpu:2', '/gpu:3']. However this "
        "machine only has: ['/gpu:0', '/gpu:1', '/gpu:2', '/gpu:3']. Try reducing `gpus`"
    )
    assert verdict_of(line)[:2] == ("unknown", line)


def test_docker_composes_prefix_and_typographic_quotes_are_read_through() -> None:
    """A compose service's lines ("ollama  | ...") are the program's own, log prefix and all;
    a forum's curly quotes read as the plain ones."""
    assert (
        verdict_of(
            "ollama  | 2024-01-01 10:00:00.1: W tensorflow/x.cc:12] The NVIDIA driver on your "
            "system is too old (found version 10010).",
            "ollama  | Epoch 1/2",
        )[0]
        == "driver_too_old"
    )
    line = "RuntimeError: Found no NVIDIA driver on your system. Please check"
    assert verdict_of(f"qna-transformers_1  | {line}")[:2] == ("no_gpu_or_driver", line)
    curly = "NVIDIA-SMI has failed because it couldn\u2018t communicate with the NVIDIA driver."
    assert verdict_of(curly)[0] == "no_gpu_or_driver"
    assert verdict_of(curly.replace("\u2018", "\u201d"))[0] == "unknown"


def test_tensorflows_optional_tensorrt_stays_noise() -> None:
    """Only TensorFlow's own lookups of libnvinfer are noise; a program that cannot start
    without it is not."""
    line = (
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
        "library 'libnvinfer.so.7'; dlerror: libnvinfer.so.7: cannot open shared object file: No "
        "such file or directory"
    )
    assert verdict_of(line)[0] == "unknown", "no signature: an unknown without a decisive line"
    assert verdict_of(line)[1] is None


@pytest.mark.parametrize(("lines", "sig"), LATER_ROUNDS)
def test_the_families_of_issue_24s_later_rounds(lines: list[str], sig: str) -> None:
    assert verdict_of(*lines)[0] == sig


def test_an_ordinal_inside_an_nccl_failure_is_the_cause() -> None:
    """NCCL passes the CUDA error on; the ordinal (more ranks than GPUs) is the root cause."""
    got = verdict_of(
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:825, unhandled cuda error, NCCL 2.7.8",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 'invalid device ordinal'",
    )
    assert got[0] == "invalid_device_ordinal"
    assert "nccl_error" in got[2]


def test_a_go_panic_is_a_failure_not_a_clean_log() -> None:
    got = verdict_of(
        "2022/12/15 12:28:28 Retreiving plugins.",
        "panic: At least one device with migEnabled=true was not configured correctly",
        "",
        "goroutine 1 [running]:",
    )
    assert got[0] == "unknown"
    assert got[1].startswith("panic: At least one device")


def test_a_traceback_ends_in_an_error_line_whatever_its_words() -> None:
    """An exception whose name and message say no "error" (and no catalog message) is still a
    failure: `unknown`, with it as the decisive line, never "no failure found"."""
    log = [
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        '  File "C:\\Anaconda\\lib\\site-packages\\mylib.py", line 246, in check_statu',
        "s",
        "    raise exceptions[status]",
        "mylib.StatusNotPermitted",
    ]
    assert verdict_of(*log) == ("unknown", "mylib.StatusNotPermitted", ())
    # handled, and followed by a later error line: that one is decisive
    later = [*log, "During the epoch: RuntimeError: the loss is nan"]
    assert verdict_of(*later)[1] == "During the epoch: RuntimeError: the loss is nan"


def test_warps_error_36_is_not_read_as_a_driver_too_old() -> None:
    """cudaErrorCallRequiresNewerDriver's text is a driver too old where torch or TurboMind print
    it, not where Warp's entry-point lookup failed on a newer driver (a Warp bug)."""
    warp = (
        "Warp CUDA error 36: API call is not supported in the installed CUDA driver (in function "
        "cuda_init, /builds/omniverse/warp/warp/native/warp.cu:279)"
    )
    assert verdict_of(warp)[0] != "driver_too_old"
    torch_line = "RuntimeError: CUDA error: API call is not supported in the installed CUDA driver"
    assert verdict_of(torch_line)[0] == "driver_too_old"


def test_an_exception_line_with_indented_lines_under_it_ends_its_traceback() -> None:
    """TensorFlow lists each root error indented under the exception line, then "0 successful
    operations.": the exception line ends the traceback (an unindented line followed by an
    indented one is otherwise a frame a terminal wrapped), so the cause under it is decisive,
    not the count after it."""
    got = verdict_of(
        "Traceback (most recent call last):",
        '  File "session.py", line 1356, in _do_call',
        "    return fn(*args)",
        "tensorflow.python.framework.errors_impl.UnknownError: 2 root error(s) found.",
        "  (0) Unknown: Failed to get convolution algorithm. This is probably because cuDNN failed "
        "to initialize, so try looking to see if a warning log message was printed above.",
        "         [[{{node conv2d_7/Conv2D}}]]",
        "0 successful operations.",
        "0 derived errors ignored.",
    )
    assert got[0] == "cudnn_init_failure"
    # a name and a colon make it the exception line; a wrapped frame's rest does not
    wrapped = verdict_of(
        "Traceback (most recent call last):",
        '  File "/very/long/path/site-p',
        'ackages/mylib/core.py", line 9, in run',
        "    raise StatusNotPermitted()",
        "mylib.StatusNotPermitted",
    )
    assert wrapped[:2] == ("unknown", "mylib.StatusNotPermitted")


@pytest.mark.parametrize("cut", ["before its frames", "between its frames", "before the line"])
def test_a_traceback_split_by_a_block_boundary_still_ends_in_its_exception_line(cut: str) -> None:
    """A log is scanned in blocks (BLOCK bytes of whole lines): a traceback whose exception line
    falls in the next block is still a failure, with that line decisive."""
    head = [f"step {i}: loss=0.{i}" for i in range(400)] + ["Traceback (most recent call last):"]
    frames = ['  File "train.py", line 3, in <module>', "    main()"] * 3
    tail = ["mylib.StatusNotPermitted", "shutting down"]
    split = {"before its frames": 0, "between its frames": 3, "before the line": len(frames)}[cut]
    first = "\n".join(head + frames[:split]) + "\n"
    rest = "\n".join(frames[split:] + tail) + "\n"
    old = signatures.BLOCK
    signatures.BLOCK = len(first.encode())  # the first block ends exactly at the cut
    try:
        got = classify_chunks([first.encode(), rest.encode()], CATALOG)
    finally:
        signatures.BLOCK = old
    assert (got.signature, got.decisive_line) == ("unknown", "mylib.StatusNotPermitted")
    assert got.line_no == len(head) + len(frames) + 1


def test_a_prebuilt_extension_without_nvcc_and_a_containers_oom_flag_are_no_failure() -> None:
    """The CUDA extensions' setup.py only warns without nvcc (a prebuilt wheel needs none): the
    cause where the install then fails, nothing where it goes on. `docker inspect` prints
    "OOMKilled": false for every container: a JSON key, not a container killed."""
    warn = (
        "setup.py:119: UserWarning: mamba_ssm was requested, but nvcc was not found.  Are you sure "
        "your environment has nvcc available?"
    )
    assert verdict_of(warn, "Successfully installed mamba-ssm-2.2.2") == ("unknown", None, ())
    got = verdict_of(warn, "NameError: name 'bare_metal_version' is not defined")
    assert got[0] == "cuda_runtime_missing" and got[1] == " ".join(warn.split())
    assert verdict_of('            "OOMKilled": false,', "Epoch 1/2")[0] == "unknown"
    assert verdict_of('            "OOMKilled": true,')[0] == "host_oom"


def _brute_last_errorish(low: bytes, limit: int) -> int:
    """The last byte of the error-like word that ends last by `limit` (-1: none), by brute force."""
    ends = [
        i + len(w) - 1
        for w in signatures._ERRORISH
        for i in range(len(low))
        if low.startswith(w, i) and i + len(w) <= limit
    ]
    return max(ends, default=-1)


@example(parts=[b"panic", b"x" * 4093], cut=5000)  # "panic" across the first window's edge
@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(
            [
                b"error",
                b"exception",
                b"fatal",
                b"abort",
                b"failed",
                b"killed",
                b"panic",
                b"x",
                b"\n",
                b"erro",
                b"r",
                b"ex" * 3000,
                b"fail",
            ]
        ),
        max_size=40,
    ),
    cut=st.integers(min_value=0, max_value=20000),
)
def test_the_last_error_like_word_is_found_backwards_in_windows(
    parts: list[bytes], cut: int
) -> None:
    # the windows searched backwards (4 KB, then four times larger) miss no word, even one
    # that crosses a window's edge, and find none that ends past the limit
    low = b"".join(parts)
    limit = min(cut, len(low))
    assert signatures._last_errorish(low, limit) == _brute_last_errorish(low, limit)


def test_an_opencl_runtime_that_drives_another_vendors_gpu_is_not_a_missing_gpu() -> None:
    """No OpenCL device found, alone, is no GPU; OpenVINO's clDNN goes on to say it found one it
    does not drive (openvinotoolkit/openvino#97)."""
    assert verdict_of("No OpenCL device found")[0] == "no_gpu_or_driver"
    got = verdict_of(
        "failed to create engine: No OpenCL device found which would match provided configuration:",
        "    GeForce GTX 970: invalid vendor type",
    )
    assert got[0] != "no_gpu_or_driver"


def test_an_armed_warning_is_a_failure_only_after_the_sign_that_arms_it() -> None:
    """TensorFlow on Windows warns of a missing cudart64 DLL when it is imported, which a machine
    without a GPU ignores: no failure, not even an error line for an `unknown`. After it found a
    GPU ("Found device 0 with properties", which arms cuda_runtime_missing and cudnn_missing) the
    same warning means the GPU will not be used: the cause, as any warning is, where no error
    line follows; an error no signature names after it leaves it secondary."""
    dll = (
        "2020-04-22 21:10:43.537143: W tensorflow/stream_executor/platform/default/"
        "dso_loader.cc:55] Could not load dynamic library 'cudart64_101.dll'; dlerror: "
        "cudart64_101.dll not found"
    )
    found = (
        "2020-04-22 21:10:46.270844: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1555] "
        "Found device 0 with properties:"
    )
    cudnn = "W dso_loader.cc:55] Could not load dynamic library 'cudnn64_7.dll'; dlerror: x"
    assert verdict_of(dll) == ("unknown", None, ())
    assert verdict_of(dll, "Epoch 1/10 loss 0.3") == ("unknown", None, ())
    assert verdict_of(dll, "KeyError: 'model'")[:2] == ("unknown", "KeyError: 'model'")
    assert verdict_of(found) == ("unknown", None, ()), "the sign alone is no failure"
    assert verdict_of(dll, found)[0] == "unknown", "the warning before the sign"
    got = verdict_of(dll, found, dll.replace("43.537143", "46.283679"))
    assert got[:2] == ("cuda_runtime_missing", dll.split("] ", 1)[1])
    assert verdict_of(found, dll, dll)[0] == "cuda_runtime_missing", "the same line again"
    assert verdict_of(found, cudnn)[0] == "cudnn_missing"
    after = verdict_of(found, dll, "KeyError: 'model'")
    assert after[:2] == ("unknown", "KeyError: 'model'")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("arms: [cuda_runtime_missing, cudnn_missing]}", "arms: [no_such_signature]}",
         "no_such_signature"),
        ("arms: [cuda_runtime_missing, cudnn_missing]}", "arms: [cudnn_missing]}",
         "armed by no pattern"),
        ("arms: [cuda_runtime_missing, cudnn_missing]}",
         "arms: [cuda_runtime_missing, cudnn_missing], alone: false}", "alone and arms"),
        ("\\\\.dll'\", armed: true}", "\\\\.dll'\", armed: true, cue: [no_gpu_or_driver]}",
         "cue and armed"),
        ("\\\\.dll'\", armed: true}", "\\\\.dll'\", armed: false}", "armed"),
    ],
)  # fmt: skip
def test_a_sign_or_an_armed_warning_that_cannot_work_is_refused_where_it_is(
    tmp_path: Path, old: str, new: str, words: str
) -> None:
    text = (ROOT / "scenarios" / "signatures.yaml").read_text()
    bad = text.replace(old, new, 1)
    assert bad != text
    (tmp_path / "signatures.yaml").write_text(bad)
    with pytest.raises(ConfigError, match=words) as err:
        read_catalog(tmp_path / "signatures.yaml")
    assert err.value.where is not None and err.value.where.line is not None


def test_the_redzone_ptxas_warning_and_vllms_platform_line_are_no_failure_alone() -> None:
    """TF's redzone allocator says ptxas was not found and lets the driver compile: the run goes
    on. vLLM's "No platform detected" precedes an out-of-tree plugin's activation as well: the
    cause only of a failure after it."""
    redzone = (
        "2020-11-20 16:13:20.571736: W tensorflow/stream_executor/cuda/redzone_allocator.cc:312] "
        "Not found: ./bin/ptxas not found"
    )
    ran = "Relying on driver to perform ptx compilation. This message will be only logged once."
    assert verdict_of(redzone, ran, "Epoch 1/10")[0] == "unknown"
    assert verdict_of(redzone, ran, "Epoch 1/10")[1] is None
    vllm = "INFO 03-11 14:47:27 __init__.py:187] No platform detected, vLLM is running on " + (
        "UnspecifiedPlatform"
    )
    plugin = "INFO 03-11 14:47:27 __init__.py:174] Platform plugin ascend is activated"
    assert verdict_of(vllm, plugin) == ("unknown", None, ())


def test_onnx_runtimes_fallback_from_tensorrt_and_uvicorns_info_lines_are_no_failure() -> None:
    """ONNX Runtime's Python API drops a TensorRT provider whose DLL cannot load and retries with
    CUDA: no failure unless one follows. Uvicorn's logger is named "uvicorn.error"; a line at
    INFO under it, or one that says "(nonfatal)", is no error line."""
    trt = (
        "2024-12-07 08:28:02.27 [E:onnxruntime:Default, provider_bridge_ort.cc:1848 onnxruntime::"
        "TryGetProviderInfo_TensorRT] provider_bridge_ort.cc:1539 onnxruntime::ProviderLibrary::"
        'Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126 "" when trying to '
        'load "F:\\venv\\onnxruntime\\capi\\onnxruntime_providers_tensorrt.dll"'
    )
    fallback = [
        "",
        "*************** EP Error ***************",
        "EP Error D:\\a\\onnxruntime_pybind_state.cc:507 onnxruntime::python::"
        "RegisterTensorRTPluginsAsCustomOps Please install TensorRT libraries as mentioned in the "
        "GPU requirements page, make sure they're in the PATH or LD_LIBRARY_PATH, and that your "
        "GPU is supported.",
        " when using ['TensorrtExecutionProvider', 'CUDAExecutionProvider', "
        "'CPUExecutionProvider']",
        "Falling back to ['CUDAExecutionProvider', 'CPUExecutionProvider'] and retrying.",
    ]
    assert verdict_of(trt, *fallback) == ("unknown", None, ())
    got = verdict_of(trt, *fallback, "RuntimeError: mesh extraction did not converge")
    assert got[0] == "cuda_runtime_missing"
    uvicorn = "[2023-08-20 19:43:12,838]::[uvicorn.error]::INFO --> Waiting for application start."
    nonfatal = "[2023-08-20 19:43:10,963]::[InvokeAI]::INFO --> Patchmatch not loaded (nonfatal)"
    assert verdict_of(uvicorn, nonfatal) == ("unknown", None, ())
    assert verdict_of(uvicorn, "RuntimeError: fatal: the model is gone")[1] == (
        "RuntimeError: fatal: the model is gone"
    )
