"""Real engine: where an offline base comes from when it is missing. The registry is asked for
real (none answers on a machine without one), mmdebstrap is taken off PATH, and the harness
must stop with exit 2 and the one-line fix instead of failing later or installing against the
user's wish. (The install path itself is `bench/cold_smoke.py --no-mmdebstrap`.) The registry
path runs for real but for the pull: a Debian bookworm image on the engine under the registry
image's name."""

from __future__ import annotations

import io
import os
import shutil
import sys
from pathlib import Path

import pytest

from harness.backends.basesource import NoBaseSource
from harness.backends.engine import Engine
from harness.backends.offline import ensure_base, read_recipe
from harness.console import Console
from harness.lock import cache_root
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def backend(docker_client: object) -> Engine:
    return Engine(docker_client)  # type: ignore[arg-type]


def test_no_registry_no_mmdebstrap_no_install_is_exit_2_with_the_fix(
    backend: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if backend.registry_has("debian:bookworm-slim"):
        pytest.fail("this engine has debian:bookworm-slim or a registry: the test needs neither")
    folder = tmp_path / "recipes"
    folder.mkdir()
    text = (ROOT / "images/offline-base/debian12.yaml").read_text(encoding="utf-8")
    (folder / "debian12.yaml").write_text(text + f"\n# {tmp_path.name}\n", encoding="utf-8")
    recipe = read_recipe(folder, "debian12")  # another digest: a base that is not built yet
    assert backend.image_id(recipe.ref) is None
    bin_dir = tmp_path / "bin"  # a PATH with the interpreter and nothing else
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("STACKMATRIX_NO_INSTALL", "1")
    assert shutil.which("mmdebstrap") is None
    said = io.StringIO()
    with pytest.raises(NoBaseSource) as err:
        ensure_base(recipe, backend, tmp_path / "scratch", console=Console(said))
    assert err.value.exit_code == 2
    assert "no registry answers for debian:bookworm-slim" in err.value.message
    assert "mmdebstrap is not installed" in err.value.message
    assert err.value.help == "sudo apt-get install mmdebstrap, then run the same command again"
    assert backend.image_id(recipe.ref) is None, "nothing was built"
    assert not (tmp_path / "scratch").exists() or not any((tmp_path / "scratch").iterdir())


def test_a_debian_image_on_the_engine_is_the_base_with_the_recipes_packages_added(
    backend: Engine, tmp_path: Path
) -> None:
    """The registry path, for real but for the pull: an image named debian:bookworm-slim on the
    engine (here this machine's own mmdebstrap bookworm base under that name, standing for
    Docker Hub's) becomes the base: apt adds the recipe's packages with the network on, Python
    and glibc are measured inside and kept as labels, the source is named, and the unlabelled
    intermediate image is gone."""
    image = "debian:bookworm-slim"
    if backend.image_id(image) is not None:
        pytest.fail(f"this engine already has {image}: the test tags and untags its own")
    scratch = cache_root(dict(os.environ)) / "tmp"
    own, _ = ensure_base(read_recipe(ROOT / "images/offline-base", "debian12"), backend, scratch)
    folder = tmp_path / "recipes"
    folder.mkdir()
    text = (ROOT / "images/offline-base/debian12.yaml").read_text(encoding="utf-8")
    (folder / "debian12.yaml").write_text(text + f"\n# {tmp_path.name}\n", encoding="utf-8")
    recipe = read_recipe(folder, "debian12")  # another digest: a base that is not built yet
    backend.client.images.get(own.ref).tag("debian", "bookworm-slim")
    try:
        said = io.StringIO()
        built, fresh = ensure_base(
            recipe, backend, tmp_path / "scratch", console=Console(said), logs=tmp_path
        )
        assert fresh
        assert f"offline base: FROM {image} (on the engine" in said.getvalue()
        assert (built.ref, built.python, built.glibc) == (recipe.ref, "3.11.2", "2.36")
        labels = backend.image_labels(recipe.ref)
        assert labels["stackmatrix.base.source"] == image
        assert labels["stackmatrix.base.recipe.sha256"] == recipe.digest
        assert backend.image_id(f"{recipe.ref}-unlabelled") is None
        assert "apt-get install" in (tmp_path / "base-debian12.log").read_text(encoding="utf-8")
        done = backend.run(recipe.ref, ["python3", "-c", "import venv, sys; print(sys.version)"])
        assert done.exit_code == 0 and done.output.startswith("3.11.2")
    finally:
        backend.remove_image(recipe.ref)
        backend.remove_image(image)  # the tag only: the machine's own base keeps its name
    assert backend.image_id(own.ref) == own.image_id
