"""The anthropic SDK's packages load lazily (model/lazy_sdk.py): a re-exporting package is bound without running its
`__init__.py`, each name comes from its submodule on first use, and what the package gives is what it gave eagerly.
The rules on a package made here; one process shows it on the real SDK."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.model import lazy_sdk
from sprout_agent.model.lazy_sdk import LazyPackages, exports
from tests.harness import ROOT

GENERATED = '''\
"""A docstring."""

from __future__ import annotations

from .message import Message as Message
from .usage import (
    Usage as Usage,
    CacheUsage as CacheUsage,
)
from . import shared
from .beta.thing import Thing

__all__ = [
    "Message",
    "Usage",
]
'''


def test_a_generated_init_is_read_as_its_names_and_submodules() -> None:
    found = exports(GENERATED)
    assert found is not None
    assert found.names == {
        "Message": (".message", "Message"),
        "Usage": (".usage", "Usage"),
        "CacheUsage": (".usage", "CacheUsage"),
        "shared": (".", "shared"),
        "Thing": (".beta.thing", "Thing"),
    }
    assert found.submodules == {"message", "usage", "shared", "beta"}
    assert found.star == ["Message", "Usage"] and found.future


@pytest.mark.parametrize(
    "extra",
    [
        "_setup_logging()\n",
        "if TYPE_CHECKING:\n    from .x import Y\n",
        "from .x import Y  # a comment after code\n",
        "import os\n",
        "from .x import *\n",
        "__all__ = names()\n",
        "X = 1\n",
    ],
)
def test_an_init_that_does_anything_else_runs_as_it_always_did(extra: str) -> None:
    assert exports(GENERATED + extra) is None


def test_without_all_a_star_import_takes_every_public_name_the_file_bound() -> None:
    found = exports("from __future__ import annotations\nfrom .a import B as B, _C as _C\n")
    assert found is not None and found.star == ["B", "a", "annotations"]


@pytest.fixture
def sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package `lazysdk` laid out as the SDK's: `types/` re-exports its submodules, each of which logs its import."""
    root = tmp_path / "lazysdk"
    types = root / "types"
    (types / "beta").mkdir(parents=True)
    (root / "__init__.py").write_text("from . import types\n")
    (types / "__init__.py").write_text(GENERATED.replace("from . import shared\n", ""))
    for name, body in {
        "message": "class Message: pass\n",
        "usage": "class Usage: pass\nclass CacheUsage: pass\n",
        "shared": "",
        "unlisted": "",
    }.items():
        (types / f"{name}.py").write_text(f"import lazysdk_log\nlazysdk_log.append({name!r})\n{body}")
    (types / "beta" / "__init__.py").write_text("")
    (types / "beta" / "thing.py").write_text("import lazysdk_log\nlazysdk_log.append('thing')\nclass Thing: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    finder = LazyPackages("lazysdk")
    sys.meta_path.insert(0, finder)
    sys.modules["lazysdk_log"] = type(sys)("lazysdk_log")
    sys.modules["lazysdk_log"].append = (log := list[str]()).append  # pyright: ignore[reportAttributeAccessIssue]
    sys.modules["lazysdk_log"].log = log  # pyright: ignore[reportAttributeAccessIssue]
    try:
        yield root
    finally:
        sys.meta_path.remove(finder)
        for name in [name for name in sys.modules if name.split(".")[0] in ("lazysdk", "lazysdk_log")]:
            del sys.modules[name]


def log() -> list[str]:
    return sys.modules["lazysdk_log"].log  # pyright: ignore[reportAttributeAccessIssue, reportUnknownVariableType, reportUnknownMemberType]


def test_importing_the_sdk_runs_none_of_its_types_until_one_is_used(sdk: Path) -> None:
    lazysdk: Any = importlib.import_module("lazysdk")

    assert log() == []
    message = lazysdk.types.Message
    assert log() == ["message"]
    assert message is sys.modules["lazysdk.types.message"].Message
    assert lazysdk.types.Message is message  # bound once found
    assert log() == ["message"]


def test_a_name_imported_from_the_package_comes_from_its_submodule_alone(sdk: Path) -> None:
    namespace: dict[str, Any] = {}
    exec("from lazysdk.types import CacheUsage, Thing", namespace)
    assert log() == ["usage", "thing"]
    assert namespace["CacheUsage"].__module__ == "lazysdk.types.usage"
    assert namespace["Thing"].__module__ == "lazysdk.types.beta.thing"


def test_submodules_are_attributes_as_after_an_eager_import(sdk: Path) -> None:
    types: Any = importlib.import_module("lazysdk").types
    assert types.usage is sys.modules["lazysdk.types.usage"]
    assert types.unlisted is importlib.import_module("lazysdk.types.unlisted")
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = types.Nothing
    assert "Usage" in dir(types) and types.annotations.compiler_flag


def test_a_star_import_gives_the_names_all_lists(sdk: Path) -> None:
    namespace: dict[str, object] = {}
    exec("from lazysdk.types import *", namespace)
    assert sorted(name for name in namespace if name != "__builtins__") == ["Message", "Usage"]
    assert log() == ["message", "usage"]


@pytest.mark.e2e
@pytest.mark.slow  # ~1 s of CPU importing the SDK, under load several
def test_the_real_sdk_streams_a_reply_without_loading_its_unused_type_tree() -> None:
    """One process: the client's streamed request against the fake API, through the lazy packages; the names a
    lazy package gives are its submodules' own objects; most of the SDK's modules were never imported."""
    code = textwrap.dedent(
        """
        import sys, anyio
        from pathlib import Path
        from sprout_agent.model import lazy_sdk
        lazy_sdk.install()
        import anthropic
        from tests.fake_anthropic import FakeAnthropic, reply

        async def main(url):
            client = anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0)
            stream = await client.messages.create(
                model="claude-sonnet-4-5", max_tokens=9, messages=[{"role": "user", "content": "hi"}], stream=True
            )
            async with stream:
                return [event.type async for event in stream]

        with FakeAnthropic([reply("Hello.")]) as fake:
            events = anyio.run(main, fake.base_url)
        assert events[0] == "message_start" and events[-1] == "message_stop", events
        assert anthropic.types.Message is sys.modules["anthropic.types.message"].Message
        assert isinstance(anthropic.APIError("x", None, body=None), Exception)  # the top level ran as it always does
        loaded = [name for name in sys.modules if name.startswith("anthropic.types.beta.")]
        on_disk = list(Path(anthropic.__file__).parent.glob("types/beta/**/*.py"))
        print(len(loaded), len(on_disk))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # Eagerly the SDK imports all its beta type modules (2.15: 1,938 of 1,947); lazily ~80% (2.15: 1,547)
    loaded, on_disk = map(int, done.stdout.split()[-2:])
    assert loaded < 0.9 * on_disk


def test_install_is_once_and_never_after_the_package_was_imported() -> None:
    before = list(sys.meta_path)
    lazy_sdk.install("json")  # imported long ago: left as it is
    assert sys.meta_path == before
