"""Scenario faults -> typed fault operations for one stack. Pure: no scenario needs its own image.

A scenario writes a fault as a primitive with string arguments that may name placeholders from a
fixed table ({site}, {venv}, {cuda_major}, {other_cuda_major}, {python}); nothing else in braces
is read, and no attribute or index lookup happens (unlike `str.format`). `check` runs when a
scenario is read, `resolve` when a cell is planned: both raise ConfigError at the argument's
file:line:col, so `harness plan` refuses what a run could not apply safely:

* a path must be absolute once resolved, without '..', and made of ordinary path characters
  ('*' and '?' only where the operation takes a pattern: hide);
* a path must stay in the stack's install tree ({venv}); only `hide` may also reach the folders
  where a host's driver library is placed (the no-driver scenario hides libcuda there);
* an environment variable name is [A-Za-z_][A-Za-z0-9_]*; a size is a positive integer;
* another wheel's file is `name==version` and a relative member path.

Each backend then applies the operations itself (Docker: a setup script with every argument
quoted; local: file operations in Python); no text is parsed back.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Mapping

from harness.errors import ConfigError, choice_help
from harness.model import (
    Fault,
    FaultOp,
    Hide,
    MemoryLimit,
    NoGpu,
    Overwrite,
    Preload,
    PrependPath,
    Replace,
    SetEnv,
    Stack,
    Truncate,
    UnsetEnv,
    WheelMember,
)

VENV = "/opt/stack"  # the stack's install tree, in a container (the local backend maps it)
# Where a host driver's user-space libraries are placed in a container (nvidia-container-cli)
# or a host: only `hide` may act here, to take the driver away (scenario no-driver).
DRIVER_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/cuda/compat")
PLACEHOLDERS = ("venv", "site", "cuda_major", "other_cuda_major", "python")
# (argument names, with '?' for optional ones) of each primitive applied at run time
ARGS: dict[str, tuple[str, ...]] = {
    "hide": ("path",),
    "truncate": ("path", "bytes"),
    "replace": ("path", "wheel", "member"),
    "overwrite": ("path", "text"),
    "env_set": ("name", "value"),
    "env_unset": ("name",),
    "path_prepend": ("var?", "wheel", "member"),
    "preload": ("wheel", "member"),
    "no_gpu": (),
    "memory_limit": ("bytes",),
}
_TOKEN = re.compile(r"\{([^{}]*)\}")
_PATH = re.compile(r"[A-Za-z0-9._+@%=,/-]+")  # literal path characters
_PATTERN = re.compile(r"[A-Za-z0-9._+@%=,/*?-]+")  # ... and the two wildcards hide takes
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SIZE = re.compile(r"[1-9][0-9]{0,17}")
_PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[0-9][0-9A-Za-z.+!-]*")
_MEMBER = re.compile(r"[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*/?")
# What checking a scenario substitutes for placeholders: the shapes every stack's values have.
_SAMPLE = Stack(
    framework="torch", framework_version="0", cuda="12.4", cudnn="9.1", python="3.11", base="x"
)


def _climbs(part: str) -> bool:
    """A path component that is '..', or a pattern a shell matches with '..': the shell's
    wildcards match a leading '.' only when the pattern starts with one ('.*', '.?')."""
    return part.startswith(".") and fnmatch.fnmatchcase(".", part[1:])


def placeholders(stack: Stack) -> dict[str, str]:
    major = stack.cuda.split(".")[0]
    return {
        "venv": VENV,
        "site": site(stack.python),
        "cuda_major": major,
        # the CUDA major whose wheels share folders with this one's (nvidia-*-cu12 vs -cu13)
        "other_cuda_major": "12" if major == "13" else "13",
        "python": stack.python,
    }


def site(python: str) -> str:
    return f"{VENV}/lib/python{python}/site-packages"


def check(fault: Fault) -> None:
    """A scenario's fault, checked once for every stack (the placeholders' values only vary in
    digits): an error at the argument's place in the scenario file."""
    resolve_one(fault, placeholders(_SAMPLE))


def resolve(faults: tuple[Fault, ...], stack: Stack) -> tuple[FaultOp, ...]:
    values = placeholders(stack)
    return tuple(resolve_one(f, values) for f in faults)


def resolve_one(fault: Fault, values: Mapping[str, str]) -> FaultOp:
    p = fault.primitive
    arg = _Args(fault, values)
    if p == "hide":
        return Hide(path=arg.path("path", pattern=True, driver_dirs=True))
    if p == "truncate":
        return Truncate(path=arg.path("path"), size=arg.size("bytes"))
    if p == "replace":
        return Replace(path=arg.path("path"), source=arg.wheel())
    if p == "overwrite":
        return Overwrite(path=arg.path("path"), text=arg.text("text"))
    if p == "env_set":
        return SetEnv(name=arg.env_name("name"), value=arg.text("value"))
    if p == "env_unset":
        return UnsetEnv(name=arg.env_name("name"))
    if p == "path_prepend":
        var = arg.env_name("var") if "var" in arg.raw else "LD_LIBRARY_PATH"
        return PrependPath(var=var, dir=arg.wheel())
    if p == "preload":
        return Preload(lib=arg.wheel())
    if p == "no_gpu":
        return NoGpu()
    if p == "memory_limit":
        return MemoryLimit(size=arg.size("bytes"))
    raise ConfigError(
        f"fault primitive '{p}' cannot be applied when a cell runs",
        where=fault.where,
        help="a pip-level conflict needs a thin image layer, which is not built yet; "
        f"run-time primitives: {', '.join(ARGS)}",
    )


class _Args:
    """A fault's arguments, each resolved and checked on the way out."""

    def __init__(self, fault: Fault, values: Mapping[str, str]):
        self.fault, self.values, self.raw = fault, values, dict(fault.args)
        spec = ARGS.get(fault.primitive, ())
        names = {n.rstrip("?") for n in spec}
        for name in self.raw:
            if name not in names:
                self.fail(
                    name,
                    f"'{fault.primitive}' takes no argument '{name}'",
                    choice_help(name, names, "arguments") if names else "remove `args`",
                )
        for name in (n for n in spec if not n.endswith("?")):
            if name not in self.raw:
                self.fail(
                    None,
                    f"'{fault.primitive}' needs the argument '{name}'",
                    f"write `args: {{{', '.join(sorted(names))}}}`",
                )

    def fail(self, name: str | None, message: str, help: str) -> None:
        where = self.fault.where_of(name) if name else self.fault.where
        raise ConfigError(f"fault '{self.fault.primitive}': {message}", where=where, help=help)

    def text(self, name: str) -> str:
        raw = self.raw[name]

        def value(m: re.Match[str]) -> str:
            if m.group(1) not in self.values:
                self.fail(
                    name,
                    f"unknown placeholder {m.group(0)} in {raw!r}",
                    choice_help(m.group(1), PLACEHOLDERS, "placeholders"),
                )
            return self.values[m.group(1)]

        out = _TOKEN.sub(value, raw)
        if "{" in _TOKEN.sub("", raw) or "}" in _TOKEN.sub("", raw) or "\0" in out:
            self.fail(
                name,
                f"stray brace or NUL in {raw!r}",
                f"placeholders are {', '.join('{' + p + '}' for p in PLACEHOLDERS)}",
            )
        return out

    def path(self, name: str, *, pattern: bool = False, driver_dirs: bool = False) -> str:
        raw, text = self.raw[name], self.text(name)
        chars = _PATTERN if pattern else _PATH
        if not text.startswith("/") or not chars.fullmatch(text):
            allowed = "letters, digits and . _ + @ % = , / -" + (" * ?" if pattern else "")
            shown = repr(raw) + (f" (resolved: {text!r})" if text != raw else "")
            self.fail(
                name,
                f"{shown} is not an absolute path of plain characters",
                f"write an absolute path ({{site}}/..., {{venv}}/...) using {allowed}",
            )
        if any(_climbs(part) for part in text.split("/")):
            self.fail(
                name,
                f"{raw!r} climbs out of its folder with '..' (or a pattern the shell matches "
                "with '..', such as '.*')",
                "name the path inside the stack directly, without '..'",
            )
        norm = posixpath.normpath(text)
        roots = (VENV, *(DRIVER_DIRS if driver_dirs else ()))
        if not any(norm.startswith(f"{r}/") for r in roots):
            where = "the stack's install tree {venv}" + (
                f" or a driver folder ({', '.join(DRIVER_DIRS)})" if driver_dirs else ""
            )
            self.fail(
                name,
                f"{raw!r} is outside {where}",
                "faults change the stack under test, never the machine; use {site}/... "
                "or {venv}/...",
            )
        return norm

    def size(self, name: str) -> int:
        text = self.text(name).strip()
        if not _SIZE.fullmatch(text):
            self.fail(
                name,
                f"'{self.raw[name]}' is not a positive whole number of bytes",
                'write the size in bytes, e.g. bytes: "1000000"',
            )
        return int(text)

    def env_name(self, name: str) -> str:
        text = self.text(name)
        if not ENV_NAME.fullmatch(text):
            self.fail(
                name,
                f"{self.raw[name]!r} is not an environment variable name",
                "a name is letters, digits and '_', not starting with a digit; set its "
                "value with `value:`",
            )
        return text

    def wheel(self) -> WheelMember:
        pin, member = self.text("wheel"), self.text("member")
        if not _PIN.fullmatch(pin):
            self.fail(
                "wheel",
                f"{self.raw['wheel']!r} is not name==version",
                'pin one wheel, e.g. wheel: "nvidia-cudnn-cu{cuda_major}==9.13.0.50"',
            )
        if not _MEMBER.fullmatch(member) or ".." in member.split("/"):
            self.fail(
                "member",
                f"{self.raw['member']!r} is not a path inside the wheel",
                "a relative path such as nvidia/cudnn/lib/ (a folder ends with '/')",
            )
        return WheelMember(pin=pin, member=member)
