"""Text from results made safe for where it lands (DESIGN.md, habit 11). Pure.

* `clean`: every field of every output loses control characters (NUL, ESC, BEL, a bare CR that
  would split a CSV row; terminal colour sequences whole) and lone surrogates. Tab and newline
  stay; renderers that want one line fold them.
* `csv_field`: OWASP's rule against formula injection: a field starting with =, +, -, @, tab or
  CR gets a leading apostrophe, so a spreadsheet shows it as text
  (https://owasp.org/www-community/attacks/CSV_Injection).
* `https_url`: the one kind of URL that becomes a link in Markdown.
* `cell_id_ok` and `shell`: what may reach a shell code block, and how it is quoted there.
"""

from __future__ import annotations

import re
import shlex
from urllib.parse import urlsplit

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_BUT_NUL = re.compile("[\x01-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet reads as a formula
# A cell id: `<stack slug>/<scenario>`, both of letters, digits and . _ + - (no leading dot).
_CELL_ID = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._+-]*/[A-Za-z0-9][A-Za-z0-9._-]*(?:@[a-z0-9][a-z0-9.]*)?", re.ASCII
)
_URL_SAFE = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&'*+,;=%-]+")


def clean(text: str) -> str:
    """No control characters, no lone surrogates (they cannot be written as UTF-8)."""
    if text.isprintable():  # nothing _CONTROL or _ANSI (an ESC first) could match
        return text
    return _CONTROL.sub("", _ANSI.sub("", text))


def clean_each(texts: list[str]) -> list[str]:
    """clean of each text, in two regex passes over them all joined by NULs (100,000 decisive
    lines with colour sequences took four passes each): no sequence _ANSI matches holds a NUL,
    so none spans two texts. Texts that hold a NUL themselves are cleaned one by one."""
    joined = "\0".join(texts)
    if joined.count("\0") != len(texts) - 1:
        return list(map(clean, texts))
    return _CONTROL_BUT_NUL.sub("", _ANSI.sub("", joined)).split("\0") if texts else []


def one_line(text: str) -> str:
    return " ".join(clean(text).split()) if ("\n" in text or "\t" in text) else clean(text)


def csv_field(text: str) -> str:
    text = clean(text)
    return "'" + text if text.startswith(FORMULA) else text


def https_url(text: str) -> bool:
    """An absolute https URL with a host and no character that Markdown or HTML would read."""
    if not _URL_SAFE.fullmatch(text):
        return False
    parts = urlsplit(text)
    return parts.scheme == "https" and bool(parts.hostname)


def cell_id_ok(cell: str) -> bool:
    return bool(_CELL_ID.fullmatch(cell))


def shell(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)
