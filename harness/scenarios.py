"""Fault scenarios: one YAML file per scenario under scenarios/ (signatures.yaml is the catalog)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.errors import ConfigError, choice_help
from harness.faults import check
from harness.loader import Doc, read_yaml
from harness.model import Evidence, Expectation, Fault, Outcome, Scenario, Stage, Where
from harness.schema import validate

# The signature ids the catalog (scenarios/signatures.yaml) must at least define; a scenario may
# name any id the catalog defines.
SIGNATURE_IDS = frozenset(
    {
        "cudnn_missing", "cudnn_version_mismatch", "cudnn_init_failure", "cuda_runtime_missing",
        "driver_too_old", "no_gpu_or_driver", "stub_driver", "arch_unsupported",
        "undefined_symbol", "gpu_oom", "numpy_abi", "nccl_error", "container_gpu_access",
        "corrupt_library", "illegal_memory_access", "host_oom", "timeout", "unknown",
    }
)  # fmt: skip

NOT_SCENARIOS = frozenset({"signatures.yaml"})


def _outcome(value: Any) -> Expectation:
    if value == "pass":
        return Expectation(outcome=Outcome.PASS)
    if value == "unobservable":
        return Expectation(outcome=Outcome.UNOBSERVABLE)
    return Expectation(
        outcome=Outcome.FAIL, signature=str(value["signature"]), stage=Stage(value["stage"])
    )


def _fault(doc: Doc, index: int, data: Any) -> Fault:
    """One fault with the place of each argument, checked for every stack it may meet."""
    args = data.get("args", {})
    fault = Fault(
        primitive=data["primitive"],
        args=tuple(sorted(args.items())),
        where=doc.where(("faults", index)),
        arg_where=tuple((k, doc.where(("faults", index, "args", k))) for k in sorted(args)),
    )
    check(fault)
    return fault


def parse_scenario(
    doc: Doc, *, expected_id: str, known: frozenset[str] = SIGNATURE_IDS
) -> Scenario:
    validate(doc, "scenario.schema.json")
    data = doc.data
    if data["id"] != expected_id:
        raise ConfigError(
            f"scenario id '{data['id']}' does not match its file name '{expected_id}.yaml'",
            where=doc.where(("id",)),
            help=f"rename the file or set `id: {expected_id}`",
        )
    expect = []
    for fw, levels in sorted(data["expect"].items()):
        if fw not in data["frameworks"]:
            raise ConfigError(
                f"expectation for '{fw}', which is not in this scenario's frameworks",
                where=doc.where(("expect", fw), key=True),
                help=f"add '{fw}' to frameworks, or remove this entry",
            )
        for level in ("cpu", "gpu"):
            exp = _outcome(levels[level])
            if exp.signature is not None and exp.signature not in known:
                raise ConfigError(
                    f"unknown signature '{exp.signature}'",
                    where=doc.where(("expect", fw, level, "signature")),
                    help=choice_help(exp.signature, sorted(known), "signatures"),
                )
            expect.append((fw, Evidence(level), exp))
    faults = tuple(_fault(doc, i, f) for i, f in enumerate(data["faults"]))
    return Scenario(
        id=data["id"],
        title=data["title"],
        cause=data["cause"].strip(),
        frameworks=tuple(data["frameworks"]),
        faults=faults,
        expect=tuple(expect),
        where=doc.where(()),
    )


def read_scenarios(
    folder: Path, *, display: str, known: frozenset[str] = SIGNATURE_IDS
) -> dict[str, Scenario]:
    """Every scenario file in `folder`, by id; `known`: the signature ids of the catalog."""
    if not folder.is_dir():
        raise ConfigError(
            f"scenario folder not found: {display}",
            help="set `scenarios:` in the matrix file to a folder of scenario files",
        )
    out = {}
    for path in sorted(folder.glob("*.yaml")):
        if path.name in NOT_SCENARIOS:
            continue
        doc = read_yaml(path, display=f"{display}/{path.name}")
        out[path.stem] = parse_scenario(doc, expected_id=path.stem, known=known)
    if not out:
        raise ConfigError(
            f"no scenario files in {display}",
            where=Where(display, 1, 1),
            help="add at least scenarios/baseline.yaml",
        )
    return out
