#!/usr/bin/env python3
"""nox on any machine with python3: `python3 tools/nox.py -s matrix` is `nox -s matrix`.

Debian 12 and Ubuntu 24.04 as installed have python3, but no pip, no ensurepip (the venv module
wants the python3-venv package) and a system Python that refuses `pip install` (PEP 668:
externally managed). So, with the standard library only and once per checkout:

1. a venv without pip in .nox/.bootstrap-nox-<version>-py<X.Y> (`venv --without-pip` needs no
   ensurepip);
2. pip's wheel from PyPI, checked against the sha256 pinned here, run from the wheel itself
   (https://pip.pypa.io/en/stable/installation/#supported-methods) to install the pinned nox
   into that venv;
3. that nox, with every argument given here.

nox makes each session's venv with virtualenv, which brings its own pip, so the sessions need
nothing from the system either. On a machine that has nox or pip, this is the same command.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import venv
from pathlib import Path

NOX = "2026.10.20"
PIP_WHEEL = (
    "https://files.pythonhosted.org/packages/07/25/"
    "ee8c38ae72d66b844ce8eb9711ba905dba21ca1a8a0c960057c41cd23337/pip-26.3-py3-none-any.whl"
)
PIP_SHA256 = "f3b60b20ffaadd4415ed7957212a38ac63fa4c5fa375bd0f4a797777940fad13"
ROOT = Path(__file__).resolve().parent.parent
MINIMUM = (3, 10)


def say(text: str) -> None:
    print(f"tools/nox.py: {text}", file=sys.stderr, flush=True)


def fail(text: str, help: str) -> None:
    print(f"error: {text}\nhelp: {help}", file=sys.stderr)
    raise SystemExit(2)


def fetch_pip(into: Path) -> Path:
    """pip's wheel, written only once its bytes have the pinned sha256."""
    path = into / PIP_WHEEL.rsplit("/", 1)[1]
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(PIP_WHEEL, timeout=60) as answer, path.open("wb") as out:
            while chunk := answer.read(1 << 16):
                digest.update(chunk)
                out.write(chunk)
    except OSError as exc:
        fail(
            f"cannot download pip from PyPI ({PIP_WHEEL}): {exc}",
            "this first run needs PyPI (files.pythonhosted.org); behind a proxy set https_proxy, "
            "and with a private CA set SSL_CERT_FILE to its bundle",
        )
    if digest.hexdigest() != PIP_SHA256:
        fail(
            f"pip's wheel from PyPI has sha256 {digest.hexdigest()}, not {PIP_SHA256}",
            "something between here and PyPI changed the file; try again on another network",
        )
    return path


def bootstrap(home: Path) -> Path:
    """The venv with the pinned nox in it (made now unless a whole one is there)."""
    nox = home / "bin" / "nox"
    if (home / "complete").is_file() and nox.is_file():
        return nox
    shutil.rmtree(home, ignore_errors=True)
    say(f"installing nox {NOX} into {home.relative_to(ROOT)} (once)")
    venv.EnvBuilder(with_pip=False, clear=True).create(home)
    python = home / "bin" / "python"
    with tempfile.TemporaryDirectory() as tmp:
        wheel = fetch_pip(Path(tmp))
        command = [str(python), f"{wheel}/pip", "install", "--quiet", f"nox=={NOX}"]
        done = subprocess.run(command, check=False)
    if done.returncode != 0:
        fail(f"installing nox {NOX} failed (pip exit {done.returncode})", "see pip's lines above")
    (home / "complete").write_text(f"nox {NOX}\n", encoding="ascii")
    return nox


def main(argv: list[str]) -> int:
    if sys.version_info < MINIMUM:
        fail(
            f"Python {sys.version.split()[0]} is too old: stackmatrix needs 3.10 or newer",
            "run it with a newer python3 (Debian 12: 3.11, Ubuntu 24.04: 3.12)",
        )
    # One per Python: a venv made by one interpreter does not run under another (a checkout
    # shared by two systems, or a Python upgraded in place).
    py = f"py{sys.version_info[0]}.{sys.version_info[1]}"
    nox = bootstrap(ROOT / ".nox" / f".bootstrap-nox-{NOX}-{py}")
    os.chdir(ROOT)
    return subprocess.run([str(nox), *argv], check=False).returncode


if __name__ == "__main__":
    try:
        raise SystemExit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        raise SystemExit(130) from None
