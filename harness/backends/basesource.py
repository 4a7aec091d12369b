"""Where an offline base comes from, chosen once per run and said in one line.

1. A registry base (`debian:bookworm-slim` for the debian12 recipe) when the image is on this
   engine already or a registry answers for it: the recipe's packages are added with apt.
2. Else mmdebstrap builds it from Debian's packages (no registry needed); where mmdebstrap is
   missing it is installed with apt, announced first, when this user is root or has passwordless
   sudo, unless STACKMATRIX_NO_INSTALL=1.
3. Else exit 2 with the one-line fix.

`choose` is the pure decision; `HostFacts.read` looks at this machine and its engine.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from harness import proc
from harness.console import Console
from harness.errors import HarnessError
from harness.model import ProcResult

INSTALL_TIMEOUT = 900.0
NO_INSTALL = "STACKMATRIX_NO_INSTALL"


class NoBaseSource(HarnessError):
    """No way to make an offline base on this machine: a set-up error, the user's to fix."""

    exit_code = 2


class Source(Enum):
    REGISTRY = "registry"
    MMDEBSTRAP = "mmdebstrap"
    INSTALL = "install-mmdebstrap"  # mmdebstrap, installed with apt first


@dataclass(frozen=True, slots=True, kw_only=True)
class HostFacts:
    registry_image: str  # e.g. debian:bookworm-slim
    registry: bool  # that image is on the engine, or a registry answers for it
    mmdebstrap: bool  # on PATH
    apt: bool  # apt-get on PATH
    root: bool
    sudo: bool  # passwordless sudo
    no_install: bool  # STACKMATRIX_NO_INSTALL=1


@dataclass(frozen=True, slots=True)
class Choice:
    source: Source
    line: str  # what is said before anything happens
    install: tuple[tuple[str, ...], ...] = ()  # commands that install mmdebstrap


def registry_image(os_id: str, suite: str) -> str:
    """The registry image a recipe stands for: Debian's slim images, Ubuntu's by codename."""
    if os_id.startswith("ubuntu"):
        return f"ubuntu:{suite}"
    return f"debian:{suite}-slim"


# A fresh machine's first minutes: unattended-upgrades (or cloud-init) holds apt's locks, and
# apt-get fails at once with "Could not get lock /var/lib/dpkg/lock-frontend" unless told to wait
# (apt >= 1.9.11: Debian 11, Ubuntu 20.04; an older apt ignores the option).
APT_WAIT = ("-o", "DPkg::Lock::Timeout=300")


def install_commands(root: bool) -> tuple[tuple[str, ...], ...]:
    sudo = () if root else ("sudo", "-n")
    return (
        (*sudo, "apt-get", *APT_WAIT, "update", "-qq"),
        (*sudo, "apt-get", *APT_WAIT, "install", "-y", "-qq", "--no-install-recommends",
         "mmdebstrap"),
    )  # fmt: skip


def choose(facts: HostFacts) -> Choice:
    """The base source for these facts (raises NoBaseSource when there is none)."""
    if facts.registry:
        return Choice(
            Source.REGISTRY,
            f"offline base: FROM {facts.registry_image} (on the engine, or its registry "
            "answers), the recipe's packages added with apt",
        )
    if facts.mmdebstrap:
        return Choice(
            Source.MMDEBSTRAP,
            f"offline base: built here by mmdebstrap from Debian's packages (no registry "
            f"answers for {facts.registry_image})",
        )
    fix = "sudo apt-get install mmdebstrap, then run the same command again"
    why = None
    if not facts.apt:
        why = "there is no apt-get to install it with"
    elif facts.no_install:
        why = f"{NO_INSTALL}=1 forbids installing it"
    elif not (facts.root or facts.sudo):
        why = "this user is not root and has no passwordless sudo to install it"
    if why is not None:
        raise NoBaseSource(
            f"no way to make the offline base: no registry answers for {facts.registry_image} "
            f"and mmdebstrap is not installed ({why})",
            help=fix,
        )
    commands = install_commands(facts.root)
    return Choice(
        Source.INSTALL,
        f"offline base: no registry answers for {facts.registry_image} and mmdebstrap is "
        f"missing: installing it now with `{' '.join(commands[1])}` ({NO_INSTALL}=1 refuses)",
        commands,
    )


def passwordless_sudo() -> bool:
    if shutil.which("sudo") is None:
        return False
    try:
        return proc.run(["sudo", "-n", "true"], timeout=10).returncode == 0
    except (OSError, HarnessError):
        return False


def read_facts(image: str, registry: bool, env: Mapping[str, str]) -> HostFacts:
    root = os.geteuid() == 0
    has = shutil.which("mmdebstrap") is not None
    return HostFacts(
        registry_image=image,
        registry=registry,
        mmdebstrap=has,
        apt=shutil.which("apt-get") is not None,
        root=root,
        sudo=False if root or has else passwordless_sudo(),
        no_install=env.get(NO_INSTALL, "") not in ("", "0"),
    )


LOCK_WAIT = 300.0  # seconds to wait for apt's lock, as APT_WAIT has apt-get wait for dpkg's
_BUSY = "Could not get lock"  # apt-get's words when another apt holds a lock it needs


def _apt(
    argv: Sequence[str],
    env: Mapping[str, str],
    console: Console,
    *,
    wait: float = LOCK_WAIT,
    pause: float = 5.0,
) -> ProcResult:
    """argv run, again every `pause` seconds while apt says another apt holds its lock, for
    up to `wait` seconds: `apt-get update` does not wait for /var/lib/apt/lists/lock, whatever
    DPkg::Lock::Timeout says (apt 2.6), and a fresh machine's unattended-upgrades holds it."""
    deadline = time.monotonic() + wait
    said = False
    while True:
        res = proc.run(list(argv), timeout=INSTALL_TIMEOUT, env=env)
        busy = res.returncode not in (0, None) and _BUSY in res.stdout + res.stderr
        if not busy or time.monotonic() + pause > deadline:
            return res
        if not said:
            console.line(f"[base] another apt holds apt's lock; waiting up to {wait:.0f} s for it")
            said = True
        time.sleep(pause)


def install(commands: Sequence[Sequence[str]], console: Console) -> None:
    """Run the install commands (apt), with progress; their failure is the user's to fix."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    t = time.monotonic()
    with console.activity("base", "installing mmdebstrap with apt"):
        for argv in commands:
            res = _apt(argv, env, console)
            if res.returncode != 0:
                tail = "\n".join((res.stdout + res.stderr).strip().splitlines()[-10:])
                raise NoBaseSource(
                    f"installing mmdebstrap failed: `{' '.join(argv)}` exited "
                    f"{res.returncode}:\n{tail}",
                    help="sudo apt-get install mmdebstrap, then run the same command again",
                )
    if shutil.which("mmdebstrap") is None:
        raise NoBaseSource(
            "apt installed mmdebstrap but it is not on PATH",
            help="add /usr/bin to PATH, then run the same command again",
        )
    console.step("base", f"mmdebstrap installed ({time.monotonic() - t:.0f} s)")
