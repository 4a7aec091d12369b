"""Rendering: golden Dockerfiles, the run+commit split, content-addressed tags, requirements."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.compat import parse_knowledge, read_knowledge_docs
from harness.errors import ConfigError, HarnessError
from harness.lock import read_lock
from harness.model import DockerfilePlan, ImageSpec, Stack
from harness.render import (
    content_ref,
    cuda_base_ref,
    image_spec,
    read_templates,
    render_files,
    requirements,
    split_dockerfile,
    step_refs,
)
from tests.conftest import FIXTURES, ROOT
from tests.unit.golden import check_golden

KB = parse_knowledge(read_knowledge_docs())
TEMPLATES = read_templates(ROOT / "images")


def stack(spec: str) -> Stack:
    """'framework version cuda cudnn python base' -> Stack."""
    fw, version, cuda, cudnn, python, base = spec.split()
    return Stack(
        framework=fw, framework_version=version, cuda=cuda, cudnn=cudnn, python=python, base=base
    )


CUDA_STACKS = [
    stack("tensorflow 2.21.0 12.5 9.2.1.18 3.10 cuda"),
    stack("torch 2.9.1 12.8 9.10.2.21 3.10 cuda"),
    stack("tensorflow 2.13.0 11.8 8.9.6.50 3.10 cuda"),
]


@pytest.mark.parametrize("s", CUDA_STACKS, ids=[s.slug for s in CUDA_STACKS])
def test_cuda_flavour_golden(s: Stack) -> None:
    ref = cuda_base_ref(s, KB)
    spec = image_spec(s, kb=KB, lock=None, base_ref=ref, base_id=ref, templates=TEMPLATES)
    text = "".join(f"==> {n} <==\n{t}" for n, t in [("Dockerfile", spec.dockerfile), *spec.files])
    check_golden(FIXTURES / "render" / f"{s.slug}.txt", text)
    assert spec.dockerfile.count("FROM nvidia/cuda:") == 1


def test_cuda_base_tags_come_from_the_knowledge() -> None:
    assert cuda_base_ref(CUDA_STACKS[0], KB) == "nvidia/cuda:12.5.1-cudnn-runtime-ubuntu22.04"
    assert cuda_base_ref(CUDA_STACKS[2], KB) == "nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04"


def test_offline_golden_with_its_committed_lock() -> None:
    s = stack("torch 2.15.0 13.2 9.26.0.51 3.11 offline")
    lock = read_lock(ROOT / "images" / "locks" / f"{s.slug}.json")
    assert lock is not None
    spec = image_spec(
        s,
        kb=KB,
        lock=lock,
        base_ref="stackmatrix/base:debian12-py3.11-TEST",
        base_id="sha256:TEST",
        templates=TEMPLATES,
    )
    check_golden(FIXTURES / "render" / f"{s.slug}.Dockerfile", spec.dockerfile)
    files = dict(spec.files)
    assert "--no-index --find-links /wheelhouse/wheels" in files["install.sh"]
    assert "--require-hashes" in files["install.sh"]
    hashed = files["shared.txt"].count("--hash=sha256:") + files["cudnn.txt"].count("--hash=")
    assert hashed == len(lock.wheels)
    assert [ln.split("==")[0] for ln in files["cudnn.txt"].splitlines()[1:]] == [
        "nvidia-cudnn-cu13"
    ]
    assert "nvidia-cudnn" not in files["shared.txt"]
    assert spec.plan.base == "stackmatrix/base:debian12-py3.11-TEST"
    assert spec.plan.runs == (
        "sh /wheelhouse/meta/install.sh shared.txt",
        "sh /wheelhouse/meta/install.sh cudnn.txt",
    )
    assert [c.split()[0] for c in spec.plan.changes] == ["LABEL", "ENV", "USER", "WORKDIR", "CMD"]


def test_requirements_follow_the_base_and_the_cudnn_swap() -> None:
    tf = KB.release("tensorflow", "2.21.0")
    torch = KB.release("torch", "2.15.0")
    assert tf is not None and torch is not None
    tfv, torchv = tf.variant("12.5"), torch.variant("13.2")
    assert tfv is not None and torchv is not None
    offline = stack("tensorflow 2.21.0 12.5 9.3 3.11 offline")
    assert requirements(offline, tfv, "tensorflow") == (["tensorflow[and-cuda]==2.21.0"], [])
    on_cuda = replace(offline, base="cuda", cudnn="9.2.1.18", python="3.10")
    assert requirements(on_cuda, tfv, "tensorflow") == (["tensorflow==2.21.0"], [])
    swapped = stack("torch 2.15.0 13.2 9.13.0.50 3.11 offline")
    assert requirements(swapped, torchv, "torch") == (
        ["torch==2.15.0"],
        ["nvidia-cudnn-cu13==9.13.0.50"],
    )


def test_the_tag_changes_with_every_input_and_only_then() -> None:
    s = CUDA_STACKS[1]
    files = {"install.sh": "a", "requirements.txt": "b"}
    ref = content_ref(s, "FROM x", files, "sha256:1")
    assert ref == content_ref(s, "FROM x", dict(reversed(files.items())), "sha256:1")
    assert ref.startswith(f"stackmatrix/stack:{s.slug}-")
    others = {
        content_ref(s, "FROM y", files, "sha256:1"),
        content_ref(s, "FROM x", {**files, "install.sh": "c"}, "sha256:1"),
        content_ref(s, "FROM x", files, "sha256:2"),
    }
    assert ref not in others and len(others) == 3


def test_split_dockerfile() -> None:
    plan = split_dockerfile(
        "FROM base:1\nRUN --network=none \\\n    --mount=type=bind,target=/w \\\n    echo a\n"
        'LABEL a="x  y" \\\n      b="z"\nUSER stack\n# note\nCMD ["python"]\n'
    )
    assert plan.base == "base:1"
    assert plan.runs == ("echo a",)
    assert plan.changes == ('LABEL a="x  y" b="z"', "USER stack", 'CMD ["python"]')


@pytest.mark.parametrize(
    ("text", "message"),
    [("RUN x\n", "no FROM"), ("FROM a\nFROM b\n", "one FROM"), ("FROM a\nCOPY x y\n", "COPY")],
)
def test_split_rejects_what_run_commit_cannot_do(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        split_dockerfile(text)


def test_templates_are_strict() -> None:
    broken = {**TEMPLATES, "install.sh.j2": "{{ no_such_value }}\n"}
    with pytest.raises(HarnessError, match="no_such_value"):
        render_files(
            CUDA_STACKS[0],
            flavour="cuda",
            base_ref="nvidia/cuda:x",
            index="i",
            lock=None,
            plain_requirements=["x==1"],
            templates=broken,
        )


def _offline(slug: str, base_id: str = "sha256:TEST") -> tuple[ImageSpec, tuple[str, ...]]:
    s = stack(slug)
    lock = read_lock(ROOT / "images" / "locks" / f"{s.slug}.json")
    assert lock is not None
    spec = image_spec(
        s, kb=KB, lock=lock, base_ref="stackmatrix/base:x", base_id=base_id, templates=TEMPLATES
    )
    return spec, step_refs(spec.plan, dict(spec.files), base_id)


def test_stacks_that_differ_only_in_cudnn_share_their_first_step() -> None:
    a, steps_a = _offline("torch 2.15.0 13.2 9.13.0.50 3.11 offline")
    b, steps_b = _offline("torch 2.15.0 13.2 9.26.0.51 3.11 offline")
    _tf, steps_tf = _offline("tensorflow 2.21.0 12.5 9.3.0.75 3.11 offline")
    assert len(steps_a) == 1 and steps_a[0].startswith("stackmatrix/step:")
    assert steps_a == steps_b  # the same wheels but cuDNN's, over the same base
    assert a.ref != b.ref  # the stacks themselves stay apart
    assert steps_tf != steps_a
    assert _offline("torch 2.15.0 13.2 9.26.0.51 3.11 offline", "sha256:OTHER")[1] != steps_b


def test_a_step_hashes_the_files_it_names_and_no_other() -> None:
    plan = DockerfilePlan(base="b", runs=("sh /m/install.sh shared.txt", "sh x"), changes=())
    files = {"install.sh": "i", "shared.txt": "s", "cudnn.txt": "c", "shared.txt.bak": "z"}
    ref = step_refs(plan, files, "sha256:1")
    assert step_refs(plan, {**files, "cudnn.txt": "other"}, "sha256:1") == ref
    assert step_refs(plan, {**files, "shared.txt.bak": "other"}, "sha256:1") == ref
    assert step_refs(plan, {**files, "shared.txt": "other"}, "sha256:1") != ref
    assert step_refs(plan, {**files, "install.sh": "other"}, "sha256:1") != ref
    assert step_refs(replace(plan, runs=plan.runs[1:]), files, "sha256:1") == ()
