"""Validate a parsed YAML document against a shipped JSON Schema; explain the first problem.

jsonschema's own messages name schema internals; users need the place in their file, what is
wrong there in their words, and how to fix it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError

from harness.errors import ConfigError, choice_help
from harness.loader import Doc, Path_

# What a key under a given parent is called in messages.
_KEY_NOUNS = {"": "top-level key", "axes": "axis", "select": "axis", "profiles": "profile"}

_VERSION_HELP = (
    "versions end up in Dockerfiles and shell commands, so only letters, digits and '.', '+', '-' "
    'are allowed; write e.g. "2.9.1"'
)


@cache
def load_schema(name: str) -> dict[str, Any]:
    text = resources.files("harness").joinpath("resources").joinpath(name).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def label(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "the file"


def _noun(path: Path_) -> str:
    parent = next((p for p in reversed(path) if isinstance(p, str)), "")
    return _KEY_NOUNS.get(parent, "key")


def _explain(err: ValidationError, doc: Doc) -> ConfigError:
    path: Path_ = tuple(err.absolute_path)
    where = doc.where(path)
    kind = err.validator
    value: Any = err.instance
    schema: Any = err.validator_value
    here: Any = err.schema
    if kind == "additionalProperties":
        known = list(here.get("properties", {}))
        extra = sorted(k for k in value if k not in known)[0]
        return ConfigError(
            f"unknown {_noun(path)} '{extra}' in {label(path)}",
            where=doc.where((*path, extra), key=True),
            help=choice_help(extra, known, "keys here"),
        )
    if "propertyNames" in err.schema_path:
        # jsonschema reports a bad key with the parent's path and the key as the instance.
        name = str(value)
        noun = "framework" if path and path[-1] == "framework" else _noun((*path, name))
        choices = schema if kind == "enum" else []
        return ConfigError(
            f"unknown {noun} '{name}' in {label(path)}",
            where=doc.where((*path, name), key=True),
            help=choice_help(name, choices, noun + "s")
            if choices
            else "names use lowercase letters, digits and '-', '_', '.'",
        )
    if kind == "required":
        missing = next(k for k in schema if k not in value)
        return ConfigError(
            f"missing key '{missing}' in {label(path)}",
            where=where,
            help=f"add '{missing}:' here (see matrix.yaml for an example)",
        )
    if kind == "type" and isinstance(value, int | float) and not isinstance(value, bool):
        written = doc.raw.get(path, str(value))
        return ConfigError(
            f"{label(path)} is the number {value!r}, not a version string",
            where=where,
            help=f'quote it: "{written}" (YAML reads unquoted {written} as a number)',
        )
    if kind == "type":
        return ConfigError(
            f"{label(path)} must be {_type_words(schema)}, not {_type_words(type(value).__name__)}",
            where=where,
            help="see matrix.yaml for an example",
        )
    if kind == "pattern":
        return ConfigError(
            f"'{value}' in {label(path)} is not a plain version or name",
            where=where,
            help=_VERSION_HELP,
        )
    if kind == "enum":
        return ConfigError(
            f"unknown value '{value}' in {label(path)}",
            where=where,
            help=choice_help(str(value), [str(v) for v in schema], "values"),
        )
    if kind == "const":
        return ConfigError(
            f"{label(path)} must be {schema!r}", where=where, help="this harness reads format 1"
        )
    if kind in ("minItems", "minProperties"):
        return ConfigError(
            f"{label(path)} must not be empty", where=where, help="list at least one value"
        )
    if kind == "uniqueItems":
        return ConfigError(
            f"{label(path)} repeats a value", where=where, help="list each value once"
        )
    return ConfigError(
        f"{label(path)}: {err.message}", where=where, help="see matrix.yaml for an example"
    )


def _type_words(t: Any) -> str:
    names = {
        "object": "a mapping",
        "dict": "a mapping",
        "array": "a list",
        "list": "a list",
        "string": "a string",
        "str": "a string",
        "boolean": "true or false",
        "bool": "a boolean",
        "NoneType": "empty",
        "integer": "an integer",
    }
    if isinstance(t, list):
        return " or ".join(names.get(str(x), str(x)) for x in t)
    return names.get(str(t), str(t))


def validate(doc: Doc, schema_name: str) -> None:
    """Raise ConfigError for the first (in file order) schema violation in `doc`."""
    validator = jsonschema.Draft202012Validator(load_schema(schema_name))
    errors = list(validator.iter_errors(doc.data))
    if not errors:
        return

    def place(e: ValidationError) -> tuple[int, int]:
        w = doc.where(tuple(e.absolute_path))
        return (w.line, w.col)

    first = min(errors, key=place)
    while first.validator in ("oneOf", "anyOf") and first.context:
        # The branch that got furthest into the value says what is wrong with it.
        deepest = max(len(e.absolute_path) for e in first.context)
        first = next(e for e in first.context if len(e.absolute_path) == deepest)
    raise _explain(first, doc)
