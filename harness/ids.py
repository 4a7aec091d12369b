r"""The shapes of ids, versions, drivers and counts: one place, ASCII only, whole-string matches.

`re.match(r"^...$")` lets `"535.104.05\n"` through (`$` matches before a final newline) and `\d`
takes any Unicode digit (Arabic-Indic `٥٣٥` too), so every rule here is a `fullmatch` over
explicit ASCII classes.
"""

from __future__ import annotations

import re

# 535.104.05 or 570.26 as nvidia-smi prints it, or a bare branch (580: the branch's oldest driver)
DRIVER = re.compile(r"[0-9]{3}(?:\.[0-9]{1,3}){0,2}")
VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+-]{0,127}")  # reaches Dockerfiles and shells
ID = re.compile(r"[a-z0-9][a-z0-9_.-]{0,127}")
COUNT = re.compile(r"[0-9]{1,9}")  # a count or an index typed by a person: below a billion


def is_driver(text: object) -> bool:
    """A Linux driver version such as 535.104.05 (ASCII digits), or a bare branch (580)."""
    return isinstance(text, str) and DRIVER.fullmatch(text) is not None


def is_version(text: object) -> bool:
    return isinstance(text, str) and VERSION.fullmatch(text) is not None


def is_id(text: object) -> bool:
    return isinstance(text, str) and ID.fullmatch(text) is not None


def count(text: str) -> int | None:
    """An ASCII decimal count below a billion, else None (never int('١٢'), never 10**30)."""
    return int(text) if COUNT.fullmatch(text) else None


# a size as --disk-budget and a profile's disk_budget take it: 40GB, 40G, 40GiB, 500MB, 123
SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?) *([KMGT]?)(i?)B?", re.IGNORECASE)
SIZE_HELP = "give a number of bytes, or one with a unit: 500MB, 40GB, 40GiB"


def size_bytes(text: str) -> int | None:
    """'40GB', '40G', '500MiB', '1000000' -> bytes (K, M, G, T: powers of 1000; with i: 1024);
    None: not a size."""
    m = SIZE.fullmatch(text.strip())
    if m is None:
        return None
    power = "KMGT".find(m.group(2).upper()) + 1 if m.group(2) else 0
    return int(float(m.group(1)) * (1024 if m.group(3) else 1000) ** power)
