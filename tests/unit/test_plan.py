"""`harness plan` on the shipped matrix.yaml: golden output, and the expectations it must hold."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.cli import main
from tests.conftest import FIXTURES, ROOT
from tests.unit.golden import check_golden

PLAN = FIXTURES / "plan"


def plan(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    monkeypatch.chdir(ROOT)
    assert main(["plan", *argv]) == 0
    return capsys.readouterr().out


def plan_json(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(plan([*argv, "--format", "json"], capsys, monkeypatch))
    return data


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("smoke.table.txt", ["--driver", "none"]),
        ("smoke.json", ["--driver", "none", "--format", "json"]),
        ("smoke.github.json", ["--driver", "none", "--format", "github"]),
        ("full-470.57.02.json", ["--profile", "full", "--driver", "470.57.02", "--format", "json"]),
        ("full-580.65.06.table.txt", ["--profile", "full", "--driver", "580.65.06"]),
    ],
)
def test_plan_golden(
    name: str, argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_golden(PLAN / name, plan(argv, capsys, monkeypatch))


def test_smoke_is_the_default_and_runs_without_a_gpu(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = plan_json(["--driver", "none"], capsys, monkeypatch)
    assert data["profile"] == "smoke"
    assert data["driver"] == "none"
    cells = data["cells"]
    assert {c["stack"]["framework"] for c in cells} == {"torch", "tensorflow"}
    assert all(c["evidence"] == "cpu" for c in cells)
    for c in cells:
        assert set(c) >= {"id", "stack", "scenario", "expected", "evidence", "because"}
        assert set(c["stack"]) == {
            "framework",
            "framework_version",
            "cuda",
            "cudnn",
            "python",
            "base",
        }
        assert set(c["expected"]) == {"outcome", "signature", "stage"}
        assert c["because"]["source"]
    assert {c["scenario"] for c in cells} >= {"baseline", "missing-cudnn", "corrupt-library"}
    # The older cuDNN stack: torch checks the runtime cuDNN against its build even without a GPU.
    base = [c for c in cells if c["scenario"] == "baseline"]
    older = [c for c in base if c["stack"]["cudnn"] == "9.13.0.50"]
    assert older, "smoke has a torch stack with an older cuDNN to mismatch against"
    for c in older:
        assert c["expected"] == {
            "outcome": "fail",
            "signature": "cudnn_version_mismatch",
            "stage": "build_info",
        }
    pinned = [c for c in base if c["stack"]["cudnn"] != "9.13.0.50"]
    assert all(c["expected"]["outcome"] == "pass" for c in pinned)


def test_full_on_driver_470_expects_driver_too_old_for_cuda_12_and_13(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = plan_json(["--profile", "full", "--driver", "470.57.02"], capsys, monkeypatch)
    cells = data["cells"]
    majors = {c["stack"]["cuda"].split(".")[0] for c in cells}
    assert {"11", "12", "13"} <= majors
    for c in cells:
        exp = c["expected"]
        if c["stack"]["cuda"].startswith(("12.", "13.")):
            if exp["signature"] == "driver_too_old":
                assert exp["stage"] == "devices" and c["because"]["rule"] == "driver-minimum"
                assert c["because"]["source"].startswith("https://docs.nvidia.com/")
            else:  # a fault that surfaces by device discovery is what a run shows first
                assert exp["outcome"] == "fail", c["id"]
                assert exp["stage"] in ("import", "build_info", "devices"), c["id"]
                assert any(k["rule"] == "driver-minimum" for k in c["checks"])
        elif c["scenario"] == "baseline":
            assert exp["outcome"] == "pass", c["id"]
            assert c["because"]["rule"] == "driver-minor-version-compatibility"
            assert c["because"]["source"].startswith("https://docs.nvidia.com/")
    for c in cells:  # every baseline on CUDA 12/13 meets the driver boundary
        if c["scenario"] == "baseline" and c["stack"]["cuda"].startswith(("12.", "13.")):
            assert c["expected"]["signature"] == "driver_too_old", c["id"]


def test_drop_incompatible_leaves_out_what_the_driver_cannot_run(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (ROOT / "matrix.yaml").read_text(encoding="utf-8")
    text = text.replace("scenarios: scenarios ", f"scenarios: {ROOT / 'scenarios'} ")
    text = text.replace(
        "    select:\n      cudnn: [pinned]",
        "    drop_incompatible: true\n    select:\n      cudnn: [pinned]",
    )
    path = tmp_path / "matrix.yaml"
    path.write_text(text, encoding="utf-8")
    data = plan_json(
        ["--matrix", str(path), "--profile", "full", "--driver", "470.57.02"], capsys, monkeypatch
    )
    assert data["cells"]
    assert all(c["stack"]["cuda"].startswith("11.") for c in data["cells"])
    assert all(
        c["expected"]["outcome"] == "pass" for c in data["cells"] if c["scenario"] == "baseline"
    )


def test_github_format_is_a_matrix_include_list(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = plan(["--driver", "none", "--format", "github"], capsys, monkeypatch)
    assert out.count("\n") == 1, "one line, for $GITHUB_OUTPUT"
    data = json.loads(out)
    assert set(data) == {"include"}
    cells = plan_json(["--driver", "none"], capsys, monkeypatch)["cells"]
    assert [e["cell"] for e in data["include"]] == [c["id"] for c in cells]


def test_cell_ids_are_readable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = [c["id"] for c in plan_json(["--driver", "none"], capsys, monkeypatch)["cells"]]
    assert "torch-2.15.0_cu13.2_cudnn9.26_py3.11_offline/baseline" in ids
    assert len(ids) == len(set(ids))


def test_driver_from_the_host_when_no_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness import host
    from harness.model import DriverTarget

    monkeypatch.setattr(
        host, "detect_driver", lambda: DriverTarget(version="535.104.05", origin="nvidia-smi")
    )
    data = plan_json([], capsys, monkeypatch)
    assert data["driver"] == "535.104.05"
    assert all(c["evidence"] == "gpu" for c in data["cells"])
