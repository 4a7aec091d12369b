"""The GitHub Actions workflow people copy (.github/workflows/stackmatrix.yml): actionlint (with
shellcheck on every `run:` script) passes, GitHub's workflow schema accepts it, no `run:` script
interpolates `${{ }}`, and every `harness` command in it parses with the harness's own argument
parser (with the `harness run` arguments that `harness plan --format github` hands each shard).

The linters are the venv's own (the `test` extra installs them): missing is a failure, never a
skip."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.args import build_parser
from harness.cli import main
from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "stackmatrix.yml"
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    path = BIN / name
    assert path.is_file(), f"{path} is missing: pip install -e '.[test]' installs it"
    return str(path)


def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def scripts() -> Iterator[tuple[str, str]]:
    """(job/step, script) for every `run:` step."""
    for job_id, job in workflow()["jobs"].items():
        for i, step in enumerate(job.get("steps", [])):
            if "run" in step:
                yield f"{job_id}/{step.get('name', i)}", step["run"]


def test_actionlint_with_shellcheck_passes() -> None:
    res = subprocess.run(
        [tool("actionlint"), "-no-color", "-shellcheck", tool("shellcheck"), str(WORKFLOW)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


def test_githubs_workflow_schema_accepts_it() -> None:
    schema = ["--builtin-schema", "vendor.github-workflows"]
    res = subprocess.run(
        [tool("check-jsonschema"), *schema, str(WORKFLOW)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr


def test_no_script_interpolates_an_expression() -> None:
    """Inputs (and matrix values made from them) reach scripts only through `env:`."""
    found = [(where, line) for where, s in scripts() for line in s.splitlines() if "${{" in line]
    assert not found


def test_each_action_is_pinned_to_a_major_version() -> None:
    uses = [
        step["uses"]
        for job in workflow()["jobs"].values()
        for step in job.get("steps", [])
        if "uses" in step
    ]
    assert uses
    assert all(re.fullmatch(r"actions/[a-z-]+(/[a-z]+)?@v\d+", u) for u in uses), uses


# ------------------------------------------------- the harness commands in the shell scripts

ARRAY = re.compile(r"\b(\w+)\+?=\(((?:[^()\"]|\"[^\"]*\")*)\)")  # a=(...), a+=(...)
EXPANSION = re.compile(r"^\$(\w+|\{\w+\}|@|\*|\{(\w+)\[@\]\})$")
HARNESS = re.compile(r"(?:^|\$\(|[;&|]\s*|\bexec\s+)harness\s+(.*)$")
NOX = re.compile(r"(?:^|[;&|]\s*)nox\s+(.*)$")
STOP = {")", ";", "|", "||", "&&", "&", ";;"}


def logical_lines(script: str) -> list[str]:
    return script.replace("\\\n", " ").splitlines()


def words(text: str, arrays: dict[str, list[str]], unknown: list[str]) -> list[str]:
    """The shell words of a command (up to `)`, `;`, `|`, `&&`): an array expansion becomes the
    words the script put in it (or `unknown`), a lone variable a placeholder, a variable inside a
    word stays (argparse does not look inside values)."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lex.whitespace_split = True
    out: list[str] = []
    for word in lex:
        if word in STOP:
            break
        m = EXPANSION.match(word)
        if m and m.group(2):
            out += arrays.get(m.group(2), unknown)
        elif m and m.group(1) in ("@", "*"):
            out += unknown
        elif m:
            out.append("1")  # a value: a number parses as --max-jobs and as any string
        else:
            out.append(word)
    return out


def commands(pattern: re.Pattern[str], unknown: list[str]) -> list[tuple[str, list[str]]]:
    """(job/step, argv after the program name) of each call the pattern finds. Arrays the
    script fills with `a=(...)`/`a+=(...)` expand to their words; any other (the shard step's
    `mapfile`) and "$@" to `unknown`."""
    found = []
    for where, script in scripts():
        arrays: dict[str, list[str]] = {}
        for line in logical_lines(script):
            if filled := ARRAY.findall(line):  # also in `if`, `for` and `while` lines
                for name, inner in filled:
                    arrays.setdefault(name, []).extend(words(inner, {}, []))
            elif m := pattern.search(line):
                found.append((where, words(m.group(1), arrays, unknown)))
    return found


def parse(argv: list[str]) -> argparse.Namespace:
    parser = build_parser(CommandsThatFail())
    return parser.parse_args(argv)


class CommandsThatFail(dict[str, Any]):
    def __missing__(self, name: str) -> Any:
        return lambda *_: pytest.fail(f"{name} ran")


def test_every_harness_command_parses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--matrix", str(ROOT / "matrix.yaml"), "--driver", "none",
                 "--format", "github"]) == 0  # fmt: skip
    shards = [shlex.split(job["args"]) for job in json.loads(capsys.readouterr().out)["include"]]
    assert shards
    seen = set()
    for shard in shards:  # the shard step's "${args[@]}" are the plan's args for each shard
        for where, argv in commands(HARNESS, shard):
            try:
                args = parse(argv)
            except SystemExit:
                pytest.fail(f"{where}: harness {shlex.join(argv)}\n{capsys.readouterr().err}")
            seen.add(args.command)
    assert seen == {"plan", "run", "report"}


def test_nox_sessions_exist_and_pass_options_harness_run_takes() -> None:
    sessions = set(re.findall(r"@nox\.session\ndef (\w+)\(", (ROOT / "noxfile.py").read_text()))
    calls = commands(NOX, [])
    assert calls
    for where, argv in calls:
        assert argv[0] == "-s" and argv[1] in sessions, (where, argv)
        passed = argv[argv.index("--") + 1 :] if "--" in argv else []
        # `nox -s gpu -- ARGS`: ARGS go to `harness run --backend local --profile gpu`
        try:
            parse(["run", "--backend", "local", *passed])
        except SystemExit:
            pytest.fail(f"{where}: nox {shlex.join(argv)}")


def test_the_slurm_script_passes_shellcheck() -> None:
    script = ROOT / "ci" / "slurm" / "stackmatrix.sbatch"
    res = subprocess.run(
        [tool("shellcheck"), str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 0, res.stdout + res.stderr
