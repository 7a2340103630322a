"""`--json-schema SCHEMA` (a file, or inline JSON as the Agent SDKs pass it): the schema a structured answer must
satisfy, checked before anything starts (a bad one is exit 2), and the check the loop runs on every answer.

The only importer of jsonschema (and its `referencing`), imported when a schema is given: other runs never pay it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sprout_agent.config.sources import inline_json
from sprout_agent.core.errors import UsageError
from sprout_agent.core.structured import OutputContract

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

FLAG = "--json-schema"
MAX_SCHEMA_BYTES = 1_000_000  # a schema, not a data set: /dev/zero or a log file given by mistake stops here
MAX_PROBLEMS = 5  # told to the model per invalid answer: enough to fix it, not a flood
MAX_PROBLEM_CHARS = 300  # a message quotes the value it rejects, which may be long


def load_output_schema(value: str, cwd: Path) -> OutputContract:
    """The contract for `--json-schema VALUE`; UsageError (exit 2) for anything that cannot be one."""
    text = value if inline_json(value) else _read(value, cwd)
    try:
        schema: object = json.loads(text)
    except ValueError as error:
        raise UsageError(f"{FLAG}: not JSON: {error}") from None
    except RecursionError:
        raise UsageError(f"{FLAG}: not JSON: nested too deeply") from None
    if not isinstance(schema, dict):
        raise UsageError(f"{FLAG}: the schema must be a JSON object")
    checked = cast(dict[str, Any], schema)
    if checked.get("type") != "object":
        raise UsageError(
            f'{FLAG}: the schema\'s root must have "type": "object" (the answer is given as a tool call\'s input, '
            "which is an object, as in Claude Code)"
        )
    return OutputContract(checked, partial(_problems, _validator(checked)))


def _read(value: str, cwd: Path) -> str:
    path = cwd / Path(value).expanduser()
    try:
        with path.open("rb") as file:
            data = file.read(MAX_SCHEMA_BYTES + 1)
    except OSError as error:
        raise UsageError(f"{FLAG} {value}: cannot read it: {error.strerror or error}") from None
    if len(data) > MAX_SCHEMA_BYTES:
        raise UsageError(f"{FLAG} {value}: over {MAX_SCHEMA_BYTES} bytes; not a schema")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{FLAG} {value}: not UTF-8 text") from None


def _validator(schema: dict[str, Any]) -> Validator:
    """A validator for the schema's own draft (2020-12 when it names none), after checking the schema itself."""
    from jsonschema import exceptions, validators

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as error:
        raise UsageError(f"{FLAG}: not a valid JSON Schema: {_where(error.absolute_path)}: {error.message}") from None
    except RecursionError:
        raise UsageError(f"{FLAG}: not a valid JSON Schema: nested too deeply") from None
    _check_references(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _check_references(schema: dict[str, Any]) -> None:
    """Every `$ref` points inside the schema: nothing is fetched (the API refuses external references too), and one
    that points nowhere would fail every answer."""
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    root: Resource[Any] = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry()
    resolver = registry.resolver_with_root(root)
    for ref in _references(schema):
        if not ref.startswith("#"):
            raise UsageError(f"{FLAG}: $ref {ref!r}: only references inside the schema (#/…) are supported")
        try:
            resolver.lookup(ref)
        except Unresolvable:
            raise UsageError(f"{FLAG}: $ref {ref!r} points to nothing in the schema") from None


def _references(node: object) -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in cast(dict[str, object], node).items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _references(value)
    elif isinstance(node, list):
        for item in cast(list[object], node):
            yield from _references(item)


def _problems(validator: Validator, value: Mapping[str, object]) -> list[str]:
    """What is wrong with `value`, one line per problem (at most MAX_PROBLEMS), for the model to fix."""
    from jsonschema import exceptions

    try:
        errors = list(validator.iter_errors(cast(Any, value)))
    except (exceptions.FormatError, RecursionError) as error:
        return [f"the value could not be checked: {error}"]
    lines = [f"{_where(error.absolute_path)}: {error.message}" for error in errors[:MAX_PROBLEMS]]
    if len(errors) > MAX_PROBLEMS:
        lines.append(f"and {len(errors) - MAX_PROBLEMS} more")
    return [line if len(line) <= MAX_PROBLEM_CHARS else line[: MAX_PROBLEM_CHARS - 1] + "…" for line in lines]


def _where(path: Iterable[object]) -> str:
    """A JSON pointer to the place (`root` for the whole value), as Claude Code words it."""
    parts = [str(part).replace("~", "~0").replace("/", "~1") for part in path]
    return "/" + "/".join(parts) if parts else "root"
