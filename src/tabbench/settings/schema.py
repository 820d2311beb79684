"""The configuration's validation, with short errors (:func:`check_config`).

A config that violates the schema (``workflow/schemas/config.schema.yaml``, with the settings
table's defaults and help and every registered model's trainer options added:
:func:`with_table`) is rejected
before any job, with one short paragraph per problem — the key, the reason and the allowed
values in words (:func:`describe`) — instead of Snakemake's error, which prints the whole config
dictionary after the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from tabbench.core.layout import PathLike
from tabbench.core.suggest import did_you_mean
from tabbench.settings.table import all_settings


class ConfigError(ValueError):
    """A configuration a person must fix; ``str()`` is the whole message to show."""


def load_schema(path: PathLike) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text())


def short(value: Any, width: int = 70) -> str:
    """A value in one line of at most ``width`` characters (for error messages)."""
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _number_range(s: Mapping[str, Any]) -> str:
    lo, hi = s.get("minimum"), s.get("maximum")
    xlo = s.get("exclusiveMinimum")
    if lo is not None and hi is not None:
        return f" from {lo} to {hi}"
    if lo is not None:
        return f" >= {lo}"
    if xlo is not None:
        return f" > {xlo}"
    if hi is not None:
        return f" <= {hi}"
    return ""


def describe(s: Mapping[str, Any]) -> str:
    """What a schema fragment allows, in words (``null or an integer from 1 to 100``)."""
    if "enum" in s:
        return "one of " + ", ".join(str(v) for v in s["enum"])
    if "const" in s:
        return str(s["const"])
    for alt in ("oneOf", "anyOf"):
        if alt in s:
            return " or ".join(describe(x) for x in s[alt])
    types = s.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    words = []
    for t in types:
        if t == "null":
            words.append("null")
        elif t in ("integer", "number"):
            words.append(("an integer" if t == "integer" else "a number") + _number_range(s))
        elif t == "string":
            words.append("a string")
        elif t == "boolean":
            words.append("true or false")
        elif t == "array":
            items = s.get("items")
            words.append("a list" + (f" of ({describe(items)})" if items else ""))
        elif t == "object":
            props = s.get("properties")
            extra = s.get("additionalProperties")
            if props:
                words.append("a mapping with keys " + ", ".join(props))
            elif isinstance(extra, Mapping):
                words.append(f"a mapping of names to ({describe(extra)})")
            else:
                words.append("a mapping")
    return " or ".join(words) or "see the schema"


def _problem(error: Any) -> tuple[str, str, str]:
    """(key, reason, allowed) of one jsonschema error."""
    path = [str(p) for p in error.absolute_path]
    key = ".".join(path) or "(top level)"
    s = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "additionalProperties":
        allowed_keys = list(s.get("properties", {}))
        unexpected = [k for k in error.instance if k not in allowed_keys]
        names = ", ".join(".".join([*path, str(k)]) for k in unexpected)
        where = f" under {key}" if path else ""
        if len(unexpected) == 1:
            hint = did_you_mean(str(unexpected[0]), allowed_keys) or " (a typo?)"
        else:
            close = [f"{k}{did_you_mean(str(k), allowed_keys)}" for k in unexpected
                     if did_you_mean(str(k), allowed_keys)]
            hint = " (typos?" + (": " + "; ".join(close) if close else "") + ")"
        return names, f"not a setting{where}{hint}", ", ".join(allowed_keys)
    if error.validator == "required":
        return key, error.message, "see config.yaml for every key, commented"
    reason = error.message
    if error.validator in ("oneOf", "anyOf") and error.context:
        # the alternative that got furthest (deepest path, not a mere type mismatch) says why
        best = max(error.context,
                   key=lambda e: (e.validator != "type", len(list(e.absolute_path))))
        reason = f"{short(error.instance)}: {best.message}"
    elif not reason.startswith(short(error.instance)[:10]):
        reason = f"{short(error.instance)}: {reason}"
    if error.validator == "enum" and isinstance(error.instance, str):
        reason += did_you_mean(error.instance, [str(v) for v in s.get("enum", [])])
    allowed = describe(s)
    if s.get("description"):
        allowed += f" ({s['description']})"
    return key, reason, allowed


def with_table(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with each key's default and help from the settings table
    (:func:`tabbench.settings.table.all_settings`) as its ``default`` and ``description``, and a
    property for every registered model's trainer option (``<model>_<option>``) it does not
    list: an installed model's options are settings like the built-ins', set in config.yaml or
    with ``--config``. Their values are checked by the option itself
    (:func:`tabbench.settings.presets.check_registered_names`), not by the schema."""
    out = dict(schema)
    props = {k: dict(v) for k, v in (out.get("properties") or {}).items()}
    for key, setting in all_settings().items():
        prop = props.setdefault(key, {})
        prop["default"] = setting.default
        prop["description"] = setting.help
    out["properties"] = props
    return out


def check_config(config: Mapping[str, Any], schema: Mapping[str, Any] | PathLike,
                 where: str = "config.yaml and the command line") -> None:
    """Raise :class:`ConfigError` (key, reason, allowed values; no config dump) if ``config``
    violates ``schema``."""
    if not isinstance(schema, Mapping):
        schema = load_schema(schema)
    schema = with_table(schema)
    errors = sorted(Draft202012Validator(schema).iter_errors(dict(config)),
                    key=lambda e: [str(p) for p in e.absolute_path])
    if not errors:
        return
    lines = [f"tabbench: invalid configuration ({where}):"]
    for error in errors[:5]:
        key, reason, allowed = _problem(error)
        label = "allowed keys" if error.validator == "additionalProperties" else "allowed"
        lines += [f"  {key}: {reason}", f"    {label}: {allowed}"]
    if len(errors) > 5:
        lines.append(f"  ... and {len(errors) - 5} more")
    raise ConfigError("\n".join(lines))
