"""A tool's input schema in the subset the API's structured outputs accept (`strict: true`), or None when it has none.

The API constrains a strict tool's input to its schema as it decodes, but only for a subset of JSON Schema: every
object closed (`additionalProperties: false`), no recursion, no numeric, length or pattern bounds, `minItems` 0 or
1, a few string formats, at most 24 optional properties and 16 unions per request. A bound outside the subset is
left out here (the strict schema is looser, every valid value still fits, and it goes into the description so the
model reads it); what cannot be loosened (an open object, a tuple, recursion) means no strict schema: the tool is
then offered as written, and the loop's own validation (core/structured.py) is the only check. Stdlib only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

SUPPORTED_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
MAX_OPTIONAL = 24  # optional properties, across a request's strict schemas
MAX_UNIONS = 16  # `anyOf`s and type lists, across a request's strict schemas
_KEPT = frozenset({"type", "description", "title", "default", "$ref"})
# Bounds the subset lacks: leaving them out only loosens the schema (the loop validates them).
_LOOSENED = frozenset(
    {
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
        "pattern", "maxItems", "uniqueItems", "minProperties", "maxProperties", "not", "if", "then", "else",
        "dependentRequired", "dependentSchemas", "contentMediaType", "contentEncoding", "examples", "readOnly",
        "writeOnly", "deprecated", "$comment", "$schema", "$id",
    }
)  # fmt: skip


class _NotStrict(Exception):
    """Something in the schema the strict subset cannot express, even loosened."""


def strict_schema(schema: Mapping[str, object]) -> dict[str, Any] | None:
    """The strict form of a tool's input schema, or None when the subset cannot hold it."""
    try:
        _no_recursion(schema)
        converted = _node(schema)
    except (_NotStrict, RecursionError):
        return None
    optional, unions = _counts(converted)
    return converted if optional <= MAX_OPTIONAL and unions <= MAX_UNIONS else None


def _node(node: object) -> dict[str, Any]:  # noqa: C901 - one arm per keyword of the subset
    if not isinstance(node, dict):
        raise _NotStrict  # a boolean schema
    source = cast(dict[str, Any], node)
    out: dict[str, Any] = {}
    loosened: dict[str, Any] = {}
    for key, value in source.items():
        if key in _KEPT:
            out[key] = value
        elif key in _LOOSENED:
            loosened[key] = value
        elif key in ("properties", "$defs", "definitions"):
            out[key] = {name: _node(sub) for name, sub in _mapping(value).items()}
        elif key in ("anyOf", "oneOf", "allOf"):
            out["allOf" if key == "allOf" else "anyOf"] = [_node(sub) for sub in _list(value)]  # oneOf: looser
        elif key == "items":
            out[key] = _node(value)  # a list (a tuple's items) is not in the subset: _node refuses it
        elif key in ("enum", "const"):
            _primitive(value if key == "enum" else [value])
            out[key] = value
        elif key == "required":
            out[key] = value
        elif key == "minItems":
            (out if value in (0, 1) else loosened)[key] = value
        elif key == "format":
            (out if value in SUPPORTED_FORMATS else loosened)[key] = value
        elif key == "additionalProperties":
            if value is not False:
                raise _NotStrict  # an open object cannot be closed without refusing valid values
        else:
            raise _NotStrict  # patternProperties, prefixItems, $dynamicRef, …: nothing safe to do
    _close(out)
    if loosened:
        note = ", ".join(f"{key}: {json.dumps(value)}" for key, value in loosened.items())
        out["description"] = f"{out['description']}\n\n{{{note}}}" if "description" in out else f"{{{note}}}"
    return out


def _close(out: dict[str, Any]) -> None:
    """An object's schema lists its properties and accepts no other; `required` names only listed ones."""
    kind = out.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in out:
        out["additionalProperties"] = False
        out.setdefault("properties", {})
    required: object = out.get("required")
    listed: object = out.get("properties", {})
    if required is not None and not (
        isinstance(required, list)
        and isinstance(listed, dict)
        and set(cast(list[object], required)) <= set(cast(dict[object, object], listed))
    ):
        raise _NotStrict
    if "allOf" in out and any("$ref" in sub for sub in out["allOf"]):
        raise _NotStrict  # the API does not take `allOf` with references


def _primitive(values: object) -> None:
    if not isinstance(values, list) or not all(
        v is None or isinstance(v, str | int | float | bool) for v in cast(list[object], values)
    ):
        raise _NotStrict


def _mapping(value: object) -> dict[str, object]:
    if not isinstance(value, dict):
        raise _NotStrict
    return cast(dict[str, object], value)


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        raise _NotStrict
    return cast(list[object], value)


def _no_recursion(schema: Mapping[str, object]) -> None:
    """A definition that reaches itself through references is outside the subset; so is a reference outside
    the schema's own definitions."""
    definitions = {
        f"#/{section}/{name}": body
        for section in ("$defs", "definitions")
        for name, body in _mapping(schema.get(section, {})).items()
    }

    def visit(ref: str, path: tuple[str, ...]) -> None:
        if ref in path:
            raise _NotStrict
        if ref not in definitions:
            raise _NotStrict
        for inner in _refs(definitions[ref]):
            visit(inner, (*path, ref))

    for ref in _refs({k: v for k, v in schema.items() if k not in ("$defs", "definitions")}):
        visit(ref, ())


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        items = cast(dict[str, object], node).items()
        found = [v for k, v in items if k == "$ref" and isinstance(v, str)]
        return found + [ref for k, v in items if k != "$ref" for ref in _refs(v)]
    if isinstance(node, list):
        return [ref for item in cast(list[object], node) for ref in _refs(item)]
    return []


def _counts(node: object) -> tuple[int, int]:
    """(optional properties, unions) in a converted schema."""
    if isinstance(node, list):
        pairs = [_counts(item) for item in cast(list[object], node)]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    if not isinstance(node, dict):
        return 0, 0
    schema = cast(dict[str, object], node)
    properties = schema.get("properties")
    required = schema.get("required")
    optional = (
        len([n for n in cast(dict[str, object], properties) if n not in cast(list[object], required or [])])
        if isinstance(properties, dict)
        else 0
    )
    unions = int("anyOf" in schema) + int(isinstance(schema.get("type"), list))
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            inner = _counts(list(cast(dict[str, object], value).values()))
        elif key in ("items", "anyOf", "allOf"):
            inner = _counts(value)
        else:
            continue
        optional, unions = optional + inner[0], unions + inner[1]
    return optional, unions
