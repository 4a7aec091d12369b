"""Scenario files: schema, id = file name, known signatures, expectations per framework."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ConfigError
from harness.loader import parse_yaml
from harness.model import Evidence, Outcome, Stage
from harness.scenarios import parse_scenario, read_scenarios
from tests.conftest import ROOT

GOOD = """\
schema: 1
id: missing-cudnn
title: cuDNN removed
cause: seed 000, case 1
frameworks: [torch]
faults:
  - {primitive: hide, args: {path: "{site}/nvidia/cudnn/lib"}}
expect:
  torch:
    cpu: {signature: cudnn_missing, stage: build_info}
    gpu: {signature: cudnn_missing, stage: build_info}
"""


def test_the_shipped_scenarios_parse() -> None:
    scenarios = read_scenarios(ROOT / "scenarios", display="scenarios")
    assert "baseline" in scenarios
    base = scenarios["baseline"]
    assert base.faults == ()
    for fw in ("torch", "tensorflow"):
        for ev in (Evidence.CPU, Evidence.GPU):  # driver evidence reads the cpu expectation
            exp = base.expectation(fw, ev)
            assert exp is not None and exp.outcome is Outcome.PASS


def test_a_fault_scenario() -> None:
    s = parse_scenario(parse_yaml(GOOD, "missing-cudnn.yaml"), expected_id="missing-cudnn")
    exp = s.expectation("torch", Evidence.CPU)
    assert exp is not None
    assert (exp.signature, exp.stage) == ("cudnn_missing", Stage.BUILD_INFO)
    assert s.faults[0].primitive == "hide"
    assert s.expectation("tensorflow", Evidence.CPU) is None


@pytest.mark.parametrize(
    ("change", "message", "line"),
    [
        (
            (
                "cudnn_missing, stage: build_info}\n    gpu",
                "cudnn_mising, stage: build_info}\n    gpu",
            ),
            "unknown signature 'cudnn_mising'",
            10,
        ),
        (
            ("stage: build_info}\n    gpu", "stage: buildinfo}\n    gpu"),
            "unknown value 'buildinfo'",
            10,
        ),
        (("id: missing-cudnn", "id: other"), "does not match its file name", 2),
        (("primitive: hide", "primitive: hid"), "unknown value 'hid'", 7),
        (("frameworks: [torch]", "frameworks: [tensorflow]"), "not in this scenario's", 9),
    ],
)
def test_bad_scenarios_point_at_the_place(change: tuple[str, str], message: str, line: int) -> None:
    text = GOOD.replace(*change)
    assert text != GOOD
    with pytest.raises(ConfigError) as err:
        parse_scenario(parse_yaml(text, "missing-cudnn.yaml"), expected_id="missing-cudnn")
    assert message in err.value.message
    assert err.value.where is not None and err.value.where.line == line
    assert err.value.help


def test_an_empty_scenario_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no scenario files"):
        read_scenarios(tmp_path, display="scenarios")
