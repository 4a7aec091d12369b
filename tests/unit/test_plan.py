"""`harness plan` on the shipped matrix.yaml: golden output, and the expectations it must hold."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.errors import ConfigError
from harness.model import Plan, Stack
from harness.plan import github_matrix, render
from harness.select import select
from tests.conftest import FIXTURES, ROOT
from tests.unit.golden import check_golden

PLAN = FIXTURES / "plan"


def plan(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    from harness.cli import main  # imported here: the pure tests below do not need the CLI

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
    # plain cells at cpu evidence; the placed-driver axis (baseline x each locked driver) at driver
    assert all(c["evidence"] == ("driver" if "driver" in c else "cpu") for c in cells)
    placed = {c["driver"] for c in cells if "driver" in c}
    assert placed == {"stub", "470.256.02", "535.261.03", "550.163.01"}
    assert all(c["id"].endswith(f"@{c['driver']}") for c in cells if "driver" in c)
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
    base = [c for c in cells if c["scenario"] == "baseline" and "driver" not in c]
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
            if exp["signature"] == "driver_too_old" and exp["stage"] == "start":
                # the cuda base: nvidia-container-cli refuses the image's NVIDIA_REQUIRE_CUDA
                assert c["stack"]["base"] == "cuda"
                assert c["because"]["rule"] == "toolkit-require-cuda", c["id"]
                assert c["because"]["source"].startswith("https://"), c["id"]
            elif exp["signature"] == "driver_too_old":
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
    stacks = [s for e in data["include"] for s in e["stacks"]]
    assert sorted(stacks) == sorted({Stack.from_json(c["stack"]).slug for c in cells})
    assert sum(e["cells"] for e in data["include"]) == len(cells)


# ---- github_matrix on plans read from the golden fixtures (no CLI) ----

FULL_ARGS = ["--profile", "full", "--driver", "470.57.02"]


def fixture_plan(name: str) -> Plan:
    return Plan.from_json(json.loads((PLAN / name).read_text(encoding="utf-8")))


def shards_of(entry: dict[str, Any]) -> tuple[int, int]:
    assert entry["args"].endswith(f" --shard {entry['shard']}") or entry["args"] == (
        f"--shard {entry['shard']}"
    )
    i, _, n = entry["shard"].partition("/")
    return int(i), int(n)


def test_github_full_plan_is_one_job_per_stack_within_the_limit() -> None:
    full = fixture_plan("full-470.57.02.json")
    include = github_matrix(full, args=FULL_ARGS)["include"]
    slugs = [c.stack.slug for c in full.cells]
    assert len(full.cells) > 256, "the fixture is the case GitHub would refuse one job per cell"
    assert len(include) <= 256
    assert len(include) == len(set(slugs)), "fewer stacks than the limit: one job per stack"
    listed = [s for e in include for s in e["stacks"]]
    assert sorted(listed) == sorted(set(slugs)), "every stack in exactly one entry"
    assert sum(e["cells"] for e in include) == len(full.cells)
    for k, e in enumerate(include, start=1):
        assert e["shard"] == f"{k}/{len(include)}"
        assert e["args"] == f"--profile full --driver 470.57.02 --shard {k}/{len(include)}"
        assert e["driver"] == "470.57.02" and e["evidence"] == "gpu"
        assert e["name"].startswith(f"{k}/{len(include)} ")


@pytest.mark.parametrize("max_jobs", [1, 3, 7])
def test_github_max_jobs_groups_whole_stacks(max_jobs: int) -> None:
    full = fixture_plan("full-470.57.02.json")
    include = github_matrix(full, max_jobs=max_jobs, args=FULL_ARGS)["include"]
    assert len(include) == max_jobs
    selected: list[str] = []
    for e in include:
        assert f"--shard {e['shard']}" in e["args"]
        index, total = shards_of(e)
        assert total == max_jobs
        part = select(full, shard=(index, total))
        assert sorted({c.stack.slug for c in part.cells}) == sorted(e["stacks"])
        assert len(part.cells) == e["cells"]
        selected += [c.id for c in part.cells]
    assert sorted(selected) == sorted(c.id for c in full.cells), "the jobs together: the plan"
    assert len(selected) == len(set(selected))


def test_github_args_are_quoted_for_a_shell() -> None:
    smoke = fixture_plan("smoke.json")
    args = ["--driver", "none", "--cell", "*/baseline"]
    include = github_matrix(select(smoke, cells=["*/baseline"]), args=args)["include"]
    assert include[0]["args"] == "--driver none --cell '*/baseline' --shard 1/3"


def test_github_empty_plan_and_bad_max_jobs_are_config_errors() -> None:
    smoke = fixture_plan("smoke.json")
    empty = Plan(profile="smoke", driver=smoke.driver, cells=())
    with pytest.raises(ConfigError, match="no cells") as info:
        render(empty, "github")
    assert info.value.exit_code == 2
    with pytest.raises(ConfigError, match="--max-jobs 0"):
        github_matrix(smoke, max_jobs=0)
    with pytest.raises(ConfigError, match="makes its own shards"):
        github_matrix(select(smoke, shard=(1, 2)))


def test_render_passes_github_options_through() -> None:
    out = render(fixture_plan("smoke.json"), "github", max_jobs=2, args=["--driver", "none"])
    include = json.loads(out)["include"]
    assert [e["args"] for e in include] == [
        "--driver none --shard 1/2",
        "--driver none --shard 2/2",
    ]


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
    assert all(c["evidence"] == ("driver" if "driver" in c else "gpu") for c in data["cells"])
