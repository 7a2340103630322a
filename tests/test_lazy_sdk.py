"""The anthropic SDK's packages load lazily (model/lazy_sdk.py): a re-exporting package is bound without running its
`__init__.py`, the top level runs all but the re-exports nothing else in it reads, each name comes from its submodule
on first use, and what a package gives is what it gave eagerly. The rules on packages made here; the installed SDK's
top level read as it is; one process pair shows it on the real SDK."""

from __future__ import annotations

import importlib
import importlib.util
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sprout_agent.model import lazy_sdk
from sprout_agent.model.lazy_sdk import LazyPackages, exports, split
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


# A top level laid out as the SDK's: its own statements (a call, `__all__`, `__module__` set through locals()) among
# re-exports; some read by them, some not; a star import of a package that re-exports, one of a package that runs code.
TOP = """\
\"\"\"The top level.\"\"\"

import typing as _t

from ._core import Client, _setup
from .lib.heavy import Heavy as Heavy
from .lib.tools import tool
from .lib.provider import *
from .lib.stream import *
from .lib.late import Shadowed as Shadowed

__all__ = ["Client", "tool"]

if not _t.TYPE_CHECKING:
    _setup()

__locals = locals()
for __name in __all__:
    __locals[__name].__module__ = "lazytop"
"""


@pytest.fixture
def top(sdk: Path) -> Iterator[Path]:
    """Package `lazytop` with TOP as its `__init__.py`, each module but the re-exporting ones logging its import."""
    root = sdk.parent / "lazytop"
    (root / "lib" / "provider").mkdir(parents=True)
    (root / "lib" / "stream").mkdir()
    files = {
        "__init__.py": TOP,
        "_core.py": "class Client: pass\ndef _setup(): lazysdk_log.append('setup')\n",
        "lib/__init__.py": "",
        "lib/heavy.py": "class Heavy: pass\n",
        "lib/tools.py": "def tool(): pass\n",
        "lib/provider/__init__.py": "from ._client import Provider as Provider\n",
        "lib/provider/_client.py": "class Provider: pass\n",
        "lib/stream/__init__.py": "Shadowed = 'the star import'\nStreamed = 1\n",
        "lib/late.py": "Shadowed = 'the later re-export'\n",
    }
    for name, body in files.items():
        log_it = f"import lazysdk_log\nlazysdk_log.append({name.removesuffix('.py').removesuffix('/__init__')!r})\n"
        logs = not name.endswith("__init__.py") or name == "lib/stream/__init__.py"  # a re-export-only one is kept so
        (root / name).write_text(log_it + body if logs else body)
    finder = LazyPackages("lazytop")
    sys.meta_path.insert(0, finder)
    yield root
    sys.meta_path.remove(finder)
    for name in [name for name in sys.modules if name.split(".")[0] == "lazytop"]:
        del sys.modules[name]


def test_the_top_level_runs_its_own_statements_and_leaves_unread_reexports_for_first_use(top: Path) -> None:
    lazytop: Any = importlib.import_module("lazytop")

    assert log() == ["_core", "lib/tools", "lib/stream", "setup"]
    assert lazytop.Heavy is sys.modules["lazytop.lib.heavy"].Heavy
    assert lazytop.Provider is sys.modules["lazytop.lib.provider._client"].Provider
    assert log()[-2:] == ["lib/heavy", "lib/provider/_client"]
    assert lazytop.__doc__ == "The top level." and lazytop.Streamed == 1


def test_the_top_levels_names_are_what_its_statements_bind_run_in_order(top: Path) -> None:
    lazytop: Any = importlib.import_module("lazytop")

    assert lazytop.tool.__module__ == lazytop.Client.__module__ == "lazytop"  # through locals(): bound eagerly
    assert lazytop.Shadowed == "the later re-export"  # a star import ran first; the later statement wins
    assert lazytop.lib is sys.modules["lazytop.lib"]
    assert {"Heavy", "Provider", "Client", "lib"} <= set(dir(lazytop))
    namespace: dict[str, object] = {}
    exec("from lazytop import *", namespace)
    assert sorted(name for name in namespace if name != "__builtins__") == ["Client", "tool"]
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = lazytop.Nothing


BASE = "from .b import Y\n__all__ = ['X']\n"


@pytest.mark.parametrize(
    ("extra", "eager"),
    [
        ("from .a import X\nprint(X)\n", "read by a statement"),
        ("from .a import X\nX = 1\n", "bound again later"),
        ("from .a import X\ndef f():\n    return X\n", "read by a function"),
        ("from .a import X\nv = vars()\n", "listed in __all__, which code reads by string"),
        ("from .a import *\n", "star-imported from a module not a re-exporting package"),
        ("from .s import *\nfrom .a import X\nfrom .s import *\n", "between two star imports"),
    ],
)
def test_a_reexport_the_top_level_may_need_before_first_use_stays_eager(extra: str, eager: str, tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "__init__.py").write_text("Z = 1\n")  # runs code: its names are known only by running it
    found = split(BASE + extra, str(tmp_path / "__init__.py"))
    assert found is not None
    assert found.exported.names == {"Y": (".b", "Y")}, eager


@pytest.mark.parametrize(
    "source",
    [
        "from .b import Y\n__all__ = names()\n",
        "from .b import Y\n__all__ = ['Y']\n__all__.extend(more)\n",
        "from .b import Y\n",  # no __all__: `from package import *` would miss Y
        BASE + "def __getattr__(name): pass\n",
        "import os\nX = 1\n__all__ = ['X']\n",
    ],
)
def test_a_top_level_that_cannot_be_split_safely_runs_whole_as_it_always_did(source: str) -> None:
    assert split(source, "/nowhere/__init__.py") is None


def test_the_installed_sdks_top_level_leaves_its_provider_clients_for_first_use() -> None:
    """The SDK's own `__init__.py` read as a run reads it: a release that changes it so that the provider clients
    would load eagerly again (or that cannot be split at all) fails here, not silently in a slower start."""
    spec = importlib.util.find_spec("anthropic")
    assert spec is not None and spec.origin is not None
    found = split(Path(spec.origin).read_text(encoding="utf-8"), spec.origin)
    assert found is not None
    providers = {"Foundry", "Vertex", "Bedrock", "BedrockMantle", "AWS", "GoogleCloud"}
    clients = {f"{prefix}Anthropic{name}" for name in providers for prefix in ("", "Async")}
    assert clients <= found.exported.names.keys()
    assert "Anthropic" not in found.exported.names and "APIError" not in found.exported.names


# Every name the SDK's top level binds, as a JSON-able fingerprint, and a module beside the top level that holds the
# same object under the same name (where one does): run eagerly in one process, checked lazily in another.
FINGERPRINT = """
import importlib, sys, types
SIMPLE = (str, int, float, bool, type(None))
def fingerprint(value):
    if isinstance(value, types.ModuleType):
        return ["module", value.__name__]
    shown = repr(value) if isinstance(value, SIMPLE) else getattr(value, "__qualname__", None)
    return [type(value).__qualname__, getattr(value, "__module__", None), shown]
def home(name, value):
    found = (m for m, module in sorted(sys.modules.items()) if m.startswith("anthropic.") and module is not None
             and vars(module).get(name, home) is value)
    return next(found, None)
SKIP = {"__loader__", "__spec__", "__builtins__", "__getattr__", "__dir__"}
"""


@pytest.mark.e2e
@pytest.mark.slow  # ~2.5 s of CPU importing the SDK twice, under load several
def test_the_real_sdk_streams_a_reply_without_loading_its_unused_type_tree() -> None:
    """Two processes: the SDK imported as it always is, every name its top level binds described; then the client's
    streamed request against the fake API through the lazy packages, with every one of those names the same object
    as its home module's and described alike; most of the beta types and the provider clients never imported."""
    eager = FINGERPRINT + textwrap.dedent(
        """
        import json, anthropic
        names = {n: v for n, v in vars(anthropic).items() if n not in SKIP and not isinstance(v, dict)}
        print(json.dumps({n: [fingerprint(v), None if isinstance(v, (types.ModuleType, *SIMPLE)) else home(n, v)]
                          for n, v in names.items()}))
        """
    )
    lazy = FINGERPRINT + textwrap.dedent(
        """
        import json, anyio
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
        assert "anthropic.lib.foundry" not in sys.modules and "anthropic.lib.vertex._client" not in sys.modules
        loaded = [name for name in sys.modules if name.startswith("anthropic.types.beta.")]
        on_disk = list(Path(anthropic.__file__).parent.glob("types/beta/**/*.py"))
        for name, (expected, where) in json.loads(sys.stdin.read()).items():
            value = getattr(anthropic, name)
            assert fingerprint(value) == expected, (name, fingerprint(value), expected)
            assert where is None or value is getattr(importlib.import_module(where), name), (name, where)
        assert "anthropic.lib.foundry" in sys.modules  # chosen (its name used): imported as it always was
        assert isinstance(anthropic.types.Message.construct(), anthropic.BaseModel)
        print(len(loaded), len(on_disk))
        """
    )
    described = _python(eager, "")
    assert len(json.loads(described)) > 150  # 2.15: 184
    loaded, on_disk = map(int, _python(lazy, described).split()[-2:])
    # Eagerly the SDK imports all its beta type modules (2.15: 1,938 of 1,947); lazily ~30% (2.15: 565)
    assert loaded < 0.5 * on_disk


def _python(code: str, stdin: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], input=stdin, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_install_is_once_and_never_after_the_package_was_imported() -> None:
    before = list(sys.meta_path)
    lazy_sdk.install("json")  # imported long ago: left as it is
    assert sys.meta_path == before
