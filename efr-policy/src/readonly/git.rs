//! `git`: which subcommands are read-only, which use the network, and which wait for an editor.
//!
//! Global options: `-C <path>`, `--no-pager`, `-P`, `-p`/`--paginate`, `--git-dir`, `--work-tree`, `--bare`,
//! `--no-replace-objects`, `--literal-pathspecs`, `--no-optional-locks` keep a line read-only; `-c` and
//! `--config-env` set config that can run programs (`core.pager`, `core.fsmonitor`, `diff.external`), and
//! `--exec-path` picks the programs git runs, so they are not read-only; any other global option is unknown and not
//! read-only either.
//!
//! Read-only subcommands: `status`, `log`, `diff`, `show`, `blame`, `annotate`, `rev-parse`, `ls-files`, `ls-tree`,
//! `describe`, `show-ref`, `shortlog`, `cat-file`, `rev-list`, `merge-base`, `whatchanged`, `grep` (not `-O`/
//! `--open-files-in-pager`), `branch` (listing only: no name unless `--list`/`-l`, and only the listing options),
//! `tag` (with no name, or `-l`/`--list`), `remote` (alone or `-v`), `config` (`--get`, `--get-all`,
//! `--get-regexp`, `--list`/`-l`). `--output` (log, show, diff and friends write the patch to a file) is never
//! read-only. Whether the repository's own config or hooks can make git run a program is not a question of the
//! words: efrd checks the repositories a line's git commands use before cautious runs it ([`location`],
//! [`crate::git_config`]).
//!
//! Network: `fetch`, `pull`, `push`, `clone`, `ls-remote`, `submodule` (`update`, `add`, `sync`, `foreach`),
//! `remote update`/`remote show`/`remote prune`, `archive --remote`, `send-email`, `request-pull`, `svn`.
//!
//! Interactive (an editor or a prompt at the terminal): `commit` without `-m`/`-F`/`-C`/`--no-edit`/`--fixup`,
//! `rebase -i`, `add -p`/`-i`, `tag -a`/`-s` without `-m`/`-F`, `merge` without `--no-edit`/`-m`, `mergetool`.

use std::path::Path;

use super::{Arg, Verdict, long_matches, parse_args, unreadable};
use crate::shell::Word;

/// The subcommand and its arguments, after git's global options; `Err` holds the verdict for a global option that
/// is not read-only.
fn split(args: &[Word]) -> Result<(Option<&str>, &[Word]), Verdict> {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(value) = word.value.as_deref() else {
            return Err(unreadable("git"));
        };
        match value {
            "-C" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
            "--no-pager"
            | "-P"
            | "-p"
            | "--paginate"
            | "--bare"
            | "--no-replace-objects"
            | "--literal-pathspecs"
            | "--no-optional-locks" => i += 1,
            "-c" | "--config-env" => {
                return Err(Verdict::NotReadOnly(format!(
                    "`git {value}`, which sets config that can run programs"
                )));
            }
            v if v.starts_with("--git-dir=") || v.starts_with("--work-tree=") || v.starts_with("--namespace=") => {
                i += 1;
            }
            v if v.starts_with("--config-env") => {
                return Err(Verdict::NotReadOnly(
                    "`git --config-env`, which sets config that can run programs".to_owned(),
                ));
            }
            v if v.starts_with('-') => {
                return Err(Verdict::NotReadOnly(format!(
                    "`git {}`, an option efr does not know",
                    super::opt_name(v)
                )));
            }
            v => return Ok((Some(v), args.get(i + 1..).unwrap_or(&[]))),
        }
    }
    Ok((None, &[]))
}

/// The subcommand of a `git …` line (`args` are the words after `git`), after the global options.
#[must_use]
pub fn subcommand(args: &[Word]) -> Option<&str> {
    split(args).ok().and_then(|(sub, _)| sub)
}

/// The global options of a `git …` line (`args` are the words after `git`) that choose the repository: `-C <path>`,
/// `--git-dir`, `--work-tree` (with `=` or a separate value) and `--bare`, in their order, with `~` expanded against
/// `home`. `None` when a path among them is not static (it expands, holds a glob, or starts with `~` and there is no
/// home to expand it against).
#[must_use]
pub fn location(args: &[Word], home: Option<&Path>) -> Option<Vec<String>> {
    let path = |word: &Word| -> Option<String> {
        let value = word.value.as_deref().filter(|_| !word.glob)?;
        match (&word.home_relative, home) {
            (Some(rest), Some(home)) => Some(format!("{}{rest}", home.display())),
            (None, _) if !value.starts_with('~') => Some(value.to_owned()),
            _ => None,
        }
    };
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let value = word.value.as_deref()?;
        match value {
            "-C" | "--git-dir" | "--work-tree" => {
                out.extend([value.to_owned(), path(args.get(i + 1)?)?]);
                i += 2;
            }
            "--namespace" => i += 2,
            "--bare" => {
                out.push(value.to_owned());
                i += 1;
            }
            v if v.starts_with("--git-dir=") || v.starts_with("--work-tree=") => {
                let (option, _) = v.split_once('=').unwrap_or((v, ""));
                let rest = Word::literal(v.get(option.len() + 1..).unwrap_or_default());
                out.push(format!("{option}={}", path(&rest)?));
                i += 1;
            }
            v if v.starts_with('-') => i += 1,
            _ => break,
        }
    }
    Some(out)
}

/// Whether a `git …` line is read-only (`args` are the words after `git`).
#[must_use]
pub fn classify(args: &[Word]) -> Verdict {
    let (sub, rest) = match split(args) {
        Ok(split) => split,
        Err(verdict) => return verdict,
    };
    let Some(sub) = sub else { return Verdict::ReadOnly };
    let parsed = parse_args(rest);
    if parsed
        .iter()
        .any(|a| matches!(a, Arg::Long(o) if long_matches(o, "--output")))
    {
        return Verdict::NotReadOnly(format!("`git {sub} --output`, which writes a file"));
    }
    if parsed.iter().any(|a| matches!(a, Arg::Dynamic | Arg::LeadingGlob(_))) {
        return unreadable("git");
    }
    // Smudge filters (git-lfs's fetches over the network from a `.lfsconfig` in the worktree).
    if sub == "cat-file"
        && parsed
            .iter()
            .any(|a| matches!(a, Arg::Long(o) if long_matches(o, "--filters")))
    {
        return Verdict::NotReadOnly("`git cat-file --filters`, which runs the smudge filters".to_owned());
    }
    // Submodules' own repositories (in `.git/modules`, or only in history) are not checked like the repository a
    // line uses: git runs their diffs, config and all (`--submodule=diff`), or greps them.
    if let Some(Arg::Long(option)) = parsed.iter().find(|a| {
        matches!(a, Arg::Long(o) if (long_matches(o, "--submodule") && *o != "--submodule=short")
            || long_matches(o, "--recurse-submodules"))
    }) {
        return Verdict::NotReadOnly(format!(
            "`git {sub} {}`, which runs git in the submodules' repositories",
            super::opt_name(option)
        ));
    }
    let listing = match sub {
        "status" | "log" | "diff" | "show" | "blame" | "annotate" | "rev-parse" | "ls-files" | "ls-tree"
        | "describe" | "show-ref" | "shortlog" | "cat-file" | "rev-list" | "merge-base" | "whatchanged" => true,
        "grep" => !parsed.iter().any(|a| match a {
            Arg::Long(o) => long_matches(o, "--open-files-in-pager"),
            Arg::Short(l) => l.contains('O'),
            _ => false,
        }),
        "branch" => lists(&parsed, BRANCH_LONG, "arvli"),
        "tag" => lists(&parsed, &[], "lni0123456789"),
        "remote" => {
            parsed
                .iter()
                .all(|a| matches!(a, Arg::Short("v") | Arg::Long("--verbose")))
                || matches!(parsed.first(), Some(Arg::Positional("get-url")))
        }
        "for-each-ref" | "check-ignore" | "check-attr" | "count-objects" | "name-rev" | "cherry" => true,
        // Their listing forms only.
        "stash" => matches!(parsed.first(), Some(Arg::Positional("list" | "show"))),
        "worktree" => matches!(parsed.first(), Some(Arg::Positional("list"))),
        "reflog" => !parsed
            .iter()
            .any(|a| matches!(a, Arg::Positional("expire" | "delete" | "drop"))),
        "config" => config_reads(&parsed),
        _ => return Verdict::NotReadOnly(format!("`git {sub}`, which is not on its read-only list")),
    };
    if listing {
        Verdict::ReadOnly
    } else {
        Verdict::NotReadOnly(format!(
            "`git {sub}` with these arguments, which changes the repository"
        ))
    }
}

/// `git config` only reads: a reading action (`--get`, `--get-all`, `--get-regexp`, `--get-urlmatch`, `--list`,
/// `-l`, or the subcommands `get` and `list`) and no option outside the listed ones, each written in full (`--comment`
/// takes a value, so `--comment --get x y` sets `x`).
fn config_reads(parsed: &[Arg<'_>]) -> bool {
    const FLAGS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "--global",
        "--system",
        "--local",
        "--worktree",
        "--show-origin",
        "--show-scope",
        "--name-only",
        "--null",
        "--includes",
        "--no-includes",
        "--bool",
        "--int",
        "--bool-or-int",
        "--path",
        "--expiry-date",
        "--all",
        "--regexp",
    ];
    const VALUED: &[&str] = &["--file", "--blob", "--type", "--default", "--value", "--url"];
    const READING: &[&str] = &["--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list"];
    let mut reads = false;
    let mut first_operand = true;
    let mut operands = 0;
    let mut value_next = false;
    for arg in parsed {
        // A value is the next word, whatever it looks like (`--file --get` names a file `--get`).
        if std::mem::take(&mut value_next) {
            continue;
        }
        match *arg {
            Arg::Long(option) => {
                let (name, attached) = match option.split_once('=') {
                    Some((name, _)) => (name, true),
                    None => (option, false),
                };
                if FLAGS.contains(&name) && !attached {
                    reads |= READING.contains(&name);
                } else if VALUED.contains(&name) {
                    value_next = !attached;
                } else {
                    return false;
                }
            }
            Arg::Short(letters) => match letters {
                "l" => reads = true,
                "z" => {}
                "f" => value_next = true,
                _ => return false,
            },
            Arg::Positional(word) => {
                if first_operand && matches!(word, "get" | "list") {
                    reads = true;
                }
                first_operand = false;
                operands += 1;
            }
            _ => return false,
        }
    }
    // `git config user.name`, the old form of a read: one name and no value.
    (reads || operands == 1) && !value_next
}

/// The long options without a value that `git branch` and `git tag` share and that only list.
const LISTING_LONG: &[&str] = &[
    "--list",
    "--color",
    "--no-color",
    "--column",
    "--no-column",
    "--ignore-case",
    "--omit-empty",
];

/// The long options that only `git branch` has and that only list.
const BRANCH_LONG: &[&str] = &[
    "--all",
    "--remotes",
    "--verbose",
    "--show-current",
    "--abbrev",
    "--no-abbrev",
];

/// The listing options that take a value: the next word, whatever it looks like (as git's option parser takes it:
/// `git tag -m -l v1` is a message `-l`), unless written with `=`.
const TAKES_VALUE: &[&str] = &[
    "--contains",
    "--no-contains",
    "--merged",
    "--no-merged",
    "--points-at",
    "--sort",
    "--format",
];

/// `git branch` or `git tag` only lists: no long option outside [`LISTING_LONG`], [`TAKES_VALUE`] and `extra`, no
/// letter outside `short`, and a name (a pattern) only when `-l`/`--list` is one of the options, not a value.
fn lists(parsed: &[Arg<'_>], extra: &[&str], short: &str) -> bool {
    let (mut list, mut names, mut value_next) = (false, false, false);
    for arg in parsed {
        if std::mem::take(&mut value_next) {
            continue;
        }
        match *arg {
            Arg::Long(o) => {
                let name = super::opt_name(o);
                if ![LISTING_LONG, TAKES_VALUE, extra]
                    .iter()
                    .any(|list| list.contains(&name))
                {
                    return false;
                }
                list |= name == "--list";
                value_next = TAKES_VALUE.contains(&name) && !o.contains('=');
            }
            Arg::Short(letters) => {
                if !letters.chars().all(|c| short.contains(c)) {
                    return false;
                }
                list |= letters.contains('l');
            }
            Arg::Positional(_) => names = true,
            _ => return false,
        }
    }
    !value_next && (list || !names)
}

/// Whether a `git …` line uses the network.
#[must_use]
pub fn network(args: &[Word]) -> bool {
    let Ok((Some(sub), rest)) = split(args) else {
        return false;
    };
    let first = rest.first().and_then(|w| w.value.as_deref());
    match sub {
        "fetch" | "pull" | "push" | "clone" | "ls-remote" | "send-email" | "request-pull" | "svn" => true,
        "submodule" => matches!(first, Some("update" | "add" | "sync" | "foreach") | None),
        "remote" => matches!(first, Some("update" | "show" | "prune")),
        "archive" => rest
            .iter()
            .any(|w| w.value.as_deref().is_some_and(|v| v.starts_with("--remote"))),
        _ => false,
    }
}

/// Whether a `git …` line may wait for an editor or a prompt at the terminal.
#[must_use]
pub fn interactive(args: &[Word]) -> bool {
    let Ok((Some(sub), rest)) = split(args) else {
        return false;
    };
    let parsed = parse_args(rest);
    let has_short = |c: char| parsed.iter().any(|a| matches!(a, Arg::Short(l) if l.contains(c)));
    let has_long = |name: &str| {
        parsed
            .iter()
            .any(|a| matches!(a, Arg::Long(o) if long_matches(o, name)))
    };
    match sub {
        "commit" => {
            !(has_short('m')
                || has_short('F')
                || has_short('C')
                || has_long("--message")
                || has_long("--file")
                || has_long("--reuse-message")
                || has_long("--no-edit")
                || has_long("--fixup"))
        }
        "rebase" => has_short('i') || has_long("--interactive"),
        "add" => has_short('p') || has_short('i') || has_long("--patch") || has_long("--interactive"),
        "tag" => (has_short('a') || has_short('s')) && !(has_short('m') || has_short('F') || has_long("--message")),
        "merge" => !(has_long("--no-edit") || has_short('m') || has_long("--ff-only")),
        "mergetool" => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    #[test]
    fn listing_subcommands() {
        for line in [
            "status",
            "log --oneline -5",
            "-C sub diff --stat",
            "branch",
            "branch -a -v",
            "branch --list 'f*'",
            "branch --contains HEAD",
            "tag -l",
            "remote -v",
            "config --get user.name",
            "config user.name",
            "config --global user.email",
            "stash list",
            "worktree list --porcelain",
            "reflog -10",
            "reflog show main",
            "for-each-ref --format=%(refname) refs/heads",
            "remote get-url origin",
            "check-ignore -v target",
            "config --show-origin --file .gitmodules --get-regexp path",
            "config list --show-scope",
            "config get user.email",
            "log --submodule=short -1",
            "--no-pager show HEAD",
        ] {
            assert_eq!(classify(&w(line)), Verdict::ReadOnly, "{line}");
        }
    }

    #[test]
    fn changing_subcommands_and_options() {
        for line in [
            "branch new",
            "branch -d old",
            "branch -m a b",
            "tag v1",
            "remote add o url",
            "config user.name x",
            "stash",
            "stash drop",
            "worktree add ../x",
            "reflog expire --all",
            "config --comment --get core.fsmonitor x",
            "config --get-colo x",
            "config set user.name x",
            "config --unset x",
            "config --file --get core.fsmonitor evil",
            "cat-file --filters HEAD:x",
            "tag -m -l v1",
            "tag -F -l v2",
            "branch --sort --list newb",
            "branch --sort -l newb",
            "config -e",
            "show --submodule=diff HEAD",
            "log -p --submodule -3",
            "grep --recurse-submodules x",
            "commit -m x",
            "-c core.pager=sh log",
            "diff --output=patch",
            "log --out=f",
            "grep -O x",
            "--exec-path=/x status",
        ] {
            assert!(matches!(classify(&w(line)), Verdict::NotReadOnly(_)), "{line}");
        }
    }

    #[test]
    fn location_keeps_the_options_that_choose_the_repository() {
        let cases: &[(&str, Option<&[&str]>)] = &[
            ("status", Some(&[])),
            ("-C sub log -1", Some(&["-C", "sub"])),
            (
                "-C a -C b --no-pager --git-dir=x/.git status",
                Some(&["-C", "a", "-C", "b", "--git-dir=x/.git"]),
            ),
            (
                "--work-tree w --git-dir g diff",
                Some(&["--work-tree", "w", "--git-dir", "g"]),
            ),
            ("--bare log", Some(&["--bare"])),
            ("--namespace n -P show", Some(&[])),
            ("", Some(&[])),
            ("-C ~other status", None),
            ("--git-dir=~other/.git status", None),
        ];
        for (line, want) in cases {
            let want = want.map(|w| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
            assert_eq!(location(&w(line), None), want, "{line}");
        }
        let dynamic = vec![
            Word::literal("-C"),
            Word {
                value: None,
                ..Word::literal("$DIR")
            },
            Word::literal("status"),
        ];
        assert_eq!(location(&dynamic, None), None);
        let glob = vec![
            Word::literal("-C"),
            Word {
                glob: true,
                ..Word::literal("s*")
            },
        ];
        assert_eq!(location(&glob, None), None);
    }

    #[test]
    fn network_and_interactive() {
        assert!(network(&w("fetch origin")));
        assert!(network(&w("-C x pull")));
        assert!(network(&w("remote update")));
        assert!(!network(&w("remote -v")));
        assert!(interactive(&w("commit")));
        assert!(!interactive(&w("commit -am msg")));
        assert!(interactive(&w("rebase -i HEAD~3")));
        assert!(!interactive(&w("status")));
    }
}
