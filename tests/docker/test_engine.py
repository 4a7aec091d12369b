"""The engine the Docker tests and `harness build/run` use is reachable, and an unreachable one
gets the one-line error that says how to start it."""

from __future__ import annotations

import subprocess

import pytest

from harness.backends.engine import Engine, EngineUnreachable, connect, engine_info


def test_engine_answers(docker_client: object) -> None:
    info = engine_info(docker_client)  # type: ignore[arg-type]
    assert info["ApiVersion"]
    assert info["Os"] == "linux"


def test_the_storage_driver_is_the_engines(docker_client: object) -> None:
    """What the builder's note is based on: the same driver `docker info` reports."""
    got = Engine(docker_client).storage_driver()  # type: ignore[arg-type]
    cli = subprocess.run(
        ["docker", "info", "--format", "{{.Driver}}"], capture_output=True, text=True, check=True
    )
    assert got and got == cli.stdout.strip()


def test_unreachable_engine_is_a_clear_error(tmp_path: object) -> None:
    with pytest.raises(EngineUnreachable) as err:
        connect({"DOCKER_HOST": f"unix://{tmp_path}/no-such.sock"})
    text = err.value.render()
    assert "cannot reach the Docker engine" in text
    assert "help: start it" in text
    assert err.value.exit_code != 0


def test_build_without_an_engine_says_how_to_start_it(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.cli import main
    from tests.conftest import ROOT

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    code = main(["build"])
    err = capsys.readouterr().err
    assert code == 3
    assert "Traceback" not in err
    assert err.splitlines()[0] == (
        f"error: cannot reach the Docker engine at unix://{tmp_path}/no-such.sock: no such socket"
    )
    assert err.splitlines()[1].startswith("help: start it")
