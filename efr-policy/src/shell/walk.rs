//! Visiting every command of a [`ParsedLine`](super::ParsedLine) in the order bash would run it, with the working directory
//! each one may run in.
//!
//! The directory is followed through `cd` so that the policy can place relative paths (`cd build && rm -rf out`).
//! Since a `cd` may fail, a command may run in one of several directories: [`Cwd::Known`] holds every candidate, and
//! a path is inside a root only when it is inside for each of them. `cd x; rm -rf y` may run `rm` in the old
//! directory or in `x`; `cd x && rm -rf y` runs it only in `x`. A directory the walk cannot know (`cd "$d"`, `cd -`,
//! `cd -P`, `cd ~-`, a `cd ..` above the line's start (bash goes up from its logical `$PWD`), `pushd`, a `cd` inside
//! an unanalysed construct) is [`Cwd::Unknown`] from there on. `CDPATH` is not followed.
//! Pipelines, subshells and substitutions run in subshells, so a `cd` inside them does not change the line's
//! directory.

use std::path::{Path, PathBuf};

use super::{AndOr, Command, Redirect, Stmt, Substitution};
use crate::paths::normalize;

/// Whether `name` runs the command in its words (a wrapper), so that `name … cd x` may change the shell's folder.
fn wraps_a_command(name: &str) -> bool {
    matches!(
        name,
        "time"
            | "command"
            | "builtin"
            | "nice"
            | "env"
            | "exec"
            | "eval"
            | "timeout"
            | "stdbuf"
            | "setsid"
            | "source"
            | "."
    )
}

/// Where a command may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cwd {
    /// One of these absolute folders (normalized, sorted, no duplicates, never empty).
    Known(Vec<PathBuf>),
    /// A folder the walk cannot know.
    Unknown,
}

impl Cwd {
    /// The start of a line: `Known` for an absolute path, `Unknown` for a relative one.
    #[must_use]
    pub fn at(path: &Path) -> Self {
        if path.is_absolute() {
            Self::Known(vec![normalize(path)])
        } else {
            Self::Unknown
        }
    }

    /// `Known`, sorted and without duplicates (`dirs` must not be empty).
    fn known(mut dirs: Vec<PathBuf>) -> Self {
        dirs.sort();
        dirs.dedup();
        Self::Known(dirs)
    }

    /// Either of two.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        match (self, other) {
            (Self::Known(mut a), Self::Known(b)) => {
                a.extend(b);
                Self::known(a)
            }
            _ => Self::Unknown,
        }
    }

    /// Places a path as a command in this directory would: an absolute path is itself, a relative one is joined to
    /// each candidate. `None` when a relative path meets an unknown directory.
    #[must_use]
    pub fn place(&self, path: &str) -> Option<Vec<PathBuf>> {
        let p = Path::new(path);
        if p.is_absolute() {
            return Some(vec![normalize(p)]);
        }
        match self {
            Self::Known(dirs) => Some(dirs.iter().map(|d| normalize(&d.join(p))).collect()),
            Self::Unknown => None,
        }
    }
}

/// What a walk reports.
pub trait Visitor {
    /// A simple command, with the directory it may run in and whether its input comes from an earlier command of a
    /// pipeline (`piped`; its own redirections are not counted). Called after the commands of its substitutions.
    fn command(&mut self, command: &Command, cwd: &Cwd, piped: bool);
    /// The redirections of a statement that is not a simple command (`( … ) > f`).
    fn redirects(&mut self, redirects: &[Redirect], cwd: &Cwd);
    /// A construct the parser did not analyse ([`Stmt::Unknown`]). Its inner statements are walked afterwards.
    fn unknown(&mut self, construct: &str, cwd: &Cwd);
}

/// Walks `body` from `cwd`, calling `visitor` for every command, and returns the directory after the line.
/// `home` places `cd` with no argument and `cd ~/x`.
pub fn walk(body: &[Stmt], cwd: Cwd, home: Option<&Path>, visitor: &mut dyn Visitor) -> Cwd {
    let start = match &cwd {
        Cwd::Known(dirs) if dirs.len() == 1 => dirs.first().cloned(),
        _ => None,
    };
    let mut walker = Walker { home, start, visitor };
    let (ok, failed) = walker.sequence(body, cwd, false);
    ok.union(failed)
}

struct Walker<'a> {
    home: Option<&'a Path>,
    /// The line's starting folder: `cd` above it with `..` is not placed (see `cd_target`).
    start: Option<PathBuf>,
    visitor: &'a mut dyn Visitor,
}

impl Walker<'_> {
    /// Returns the directory after the statement succeeded and after it failed.
    fn stmt(&mut self, stmt: &Stmt, cwd: Cwd, piped: bool) -> (Cwd, Cwd) {
        match stmt {
            Stmt::Command(command) => {
                for sub in command.substitutions() {
                    self.substitution(sub, &cwd);
                }
                self.visitor.command(command, &cwd, piped);
                match self.cd_target(command, &cwd) {
                    Some(target) => (target, cwd),
                    None => (cwd.clone(), cwd),
                }
            }
            Stmt::Pipeline(parts) => {
                for (i, part) in parts.iter().enumerate() {
                    self.stmt(part, cwd.clone(), piped || i > 0);
                }
                (cwd.clone(), cwd)
            }
            Stmt::AndOr { left, op, right } => {
                let (ok, failed) = self.stmt(left, cwd, piped);
                match op {
                    AndOr::And => {
                        let (ok2, failed2) = self.stmt(right, ok, piped);
                        (ok2, failed.union(failed2))
                    }
                    AndOr::Or => {
                        let (ok2, failed2) = self.stmt(right, failed, piped);
                        (ok.union(ok2), failed2)
                    }
                }
            }
            Stmt::Sequence(items) | Stmt::Group(items) => self.sequence(items, cwd, piped),
            Stmt::Subshell(items) => {
                self.sequence(items, cwd.clone(), piped);
                (cwd.clone(), cwd)
            }
            Stmt::Not(inner) => {
                let (ok, failed) = self.stmt(inner, cwd, piped);
                (failed, ok)
            }
            Stmt::Redirected { body, redirects } => {
                for sub in redirects.iter().flat_map(Redirect::substitutions) {
                    self.substitution(sub, &cwd);
                }
                self.visitor.redirects(redirects, &cwd);
                let (ok, failed) = self.stmt(body, cwd.clone(), piped);
                // A redirection that cannot open its file fails before the body runs.
                (ok, failed.union(cwd))
            }
            Stmt::Test(subs) => {
                for sub in subs {
                    self.substitution(sub, &cwd);
                }
                (cwd.clone(), cwd)
            }
            Stmt::Unknown { construct, inner } => {
                self.visitor.unknown(construct, &cwd);
                self.sequence(inner, cwd, piped);
                (Cwd::Unknown, Cwd::Unknown)
            }
        }
    }

    fn sequence(&mut self, items: &[Stmt], cwd: Cwd, piped: bool) -> (Cwd, Cwd) {
        let mut last = (cwd.clone(), cwd);
        for item in items {
            let now = last.0.union(last.1);
            last = self.stmt(item, now, piped);
        }
        last
    }

    fn substitution(&mut self, sub: &Substitution, cwd: &Cwd) {
        // A subshell: its `cd` stays inside. Its input is the shell's own.
        self.sequence(&sub.body, cwd.clone(), false);
    }

    /// For `cd`, `builtin cd` and `command cd`: the directory after it succeeded. `None` for any other command.
    fn cd_target(&self, command: &Command, cwd: &Cwd) -> Option<Cwd> {
        let mut words = command
            .words
            .iter()
            .skip_while(|w| matches!(w.value.as_deref(), Some("builtin" | "command")));
        let name = words.next()?.value.as_deref()?;
        match name {
            "cd" => {}
            "pushd" | "popd" => return Some(Cwd::Unknown),
            // `time cd x`, `command -p cd x`, `builtin -- pushd x`: a folder change behind a wrapper or an option.
            _ => {
                let changes = command
                    .words
                    .iter()
                    .any(|w| matches!(w.value.as_deref(), Some("cd" | "pushd" | "popd")) || w.value.is_none());
                let first = command.words.first().and_then(|w| w.value.as_deref()).unwrap_or(name);
                return (changes && command.words.len() > 1 && wraps_a_command(first)).then_some(Cwd::Unknown);
            }
        }
        // `-L` is the default and what lexical placing assumes; `-P` resolves links first (`cd -P link/..` goes
        // elsewhere), and any other option or cluster (`-PL`) is not worth a guess.
        let mut args = words.skip_while(|w| w.value.as_deref() == Some("-L"));
        let mut arg = args.next();
        if arg.is_some_and(|w| w.value.as_deref() == Some("--")) {
            arg = args.next();
        } else if arg.is_some_and(|w| w.value.as_deref().is_some_and(|v| v.starts_with('-') && v != "-")) {
            return Some(Cwd::Unknown);
        }
        let Some(arg) = arg else {
            return Some(self.home.map_or(Cwd::Unknown, Cwd::at));
        };
        // zsh: `cd old new` replaces `old` in `$PWD`, and `cd +1` / `cd -1` take a folder of the directory stack.
        let stack_entry = arg
            .value
            .as_deref()
            .is_some_and(|v| v.len() > 1 && v.starts_with(['+', '-']) && v[1..].bytes().all(|b| b.is_ascii_digit()));
        if args.next().is_some() || stack_entry {
            return Some(Cwd::Unknown);
        }
        if let Some(rest) = &arg.home_relative {
            return Some(
                self.home
                    .map_or(Cwd::Unknown, |h| Cwd::at(&h.join(rest.trim_start_matches('/')))),
            );
        }
        match arg.value.as_deref() {
            Some("-") | None => Some(Cwd::Unknown),
            Some(_) if arg.glob => Some(Cwd::Unknown),
            // `~-`, `~+`, `~2`, `~user`: another folder bash knows and efr does not.
            Some(path) if path.starts_with('~') => Some(Cwd::Unknown),
            Some(path) => {
                let Some(targets) = cwd.place(path) else {
                    return Some(Cwd::Unknown);
                };
                // bash's `cd ..` goes up from the folder bash remembers (`$PWD`, through links), while efr starts
                // from the one the shell is in: they differ after an earlier `cd` through a link, so going up above
                // the line's start is a folder efr does not know (after a `cd` to an absolute path in the line,
                // both are that path and `..` is placed).
                let up = !path.starts_with('/') && path.split('/').any(|part| part == "..");
                if let (true, Some(start), Cwd::Known(dirs)) = (up, &self.start, cwd) {
                    let from_start = dirs.iter().all(|d| d.starts_with(start));
                    if from_start && targets.iter().any(|t| !t.starts_with(start)) {
                        return Some(Cwd::Unknown);
                    }
                }
                Some(Cwd::known(targets))
            }
        }
    }
}
