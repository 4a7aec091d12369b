"""The engine the Docker tests and `harness build/run` use is reachable, and an unreachable one
gets the one-line error that says how to start it."""

from __future__ import annotations

import pytest

from harness.backends.docker import EngineUnreachable, connect, engine_info


def test_engine_answers(docker_client: object) -> None:
    info = engine_info(docker_client)  # type: ignore[arg-type]
    assert info["ApiVersion"]
    assert info["Os"] == "linux"


def test_unreachable_engine_is_a_clear_error(tmp_path: object) -> None:
    with pytest.raises(EngineUnreachable) as err:
        connect({"DOCKER_HOST": f"unix://{tmp_path}/no-such.sock"})
    text = err.value.render()
    assert "cannot reach the Docker engine" in text
    assert "help: start it" in text
    assert err.value.exit_code != 0
