"""What `Bash(git:*)` covers: git's subcommands and options that run no program of the command line's choosing, write
no config, act on no other repository and write no file outside the work tree (command_rules.py reads the table).

Left out on purpose, so asked for: every subcommand not here (aliases, `*--helper`, `hook`, `submodule foreach`,
`difftool`, `web--browse`, `help`, plumbing that writes objects or the index, `mv` unless a rule names it), options
that run a program (`--exec`, `-x` of rebase, `--textconv`, `--ext-diff`, `--filters`, `-s` merge strategies,
`-S`/`--sign` (gpg), `-e`/`--edit`), write a file anywhere (`--output`, `-o`) or config (`--track`, `-u`), and
`--recurse-submodules`.
"""

from __future__ import annotations

from sprout_agent.core.command_rules import ANY, NONE, Command, Options, Program, merge, opts

RUNS = "makes git run a program of its choosing"
ELSEWHERE = "makes git work on another repository or directory"

GLOBALS = opts(
    "--no-pager -P -p --paginate --no-replace-objects --no-lazy-fetch --no-optional-locks --no-advice"
    " --literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs --version --html-path --man-path"
    " --info-path --namespace=",
    {
        "-c= --config-env= --exec-path? --attr-source=": RUNS,
        "-C= --git-dir= --work-tree= --bare --super-prefix=": ELSEWHERE,
        "-h --help": "makes git run a manual viewer (man, a browser)",
    },
)
# The diff family's options (diff, log, show, stash show), git 2.39's `git diff -h`, less what runs a program or
# writes a file: --ext-diff, --textconv (on by default only where you set it up), --output, -O.
DIFF = opts(
    "-p --patch -s --no-patch -u -U? --unified? -W --function-context --raw --patch-with-raw --patch-with-stat"
    " --numstat --shortstat -X? --dirstat? --cumulative --dirstat-by-file? --check --summary --name-only"
    " --name-status --stat? --stat-width= --stat-name-width= --stat-graph-width= --stat-count= --compact-summary"
    " --binary --full-index --color? --no-color --ws-error-highlight= -z --abbrev? --src-prefix= --dst-prefix="
    " --line-prefix= --no-prefix --inter-hunk-context= --output-indicator-new= --output-indicator-old="
    " --output-indicator-context= -B? --break-rewrites? -M? --find-renames? -D --irreversible-delete -C?"
    " --find-copies? --find-copies-harder --no-renames --rename-empty --follow -l= --minimal -w --ignore-all-space"
    " -b --ignore-space-change --ignore-space-at-eol --ignore-cr-at-eol --ignore-blank-lines -I="
    " --ignore-matching-lines= --indent-heuristic --patience --histogram --diff-algorithm= --anchored="
    " --word-diff? --word-diff-regex= --color-words? --color-moved? --color-moved-ws= --relative? -a --text -R"
    " --exit-code --quiet --ignore-submodules? --submodule? --ita-invisible-in-index --ita-visible-in-index -S= -G="
    " --pickaxe-all --pickaxe-regex --rotate-to= --skip-to= --find-object= --diff-filter= --no-ext-diff"
    " --no-textconv",
    {"--ext-diff --textconv": RUNS, "--output= -O=": "makes git write or read a file of its choosing"},
)
# log and show: the revision options (a value taken as the next word only where git does: checked by a test).
LOG = merge(
    DIFF,
    opts(
        "--oneline --graph --all --branches? --tags? --remotes? --glob= --exclude= --reverse --first-parent"
        " --no-merges --merges --min-parents? --max-parents? --topo-order --date-order --author-date-order"
        " --decorate? --no-decorate --decorate-refs= --decorate-refs-exclude= --clear-decorations --source"
        " --use-mailmap --mailmap --abbrev-commit --no-abbrev-commit --parents --children --left-right --boundary"
        " --cherry-pick --cherry-mark --left-only --right-only --ancestry-path? --simplify-by-decoration"
        " --full-history --dense --sparse --walk-reflogs -g -i --regexp-ignore-case --all-match --invert-grep -E"
        " --extended-regexp -F --fixed-strings -P --perl-regexp --relative-date --date= --format? --pretty?"
        " --notes? --no-notes --log-size -c --cc -m --diff-merges= --no-diff-merges --combined-all-paths -n="
        " --max-count= --skip= --since= --after= --until= --before= --author= --committer= --grep= -L= -q",
        {"--show-signature": "makes git run gpg"},
        numbers=True,
    ),
)
NO_SUBMODULES = {"--recurse-submodules?": ELSEWHERE}
PATHSPEC_FILE = "--pathspec-file-nul"
EDITS = {"-e --edit": "opens an editor", "-S? --gpg-sign? --verify-signatures": "makes git run gpg"}
REMOTE = {"--upload-pack= --receive-pack= --exec=": RUNS}
SWITCH = (
    "-q --quiet --progress --no-progress -m --merge --conflict= -d --detach -f --force --guess --no-guess --orphan="
    " --overwrite-ignore --ignore-other-worktrees"
)
PICK = (
    "--quit --continue --abort --skip --cleanup= -n --no-commit -s --signoff -m= --mainline= --rerere-autoupdate"
    " -X= --strategy-option= --no-edit"
)
STRATEGY = {"-s= --strategy=": "makes git run the merge program of its choosing (git-merge-NAME)"}
CLONE = {"-u= -c= --config= --template=": RUNS, "--separate-git-dir= --reference= --reference-if-able=": ELSEWHERE}
CONFIG = "writes git's config, where git finds the programs it runs"
READ_ONLY = "reads the repository"
# What reads a file the command names, anywhere: `git diff --no-index ~/.ssh/id_rsa /dev/null`, a commit message
# `-F`, `--pathspec-from-file` (its lines come back in the error), `blame --contents`. Only bubblewrap hides the deny
# list from commands (Landlock and --sandbox off do not), so a rule covering these would read what `dev__read` refuses.
READS = "makes git read a file of its choosing, outside the work tree too (the deny list)"
READS_FILES = {"-F= --file= --pathspec-from-file= --contents= --ignore-revs-file=": READS}
WORK_TREE = "changes the work tree, the index or refs, as you would"


def _row(
    allowed: str | Options,
    why: str,
    refused: dict[str, str] | None = None,
    *,
    named_only: bool = False,
    args: str = ANY,
    requires: frozenset[str] = frozenset(),
) -> Command:
    options = allowed if isinstance(allowed, Options) else opts(allowed, {**READS_FILES, **(refused or {})})
    return Command(options, why, named_only=named_only, args=args, requires=requires)


COMMANDS: dict[tuple[str, ...], Command] = {
    ("status",): _row(
        "-v --verbose -s --short -b --branch --show-stash --ahead-behind --no-ahead-behind --porcelain? --long -z"
        " --null -u? --untracked-files? --ignored? --ignore-submodules? --column? --no-column --no-renames -M?"
        " --find-renames?",
        READ_ONLY,
    ),
    ("diff",): _row(merge(DIFF, opts("--cached --staged --merge-base", {"--no-index": READS})), READ_ONLY),
    ("log",): _row(LOG, READ_ONLY),
    ("show",): _row(LOG, READ_ONLY),
    ("shortlog",): _row(
        "-c --committer -n --numbered -s --summary -e --email -w? --group= --all --no-merges --since= --until="
        " --author=",
        READ_ONLY,
    ),
    ("rev-parse",): _row(
        "--verify -q --quiet --short? --abbrev-ref? --symbolic --symbolic-full-name --show-toplevel --show-prefix"
        " --show-cdup --git-dir --absolute-git-dir --git-common-dir --is-inside-work-tree --is-inside-git-dir"
        " --is-bare-repository --is-shallow-repository --show-superproject-working-tree --show-object-format?"
        " --all --branches? --tags? --remotes? --default= --sq --not --revs-only --no-revs --flags --no-flags",
        READ_ONLY,
    ),
    ("rev-list",): _row(
        "--max-count= -n= --skip= --since= --until= --all --branches? --tags? --remotes? --no-merges --merges"
        " --first-parent --topo-order --date-order --reverse --parents --children --count --left-right"
        " --cherry-pick --cherry-mark --objects --abbrev-commit --author= --grep= --boundary --ancestry-path?",
        READ_ONLY,
    ),
    ("ls-files",): _row(
        "-z -t -v -f -c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -k --killed"
        " --directory --eol --empty-directory -u --unmerged --resolve-undo -x= --exclude= -X= --exclude-from="
        " --exclude-per-directory= --exclude-standard --full-name --error-unmatch --with-tree= --abbrev? --debug"
        " --deduplicate --sparse --format=",
        READ_ONLY,
        NO_SUBMODULES,
    ),
    ("ls-tree",): _row(
        "-d -r -t -z -l --long --name-only --name-status --object-only --full-name --full-tree --format= --abbrev?",
        READ_ONLY,
    ),
    ("cat-file",): _row(
        "-e -p -t -s --allow-unknown-type",
        READ_ONLY,
        {"--textconv --filters": RUNS, "--batch? --batch-check? --batch-command?": "reads its requests from stdin"},
    ),
    ("blame",): _row(
        "--incremental -b --root --show-stats -f --show-name -n --show-number -p --porcelain --line-porcelain -c -t"
        " -l -s -e --show-email -w --ignore-rev= --color-lines --color-by-age --minimal"
        " -C? -M? -L= --abbrev? --no-textconv",
        READ_ONLY,
        {"--textconv": RUNS, "-S=": READS},  # -S FILE: its lines come back as "bad graft data: …"
    ),
    ("grep",): _row(
        "--cached --no-index --untracked --exclude-standard -v --invert-match -i --ignore-case -w --word-regexp -a"
        " --text -I -r --recursive --max-depth= -E --extended-regexp -G --basic-regexp -F --fixed-strings -P"
        " --perl-regexp -n --line-number --column -h -H --full-name -l --files-with-matches --name-only -L"
        " --files-without-match -z --null -o --only-matching -c --count --color? --break --heading -C= --context="
        " -B= --before-context= -A= --after-context= --threads= -N -p --show-function -W --function-context -e="
        " --and --or --not -q --quiet --all-match -m= --max-count= --no-textconv",
        READ_ONLY,
        # -f FILE: a line that is no valid pattern comes back in git's error, whole.
        {"-O? --open-files-in-pager? --textconv --ext-grep": RUNS, "-f=": READS, **NO_SUBMODULES},
    ),
    ("describe",): _row(
        "--contains --debug --all --tags --long --first-parent --abbrev? --exact-match --candidates= --match="
        " --exclude= --always --dirty? --broken?",
        READ_ONLY,
    ),
    ("show-ref",): _row("--tags --heads --verify --head -d --dereference -s? --hash? --abbrev? -q --quiet", READ_ONLY),
    ("for-each-ref",): _row(
        "-s --shell -p --perl --python --tcl --count= --format= --color? --sort= --points-at= --merged= --no-merged="
        " --contains= --no-contains= --ignore-case",
        READ_ONLY,
    ),
    ("merge-base",): _row("-a --all --octopus --independent --is-ancestor --fork-point", READ_ONLY),
    ("name-rev",): _row("--name-only --tags --refs= --exclude= --all --undefined --always", READ_ONLY),
    ("cherry",): _row("-v --verbose --abbrev?", READ_ONLY),
    ("count-objects",): _row("-v --verbose -H --human-readable", READ_ONLY),
    ("check-ignore",): _row("-q --quiet -v --verbose -z -n --non-matching --no-index", READ_ONLY),
    ("version",): _row("--build-options", READ_ONLY),
    ("config",): _row(
        "--get --get-all --get-regexp --get-urlmatch --get-color --get-colorbool -l --list --show-origin"
        " --show-scope --name-only -z --null --type= --bool --int --bool-or-int --path --expiry-date --default="
        " --includes --no-includes --global --system --local --worktree",
        "reads git's config (only --get…, -l/--list: git config NAME VALUE would set it)",
        {
            "--add --unset --unset-all --replace-all --rename-section --remove-section -e --edit": CONFIG,
            "-f= --file= --blob=": ELSEWHERE,
        },
        requires=frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "-l", "--list"}),
    ),
    ("config", "get"): _row(
        "--all --regexp --value= --url= --show-origin --show-scope --name-only -z --null --type= --default="
        " --global --system --local --worktree --includes --no-includes",
        "reads git's config (git 2.46's syntax)",
    ),
    ("config", "list"): _row(
        "--show-origin --show-scope --name-only -z --null --global --system --local --worktree --includes",
        "reads git's config (git 2.46's syntax)",
    ),
    ("branch",): _row(
        "-v --verbose -q --quiet --color? --no-color -r --remotes --contains= --no-contains= --abbrev? -a --all -d"
        " --delete -D -m --move -M -c --copy -C -l --list --show-current --create-reflog -f --force --merged="
        " --no-merged= --column? --no-column --sort= --points-at= -i --ignore-case --format= --no-track",
        WORK_TREE,
        {"-t? --track? -u= --set-upstream-to= --unset-upstream": "writes git's config", **EDITS, **NO_SUBMODULES}
        | {"--edit-description": "opens an editor"},
    ),
    ("tag",): _row(
        "-l --list -n? -d --delete -a --annotate -m= --message= --cleanup= -f --force --create-reflog"
        " --column? --no-column --contains= --no-contains= --merged= --no-merged= --sort= --points-at= --format="
        " --color? -i --ignore-case --no-sign",
        WORK_TREE,
        {"-s --sign -u= --local-user= -v --verify": "makes git run gpg", "-e --edit": "opens an editor"},
    ),
    ("add",): _row(
        f"-n --dry-run -v --verbose -p --patch -f --force -u --update --renormalize -N --intent-to-add -A --all"
        f" --no-all --ignore-removal --no-ignore-removal --refresh --ignore-errors --ignore-missing --sparse --chmod="
        f" {PATHSPEC_FILE}",
        WORK_TREE,
        {"-i --interactive": "asks on stdin", **EDITS},
    ),
    ("commit",): _row(
        f"-q --quiet -v --verbose --author= --date= -m= --message= -C= --reuse-message= --fixup= --squash="
        f" --reset-author --trailer= -s --signoff --no-signoff --cleanup= --status --no-status -a --all -i --include"
        f" -p --patch -o --only -n --no-verify --dry-run --short --branch --porcelain --long -z --null --amend"
        f" --no-post-rewrite -u? --untracked-files? --no-edit --allow-empty --allow-empty-message --no-gpg-sign"
        f" {PATHSPEC_FILE}",
        f"{WORK_TREE}; runs the hooks the repository has (not one the command names: docs/permissions.md)",
        {"-c= --reedit-message= -t= --template= --interactive": "opens an editor", **EDITS},
    ),
    ("restore",): _row(
        f"-s= --source= -S --staged -W --worktree --ignore-unmerged --overlay --no-overlay -q --quiet --progress"
        f" --no-progress -m --merge --conflict= -2 --ours -3 --theirs -p --patch --ignore-skip-worktree-bits"
        f" {PATHSPEC_FILE}",
        WORK_TREE,
        NO_SUBMODULES,
    ),
    ("checkout",): _row(
        f"{SWITCH} -b= -B= -l --overlay --no-overlay -2 --ours -3 --theirs -p --patch --ignore-skip-worktree-bits"
        f" --no-track {PATHSPEC_FILE}",
        WORK_TREE,
        {"-t? --track?": "writes git's config", **NO_SUBMODULES},
    ),
    ("switch",): _row(
        f"{SWITCH} -c= --create= -C= --force-create= --discard-changes --no-track",
        WORK_TREE,
        {"-t? --track?": "writes git's config", **NO_SUBMODULES},
    ),
    ("reset",): _row(
        f"-q --quiet --no-refresh --mixed --soft --hard --merge --keep -p --patch -N --intent-to-add {PATHSPEC_FILE}",
        WORK_TREE,
        NO_SUBMODULES,
    ),
    ("rm",): _row(
        f"-n --dry-run -q --quiet --cached -f --force -r --ignore-unmatch --sparse {PATHSPEC_FILE}", WORK_TREE
    ),
    # git mv renames first and checks the index path after: `git mv -f cfg .git/config` (or through a link to
    # .git) plants a config or hook the next covered git runs, where the git directory is writable (Landlock, off).
    ("mv",): _row(
        "-v --verbose -n --dry-run -f --force -k --sparse",
        "renames where its paths say, into the git directory or through a link, before git checks them",
        named_only=True,
    ),
    ("clean",): _row("-q --quiet -n --dry-run -f --force -d -e= --exclude= -x -X", WORK_TREE, {"-i": "asks on stdin"}),
    ("stash",): _row(
        f"-p --patch -S --staged -k --keep-index --no-keep-index -q --quiet -u --include-untracked -a --all -m="
        f" --message= {PATHSPEC_FILE}",
        f"{WORK_TREE} (as stash push; `git stash pop` is its own row)",
        args=NONE,
    ),
    ("stash", "push"): _row(
        f"-p --patch -S --staged -k --keep-index --no-keep-index -q --quiet -u --include-untracked -a --all -m="
        f" --message= {PATHSPEC_FILE}",
        WORK_TREE,
    ),
    ("stash", "list"): _row(LOG, READ_ONLY),
    ("stash", "show"): _row(merge(DIFF, opts("-u --include-untracked --only-untracked")), READ_ONLY),
    ("stash", "pop"): _row("--index -q --quiet", WORK_TREE),
    ("stash", "apply"): _row("--index -q --quiet", WORK_TREE),
    ("stash", "drop"): _row("-q --quiet", WORK_TREE),
    ("stash", "branch"): _row("", WORK_TREE),
    ("stash", "clear"): _row("", WORK_TREE, args=NONE),
    ("merge",): _row(
        "-n --stat --no-stat --summary --log? --no-log --squash --no-squash --commit --no-commit --cleanup= --ff"
        " --no-ff --ff-only --rerere-autoupdate -X= --strategy-option= -m= --message= --into-name= -v"
        " --verbose -q --quiet --abort --quit --continue --allow-unrelated-histories --progress --no-progress"
        " --autostash --no-autostash --overwrite-ignore --signoff --no-signoff --no-verify --no-edit --no-gpg-sign",
        f"{WORK_TREE}; runs the repository's hooks",
        {**STRATEGY, **EDITS},
    ),
    ("cherry-pick",): _row(
        f"{PICK} -x --ff --allow-empty --allow-empty-message --keep-redundant-commits", WORK_TREE, {**STRATEGY, **EDITS}
    ),
    ("revert",): _row(f"{PICK} --reference", WORK_TREE, {**STRATEGY, **EDITS}),
    ("rebase",): _row(
        "--onto= --keep-base --no-verify --verify -q --quiet -v --verbose -n --no-stat --stat --signoff"
        " --committer-date-is-author-date --reset-author-date -C= --ignore-whitespace --whitespace= -f"
        " --force-rebase --no-ff --continue --skip --abort --quit --show-current-patch --apply -m --merge -i"
        " --interactive --rerere-autoupdate --empty= --autosquash --no-autosquash --update-refs --no-update-refs"
        " --autostash --no-autostash -r? --rebase-merges? --no-rebase-merges --fork-point --no-fork-point --root"
        " --reapply-cherry-picks --no-reapply-cherry-picks -X= --strategy-option= --no-gpg-sign",
        f"{WORK_TREE}; -i edits the list in the editor you set",
        {"-x= --exec= --reschedule-failed-exec": RUNS, "--edit-todo": "opens an editor", **STRATEGY, **EDITS},
    ),
    ("apply",): _row(
        "--exclude= --include= -p= --no-add --stat --numstat --summary --check --index -N --intent-to-add --cached"
        " --apply -3 --3way -z -C= --whitespace= --ignore-space-change --ignore-whitespace -R --reverse"
        " --unidiff-zero --reject --allow-overlap -v --verbose -q --quiet --inaccurate-eof --recount --allow-empty",
        f"{WORK_TREE} (only inside the work tree)",
        {"--unsafe-paths --directory=": ELSEWHERE, "--build-fake-ancestor=": "writes a file anywhere"},
    ),
    ("reflog",): _row(LOG, f"{READ_ONLY} (as reflog show)", args=NONE),
    ("reflog", "show"): _row(LOG, READ_ONLY),
    ("reflog", "exists"): _row("", READ_ONLY),
    ("remote",): _row("-v --verbose", READ_ONLY, args=NONE),
    ("remote", "get-url"): _row("--push --all", READ_ONLY),
    ("worktree", "list"): _row("--porcelain -v --verbose -z --expire=", READ_ONLY),
    ("bisect", "start"): _row(
        "--term-new= --term-bad= --term-old= --term-good= --no-checkout --first-parent", WORK_TREE
    ),
    **{("bisect", mark): _row("", WORK_TREE) for mark in ("bad", "good", "new", "old", "skip", "reset", "next")},
    ("bisect", "log"): _row("", READ_ONLY),
    ("bisect", "terms"): _row("--term-good --term-bad --term-old --term-new", READ_ONLY),
    # Named by a rule only: they act on another repository, through programs git chooses from the URL (ssh, a
    # remote helper) or that the remote runs (its hooks).
    **{
        (name,): _row(
            allowed,
            "acts on another repository (the network, ssh, another directory)",
            {**REMOTE, **STRATEGY, **EDITS, **NO_SUBMODULES, **(CLONE if name == "clone" else {})},
            named_only=True,
            args=r"(?!.*::).*",  # `foo::url` runs git-remote-foo
        )
        for name, allowed in {
            "fetch": "-v --verbose -q --quiet --all -a --append --atomic -f --force -t --tags -n --no-tags -p --prune"
            " -P --prune-tags --dry-run --depth= --shallow-since= --unshallow --progress --no-progress --set-upstream"
            " -j= --jobs= --filter= --refetch --show-forced-updates",
            "pull": "-v --verbose -q --quiet -r? --rebase? --no-rebase --ff --no-ff --ff-only --autostash"
            " --no-autostash --stat -n --no-stat --squash --commit --no-commit --no-edit --no-verify --all -f --force"
            " -t --tags -p --prune --dry-run --depth= --unshallow --progress --no-progress --allow-unrelated-histories",
            "push": "-v --verbose -q --quiet --all --mirror -d --delete --tags -n --dry-run --porcelain -f"
            " --force --force-with-lease? --force-if-includes -u --set-upstream --progress --no-progress --prune"
            " --no-verify --follow-tags --atomic -o= --push-option=",
            "clone": "-v --verbose -q --quiet --progress -n --no-checkout --bare --mirror -l --local --no-hardlinks -s"
            " --shared -o= --origin= -b= --branch= --depth= --shallow-since= --single-branch --no-single-branch"
            " --no-tags --filter= --sparse",
            "ls-remote": "-h --heads -t --tags --refs -q --quiet --get-url --sort= --symref",
        }.items()
    },
}
GIT = Program("git", GLOBALS, COMMANDS)
