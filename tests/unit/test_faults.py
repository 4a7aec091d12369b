"""Fault scenarios -> typed operations (harness.faults), refused at `harness plan` when hostile;
and the Docker backend's rendering of those operations, which no argument can add a command to."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harness.backends.docker as docker_backend
from harness.backends.docker import (
    DROP,
    NO_GPU_ENV,
    Layout,
    container_env,
    docker_run_command,
    hardening,
    layout,
    pattern_word,
    run_script,
    setup_line,
)
from harness.cli import main
from harness.errors import ConfigError
from harness.faults import resolve
from harness.model import (
    Fault,
    FaultOp,
    Hide,
    MemoryLimit,
    NoGpu,
    Overwrite,
    Preload,
    PrependPath,
    Replace,
    RunSpec,
    SetEnv,
    Truncate,
    UnsetEnv,
    WheelMember,
)
from tests.conftest import ROOT, TORCH_STACK
from tests.unit.test_bad_input import assert_one_error

SITE = "/opt/stack/lib/python3.11/site-packages"
CUDNN = WheelMember(pin="nvidia-cudnn-cu13==9.13.0.50", member="nvidia/cudnn/lib/")
ARGV = ("python", "/probe/stageprobe.py", "torch")


def f(primitive: str, **args: str) -> Fault:
    return Fault(primitive=primitive, args=tuple(sorted(args.items())))


# ---------------------------------------------------------------- resolve: one typed op each


@pytest.mark.parametrize(
    ("fault", "op"),
    [
        (
            f("hide", path="{site}/nvidia/cudnn/lib/libcudnn_cnn.so.*"),
            Hide(path=f"{SITE}/nvidia/cudnn/lib/libcudnn_cnn.so.*"),
        ),
        (
            f("overwrite", path="{site}/nvidia/cudnn/lib/libcudnn_graph.so.9", text="v {python}\n"),
            Overwrite(path=f"{SITE}/nvidia/cudnn/lib/libcudnn_graph.so.9", text="v 3.11\n"),
        ),
        (
            f("truncate", path="{site}/nvidia/cudnn/lib/libcudnn_graph.so.9", bytes="1000000"),
            Truncate(path=f"{SITE}/nvidia/cudnn/lib/libcudnn_graph.so.9", size=1_000_000),
        ),
        (
            f(
                "replace",
                path="{site}/nvidia/cudnn/lib/libcudnn_graph.so.9",
                wheel="nvidia-cudnn-cu{cuda_major}==9.13.0.50",
                member="nvidia/cudnn/lib/libcudnn_graph.so.9",
            ),
            Replace(
                path=f"{SITE}/nvidia/cudnn/lib/libcudnn_graph.so.9",
                source=WheelMember(
                    pin="nvidia-cudnn-cu13==9.13.0.50",
                    member="nvidia/cudnn/lib/libcudnn_graph.so.9",
                ),
            ),
        ),
        (
            f("env_set", name="CUDA_FORCE_PTX_JIT", value="1"),
            SetEnv(name="CUDA_FORCE_PTX_JIT", value="1"),
        ),
        (f("env_unset", name="LD_LIBRARY_PATH"), UnsetEnv(name="LD_LIBRARY_PATH")),
        (
            f(
                "path_prepend",
                wheel="nvidia-cudnn-cu{other_cuda_major}==9.13.0.50",
                member="nvidia/cudnn/lib/",
            ),
            PrependPath(
                var="LD_LIBRARY_PATH",
                dir=WheelMember(pin="nvidia-cudnn-cu12==9.13.0.50", member="nvidia/cudnn/lib/"),
            ),
        ),
        (
            f("path_prepend", var="PYTHONPATH", wheel="numpy==1.26.4", member="numpy/"),
            PrependPath(var="PYTHONPATH", dir=WheelMember(pin="numpy==1.26.4", member="numpy/")),
        ),
        (
            f(
                "preload",
                wheel="nvidia-cudnn-cu13==9.13.0.50",
                member="nvidia/cudnn/lib/libcudnn_graph.so.9",
            ),
            Preload(
                lib=WheelMember(
                    pin="nvidia-cudnn-cu13==9.13.0.50",
                    member="nvidia/cudnn/lib/libcudnn_graph.so.9",
                )
            ),
        ),
        (f("no_gpu"), NoGpu()),
        (f("memory_limit", bytes="1000000"), MemoryLimit(size=1_000_000)),
    ],
    ids=[
        "hide",
        "overwrite",
        "truncate",
        "replace",
        "env_set",
        "env_unset",
        "path_prepend",
        "path_prepend_var",
        "preload",
        "no_gpu",
        "memory_limit",
    ],
)
def test_each_primitive_resolves_to_its_operation(fault: Fault, op: FaultOp) -> None:
    assert resolve((fault,), TORCH_STACK) == (op,)


def test_placeholders_resolve_from_the_stack() -> None:
    faults = (
        f("hide", path="{venv}/lib/python{python}/site-packages/x"),
        f("env_set", name="X", value="{site}|{cuda_major}|{other_cuda_major}|{python}|{venv}"),
    )
    assert resolve(faults, TORCH_STACK) == (
        Hide(path=f"{SITE}/x"),
        SetEnv(name="X", value=f"{SITE}|13|12|3.11|/opt/stack"),
    )


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("{site}//a/./b", f"{SITE}/a/b"),
        ("{site}/nvidia/cudnn/lib/", f"{SITE}/nvidia/cudnn/lib"),
        ("{venv}/./bin", "/opt/stack/bin"),
    ],
)
def test_paths_are_normalised(raw: str, path: str) -> None:
    assert resolve((f("hide", path=raw),), TORCH_STACK) == (Hide(path=path),)


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        (f("hide"), "needs the argument 'path'"),
        (f("hide", path="{site}/x", bytes="1"), "takes no argument 'bytes'"),
        (f("hide", path="{nope}/x"), "unknown placeholder {nope}"),
        (f("env_set", name="A", value="{site"), "stray brace"),
        (f("pip_layer"), "cannot be applied when a cell runs"),
    ],
)
def test_faults_that_cannot_resolve(fault: Fault, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve((fault,), TORCH_STACK)


# ---------------------------------------------------------------- hostile input, through the CLI

# Each case: the fault's primitive, its arguments (the hostile one first) and what the error says.
# `{canary}` is a file under tmp_path the argument would create if it ever reached a shell.
HOSTILE: list[tuple[str, str, dict[str, str], str]] = [
    ("shell", "hide", {"path": "/tmp/x; touch {canary}"}, "not an absolute path of plain"),
    ("ifs", "hide", {"path": "{site}/x;touch${IFS}{canary}"}, "unknown placeholder {IFS}"),
    ("climb", "hide", {"path": "{site}/../../../../../"}, "climbs out of its folder"),
    ("attr", "hide", {"path": "{site.__class__.__mro__}"}, "unknown placeholder"),
    ("typo", "hide", {"path": "{sitee}/x"}, "unknown placeholder {sitee}"),
    ("outside", "hide", {"path": "/etc/passwd"}, "is outside the stack's install tree"),
    ("size_word", "truncate", {"bytes": "lots", "path": "{site}/x.so"}, "not a positive whole"),
    ("size_negative", "memory_limit", {"bytes": "-1"}, "not a positive whole number"),
    ("env_name", "env_set", {"name": "BASH_ENV=x LD_PRELOAD", "value": "1"}, "not an environment"),
    (
        "member_climb",
        "replace",
        {"member": "../../etc", "path": "{site}/x.so", "wheel": "nvidia-cudnn-cu13==9.13.0.50"},
        "is not a path inside the wheel",
    ),
    (
        "wheel_shell",
        "preload",
        {"wheel": "x; rm -rf {canary}", "member": "nvidia/cudnn/lib/libcudnn.so.9"},
        "is not name==version",
    ),
]

SCENARIO_HEAD = """\
schema: 1
id: missing-cudnn
title: A hostile fault argument
cause: A fault argument written to break out of its operation.
frameworks: [torch, tensorflow]
faults:
  - primitive: {primitive}
    args:
"""
SCENARIO_TAIL = """\
expect:
  torch: {cpu: pass, gpu: pass}
  tensorflow: {cpu: pass, gpu: pass}
"""


def write_matrix(tmp: Path, primitive: str, args: dict[str, str]) -> tuple[Path, Path, int]:
    """A copy of matrix.yaml and scenarios/ with missing-cudnn.yaml (a smoke scenario) replaced
    by one fault; returns the matrix, the scenario file and the line of the first argument."""
    shutil.copy(ROOT / "matrix.yaml", tmp / "matrix.yaml")
    shutil.copytree(ROOT / "scenarios", tmp / "scenarios")
    scenario = tmp / "scenarios" / "missing-cudnn.yaml"
    head = SCENARIO_HEAD.format(primitive=primitive)
    lines = [f"      {name}: {json.dumps(value)}\n" for name, value in args.items()]
    scenario.write_text(head + "".join(lines) + SCENARIO_TAIL, encoding="utf-8")
    return tmp / "matrix.yaml", scenario, head.count("\n") + 1


@pytest.mark.parametrize(
    ("primitive", "args", "message"),
    [c[1:] for c in HOSTILE],
    ids=[c[0] for c in HOSTILE],
)
def test_hostile_fault_is_refused_at_plan(
    primitive: str,
    args: dict[str, str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    canary = tmp_path / "P"
    args = {k: v.replace("{canary}", str(canary)) for k, v in args.items()}
    matrix, scenario, line = write_matrix(tmp_path, primitive, args)
    name = next(iter(args))
    col = len(f"      {name}: ") + 1
    code = main(["plan", "--matrix", str(matrix), "--driver", "none"])
    out = capsys.readouterr()
    assert_one_error(code, out.out, out.err)
    first, help_line = out.err.splitlines()
    assert first.startswith(f"{scenario}:{line}:{col}: error: fault '{primitive}': "), first
    assert message in first
    assert help_line.startswith("help: ")
    assert not canary.exists()


def test_the_copied_matrix_plans_without_the_hostile_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture is sound: the same copy with a harmless fault plans (exit 0)."""
    matrix, _, _ = write_matrix(tmp_path, "hide", {"path": "{site}/nvidia/cudnn/lib"})
    assert main(["plan", "--matrix", str(matrix), "--driver", "none"]) == 0
    assert "missing-cudnn" in capsys.readouterr().out


# ---------------------------------------------------------------- rendering adds no command
#
# Each operation is built directly (no `resolve`, so no validation) from arbitrary text, then
# rendered as Docker's setup script renders it. (a) shlex reads the line back into exactly the
# argv we meant, every argument one token and no `;`/`&&`/`|` but the renderer's own; (b) sh runs
# it with rm/cp/mv/head replaced by functions that log their argv, and nothing else happens.
# NUL is left out of the text: a shell script (an argv string) cannot carry it, and resolve
# refuses it. The hostile pieces below would create `canary` in the folder sh runs in, were any
# to become a command: the folder must hold nothing afterwards (or only the `.cut` copy).

HOSTILE_PIECES = (
    "'",
    '"',
    "; touch canary;",
    "$(touch canary)",
    "`touch canary`",
    "\ntouch canary\n",
    "' ; touch canary ; '",
    "&& touch canary #",
    "| touch canary",
    "${IFS}",
    "*",
    "?",
    "\\",
    "-rf",
    " ",
)
texts = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8", exclude_characters="\0")),
        st.sampled_from(HOSTILE_PIECES),
    ),
    max_size=4,
).map("".join)
# Slash-free and short: a truncated file's `.cut` copy is created (by a redirection) in the
# temporary folder, so its name must be one component the file system takes.
# "." and ".." name folders, never a file a fault could write (`> .` fails before printf runs)
file_names = texts.filter(lambda t: "/" not in t and t not in {".", ".."} and len(t.encode()) < 200)
# Names the shell itself reads are left out: exporting PATH or IFS would change the check itself.
SHELL_VARS = {"PATH", "IFS", "HOME", "PWD", "OLDPWD", "ENV", "OPTIND", "OPTARG", "PPID", "LINENO"}
env_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: n not in SHELL_VARS and not n.startswith("PS")
)
members = st.builds(WheelMember, pin=st.just("w==1"), member=texts)
property_settings = settings(max_examples=200, deadline=None)


def tokens(line: str) -> list[str]:
    # whitespace_split: '@', '%', ',', ':', '+' (which shlex.quote leaves bare) stay inside words
    # as in sh; only sh's own operators (`;`, `&&`, `>`, ...) split a word.
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return list(lex)


def logged(name: str, log: Path) -> str:
    """A shell function standing in for `name`: it appends its name, argc and argv, each
    NUL-terminated, to `log` (not stdout, which `head` has redirected)."""
    return f'{name}() {{ command printf "%s\\0" {name} "$#" "$@" >> {shlex.quote(str(log))}; }}'


def calls_in(log: Path) -> list[list[str]]:
    fields = log.read_bytes().decode().split("\0")[:-1] if log.exists() else []
    out = []
    while fields:
        name, argc, *fields = fields
        out.append([name, *fields[: int(argc)]])
        fields = fields[int(argc) :]
    return out


def run_in_sh(
    script: str, *, env: dict[str, str] | None = None, after: Sequence[str] = ()
) -> tuple[list[list[str]], set[str]]:
    """`script` run by sh in an empty folder with rm/cp/mv/head (and `setpriv` and `env`, which
    `exec` finds on PATH) logging instead of acting; the calls made and the files left."""
    with tempfile.TemporaryDirectory() as tmp:
        log, work, bin_ = Path(tmp, "calls"), Path(tmp, "work"), Path(tmp, "bin")
        work.mkdir()
        bin_.mkdir()
        fake_env = bin_ / "env"
        # `exec env` looks env up on PATH (exec never runs a function): a script that logs.
        fake_env.write_text(f'#!/bin/sh\n{logged("env", log)}\nenv "$@"\n')
        fake_env.chmod(0o755)
        # `exec setpriv ... -- env ...`: the drop logs its whole argv and runs nothing
        fake_drop = bin_ / "setpriv"
        fake_drop.write_text(f'#!/bin/sh\n{logged("setpriv", log)}\nsetpriv "$@"\n')
        fake_drop.chmod(0o755)
        functions = [logged(n, log) for n in ("rm", "cp", "mv", "head", "printf", "show")]
        full = "\n".join([*functions, script, *after])
        base = {"PATH": f"{bin_}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        subprocess.run(
            ["sh", "-c", full],
            cwd=work,
            env={**base, **(env or {})},
            capture_output=True,
            timeout=10,
            check=False,
        )
        return calls_in(log), {p.name for p in work.iterdir()}


@property_settings
@given(path=texts.filter(bool))
def test_hide_adds_no_command(path: str) -> None:
    # pattern_word("") renders no word at all (resolve never yields an empty path), so min 1.
    assert tokens(setup_line(Hide(path=path), RunSpec(argv=ARGV)) or "") == [
        "rm",
        "-rf",
        "--",
        path,
    ]
    # Run under a folder that does not exist: '*' and '?' then match nothing (not even '.' and
    # '..', which dash's '.*' would), so sh leaves the pattern as it was written.
    hidden = f"absent/{path}"
    calls, files = run_in_sh(setup_line(Hide(path=hidden), RunSpec(argv=ARGV)) or "")
    assert calls == [["rm", "-rf", "--", hidden]]
    assert files == set()


@property_settings
@given(path=file_names, size=st.integers(min_value=1, max_value=2**60))
def test_truncate_adds_no_command(path: str, size: int) -> None:
    line = setup_line(Truncate(path=path, size=size), RunSpec(argv=ARGV)) or ""
    cut = f"{path}.cut"
    assert tokens(line) == [
        *("head", "-c", str(size), "--", path, ">", cut, "&&"),
        *("rm", "-f", "--", path, "&&", "mv", "--", cut, path),
    ]
    calls, files = run_in_sh(line)
    assert calls == [
        ["head", "-c", str(size), "--", path],
        ["rm", "-f", "--", path],
        ["mv", "--", cut, path],
    ]
    assert files == {cut}, "only the redirection's copy is created"


@property_settings
@given(path=texts, member=members, source=texts)
def test_replace_adds_no_command(path: str, member: WheelMember, source: str) -> None:
    spec = RunSpec(argv=ARGV, sources=((member, source),))
    line = setup_line(Replace(path=path, source=member), spec) or ""
    assert tokens(line) == ["rm", "-rf", "--", path, "&&", "cp", "-R", "--", source, path]
    calls, files = run_in_sh(line)
    assert calls == [["rm", "-rf", "--", path], ["cp", "-R", "--", source, path]]
    assert files == set()


@property_settings
@given(path=file_names.filter(bool), text=texts)
def test_overwrite_adds_no_command(path: str, text: str) -> None:
    line = setup_line(Overwrite(path=path, text=text), RunSpec(argv=ARGV)) or ""
    assert tokens(line) == ["rm", "-rf", "--", path, "&&", "printf", "%s", text, ">", path]
    calls, files = run_in_sh(line)
    assert calls == [["rm", "-rf", "--", path], ["printf", "%s", text]]
    assert files == {path}, "only the redirection's file is created"


def on_image(spec: RunSpec) -> Layout:
    """A run on a stack image: every operation in the root step."""
    return layout(spec, "img", None, Path(), "ref")


DROPPED = DROP.split()[1:]  # setpriv's own arguments, up to its '--'


@property_settings
@given(
    var=env_names,
    member=members,
    source=texts,
    before=st.none() | st.text(st.characters(codec="utf-8", exclude_characters="\0")),
    preload=st.booleans(),
)
def test_search_path_ops_add_no_command(
    var: str, member: WheelMember, source: str, before: str | None, preload: bool
) -> None:
    """The new first entry goes to the probe's `env` (after the drop), the image's own value
    behind it."""
    op: Preload | PrependPath = Preload(lib=member) if preload else PrependPath(var=var, dir=member)
    var = op.var
    script = run_script(RunSpec(argv=ARGV, ops=(op,), sources=((member, source),)))
    word = f"{var}={source}${{{var}:+:${var}}}"
    assert tokens(script) == [
        "set",
        "-e",
        "exec",
        *DROP.split(),
        "env",
        "HOME=/home/stack",
        word,
        *ARGV,
    ]
    env = {} if before is None else {var: before}
    calls, files = run_in_sh(script, env=env)
    value = f"{source}:{before}" if before else source
    assert calls == [["setpriv", *DROPPED, "env", "HOME=/home/stack", f"{var}={value}", *ARGV]]
    assert files == set()


@property_settings
@given(
    names=st.lists(env_names, max_size=3),
    argv=st.lists(texts, min_size=1, max_size=3),
    values=st.lists(texts, max_size=3),
)
def test_unset_set_and_argv_add_no_command(
    names: list[str], argv: list[str], values: list[str]
) -> None:
    """The script's last line: `exec setpriv ... -- env -u NAME... HOME=... NAME=VALUE... ARGV`:
    every value reaches the probe's environment after the drop, as one word each."""
    ops: tuple[FaultOp, ...] = (
        *(UnsetEnv(name=n) for n in names),
        *(SetEnv(name="V", value=v) for v in values),
    )
    script = run_script(RunSpec(argv=tuple(argv), ops=ops))
    expected = [
        "env",
        *(a for n in names for a in ("-u", n)),
        "HOME=/home/stack",
        *(f"V={v}" for v in values),
        *argv,
    ]
    assert tokens(script) == ["set", "-e", "exec", *DROP.split(), *expected]
    calls, files = run_in_sh(script)
    assert calls == [["setpriv", *DROPPED, *expected]]
    assert files == set()


@pytest.mark.parametrize("name", ["", "1A", "A B", "A=1", "A;B", "$(x)", "A\n"])
def test_a_bad_name_is_never_rendered(name: str) -> None:
    """resolve refuses these; the renderer refuses them again rather than write one."""
    sources = ((CUDNN, "/faults/0"),)
    for op in (UnsetEnv(name=name), SetEnv(name=name, value="1"), PrependPath(var=name, dir=CUDNN)):
        with pytest.raises(ValueError, match="not an environment variable name"):
            run_script(RunSpec(argv=ARGV, ops=(op,), sources=sources))


def test_a_hide_pattern_keeps_its_wildcards_and_quotes_the_rest() -> None:
    assert pattern_word(f"{SITE}/nvidia/*/lib/libcublas.so.*") == (
        f"{SITE}/nvidia/*/lib/libcublas.so.*"
    )
    assert pattern_word("/a b/c?d;e*") == "'/a b/c'?'d;e'*"


@pytest.mark.parametrize(
    "raw", ["{venv}/.*/victim", "{site}/.?/.?/.?/.?/.?/etc", "/usr/lib64/.?/.?/etc"]
)
def test_a_hide_pattern_cannot_climb_out_through_a_dot_wildcard(raw: str, tmp_path: Path) -> None:
    try:
        [op] = resolve((f("hide", path=raw),), TORCH_STACK)
    except ConfigError:
        return  # refused at plan time
    assert isinstance(op, Hide)
    for d in (SITE, "/opt/victim", "/etc", "/usr/lib64"):  # the container's tree, under tmp_path
        (tmp_path / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    calls, _ = run_in_sh(setup_line(Hide(path=f"{tmp_path}{op.path}"), RunSpec(argv=ARGV)) or "")
    [[_, _, _, *removed]] = calls
    roots = [f"{tmp_path}/opt/stack/", f"{tmp_path}/usr/lib64/"]
    for path in removed:
        assert any(os.path.normpath(path).startswith(r) for r in roots), path


# ---------------------------------------------------------------- the container's environment


@property_settings
@given(
    values=st.dictionaries(
        env_names, st.text(st.characters(codec="utf-8", exclude_characters="\0"))
    )
)
def test_set_env_values_reach_only_the_probe(values: dict[str, str]) -> None:
    """Not the container's environment, so not the root setup's: a scenario's LD_PRELOAD never
    runs as root."""
    ops = tuple(SetEnv(name=k, value=v) for k, v in values.items())
    spec = RunSpec(argv=ARGV, ops=ops)
    assert container_env(spec) == {}
    words = tokens(run_script(spec))
    after = words[words.index("--") + 1 :]
    assert after == ["env", "HOME=/home/stack", *(f"{k}={v}" for k, v in values.items()), *ARGV]


def test_no_gpu_hides_the_device_and_the_request() -> None:
    gpu = RunSpec(argv=ARGV, ops=(SetEnv(name="A", value="1"),), gpu=True)
    hidden = RunSpec(argv=ARGV, ops=(SetEnv(name="A", value="1"), NoGpu()), gpu=True)
    assert "device_requests" in hardening(on_image(gpu))
    assert "--gpus" in docker_run_command(on_image(gpu))
    assert container_env(hidden) == dict(NO_GPU_ENV)
    assert dict(NO_GPU_ENV) == {"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void"}
    assert "device_requests" not in hardening(on_image(hidden))
    assert "--gpus" not in docker_run_command(on_image(hidden))


def test_memory_limit_is_the_smallest_asked_for() -> None:
    spec = RunSpec(argv=ARGV, ops=(MemoryLimit(size=3_000_000), MemoryLimit(size=2_000_000)))
    assert (
        hardening(on_image(spec))["mem_limit"]
        == hardening(on_image(spec))["memswap_limit"]
        == 2_000_000
    )
    # without one, the default: a runaway probe is killed, not the host
    default = hardening(on_image(RunSpec(argv=ARGV)))
    assert default["mem_limit"] == default["memswap_limit"] == docker_backend.DEFAULT_MEMORY
