"""README's two commands, as README.md writes them, on pristine Debian 12 and Ubuntu 24.04.

Each system is a root made here by mmdebstrap (minbase with python3, ca-certificates and apt, as a
cloud image has them) and `docker import`ed; the test first shows it is pristine (no pip, no
ensurepip, PEP 668's EXTERNALLY-MANAGED). A copy of this checkout is mounted at its own path,
with the host engine's socket, and the fenced commands of README's "The two commands" run in it
one after the other: the main job on the committed journal (a fresh clone: every cell a cache
hit, the report COMPLETE, 0 of 60 ran here), then the tests session on one small test file
(`-- tests/unit/test_cli_reference.py`), so the session is proven without running the whole
suite in a container. The full job's cold run is measured in bench/, not here.

The host's CA bundle is mounted over the root's own (/etc/ssl/certs/ca-certificates.crt): the
machines this runs on reach PyPI through a proxy with its own CA. Nothing else of the host goes
in. Minutes per system (PyPI downloads: nox, then each session's dependencies).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.backends.driverstore import debian_files
from harness.backends.engine import Engine
from harness.backends.offline import DEBIAN, read_recipe
from harness.lock import cache_root
from tests.conftest import ROOT

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CA = Path("/etc/ssl/certs/ca-certificates.crt")
SYSTEMS = {
    "debian12": ("bookworm", "http://deb.debian.org/debian", "main"),
    "ubuntu24.04": ("noble", "http://archive.ubuntu.com/ubuntu", "main,universe"),
}
INCLUDE = "python3,ca-certificates,apt"  # what a cloud image has (apt brings libstdc++6); no pip
TEST_FILE = "tests/unit/test_cli_reference.py"


def readme_commands(text: str) -> list[str]:
    """The commands of the first fenced `sh` block under "## The two commands", comments cut."""
    section = text.split("\n## The two commands\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "README's 'The two commands' has no ```sh block"
    lines = [ln.split("  #", 1)[0].strip() for ln in block.group(1).splitlines()]
    return [ln for ln in lines if ln]


def test_readme_commands_are_the_two_bootstrap_commands() -> None:
    commands = readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert commands == ["python3 tools/nox.py -s matrix", "python3 tools/nox.py -s tests"]


def ubuntu_keyring() -> Path:
    """Ubuntu's archive key from Debian's package of it, pinned in the stand-in's recipe."""
    recipe = read_recipe(ROOT / "images" / "offline-base", "ubuntu22.04")
    assert recipe.keyring is not None
    folder = debian_files(recipe.keyring, cache_root({}), archive=DEBIAN, component="main")
    return folder / recipe.keyring.members[0][1]


@pytest.fixture(scope="module")
def engine(docker_client: Any) -> Engine:
    return Engine(docker_client)


def pristine(engine: Engine, system: str, scratch: Path) -> str:
    suite, mirror, components = SYSTEMS[system]
    ref = f"stackmatrix-test/pristine:{system}-{hashlib.sha256(INCLUDE.encode()).hexdigest()[:8]}"
    tar = scratch / f"{system}.tar"
    argv = ["mmdebstrap", "--variant=minbase", "--format=tar", f"--include={INCLUDE}"]
    argv += [f"--components={components}"]
    if system.startswith("ubuntu"):
        # apt reads it as its _apt user: under /tmp, not pytest's private (0700) folders
        keys = Path(tempfile.mkdtemp(prefix="stackmatrix-keyring-"))
        shutil.copyfile(ubuntu_keyring(), keys / "ubuntu.gpg")
        keys.chmod(0o755)
        (keys / "ubuntu.gpg").chmod(0o644)
        argv.append(f"--keyring={keys / 'ubuntu.gpg'}")
    done = subprocess.run(
        [*argv, suite, str(tar), mirror], capture_output=True, text=True, timeout=1800, check=False
    )
    if system.startswith("ubuntu"):
        shutil.rmtree(keys)
    assert done.returncode == 0, done.stderr[-3000:]
    engine.import_rootfs(tar, ref, ['CMD ["/bin/bash"]'])
    tar.unlink()
    return ref


def run(engine: Engine, image: str, script: str, mounts: dict[str, dict[str, str]]) -> str:
    """bash -c SCRIPT in a fresh container of `image` (removed after); stdout+stderr, exit."""
    container = engine.client.containers.run(
        image, ["bash", "-c", script], detach=True, volumes=mounts, working_dir="/"
    )
    try:
        code = container.wait(timeout=3600)["StatusCode"]
        out: str = container.logs().decode("utf-8", "replace")
    finally:
        container.remove(force=True)
    return f"{out}\n[exit {code}]"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """This checkout as a fresh clone holds it (tracked and new files; nothing ignored, so no
    .nox, no venv), at a path that is the same inside the containers."""
    folder = tmp_path_factory.mktemp("clone") / "stackmatrix"
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True, timeout=60,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, files):
        source = ROOT / name
        if source.is_symlink() or source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name, follow_symlinks=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("system", sorted(SYSTEMS))
def test_readme_commands_on_a_pristine_system(
    system: str, engine: Engine, checkout: Path, tmp_path: Path
) -> None:
    image = pristine(engine, system, tmp_path)
    try:
        mounts = {str(checkout): {"bind": str(checkout), "mode": "rw"}}
        mounts["/var/run/docker.sock"] = {"bind": "/var/run/docker.sock", "mode": "rw"}
        if CA.is_file():
            mounts[str(CA)] = {"bind": str(CA), "mode": "ro"}
        bare = run(
            engine,
            image,
            "python3 -m pip --version; python3 -m venv /tmp/v; "
            "ls /usr/lib/python3*/EXTERNALLY-MANAGED; command -v pipx nox || echo none",
            mounts,
        )
        assert "No module named pip" in bare, bare
        assert "ensurepip is not" in bare or "python3-venv" in bare, bare
        assert "EXTERNALLY-MANAGED\n" in bare and "\nnone\n" in bare, bare
        main, tests = readme_commands((checkout / "README.md").read_text(encoding="utf-8"))
        # Each system starts from a checkout with no .nox of another system's Python (the copy
        # is shared by the two systems; a fresh clone has none).
        script = (
            f"set -e; cd {checkout}; rm -rf .nox; {main}; echo MAIN-DONE; {tests} -- -q {TEST_FILE}"
        )
        out = run(engine, image, script, mounts)
        (tmp_path / f"{system}.log").write_text(out, encoding="utf-8")
        assert out.endswith("[exit 0]"), out[-6000:]
        head, _, rest = out.partition("MAIN-DONE")
        assert "COMPLETE: 60 of 60 cells have results" in head, head[-4000:]
        assert re.search(r"^0 of 60 ran here; 60 from the journal", head, re.M), head[-4000:]
        assert re.search(r"^60 cells: 0 run, 60 cache hits, 0 drift", head, re.M), head[-4000:]
        assert re.search(r"\b\d+ passed\b", rest) and " failed" not in rest, rest[-4000:]
    finally:
        engine.client.images.remove(image, force=True)
