"""The knowledge files: every row cited; the driver and cuDNN rules on known boundaries."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.compat import (
    KNOWLEDGE_FILES,
    cudnn_reason,
    declared_driver,
    driver_reason,
    parse_knowledge,
    read_knowledge_docs,
)
from harness.errors import ConfigError
from harness.loader import parse_yaml
from harness.model import Stack

DOCS = read_knowledge_docs()
KB = parse_knowledge(DOCS)


def rows_with_values(value: object, path: str = "") -> list[tuple[str, dict[str, object]]]:
    """Every mapping in a knowledge file that states a version-like value."""
    out = []
    if isinstance(value, dict):
        keys = set(value)
        if keys & {"min_driver", "cudnn", "cuda", "tag", "python", "version", "rule", "major"}:
            out.append((path, value))
        for k, v in value.items():
            out += rows_with_values(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += rows_with_values(v, f"{path}[{i}]")
    return out


@pytest.mark.parametrize("name", KNOWLEDGE_FILES)
def test_every_row_names_a_public_source(name: str) -> None:
    rows = rows_with_values(DOCS[name].data)
    assert rows
    for path, row in rows:
        cited = [k for k in ("source", "python_source") if k in row]
        if cited:
            for key in cited:
                assert str(row[key]).startswith("https://"), (name, path, key)
            continue
        # A row without its own source is part of a cited row (a CUDA range inside a cuDNN
        # release, a version list with python_source): its parent carries the source.
        # The same for a toolkit's Update rows (Table 3, the toolkit row's source).
        assert path.rsplit(".", 1)[-1].split("[")[0] in ("cuda", "updates"), (name, path)


def test_a_row_without_source_is_rejected() -> None:
    docs = dict(DOCS)
    docs["drivers"] = parse_yaml(
        "schema: 1\nminor_version_compatibility: []\ntoolkits:\n"
        '  - {cuda: "12.8", toolkit: "12.8.0", min_driver: "570.26"}\n',
        "drivers.yaml",
    )
    with pytest.raises(ConfigError) as err:
        parse_knowledge(docs)
    assert "without a public source" in err.value.message
    assert str(err.value.where) == "drivers.yaml:4:5"


@pytest.mark.parametrize(
    ("cuda", "driver", "ok", "rule"),
    [
        ("11.8", "520.61.05", True, "driver-minimum"),
        ("11.8", "470.57.02", True, "driver-minor-version-compatibility"),
        ("11.8", "450.80.01", False, "driver-minimum"),
        ("12.8", "570.26", True, "driver-minimum"),
        ("12.8", "525.60.13", True, "driver-minor-version-compatibility"),
        ("12.8", "470.57.02", False, "driver-minimum"),
        ("13.0", "580.65.06", True, "driver-minimum"),
        ("13.0", "575.51.03", False, "driver-minimum"),
        ("12.9", "1000.1", True, "driver-minimum"),
    ],
)
def test_driver_rule(cuda: str, driver: str, ok: bool, rule: str) -> None:
    got, reason = driver_reason(cuda, driver, KB)
    assert got is ok
    assert reason.rule == rule
    assert reason.source.startswith("https://docs.nvidia.com/")


def stack(
    cudnn: str, framework: str = "torch", version: str = "2.15.0", cuda: str = "13.2"
) -> Stack:
    return Stack(
        framework=framework,
        framework_version=version,
        cuda=cuda,
        cudnn=cudnn,
        python="3.11",
        base="offline",
    )


@pytest.mark.parametrize(
    ("runtime", "ok"),
    [
        ("9.26.0.51", True),
        ("9.26.1.1", True),
        ("9.28.1.4", True),
        ("9.13.0.50", False),
        ("8.9.7.29", False),
        ("10.0.0", False),
    ],
)
def test_cudnn_rule_same_major_not_older_minor(runtime: str, ok: bool) -> None:
    release = KB.release("torch", "2.15.0")
    assert release is not None
    variant = release.variant("13.2")
    assert variant is not None and variant.cudnn == "9.26.0.51"
    got, reason = cudnn_reason(stack(runtime), variant, KB)
    assert got is ok
    assert reason.source.startswith("https://")


def test_version_order_is_numeric() -> None:
    from harness.model import version_key

    assert version_key("12.10") > version_key("12.9")
    assert version_key("580.65.06") > version_key("580")
    assert version_key("470.57.02") < version_key("525.60.13")


def test_cudnn_majors_from_pypi_rows() -> None:
    row = KB.cudnn_release("9.13.0.50")
    assert row is not None
    assert row.supports_major("13.0") and row.supports_major("12.8")
    assert not row.supports_major("11.8")


def test_tensorflow_on_the_cuda_base_loads_the_images_older_cudnn() -> None:
    """nvidia/cuda 12.5.1's cuDNN 9.2 is older than the 9.3 TensorFlow 2.21 was built with: the
    mismatch shows at the first convolution on a GPU, and cannot show without one."""
    from harness.compat import expect
    from harness.model import DriverTarget, Outcome, Stage
    from harness.scenarios import read_scenarios
    from tests.conftest import ROOT

    release = KB.release("tensorflow", "2.21.0")
    assert release is not None
    variant = release.variant("12.5")
    assert variant is not None
    assert KB.runtime_cudnn(variant, "cuda", "3.10") == "9.2.1.18"
    assert KB.runtime_cudnn(variant, "offline", "3.11") == "9.3"
    baseline = read_scenarios(ROOT / "scenarios", display="scenarios")["baseline"]
    tf = stack("9.2.1.18", framework="tensorflow", version="2.21.0", cuda="12.5")
    cpu = expect(tf, baseline, variant, DriverTarget(version=None, origin="flag"), KB)
    assert cpu.expected.outcome is Outcome.PASS
    assert any("cannot show without a GPU" in c.detail for c in cpu.checks)
    gpu = expect(tf, baseline, variant, DriverTarget(version="580.65.06", origin="flag"), KB)
    assert gpu.expected.signature == "cudnn_version_mismatch"
    assert gpu.expected.stage is Stage.CUDNN_CONV


@pytest.mark.parametrize(
    ("cuda", "minimum"),
    [("11.7", "450.80.02"), ("11.8", "450.80.02"), ("12.1", "525.60.13"), ("12.8", "525.60.13"),
     ("13.0", "580"), ("13.2", "580")],
)  # fmt: skip
def test_declared_driver_is_the_majors_minor_version_compatibility_row(
    cuda: str, minimum: str
) -> None:
    found = declared_driver(cuda, KB)
    assert found is not None
    got, why = found
    assert got == minimum and why.rule == "driver-minor-version-compatibility"
    assert why.source.startswith("https://docs.nvidia.com/deploy/cuda-compatibility/")


@pytest.mark.parametrize("cuda", ["10.2", "x", ""])
def test_declared_driver_without_a_row_is_none(cuda: str) -> None:
    assert declared_driver(cuda, KB) is None


_PART = st.integers(0, 12)
_VERSIONS = st.builds(
    lambda epoch, release, pre, post, dev, local: (
        (f"{epoch}!" if epoch else "")
        + ".".join(map(str, release))
        + (f"{pre[0]}{pre[1]}" if pre else "")
        + (f".post{post}" if post is not None else "")
        + (f".dev{dev}" if dev is not None else "")
        + (f"+{local}" if local else "")
    ),
    st.sampled_from([0, 0, 0, 1]),
    st.lists(_PART, min_size=1, max_size=4),
    st.none() | st.tuples(st.sampled_from(["a", "b", "rc", "alpha", "c", "pre"]), _PART),
    st.none() | _PART,
    st.none() | _PART,
    st.none() | st.lists(st.sampled_from(["1", "2", "10", "ubuntu", "cu118", "b"]), min_size=1,
                         max_size=3).map(".".join),
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_VERSIONS, min_size=2, max_size=8))
def test_version_key_orders_as_packaging_does(texts: list[str]) -> None:
    """The key holds ints and strings only (it sorts in C), in packaging's order and equality."""
    from packaging.version import Version

    from harness.model import pep440_key, version_key

    for a in texts:
        for b in texts:
            va, vb, ka, kb = Version(a), Version(b), version_key(a), version_key(b)
            assert ka == (0, pep440_key(va)), a  # the bare-release shortcut says the same
            assert (ka < kb, ka == kb) == (va < vb, va == vb), (a, b)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(_VERSIONS, min_size=1, max_size=8)
    | st.lists(st.lists(_PART, min_size=1, max_size=4).map(lambda r: ".".join(map(str, r))),
               min_size=1, max_size=8)
)  # fmt: skip
def test_version_keys_order_and_equal_as_version_key_does(texts: list[str]) -> None:
    """version_keys (the report's keys for a column of versions, cheaper where every one is a
    bare release) give the same order and the same ties as version_key, bare or not."""
    from harness.model import version_key, version_keys

    keys = version_keys(texts)
    for i, a in enumerate(texts):
        for j, b in enumerate(texts):
            ka, kb = version_key(a), version_key(b)
            assert (keys[i] < keys[j], keys[i] == keys[j]) == (ka < kb, ka == kb), (a, b)
