#!/usr/bin/env python3
"""docs/cli.md from the parser itself (harness.args): `python tools/cli_reference.py` rewrites
it, `--check` exits 1 when it is stale (tests/unit/test_cli_reference.py does the same).

Rendered from the parser's actions, not from argparse's help text, so the page is the same on
every Python (argparse's own layout changes between versions)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
sys.path.insert(0, str(ROOT))

from harness.args import build_parser  # noqa: E402
from harness.cli import COMMANDS  # noqa: E402

HEAD = """# Command-line reference

Generated from the parser (`harness/args.py`) by `python tools/cli_reference.py`; a test fails
when this page and `stackmatrix --help` part ways. `harness` is the same command under its
older name, and `python -m harness` works too. Every command exits 2 on a bad input, with one
`file:line:col: error:` line and a `help:` line (`--traceback` shows the Python traceback).
"""


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub


def _name(action: argparse.Action) -> str:
    meta = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
    if action.choices is not None and action.metavar is None:
        meta = "{" + ",".join(str(c) for c in action.choices) + "}"
    if not action.option_strings:
        return f"`{meta}`" + (" (optional)" if action.nargs == "?" else "")
    flags = ", ".join(action.option_strings)
    return f"`{flags}`" if action.nargs == 0 else f"`{flags} {meta}`"


def _what(action: argparse.Action) -> str:
    text = (action.help or "").replace("|", "\\|")
    if action.default not in (None, False, [], argparse.SUPPRESS) and "default" not in text:
        text += f" (default: {action.default})"
    if action.nargs == 0 and action.option_strings and not text:
        text = "a flag"
    return " ".join(text.split())


def _options(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | what |", "|---|---|"]
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            continue
        rows.append(f"| {_name(action)} | {_what(action)} |")
    return rows


def render() -> str:
    parser = build_parser(COMMANDS)
    sub = _subparsers(parser)
    helps = {a.dest: a.help for a in sub._choices_actions}
    lines = [HEAD, "## stackmatrix", "", parser.description or "", "", *_options(parser), ""]
    lines += ["| command | what |", "|---|---|"]
    lines += [f"| [`{n}`](#stackmatrix-{n}) | {helps.get(n, '')} |" for n in sub.choices]
    for name, command in sub.choices.items():
        lines += ["", f"## stackmatrix {name}", "", helps.get(name) or "", ""]
        lines += _options(command)
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--check"]:
        if PAGE.read_text(encoding="utf-8") != text:
            print(f"{PAGE} is stale: run python tools/cli_reference.py", file=sys.stderr)
            return 1
        return 0
    PAGE.parent.mkdir(exist_ok=True)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
