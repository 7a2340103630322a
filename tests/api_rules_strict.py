"""What the Messages API refuses in a strict tool (`"strict": true`, its structured outputs): its own rules, written
from Anthropic's structured-outputs page, independent of sprout_agent/model/strict_schema.py (which builds them).

Supported: the basic types (a type list too), enum and const of primitives, anyOf, allOf (not with $ref), local
$ref into $defs/definitions (no recursion), default, description, title, required naming listed properties,
additionalProperties false (and required on every object), items, minItems 0 or 1, and ten string formats. At most
20 strict tools, 24 optional properties and 16 unions (anyOf, type lists) across a request's strict schemas.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]

TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"})
MAX_STRICT_TOOLS = 20
MAX_OPTIONAL = 24
MAX_UNIONS = 16
_ALLOWED = frozenset(
    {
        "type", "description", "title", "default", "enum", "const", "anyOf", "allOf", "$ref", "$defs", "definitions",
        "properties", "required", "additionalProperties", "items", "minItems", "format",
    }
)  # fmt: skip


def strict_tools_problems(tools: list[Any], capabilities: Json | None) -> list[str]:
    strict = [(i, t) for i, t in enumerate(tools) if isinstance(t, dict) and t.get("strict") is True]
    if not strict:
        return []
    problems: list[str] = []
    if capabilities is not None and not capabilities.get("structured_outputs", {}).get("supported"):
        problems.append("tools: strict tool use (structured outputs) is not supported for this model")
    if len(strict) > MAX_STRICT_TOOLS:
        problems.append(f"tools: {len(strict)} strict tools, at most {MAX_STRICT_TOOLS} are allowed")
    counts = [0, 0]
    for index, tool in strict:
        schema = tool.get("input_schema")
        defs = {}
        if isinstance(schema, dict):
            for section in ("$defs", "definitions"):
                for name, body in (schema.get(section) or {}).items():
                    defs[f"#/{section}/{name}"] = body
        _check(schema, f"tools.{index}.input_schema", defs, problems, counts, ())
    if counts[0] > MAX_OPTIONAL:
        problems.append(f"tools: {counts[0]} optional parameters in strict schemas, at most {MAX_OPTIONAL}")
    if counts[1] > MAX_UNIONS:
        problems.append(f"tools: {counts[1]} union-typed parameters in strict schemas, at most {MAX_UNIONS}")
    return problems


def _check(node: object, where: str, defs: Json, problems: list[str], counts: list[int], refs: tuple[str, ...]) -> None:
    if not isinstance(node, dict):
        problems.append(f"{where}: a schema object is required")
        return
    for key in node:
        if key not in _ALLOWED:
            problems.append(f"{where}: {key!r} is not supported in strict mode")
    kinds = node.get("type")
    kind_list = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
    if any(k not in TYPES for k in kind_list):
        problems.append(f"{where}.type: {kinds!r} is not a supported type")
    counts[1] += isinstance(kinds, list) + ("anyOf" in node)
    for key in ("enum", "const"):
        values = node.get(key, []) if key == "enum" else [node[key]] if key in node else []
        if any(isinstance(v, dict | list) for v in values):
            problems.append(f"{where}.{key}: only strings, numbers, booleans and null are supported")
    if "object" in kind_list or "properties" in node:
        if node.get("additionalProperties") is not False:
            problems.append(f"{where}: additionalProperties must be set to false for objects in strict mode")
        properties = node.get("properties") or {}
        required = node.get("required") or []
        if not set(required) <= set(properties):
            problems.append(f"{where}.required: names a property that is not listed")
        counts[0] += len([p for p in properties if p not in required])
        for name, sub in properties.items():
            _check(sub, f"{where}.properties.{name}", defs, problems, counts, refs)
    if node.get("minItems", 0) not in (0, 1):
        problems.append(f"{where}.minItems: only 0 or 1 is supported")
    if "format" in node and node["format"] not in FORMATS:
        problems.append(f"{where}.format: {node['format']!r} is not a supported format")
    if "items" in node:
        _check(node["items"], f"{where}.items", defs, problems, counts, refs)
    for key in ("anyOf", "allOf"):
        for position, sub in enumerate(node.get(key) or []):
            if key == "allOf" and isinstance(sub, dict) and "$ref" in sub:
                problems.append(f"{where}.allOf.{position}: allOf with $ref is not supported")
            _check(sub, f"{where}.{key}.{position}", defs, problems, counts, refs)
    for section in ("$defs", "definitions"):
        for name, sub in (node.get(section) or {}).items():
            _check(sub, f"{where}.{section}.{name}", defs, problems, counts, (*refs, f"#/{section}/{name}"))
    ref = node.get("$ref")
    if ref is not None:
        if ref not in defs:
            problems.append(f"{where}.$ref: {ref!r}: only references to the schema's own $defs are supported")
        elif ref in refs:
            problems.append(f"{where}.$ref: recursive schemas are not supported")
        else:
            _walk_ref(defs[ref], ref, where, defs, problems, refs)


def _walk_ref(body: object, ref: str, where: str, defs: Json, problems: list[str], refs: tuple[str, ...]) -> None:
    """Follows a reference only to find recursion (the definition itself was checked where it is defined)."""
    scratch: list[str] = []
    _check(body, f"{where}<{ref}>", defs, scratch, [0, 0], (*refs, ref))
    problems += [p for p in scratch if "recursive" in p]
