"""What the Messages API refuses in a strict tool (`"strict": true`, its structured outputs), for api_rules.py: its
own rules, written from Anthropic's structured-outputs page, independent of model/strict_schema.py (which builds
them). Stdlib only.

Supported: the basic types (a type list too), enum and const of primitives, anyOf, allOf (not with $ref), local
$ref into $defs/definitions (no recursion), default, description, title, required naming listed properties,
additionalProperties false (and required on every object), items, minItems 0 or 1, and ten string formats. At most
20 strict tools, 24 optional properties and 16 unions (anyOf, type lists) across a request's strict schemas.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

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
_SECTIONS = ("$defs", "definitions")


def strict_tools_problems(tools: object, capabilities: Json | None) -> list[str]:
    """The problems of a request's strict tools (`tools` as given: anything but a list holds none)."""
    listed = [(i, cast(Json, t)) for i, t in enumerate(_listed(tools)) if isinstance(t, dict)]
    strict = [(i, t) for i, t in listed if t.get("strict") is True]
    if not strict:
        return []
    problems: list[str] = []
    outputs = (capabilities or {}).get("structured_outputs")
    if capabilities is not None and not (isinstance(outputs, dict) and cast(Json, outputs).get("supported")):
        problems.append("tools: strict tool use (structured outputs) is not supported for this model")
    if len(strict) > MAX_STRICT_TOOLS:
        problems.append(f"tools: {len(strict)} strict tools, at most {MAX_STRICT_TOOLS} are allowed")
    walk = _Walk(problems)
    for index, tool in strict:
        schema = tool.get("input_schema")
        defs = {f"#/{section}/{name}": body for section, name, body in _definitions(schema)}
        walk.check(schema, f"tools.{index}.input_schema", defs, ())
    if walk.optional > MAX_OPTIONAL:
        problems.append(f"tools: {walk.optional} optional parameters in strict schemas, at most {MAX_OPTIONAL}")
    if walk.unions > MAX_UNIONS:
        problems.append(f"tools: {walk.unions} union-typed parameters in strict schemas, at most {MAX_UNIONS}")
    return problems


def _definitions(node: object) -> list[tuple[str, str, object]]:
    """(section, name, schema) of each definition a schema object holds."""
    if not isinstance(node, dict):
        return []
    found: list[tuple[str, str, object]] = []
    for section in _SECTIONS:
        defined = cast(Json, node).get(section)
        if isinstance(defined, dict):
            found += [(section, str(name), body) for name, body in cast(Json, defined).items()]
    return found


def _keys(value: object) -> list[str]:
    return [str(k) for k in cast(Json, value)] if isinstance(value, dict) else []


def _listed(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


@dataclass
class _Walk:
    problems: list[str]
    optional: int = 0
    unions: int = 0
    refs_seen: list[str] = field(default_factory=list[str])

    def check(self, node: object, where: str, defs: Json, refs: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            self.problems.append(f"{where}: a schema object is required")
            return
        schema = cast(Json, node)
        self.problems += [f"{where}: {key!r} is not supported in strict mode" for key in schema if key not in _ALLOWED]
        kinds = self._types(schema, where)
        if "object" in kinds or "properties" in schema:
            self._object(schema, where, defs, refs)
        self._values(schema, where)
        if "items" in schema:
            self.check(schema["items"], f"{where}.items", defs, refs)
        for key in ("anyOf", "allOf"):
            for position, sub in enumerate(_listed(schema.get(key))):
                if key == "allOf" and "$ref" in _keys(sub):
                    self.problems.append(f"{where}.allOf.{position}: allOf with $ref is not supported")
                self.check(sub, f"{where}.{key}.{position}", defs, refs)
        for section, name, sub in _definitions(schema):
            self.check(sub, f"{where}.{section}.{name}", defs, (*refs, f"#/{section}/{name}"))
        if "$ref" in schema:
            self._ref(schema["$ref"], where, defs, refs)

    def _types(self, schema: Json, where: str) -> list[object]:
        kinds = schema.get("type")
        kind_list: list[object] = (
            _listed(schema.get("type")) if isinstance(kinds, list) else [] if kinds is None else [kinds]
        )
        if any(k not in TYPES for k in kind_list):
            self.problems.append(f"{where}.type: {kinds!r} is not a supported type")
        self.unions += isinstance(kinds, list) + ("anyOf" in schema)
        return kind_list

    def _values(self, schema: Json, where: str) -> None:
        for key in ("enum", "const"):
            values = _listed(schema.get(key)) if key == "enum" else [schema[key]] if key in schema else []
            if any(isinstance(v, dict | list) for v in values):
                self.problems.append(f"{where}.{key}: only strings, numbers, booleans and null are supported")
        if schema.get("minItems", 0) not in (0, 1):
            self.problems.append(f"{where}.minItems: only 0 or 1 is supported")
        if "format" in schema and schema["format"] not in FORMATS:
            self.problems.append(f"{where}.format: {schema['format']!r} is not a supported format")

    def _object(self, schema: Json, where: str, defs: Json, refs: tuple[str, ...]) -> None:
        if schema.get("additionalProperties") is not False:
            self.problems.append(f"{where}: additionalProperties must be set to false for objects in strict mode")
        found = schema.get("properties")
        properties = cast(Json, found) if isinstance(found, dict) else {}
        required = [str(r) for r in _listed(schema.get("required"))]
        if not set(required) <= set(properties):
            self.problems.append(f"{where}.required: names a property that is not listed")
        self.optional += len([p for p in properties if p not in required])
        for name, sub in properties.items():
            self.check(sub, f"{where}.properties.{name}", defs, refs)

    def _ref(self, ref: object, where: str, defs: Json, refs: tuple[str, ...]) -> None:
        if not isinstance(ref, str) or ref not in defs:
            self.problems.append(f"{where}.$ref: {ref!r}: only references to the schema's own $defs are supported")
        elif ref in refs:
            self.problems.append(f"{where}.$ref: recursive schemas are not supported")
        else:  # followed only to find recursion: the definition itself was checked where it is defined
            scratch = _Walk([])
            scratch.check(defs[ref], f"{where}<{ref}>", defs, (*refs, ref))
            self.problems += [p for p in scratch.problems if "recursive" in p]
