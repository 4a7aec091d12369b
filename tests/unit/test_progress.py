"""Progress and the newcomer's set-up decisions: pure parts (the base source, the heartbeat,
the run counter, the index page reader)."""

from __future__ import annotations

import io
import itertools
import threading
import time
from pathlib import Path

import pytest

from harness import console as console_mod
from harness.backends.basesource import (
    HostFacts,
    NoBaseSource,
    Source,
    _apt,
    choose,
    install_commands,
    registry_image,
)
from harness.console import Console, human_seconds
from harness.fetcher import parse_project_page
from harness.runner import Count

FACTS = HostFacts(
    registry_image="debian:bookworm-slim",
    registry=False,
    mmdebstrap=False,
    apt=True,
    root=True,
    sudo=False,
    no_install=False,
)


def _replace(**kw: object) -> HostFacts:
    from dataclasses import replace

    return replace(FACTS, **kw)  # type: ignore[arg-type]


def test_a_registry_that_answers_wins() -> None:
    got = choose(_replace(registry=True, mmdebstrap=True))
    assert got.source is Source.REGISTRY
    assert "debian:bookworm-slim" in got.line


def test_mmdebstrap_when_no_registry() -> None:
    got = choose(_replace(mmdebstrap=True))
    assert got.source is Source.MMDEBSTRAP and not got.install
    assert "mmdebstrap" in got.line


def test_install_as_root_is_announced_with_its_command() -> None:
    got = choose(FACTS)
    assert got.source is Source.INSTALL
    assert got.install == install_commands(root=True)
    assert got.install[1][0] == "apt-get" and "install" in got.install[1]
    # waits for apt's lock (held by unattended-upgrades in a fresh machine's first minutes)
    assert all(argv[1:3] == ("-o", "DPkg::Lock::Timeout=300") for argv in got.install)
    assert "STACKMATRIX_NO_INSTALL=1" in got.line and " ".join(got.install[1]) in got.line


def test_install_with_passwordless_sudo_uses_sudo_n() -> None:
    got = choose(_replace(root=False, sudo=True))
    assert got.source is Source.INSTALL
    assert all(argv[:2] == ("sudo", "-n") for argv in got.install)


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({"no_install": True}, "STACKMATRIX_NO_INSTALL=1"),
        ({"root": False, "sudo": False}, "passwordless sudo"),
        ({"apt": False}, "no apt-get"),
    ],
)
def test_no_source_is_exit_2_with_the_fix(kw: dict[str, object], why: str) -> None:
    with pytest.raises(NoBaseSource) as err:
        choose(_replace(**kw))
    assert err.value.exit_code == 2
    assert why in err.value.message
    assert err.value.help is not None and "apt-get install mmdebstrap" in err.value.help


def test_registry_images() -> None:
    assert registry_image("debian12", "bookworm") == "debian:bookworm-slim"
    assert registry_image("debian13", "trixie") == "debian:trixie-slim"
    assert registry_image("ubuntu22.04", "jammy") == "ubuntu:jammy"


def test_activity_prints_a_line_at_least_every_heartbeat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(console_mod, "HEARTBEAT", 0.05)
    monkeypatch.setattr(console_mod, "TICK", 0.01)
    out = io.StringIO()
    con = Console(out)
    assert not con.tty  # a StringIO is no terminal: plain lines
    with con.activity("stack", "install", lambda: "3 of 9 wheels"):
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3
    assert all(line.startswith("[stack] install: 3 of 9 wheels, ") for line in lines)
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_a_line_from_elsewhere_resets_the_silence(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heartbeat counts from the last line printed by anyone, so two activities in a row
    (install, then commit) never leave a gap longer than HEARTBEAT between them."""
    monkeypatch.setattr(console_mod, "HEARTBEAT", 0.2)
    monkeypatch.setattr(console_mod, "TICK", 0.01)
    out = io.StringIO()
    con = Console(out)
    with con.activity("a", "long"):
        for _ in range(6):
            time.sleep(0.1)
            con.line("busy")
    assert "[a]" not in out.getvalue(), "lines every 0.1 s leave no silence to fill"
    stamps = []
    with con.activity("b", "quiet"):
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.7:
            before = out.getvalue().count("\n")
            time.sleep(0.005)
            if out.getvalue().count("\n") > before:
                stamps.append(time.monotonic())
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert len(stamps) >= 2 and max(gaps) < 0.35


def test_activity_is_silent_when_quick() -> None:
    out = io.StringIO()
    with Console(out).activity("x", "quick"):
        pass
    assert out.getvalue() == ""


def test_human_seconds() -> None:
    assert human_seconds(9.4) == "9 s"
    assert human_seconds(125) == "2 min 05 s"


def test_count_says_where_the_run_is_and_its_eta() -> None:
    c = Count(total=5, to_run=4)
    assert c.tick() == "run 1/5"  # a cache hit
    assert c.eta() == ""
    assert c.tick(10.0) == "run 2/5"
    assert c.eta() == ", ETA 30 s"  # 3 left at 10 s each
    c.tick(20.0)
    assert c.eta() == ", ETA 30 s"  # 2 left at 15 s each


def test_index_page_json_and_html() -> None:
    page = "https://pypi.org/simple/x/"
    body = (
        b'{"files": [{"filename": "x-1-py3-none-any.whl", "url": "https://f/x-1.whl#sha256=ab"}]}'
    )
    got = parse_project_page(body, "application/vnd.pypi.simple.v1+json", page)
    assert got == {"x-1-py3-none-any.whl": "https://f/x-1.whl"}
    html = b'<html><a href="../../packages/x-1-py3-none-any.whl#sha256=ab">x-1-py3-none-any.whl</a>'
    got = parse_project_page(html, "text/html", page)
    assert got == {"x-1-py3-none-any.whl": "https://pypi.org/packages/x-1-py3-none-any.whl"}
    evil = b'<a href="file:///etc/passwd">x-1-py3-none-any.whl</a>'
    assert parse_project_page(evil, "text/html", page) == {}


def test_apt_busy_is_waited_for_then_run_again(tmp_path: Path) -> None:
    """`apt-get update` does not wait for apt's lists lock: what apt prints when another apt
    holds it ("Could not get lock ...", exit 100) is waited out, then the command runs again.
    The command here prints apt's words while a file says the lock is held."""
    held = tmp_path / "held"
    held.write_text("")
    script = tmp_path / "apt-get"
    script.write_text(
        "#!/bin/sh\nif [ -e '" + str(held) + "' ]; then\n"
        "  echo 'E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt)' >&2"
        "\n  exit 100\nfi\necho done\n"
    )
    script.chmod(0o755)
    out = io.StringIO()
    threading.Timer(0.5, held.unlink).start()
    res = _apt([str(script)], {}, Console(out), wait=30, pause=0.1)
    assert res.returncode == 0 and res.stdout == "done\n"
    assert out.getvalue().count("another apt holds apt's lock") == 1
    held.write_text("")
    res = _apt([str(script)], {}, Console(io.StringIO()), wait=0.3, pause=0.1)
    assert res.returncode == 100 and "Could not get lock" in res.stderr, "then it gives up"
