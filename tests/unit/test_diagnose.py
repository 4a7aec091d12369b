"""`harness diagnose`: a log in, the signature, fix and reproducing cells out; exit 0/1/2."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from harness.cli import main
from tests.conftest import ROOT
from tests.unit.golden import check_golden

LOGS = ROOT / "tests" / "fixtures" / "logs"
MATRIX = str(ROOT / "matrix.yaml")


def diagnose(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["diagnose", "--matrix", MATRIX, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_known_failure_names_signature_fix_and_cells(capsys: pytest.CaptureFixture[str]) -> None:
    log = next(LOGS.glob("cudnn_version_mismatch__*.log"))
    code, out, _ = diagnose(capsys, str(log), "--format", "json")
    assert code == 0
    got = json.loads(out)
    assert set(got) >= {
        "signature", "title", "cause", "fix", "stage", "decisive_line", "secondary", "reproduce"
    }  # fmt: skip
    assert got["signature"] == "cudnn_version_mismatch"
    assert got["reproduce"], "the smoke profile has cells that show a cuDNN mismatch"
    for r in got["reproduce"]:
        assert r["command"] == f"nox -s reproduce -- {r['cell']}"
        assert r["cell"].split("/")[1] in {p.stem for p in (ROOT / "scenarios").glob("*.yaml")}


def test_text_output_is_stable(capsys: pytest.CaptureFixture[str]) -> None:
    log = LOGS / "cuda_runtime_missing__tf21-libcudart-10-1-cudart-stub-noise.log"
    code, out, _ = diagnose(capsys, str(log))
    assert code == 0
    check_golden(ROOT / "tests" / "fixtures" / "diagnose" / "cudart-missing.txt", out)


def test_standard_input_and_an_unknown_failure(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = b"Epoch 1/3\nValueError: shapes (3, 4) and (5, 6) not aligned\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text)))
    code, out, _ = diagnose(capsys, "-", "--format", "json")
    got = json.loads(out)
    assert code == 1
    assert got["signature"] == "unknown" and got["fingerprint"]
    assert got["decisive_line"] == "ValueError: shapes (3, 4) and (5, 6) not aligned"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "error: no such file: {path}"),
        (b"", "error: {path} is empty"),
        (b"\n  \n", "error: {path} is empty"),
        (bytes(range(256)) * 8, "error: {path} is not a text log (binary data in its first"),
    ],
)
def test_bad_input_is_exit_2_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "run.log"
    if content is not None:
        path.write_bytes(content)
    code, out, err = diagnose(capsys, str(path))
    assert code == 2 and out == ""
    assert message.format(path=path) in err.splitlines()[0]
    assert err.splitlines()[1].startswith("help: ")
    assert "Traceback" not in err


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_a_log_without_a_failure_is_no_failure_exit_3(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    nccl = b"host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.34<0>\nEpoch 1/3\n"
    _stdin(monkeypatch, nccl)
    code, out, _ = diagnose(capsys, "-", "--format", "json")
    assert code == 3 and json.loads(out)["verdict"] == "no_failure"


def test_a_consequence_alone_says_so_and_lists_causes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _stdin(monkeypatch, b"UNIMPLEMENTED: DNN library is not found. [Op:Conv2D]\n")
    code, out, _ = diagnose(capsys, "-", "--format", "json")
    got = json.loads(out)
    assert code == 0 and got["verdict"] == "consequence"
    assert "cudnn_version_mismatch" in got["likely_causes"]


def test_error_numbers_utf16_and_advice_from_the_log(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    text = "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.3.0.\n"
    text += '  File "/x/site-packages/jax/_src/xla_bridge.py", line 9\n/x/nvidia/cu13/lib\n'
    log = tmp_path / "ps.log"
    log.write_bytes(text.encode("utf-16"))  # PowerShell's `>`: UTF-16 with a BOM
    code, out, _ = diagnose(capsys, str(log), "--format", "json")
    got = json.loads(out)
    assert code == 0 and got["signature"] == "cudnn_version_mismatch"
    assert got["facts"]["framework"] == "jax" and got["facts"]["cuda_major"] == "13"
    assert any("jax[cuda13]" in step for step in got["fix"])
    assert not any("cu12" in step for step in got["fix"])
    log.write_text("F0806 im2col.cu:54] Check failed: error == cudaSuccess ( 8 vs. 0 )\n")
    code, out, _ = diagnose(capsys, str(log), "--format", "json")
    assert json.loads(out)["signature"] == "arch_unsupported"


def test_escape_sequences_never_reach_the_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    evil = b"\x1b]0;pwned\x07\x1bP+q\x1b\\RuntimeError: CUDA error: out of memory\x1b[31m\x9b\n"
    _stdin(monkeypatch, evil)
    code, out, _ = diagnose(capsys, "-")
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "pwned" not in out


def test_a_closed_stdin_is_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", None)
    code, out, err = diagnose(capsys, "-")
    assert code == 2 and out == "" and "Traceback" not in err
