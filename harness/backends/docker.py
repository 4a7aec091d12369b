"""The only module that talks to the Docker engine (through the Docker SDK)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import docker
from docker.errors import DockerException

from harness.errors import HarnessError


class EngineUnreachable(HarnessError):
    exit_code = 3


_START_HELP = (
    "start it (`sudo systemctl start docker`, or `sudo dockerd &` where there is no systemd), "
    "check that your user may use its socket, or set DOCKER_HOST"
)


def connect(env: Mapping[str, str]) -> docker.DockerClient:
    """A client for the engine DOCKER_HOST (or the default socket) names; a clear error if none."""
    host = env.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if host.startswith("unix://") and not Path(host[len("unix://") :]).exists():
        # Checked first: docker-py leaks the socket when connecting to a missing path fails
        # (https://github.com/docker/docker-py/pull/3356), and the plain fact is clearer anyway.
        raise EngineUnreachable(
            f"cannot reach the Docker engine at {host}: no such socket", help=_START_HELP
        )
    client = None
    try:
        client = docker.DockerClient(base_url=host, timeout=30)
        client.ping()
    except DockerException as exc:
        if client is not None:
            client.close()
        raise EngineUnreachable(
            f"cannot reach the Docker engine at {host}: {_reason(exc)}", help=_START_HELP
        ) from None
    return client


def engine_info(client: docker.DockerClient) -> Mapping[str, Any]:
    version: Mapping[str, Any] = client.version()
    return version


def _reason(exc: DockerException) -> str:
    text = str(exc)
    return text.rsplit("(", maxsplit=1)[-1].rstrip(")") if "Connection" in text else text
