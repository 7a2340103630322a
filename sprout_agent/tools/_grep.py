"""The grep tool: ripgrep when it is on PATH, a pure-Python search otherwise, with identical output.

Both search the same files (git's view or a pruned walk, SKIP_DIRS excluded, hidden files included,
binary and >10 MiB files skipped), sorted by path, in ripgrep's `--no-heading` format.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Iterator

import anyio.to_thread

from sprout_agent.tools._listing import SKIP_DIRS, directory, glob_matcher, list_files
from sprout_agent.tools._server import Args, ToolError, ToolOutput
from sprout_agent.trust.env_flags import env_flag
from sprout_agent.trust.opening import Reader, Refused
from sprout_agent.trust.secrets import command_env
from sprout_agent.trust.workspace import Workspace

NO_RG_ENV = "SPROUT_DEV_NO_RG"
MODES = ("content", "files_with_matches", "count")
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_OUTPUT_LINES = 250
MAX_OUTPUT_CHARS = 30_000
MAX_LINE_CHARS = 500
MAX_CONTEXT = 20
TRUNCATED = "... [output truncated at {n} lines; narrow the search with path, glob or a tighter pattern]"


def _rg_command(pattern: str, mode: str, context: int, ignore_case: bool, glob: str | None) -> list[str]:
    # --no-config: a repository's RIPGREP_CONFIG_PATH must not add flags (--pre runs a program).
    cmd = ["rg", "--no-config", "--no-heading", "--with-filename", "--line-number", "--color", "never",
           "--sort", "path", "--hidden", "--no-messages", "--max-filesize", "10M"]  # fmt: skip
    if mode == "files_with_matches":
        cmd.append("--files-with-matches")
    elif mode == "count":
        cmd.append("--count")
    elif context:
        cmd += ["--context", str(context)]
    if ignore_case:
        cmd.append("--ignore-case")
    if glob:
        cmd += ["--glob", glob]
    for name in SKIP_DIRS:  # later globs win in ripgrep, so these exclusions beat the user's glob
        cmd += ["--glob", f"!{name}/"]
    return [*cmd, "--regexp", pattern, "--"]  # after `--`, a path named like a flag is still a path


def _rg_lines(cmd: list[str], cwd: str) -> Iterator[str]:
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=command_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        for raw in proc.stdout:
            yield os.fsdecode(raw).rstrip("\n")  # as file names are decoded; the server escapes what is not UTF-8
        error = proc.stderr.read().decode("utf-8", "replace").strip()
        if proc.wait() == 2 and error:
            raise ToolError(f"grep failed: {error}")
    finally:
        proc.kill()  # stops ripgrep early once the caller has enough lines
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def _groups(hits: list[int], context: int, count: int) -> Iterator[tuple[int, int]]:
    """Merged [start, end] line-index ranges around each hit, as ripgrep joins context."""
    start = end = -2
    for i in hits:
        lo, hi = max(0, i - context), min(count - 1, i + context)
        if lo <= end + 1:
            end = hi
            continue
        if end >= 0:
            yield start, end
        start, end = lo, hi
    if end >= 0:
        yield start, end


def _file_lines(reader: Reader, path: str) -> list[str] | None:
    """The file's lines, or None for what both engines skip: binary, huge, not a regular file, or reached through a
    link (ripgrep follows none either)."""
    try:
        with reader.open_file(path) as f:
            if os.fstat(f.fileno()).st_size > MAX_FILE_BYTES:
                return None
            data = f.read(MAX_FILE_BYTES + 1)
    except (OSError, Refused):
        return None
    if b"\0" in data or len(data) > MAX_FILE_BYTES:
        return None
    lines = os.fsdecode(data).split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _search_file(name: str, lines: list[str], regex: re.Pattern[str], mode: str, ctx: int) -> list[str]:
    hits = [i for i, line in enumerate(lines) if regex.search(line)]
    if not hits:
        return []
    if mode == "files_with_matches":
        return [name]
    if mode == "count":
        return [f"{name}:{len(hits)}"]
    hit_set = set(hits)
    out: list[str] = []
    for start, end in _groups(hits, ctx, len(lines)):
        if out and ctx:
            out.append("--")
        out += [f"{name}{':' if i in hit_set else '-'}{i + 1}{':' if i in hit_set else '-'}{lines[i]}"
                for i in range(start, end + 1)]  # fmt: skip
    return out


def _py_lines(reader: Reader, base: str, names: list[str], args: tuple[str, str, int, bool]) -> Iterator[str]:
    pattern, mode, context, ignore_case = args
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise ToolError(f"grep failed: invalid regular expression {pattern!r}: {exc}") from exc
    first = True
    for name in sorted(names, key=lambda n: n.split("/")):
        lines = _file_lines(reader, os.path.join(base, name))
        found = _search_file(name, lines, regex, mode, context) if lines is not None else []
        if found and context and mode == "content" and not first:
            yield "--"
        first = first and not found
        yield from found


def _finish(lines: Iterable[str], prefix: str) -> list[str]:
    """Prefix, clip and cap output lines the same way for both engines."""
    out: list[str] = []
    size = 0
    for line in lines:
        line = line.rstrip("\r")
        if line != "--":
            line = prefix + line
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + "... [line clipped]"
        if len(out) >= MAX_OUTPUT_LINES or size + len(line) > MAX_OUTPUT_CHARS:
            out.append(TRUNCATED.format(n=len(out)))
            break
        out.append(line)
        size += len(line) + 1
    return out


def ripgrep(ws: Workspace) -> str | None:
    """The rg to run (None: use the Python search)."""
    return None if env_flag(os.environ, NO_RG_ENV) else ws.program("rg")


def _target(ws: Workspace, path: str | None) -> tuple[str, list[str] | None]:
    """Directory to search from, and the single file name when path names a file."""
    real = ws.readable(path or ".")
    if os.path.isfile(real):
        return os.path.dirname(real), [os.path.basename(real)]
    return directory(ws, path), None


def _search(ws: Workspace, args: Args) -> list[str]:
    pattern: str = args["pattern"]
    mode: str = args.get("output_mode") or "files_with_matches"
    context: int = args.get("context") or 0
    ignore_case: bool = args.get("ignore_case") or False
    glob: str | None = args.get("glob")
    if mode not in MODES:
        raise ToolError(f"output_mode must be one of {', '.join(MODES)}")
    if not 0 <= context <= MAX_CONTEXT:
        raise ToolError(f"context must be between 0 and {MAX_CONTEXT}")
    base, single = _target(ws, args.get("path"))
    prefix = "" if base == ws.root else ws.display(base) + "/"
    if single and _file_lines(ws.reader(), os.path.join(base, single[0])) is None:
        return []  # a binary or huge file is skipped alike by both engines, even when named
    rg = ripgrep(ws)
    if rg is not None:
        cmd = [rg, *_rg_command(pattern, mode, context, ignore_case, None if single else glob)[1:]]
        end = cmd.index("--regexp")  # after the model's glob (later globs win in ripgrep), before the pattern
        for hidden in ws.hidden_below(base):
            cmd[end:end] = ["--glob", f"!/{hidden}", "--glob", f"!/{hidden}/**"]
        return _finish(_rg_lines(cmd + (single or []), base), prefix)
    names = single
    if names is None:
        names = list_files(ws, base)
        if glob:
            matcher = glob_matcher(glob)
            names = [n for n in names if matcher.match(n if "/" in glob else n.rsplit("/", 1)[-1])]
    return _finish(_py_lines(ws.reader(), base, names, (pattern, mode, context, ignore_case)), prefix)


def _grep(ws: Workspace, args: Args) -> ToolOutput:
    out = _search(ws, args)
    if not out:
        where = ws.display(ws.resolve(args.get("path") or "."))
        return f"No matches for {args['pattern']!r} in {where}"
    return "\n".join(out)


async def grep(ws: Workspace, args: Args) -> ToolOutput:
    return await anyio.to_thread.run_sync(_grep, ws, args, abandon_on_cancel=True)
