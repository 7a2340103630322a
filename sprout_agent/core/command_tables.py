"""What a `Bash(prog:*)` rule covers for find, rg, make, npm, pip and `python -m` (git: command_table_git.py), and
which table a command's program takes (`program_for`). A program not here is matched on its words alone.

`npm:*`, `pip:*` and `python:*` cover only what inspects; what runs the project's or a package's code (`npm run`,
`npm test`, `npm install`, `pip install`, `python -m pytest`) is covered only by a rule that names it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from sprout_agent.core.command_rules import ANY, NONE, Command, Program, opts
from sprout_agent.core.command_table_git import GIT

RUNS = "runs a program of its choosing"
ANYWHERE = "writes a file anywhere"

FIND = Program(
    "find",
    opts(),
    {},
    bare=Command(
        opts(
            "-H -L -P -maxdepth= -mindepth= -depth -d -mount -xdev -follow -noleaf -regextype= -daystart -warn -nowarn"
            " -ignore_readdir_race -noignore_readdir_race -name= -iname= -path= -ipath= -wholename= -iwholename="
            " -regex= -iregex= -lname= -ilname= -type= -xtype= -size= -empty -readable -writable -executable -perm="
            " -user= -group= -uid= -gid= -nouser -nogroup -links= -inum= -samefile= -newer= -anewer= -cnewer= -mtime="
            " -mmin= -atime= -amin= -ctime= -cmin= -used= -fstype= -true -false -a -and -o -or -not -print -print0"
            " -printf= -ls -prune -quit -help --help -version --version "
            + " ".join(f"-newer{x}{y}=" for x in "amcB" for y in "amcBt"),
            {
                "-exec -execdir -ok -okdir": "makes find run a program",
                "-delete": "makes find delete files",
                "-fprint= -fprint0= -fprintf= -fls=": "makes find write a file",
                "-D= -O? -files0-from=": "is not one of find's plain options",
            },
        ),
        "lists files; its expression tests and prints (no -exec, -ok, -delete, -fprint…)",
    ),
    clusters=False,
)
RG = Program(
    "rg",
    opts(),
    {},
    bare=Command(
        opts(
            "-i --ignore-case -s --case-sensitive -S --smart-case -w --word-regexp -x --line-regexp -v --invert-match"
            " -n --line-number -N --no-line-number -l --files-with-matches --files-without-match -c --count"
            " --count-matches -o --only-matching -F --fixed-strings -U --multiline --multiline-dotall -u"
            " --unrestricted -. --hidden --no-hidden -L --follow --no-ignore --no-ignore-vcs --no-ignore-dot"
            " --no-ignore-global --no-ignore-parent --no-ignore-exclude --no-ignore-files --no-require-git --json -H"
            " --with-filename -I --no-filename --heading --no-heading -p --pretty -q --quiet --files -0 --null"
            " --null-data --vimgrep --column --no-column -b --byte-offset --trim --stats --no-messages -P --pcre2"
            " --crlf -a --text --binary --passthru --one-file-system --type-list --no-config --debug --trace -h --help"
            " -V --version --line-buffered --block-buffered --no-unicode --include-zero --glob-case-insensitive"
            " --max-columns-preview -e= --regexp= -f= --file= -g= --glob= --iglob= -t= --type= -T= --type-not="
            " --type-add= --type-clear= -A= --after-context= -B= --before-context= -C= --context= -m= --max-count= -d="
            " --max-depth= --maxdepth= --max-filesize= -M= --max-columns= -j= --threads= --color= --colors= -r="
            " --replace= --sort= --sortr= -E= --encoding= --path-separator= --context-separator="
            " --field-match-separator= --field-context-separator= --engine= --dfa-size-limit= --regex-size-limit="
            " --ignore-file= --pre-glob=",
            {
                "--pre= --hostname-bin=": "makes rg run a program",
                "-z --search-zip": "makes rg run decompression programs",
            },
        ),
        "searches files; prints matches (no --pre, -z)",
    ),
)
MAKE = Program(
    "make",
    opts(),
    {},
    bare=Command(
        opts(
            "-B --always-make -d --debug? -i --ignore-errors -j? --jobs? -k --keep-going -S --no-keep-going --stop -l?"
            " --load-average? -n --just-print --dry-run --recon -O? --output-sync? -q --question -r"
            " --no-builtin-rules -R --no-builtin-variables -s --silent --quiet --no-silent -t --touch --trace -v"
            " --version -w --print-directory --no-print-directory -h --help -p --print-data-base -L"
            " --check-symlink-times --warn-undefined-variables",
            {
                "-f= --file= --makefile= -I= --include-dir=": "makes make read recipes from a file of its choosing",
                "-C= --directory=": "makes make run another directory's Makefile",
                "-E= --eval=": "makes make evaluate code of its choosing ($(shell …))",
                "-e --environment-overrides -o= --old-file= --assume-old= -W= --what-if= --new-file= --assume-new=": (
                    "changes what the Makefile's recipes are"
                ),
            },
        ),
        "runs the Makefile's recipes for the targets named (no VAR=value: that would set the programs they run)",
        args=r"[\w.@%+/-]+",
    ),
)

NPM_REFUSED = {
    "--script-shell= --node-options= -c= --call=": "makes npm run a program of its choosing",
    "--prefix= -C= -g --global --location=": "makes npm work on another directory",
    "--userconfig= --globalconfig= --registry=": "makes npm read another configuration or registry",
}
# npm takes a value as the next word only for some of its types (`--color always` but not `--color fix`): here a
# value is always glued (`--workspace=web`), so a word after an option is always read as npm reads it.
NPM_QUIET = "-s --silent -q --quiet --json --loglevel? --no-color --color? -w? --workspace? --workspaces"
NPM_TREE = f"{NPM_QUIET} -l --long -p --parseable -a --all --depth? --omit? --include? --package-lock-only"
NPM_RUN = f"{NPM_QUIET} --if-present --ignore-scripts --foreground-scripts --include-workspace-root"
NPM_INSTALL = (
    f"{NPM_QUIET} -D --save-dev -P --save-prod -O --save-optional -E --save-exact --save --no-save --ignore-scripts"
    " --no-audit --no-fund --legacy-peer-deps --strict-peer-deps --prefer-offline --offline --dry-run --omit?"
    " --include? --package-lock-only --no-package-lock -f --force --install-links --foreground-scripts"
)


def _npm(
    words: str, allowed: str, why: str, *, named_only: bool = False, args: str = ANY
) -> dict[tuple[str, ...], Command]:
    """One row under each of npm's names for it (`ls`, `list`, `la`, `ll`)."""
    row = Command(opts(allowed, NPM_REFUSED), why, named_only=named_only, args=args)
    return {tuple(name.split("+")): row for name in words.split()}


RUNS_SCRIPTS = "runs package.json's scripts (the project's code), as the rule names"
NPM = Program(
    "npm",
    opts(f"{NPM_QUIET} -v --version -h --help --no-update-notifier --offline --prefer-offline", NPM_REFUSED),
    {
        **_npm("ls list la ll outdated", NPM_TREE, "lists installed packages"),
        **_npm("view info show v explain why", NPM_QUIET, "shows a package's metadata or why it is installed"),
        **_npm("search s find", f"{NPM_QUIET} -l --long -p --parseable --searchlimit?", "searches the registry"),
        **_npm("audit", f"{NPM_TREE} --audit-level? --production", "reports vulnerabilities", args=NONE),
        **_npm("audit+signatures fund query prefix root", NPM_QUIET, "reports on the dependencies"),
        **_npm("run run-script rum urn test t tst start stop restart", NPM_RUN, RUNS_SCRIPTS, named_only=True),
        **_npm("install i add ci", NPM_INSTALL, "installs packages: their install scripts run", named_only=True),
    },
    clusters=False,
)

PIP_GENERAL = (
    "-q --quiet -v --verbose --no-color --no-input --disable-pip-version-check --isolated --no-cache-dir"
    " --require-virtualenv --exists-action= --timeout= --retries= --progress-bar= --root-user-action= -h --help"
)
PIP_REFUSED = {
    "--python=": "makes pip run another interpreter",
    "--log= --log-file= --cache-dir= -d= --dest= --report=": ANYWHERE,
    "-i= --index-url= --extra-index-url= -f= --find-links= --proxy= --trusted-host= --cert= --client-cert=": (
        "makes pip fetch from another index"
    ),
    "-t= --target= --prefix= --root= --user --src= --break-system-packages": "installs outside the environment",
    "-C= --config-settings= --global-option= --install-option= --build-option=": "passes options to build programs",
}
PIP_FETCH = (
    "-r= --requirement= -c= --constraint= --no-deps --pre --only-binary= --no-binary= --prefer-binary"
    " --require-hashes --no-build-isolation --use-pep517 --no-use-pep517 --ignore-requires-python"
)


def _pip(allowed: str, why: str, *, named_only: bool = False) -> Command:
    return Command(opts(f"{PIP_GENERAL} {allowed}", PIP_REFUSED), why, named_only=named_only)


INSPECTS = "reports on the environment"
PIP = Program(
    "pip",
    opts(f"{PIP_GENERAL} -V --version", PIP_REFUSED),
    {
        ("list",): _pip(
            "-o --outdated -u --uptodate -e --editable -l --local --user --path= --pre --format= --not-required"
            " --exclude-editable --include-editable --exclude=",
            INSPECTS,
        ),
        ("show",): _pip("-f --files", INSPECTS),
        ("freeze",): _pip("-l --local --user --path= --all --exclude-editable --exclude=", INSPECTS),
        ("check",): _pip("", INSPECTS),
        ("inspect",): _pip("--local --user --path=", INSPECTS),
        ("help",): _pip("", "prints pip's help"),
        ("index", "versions"): _pip("--pre", "lists a package's versions on the index"),
        **{("cache", action): _pip("--format=", "reports on pip's cache") for action in ("dir", "info", "list")},
        ("install",): _pip(
            f"{PIP_FETCH} -e= --editable= -U --upgrade --upgrade-strategy= --force-reinstall -I --ignore-installed"
            " --dry-run --no-index --no-warn-script-location --no-compile --compile --no-clean",
            "installs packages: a source package's build runs its code",
            named_only=True,
        ),
        ("uninstall",): _pip("-y --yes -r= --requirement=", "removes packages", named_only=True),
        ("download",): _pip(
            f"{PIP_FETCH} --platform= --python-version= --implementation= --abi=",
            "downloads packages into this directory: a source package's build runs its code",
            named_only=True,
        ),
    },
)

PYTEST = (
    "-q --quiet -v --verbose -x --exitfirst -s -l --showlocals -r= --tb= --lf --last-failed --ff --failed-first --nf"
    " --new-first --sw --stepwise --co --collect-only -k= -m= --maxfail= --durations= --durations-min= -n="
    " --numprocesses= --no-header --no-summary --disable-warnings -W= --pythonwarnings= --strict-markers --runxfail"
    " --deselect= --ignore= --ignore-glob= --capture= --timeout= --import-mode= --color= --doctest-modules"
)
PYTEST_REFUSED = {
    "--basetemp=": "makes pytest empty and write a directory anywhere",
    "--junitxml= --junit-xml= --result-log=": ANYWHERE,
    "-o= --override-ini= -c= --config-file= --rootdir= --confcutdir=": "makes pytest read another configuration",
    "-p=": "makes pytest load the module it names",
    "--pdb --trace --pdbcls=": "opens a debugger",
}
TESTS = "runs the project's tests (its code), as the rule names"
ISOLATED = frozenset({"-I", "-P"})
PYTHON = Program(
    "python",
    opts(
        "-B -b -E -I -O -P -q -s -S -u -W= -V --version -h --help",
        {"-c=": "runs the code it is given", "-m=": "runs the module it names", "-i -X=": RUNS},
    ),
    {
        # -m looks for the module in the working directory first: a pip.py there would run, unless -I or -P.
        ("-m", "pip"): Command(
            opts(), "pip's table (isolated: -I or -P, or a pip.py here would run)", then=PIP, after=ISOLATED
        ),
        ("-m", "pytest"): Command(opts(PYTEST, PYTEST_REFUSED), TESTS, named_only=True),
        ("-m", "unittest"): Command(
            opts("-v -q -f --failfast -c --catch -b --buffer -k= --locals --durations= -s= -t= -p="),
            TESTS,
            named_only=True,
        ),
    },
)
PROGRAMS: Mapping[str, Program] = {p.name: p for p in (GIT, FIND, RG, MAKE, NPM, PIP, PYTHON)} | {"gmake": MAKE}


def program_for(word: str) -> Program | None:
    """The table for a command's first word (`/usr/bin/git`, `python3.12`, `pip3`), None for a program not here."""
    name = os.path.basename(word)
    versioned = re.fullmatch(r"(python|pip)[0-9.]*", name)
    return PROGRAMS.get(versioned[1] if versioned else name)
