"""Run a command, pass its output through as it comes, and print a line of our own whenever it
has printed nothing for 8 s, so that a CI service that kills a silent job (and a person
watching) sees it is alive. Standard library only: nox runs it before the harness is installed.

    python ci/quiet_guard.py [--every SECONDS] "installing" -- python -m pip install -e .

The command's exit status is this script's; Ctrl-C and SIGTERM reach the command, which ends.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time

SILENCE = 8.0  # seconds: the harness's own progress lines use the same quiet spell


def main(argv: list[str]) -> int:
    every = SILENCE
    if argv[:1] == ["--every"] and len(argv) > 1:
        try:
            every = float(argv[1])
        except ValueError:
            every = -1.0
        argv = argv[2:]
    if len(argv) < 3 or argv[1] != "--" or not every > 0:
        sys.stderr.write('usage: quiet_guard.py [--every SECONDS] "WHAT" -- COMMAND [ARG...]\n')
        return 2
    what, command = argv[0], argv[2:]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    started = last = time.monotonic()
    lock = threading.Lock()
    assert proc.stdout is not None
    out = sys.stdout.buffer

    def pump() -> None:
        nonlocal last
        assert proc.stdout is not None
        for line in iter(proc.stdout.readline, b""):
            with lock:
                out.write(line)
                out.flush()
                last = time.monotonic()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    while proc.poll() is None:
        time.sleep(min(0.5, every / 4))
        with lock:
            now = time.monotonic()
            if now - last >= every:
                out.write(f"{what}: {now - started:.0f} s\n".encode())
                out.flush()
                last = now
    reader.join(timeout=5)
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
