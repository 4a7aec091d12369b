"""A disk that fills up, for real: a tiny tmpfs in a mount namespace of its own. Every write
that meets ENOSPC says which path, the bytes it needed and the space free (a MachineFault, exit
3); the journal keeps every complete line and no torn one; a derived file is never half-written.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from harness.journal import JOURNAL, append, records
from tests.conftest import ROOT
from tests.faultkit import in_tmpfs

PAGE = 4096  # tmpfs counts whole pages

FILL_JOURNAL = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness.errors import MachineFault
    from harness.journal import append
    folder = Path(sys.argv[1])
    for i in range(1000):
        try:
            append(folder, {"schema": 1, "cell": f"c{i}", "key": "k", "status": "passed",
                            "pad": "x" * 700})
        except MachineFault as exc:
            print(i, exc.exit_code, exc.render(), sep="\\n")
            break
    """
)


def test_a_full_disk_keeps_every_complete_journal_line_and_no_torn_one(tmp_path: Path) -> None:
    folder, keep = tmp_path / "results", tmp_path / "kept"
    res = in_tmpfs(2 * PAGE, folder, keep, [sys.executable, "-c", FILL_JOURNAL, str(folder)])
    assert res.returncode == 0, res.stderr
    count, code, message = res.stdout.split("\n", 2)
    assert code == "3"
    assert message.startswith(f"error: the disk is full: cannot write {folder / JOURNAL} (needs ")
    assert "bytes free there" in message and "\nhelp: free space there" in message
    data = (keep / JOURNAL).read_bytes()
    assert data.endswith(b"\n"), "no torn last line"
    lines = data.splitlines()
    assert len(lines) == int(count) > 0
    assert [json.loads(ln)["cell"] for ln in lines] == [f"c{i}" for i in range(int(count))]


WRITE_PLAN = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from harness.errors import MachineFault
    from harness.fs import atomic_write
    path = Path(sys.argv[1]) / "plan.json"
    atomic_write(path, "old\\n")
    try:
        atomic_write(path, "x" * 20000)
    except MachineFault as exc:
        print(exc.render())
    """
)


def test_a_derived_file_too_big_for_the_disk_is_refused_and_the_old_one_kept(
    tmp_path: Path,
) -> None:
    folder, keep = tmp_path / "results", tmp_path / "kept"
    res = in_tmpfs(3 * PAGE, folder, keep, [sys.executable, "-c", WRITE_PLAN, str(folder)])
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(
        f"error: the disk is full: cannot write {folder / 'plan.json'} (needs 20,000 bytes, "
    )
    assert sorted(p.name for p in keep.iterdir()) == ["plan.json"], "no temp file left"
    assert (keep / "plan.json").read_text() == "old\n"


def test_the_cli_says_one_line_and_exits_3_when_plan_json_does_not_fit(tmp_path: Path) -> None:
    folder, keep = tmp_path / "results", tmp_path / "kept"
    argv = [sys.executable, "-m", "harness", "run", "--results", str(folder), "--driver", "none"]
    argv += ["--backend", "local"]  # the whole profile: a plan.json of many pages
    res = in_tmpfs(PAGE, folder, keep, argv, cwd=ROOT)
    assert res.returncode == 3, res.stderr[-3000:]
    assert "Traceback" not in res.stderr
    error, help = res.stderr.strip().splitlines()[-2:]
    assert error.startswith(f"error: the disk is full: cannot write {folder / 'plan.json'}")
    assert help.startswith("help: free space there")
    assert list(keep.iterdir()) == [], "no half-written plan.json, no temp file"


def test_a_torn_tail_is_cut_off_by_the_next_append(tmp_path: Path) -> None:
    append(tmp_path, {"schema": 1, "cell": "a", "key": "k", "status": "passed"})
    with (tmp_path / JOURNAL).open("ab") as f:
        f.write(b'{"schema": 1, "cell": "b", "ke')  # killed mid-line
    append(tmp_path, {"schema": 1, "cell": "c", "key": "k", "status": "failed"})
    lines = (tmp_path / JOURNAL).read_bytes().splitlines(keepends=True)
    assert [json.loads(ln)["cell"] for ln in lines] == ["a", "c"]
    assert [r["cell"] for r in records(tmp_path)] == ["a", "c"]
