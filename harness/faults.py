"""Fault primitives -> what a backend does at run time. Pure: no scenario needs its own image.

Paths in a scenario use placeholders resolved against the stack: {site} (the image's
site-packages), {venv}, {cuda_major}, {other_cuda_major}, {python}. File faults become shell
commands that a short root setup runs in the container's own writable layer (the image is
untouched) before the probe drops to the unprivileged user: a file is always removed and
recreated, never written in place.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from harness.errors import ConfigError
from harness.model import Fault, RunSpec, Stack, WheelFile

VENV = "/opt/stack"
FAULT_MOUNTS = "/faults"


def placeholders(stack: Stack) -> dict[str, str]:
    return {
        "venv": VENV,
        "site": f"{VENV}/lib/python{stack.python}/site-packages",
        "cuda_major": stack.cuda.split(".")[0],
        # the CUDA major whose wheels share folders with this one's (nvidia-*-cu12 vs -cu13)
        "other_cuda_major": "12" if stack.cuda.split(".")[0] == "13" else "13",
        "python": stack.python,
    }


def _expand(text: str, values: Mapping[str, str], fault: Fault) -> str:
    try:
        return text.format(**values)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(
            f"fault '{fault.primitive}': unknown placeholder {exc} in {text!r}",
            help=f"placeholders: {', '.join('{' + k + '}' for k in values)}",
        ) from None


def _arg(fault: Fault, name: str, values: Mapping[str, str]) -> str:
    args = dict(fault.args)
    if name not in args:
        raise ConfigError(f"fault '{fault.primitive}' needs '{name}'")
    return _expand(args[name], values, fault)


def run_spec(
    stack: Stack,
    image: str,
    argv: tuple[str, ...],
    faults: tuple[Fault, ...],
    *,
    gpu: bool,
    timeout: float = 600.0,
) -> RunSpec:
    values = placeholders(stack)
    setup: list[str] = []
    env: dict[str, str] = {}
    unset: list[str] = []
    files: list[WheelFile] = []
    memory: int | None = None
    for i, f in enumerate(faults):
        if f.primitive == "hide":
            setup.append(f"rm -rf -- {_arg(f, 'path', values)}")
        elif f.primitive == "truncate":
            path, size = _arg(f, "path", values), int(_arg(f, "bytes", values))
            q = shlex.quote(path)
            setup.append(f"head -c {size} {q} > {q}.cut && rm -f {q} && mv {q}.cut {q}")
        elif f.primitive in ("replace", "path_prepend", "preload"):
            source = WheelFile(
                pin=_arg(f, "wheel", values),
                member=_arg(f, "member", values),
                target=f"{FAULT_MOUNTS}/{i}",
            )
            files.append(source)
            if f.primitive == "replace":  # a file, or a folder for a member ending in '/'
                q = shlex.quote(_arg(f, "path", values).rstrip("/"))
                setup.append(f"rm -rf -- {q} && cp -R {source.target} {q}")
            elif f.primitive == "preload":
                env["LD_PRELOAD"] = source.target
            else:
                var = dict(f.args).get("var", "LD_LIBRARY_PATH")
                env[var] = source.target
        elif f.primitive == "env_set":
            env[_arg(f, "name", values)] = _arg(f, "value", values)
        elif f.primitive == "env_unset":
            unset.append(_arg(f, "name", values))
        elif f.primitive == "no_gpu":
            gpu = False
            env.update(CUDA_VISIBLE_DEVICES="", NVIDIA_VISIBLE_DEVICES="void")
        elif f.primitive == "memory_limit":
            memory = int(_arg(f, "bytes", values))
        else:
            raise ConfigError(
                f"fault primitive '{f.primitive}' is not applied at run time",
                help="pip-level conflicts need a thin image layer (not here yet)",
            )
    return RunSpec(
        image=image,
        argv=argv,
        setup=tuple(setup),
        env=tuple(sorted(env.items())),
        unset=tuple(unset),
        wheel_files=tuple(files),
        memory_limit=memory,
        gpu=gpu,
        timeout=timeout,
    )
