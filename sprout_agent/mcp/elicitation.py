"""A server's question to the user (MCP elicitation): the form its schema asks for, the answer's checks, and
the unattended policies (decline, or accept the defaults when every required field has one, SEP-1034).

Stdlib only: the MCP side (callbacks.py) turns the request into a `FormQuestion` or `UrlQuestion`, a face
answers it with an `Answer`. A schema is the server's text: it is parsed defensively, never trusted.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, cast

Action = Literal["accept", "decline", "cancel"]
Kind = Literal["string", "number", "integer", "boolean", "enum", "multi"]
Value = str | int | float | bool | list[str]
POLICIES = ("decline", "accept-defaults")  # --elicitation / SPROUT_AGENT_ELICITATION
MAX_FIELDS = 50  # a form a person can read; a bigger schema is declined


@dataclass(frozen=True, slots=True)
class Field:
    """One top-level property of the requested schema (the spec allows only flat, primitive ones)."""

    name: str
    kind: Kind
    title: str = ""
    description: str = ""
    required: bool = False
    default: Value | None = None
    options: tuple[str, ...] = ()  # enum values (enum, multi)
    labels: tuple[str, ...] = ()  # their titles, when the schema gives them (oneOf const/title)
    minimum: float | None = None  # number/integer bounds, or string/array length bounds
    maximum: float | None = None


@dataclass(frozen=True, slots=True)
class Form:
    fields: tuple[Field, ...]


@dataclass(frozen=True, slots=True)
class FormQuestion:
    server: str
    message: str  # the server's text: untrusted
    form: Form


@dataclass(frozen=True, slots=True)
class UrlQuestion:
    server: str
    message: str  # untrusted
    url: str  # untrusted: shown escaped, opened only with the person's consent


Question = FormQuestion | UrlQuestion


@dataclass(frozen=True, slots=True)
class Answer:
    action: Action
    content: dict[str, Value] | None = None  # only with accept, in form mode
    why: str = ""  # for the event line: why we answered so (no one to ask, invalid schema, …)


# A face's way to answer: the REPL asks a person; headless and ACP use `unattended`.
Elicitor = Callable[[Question], Awaitable[Answer]]


class SchemaError(ValueError):
    """The requested schema is outside what the spec allows (nested, unknown types): we decline it."""


def parse_form(schema: Mapping[str, object]) -> Form:
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise SchemaError("its properties are not an object")
    props = cast(Mapping[str, object], properties)
    raw_required = schema.get("required", [])
    required = set(cast(list[object], raw_required)) if isinstance(raw_required, list) else set[object]()
    if len(props) > MAX_FIELDS:
        raise SchemaError(f"it asks for {len(props)} fields (at most {MAX_FIELDS})")
    fields: list[Field] = []
    for name, spec in props.items():
        if not isinstance(spec, Mapping):
            raise SchemaError(f"field {name!r} is not an object")
        fields.append(_field(str(name), cast(Mapping[str, object], spec), name in required))
    return Form(tuple(fields))


def _field(name: str, spec: Mapping[str, object], required: bool) -> Field:
    kind, options, labels = _kind(name, spec)
    low, high = _bounds(spec)
    made = Field(name, kind, _text(spec.get("title")), _text(spec.get("description")), required, None, options)
    made = replace(made, labels=labels, minimum=low, maximum=high)
    default = spec.get("default")
    if default is None:
        return made
    # A default that fails its own field's checks is dropped: accepting it would send an invalid answer.
    value = _checked(made, default)
    return made if is_bad(value) else replace(made, default=value)


def _kind(name: str, spec: Mapping[str, object]) -> tuple[Kind, tuple[str, ...], tuple[str, ...]]:
    kind = spec.get("type")
    if kind == "string":
        options, labels = _choices(spec)
        return ("enum", options, labels) if options else ("string", (), ())
    if kind == "array":
        items = spec.get("items")
        options, labels = _choices(cast(Mapping[str, object], items)) if isinstance(items, Mapping) else ((), ())
        if options:
            return "multi", options, labels
        raise SchemaError(f"field {name!r} is an array without enum items")
    if kind in ("number", "integer", "boolean"):
        return cast(Kind, kind), (), ()
    raise SchemaError(f"field {name!r} has type {kind!r}, not a primitive")


def _choices(spec: Mapping[str, object]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`enum` (with the legacy `enumNames`), or `oneOf`/`anyOf` of `{const, title}` (SEP-1330)."""
    enum = spec.get("enum")
    if isinstance(enum, list):
        values = tuple(str(v) for v in cast(list[object], enum))
        names = spec.get("enumNames")
        titles = tuple(str(n) for n in cast(list[object], names)) if isinstance(names, list) else ()
        return values, titles if len(titles) == len(values) else ()
    for key in ("oneOf", "anyOf"):
        listed = spec.get(key)
        if isinstance(listed, list):
            entries = [cast(Mapping[str, object], e) for e in cast(list[object], listed) if isinstance(e, Mapping)]
            consts = tuple(str(e.get("const")) for e in entries if "const" in e)
            titles = tuple(_text(e.get("title")) or str(e.get("const")) for e in entries if "const" in e)
            return consts, titles
    return (), ()


def _bounds(spec: Mapping[str, object]) -> tuple[float | None, float | None]:
    pairs = (("minimum", "maximum"), ("minLength", "maxLength"), ("minItems", "maxItems"))
    for low_key, high_key in pairs:
        low, high = spec.get(low_key), spec.get(high_key)
        if low is not None or high is not None:
            return _number(low), _number(high)
    return None, None


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


_BAD = "\0"  # the marker `_checked` puts before a reason: a value can never start with NUL from JSON checks


def _checked(f: Field, value: object) -> Value:
    """`value` if it fits the field, else `_BAD` + the reason (kept in one function: the form and the
    policies check with the same rules)."""
    match f.kind:
        case "boolean":
            return value if isinstance(value, bool) else _BAD + "must be true or false"
        case "integer":
            if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
                return _BAD + "must be a whole number"
            return _in_bounds(f, int(value), int(value))
        case "number":
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                return _BAD + "must be a number"
            return _in_bounds(f, value, value)
        case "enum":
            return value if isinstance(value, str) and value in f.options else _BAD + f"must be one of {_listed(f)}"
        case "multi":
            if not isinstance(value, list) or not all(v in f.options for v in cast(list[object], value)):
                return _BAD + f"must be a list of {_listed(f)}"
            chosen = [str(v) for v in cast(list[object], value)]
            return _in_bounds(f, chosen, len(chosen))
        case "string":
            return _in_bounds(f, value, len(value)) if isinstance(value, str) else _BAD + "must be text"


def _in_bounds(f: Field, value: Value, size: float) -> Value:
    if f.minimum is not None and size < f.minimum:
        return _BAD + f"must be at least {f.minimum:g}" + (" long" if f.kind == "string" else "")
    if f.maximum is not None and size > f.maximum:
        return _BAD + f"must be at most {f.maximum:g}" + (" long" if f.kind == "string" else "")
    return value


def _listed(f: Field) -> str:
    return ", ".join(f.options)


def problems(form: Form, content: Mapping[str, object]) -> list[str]:
    """What is wrong with an answer before it is sent: a missing required field, a wrong type or value."""
    found: list[str] = []
    for f in form.fields:
        if f.name not in content:
            if f.required:
                found.append(f"{f.name}: required")
            continue
        value = _checked(f, content[f.name])
        if isinstance(value, str) and value.startswith(_BAD):
            found.append(f"{f.name}: {value[1:]}")
    found += [f"{name}: not in the form" for name in content if name not in {f.name for f in form.fields}]
    return found


def parse_value(f: Field, text: str) -> Value | str:
    """A typed line of the form as the field's value; a string starting with NUL is the reason it is not."""
    text = text.strip()
    match f.kind:
        case "boolean":
            word = text.lower()
            return True if word in ("y", "yes", "true") else False if word in ("n", "no", "false") else _BAD + "y or n"
        case "integer" | "number":
            try:
                number: object = int(text) if f.kind == "integer" else float(text)
            except ValueError:
                return _BAD + ("must be a whole number" if f.kind == "integer" else "must be a number")
            return _checked(f, number)
        case "enum":
            return _checked(f, _option(f, text))
        case "multi":
            return _checked(f, [_option(f, part) for part in text.split(",") if part.strip()])
        case "string":
            return _checked(f, text)


def _option(f: Field, text: str) -> str:
    """An option by its value, its title, or its number in the list (1-based)."""
    text = text.strip()
    if text.isdigit() and 1 <= int(text) <= len(f.options):
        return f.options[int(text) - 1]
    if text in f.labels:
        return f.options[f.labels.index(text)]
    return text


def is_bad(value: Value | str) -> bool:
    return isinstance(value, str) and value.startswith(_BAD)


def defaults(form: Form) -> dict[str, Value] | None:
    """The answer made of the defaults; None when a required field has none (nobody can fill it in)."""
    if any(f.required and f.default is None for f in form.fields):
        return None
    return {f.name: f.default for f in form.fields if f.default is not None}


@dataclass
class Unattended:
    """Answers for a face with nobody to ask (headless, ACP): decline, or accept the defaults if complete."""

    policy: str = "decline"
    why: str = field(default="nobody to ask")

    async def __call__(self, question: Question) -> Answer:
        if isinstance(question, UrlQuestion):
            return Answer("decline", why=f"{self.why}: a URL is never opened unattended")
        if self.policy == "accept-defaults":
            content = defaults(question.form)
            if content is not None:
                return Answer("accept", content, why="--elicitation accept-defaults")
            return Answer("decline", why="--elicitation accept-defaults: a required field has no default")
        return Answer("decline", why=self.why)
