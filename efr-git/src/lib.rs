//! The git that efrd runs itself, outside the sandbox: one [`command`] with what a repository's own config could
//! make git start switched off. The decision and what is left are in `docs/adr/0008-git-outside-the-sandbox.md`.
//!
//! A repository is data a contained call may have written, but its config (`.git/config`, files it includes) can
//! name programs that git starts as the user, outside the sandbox: `core.fsmonitor`, hooks (`core.hooksPath`), a
//! pager, an editor, diff drivers (`diff.external`, `diff.<driver>.textconv` and `.command`), filter drivers
//! (`filter.<driver>.clean`, `.smudge`, `.process`), transports and their helpers (`core.sshCommand`, remote
//! helpers, `credential.helper`, `core.askPass`, `core.gitProxy`), signing (`gpg.program`, `gpg.*.program`,
//! `log.showSignature`). [`command`] overrides each of those that a fixed key or an environment variable can
//! override; the command line and the environment win over every config file:
//!
//! - `-c` overrides ([`NO_PROGRAMS`], [`OUTSIDE_ONLY`]): no fsmonitor, hooks looked for in `/dev/null`, the pager `cat` (git starts no
//!   pager for `cat`), the editor `:` (git starts none), an empty `diff.external` (git fails to start it instead of
//!   starting the repository's; a driver that `.gitattributes` names still needs [`DIFF_OPTIONS`]), no askpass,
//!   `/bin/false` for ssh and every signing program, no credential helper (an empty value clears the list), no
//!   signature shown or made;
//! - `--no-pager` and `--no-optional-locks` (a read never writes the index, so no `post-index-change` hook either);
//! - the environment: `GIT_TERMINAL_PROMPT=0`, `GIT_ASKPASS=` (empty: no askpass at all, not even `SSH_ASKPASS`),
//!   `GIT_PAGER=cat`, `GIT_EDITOR=:` and `GIT_SEQUENCE_EDITOR=:` (git starts no editor for `:`),
//!   `GIT_ALLOW_PROTOCOL=file` (no network transport and no remote helper, whatever `protocol.*.allow` says; this
//!   also makes `core.gitProxy`, which cannot be overridden because its first match wins, never used),
//!   `GIT_PROTOCOL_FROM_USER=0`; `GIT_EXTERNAL_DIFF`, `GIT_SSH`, `GIT_SSH_COMMAND` and `SSH_ASKPASS` removed.
//!
//! Two kinds of program are chosen by a name that only `.gitattributes` knows, so no fixed key reaches them:
//! - diff drivers: a caller that diffs passes [`DIFF_OPTIONS`] (`--no-ext-diff --no-textconv`) after the
//!   subcommand;
//! - filter drivers: a caller passes `--no-filters` where the subcommand takes it (`hash-object`, `cat-file`);
//!   a subcommand that applies filters without such an option (`status`, `add`, `diff` against the worktree) first
//!   lists the repository's drivers (`git config -z --get-regexp '^filter\.'`, through [`command`]) and blanks each
//!   with [`blank_filters`].
//!
//! The system config (`/etc/gitconfig`) and the user's global config stay read: they are the administrator's and
//! the user's own, as trusted as the git binary itself, and a contained call cannot write them; they also carry
//! settings efr's git must honour to see a repository as the user's git sees it (`safe.directory`, includes).
//! Their programs are switched off all the same, by the same overrides.

use std::ffi::OsStr;

/// Each config key that can make git start a program, with a value that starts none (an empty value resets the
/// key). Both kinds of git that efr runs on a repository it does not trust use it: [`command`] outside the sandbox
/// (as `-c key=value`) and cautious's read-only sandbox (as `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`,
/// efrd's `turn::contained`). `core.gitProxy` is not here: its first match wins, so it cannot be overridden; the
/// transports are limited instead.
pub const NO_PROGRAMS: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("core.sshCommand", "/bin/false"),
    ("credential.helper", ""),
    ("log.showSignature", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("tag.forceSignAnnotated", "false"),
    ("push.gpgSign", "false"),
    ("gpg.program", "/bin/false"),
    ("gpg.openpgp.program", "/bin/false"),
    ("gpg.x509.program", "/bin/false"),
    ("gpg.ssh.program", "/bin/false"),
    ("gpg.ssh.defaultKeyCommand", "/bin/false"),
];

/// What [`command`] overrides besides [`NO_PROGRAMS`]: an empty `diff.external`, so that git fails to start an
/// external diff instead of starting the repository's. Not in the read-only sandbox, where the user's own
/// `git diff` must work (and a driver there runs contained).
pub const OUTSIDE_ONLY: &[(&str, &str)] = &[("diff.external", "")];

/// What a caller that diffs (`diff`, `log -p`, `show`, `blame`) passes after the subcommand: no external diff and
/// no textconv, whatever driver `.gitattributes` names.
pub const DIFF_OPTIONS: &[&str] = &["--no-ext-diff", "--no-textconv"];

/// The environment of [`command`]: set, or (`None`) removed.
const ENVIRONMENT: &[(&str, Option<&str>)] = &[
    ("GIT_TERMINAL_PROMPT", Some("0")),
    ("GIT_ASKPASS", Some("")),
    ("SSH_ASKPASS", None),
    ("GIT_PAGER", Some("cat")),
    ("GIT_EDITOR", Some(":")),
    ("GIT_SEQUENCE_EDITOR", Some(":")),
    ("GIT_EXTERNAL_DIFF", None),
    ("GIT_SSH", None),
    ("GIT_SSH_COMMAND", None),
    ("GIT_ALLOW_PROTOCOL", Some("file")),
    ("GIT_PROTOCOL_FROM_USER", Some("0")),
    ("GIT_OPTIONAL_LOCKS", Some("0")),
];

/// `git` (from `PATH`) with what a repository's config could make it start switched off (see the module docs).
/// The caller adds the location options (`-C`, `--git-dir`) and the subcommand, and [`DIFF_OPTIONS`] or
/// `--no-filters` where they apply. Nothing else is set: the working directory, standard streams and other
/// variables are the caller's.
#[must_use]
pub fn command() -> std::process::Command {
    build(true)
}

/// [`command`] without its `core.hooksPath` override, for one use only: asking git where the repository's own hooks
/// are (`rev-parse --git-path hooks/<hook>`, which runs no hook), which the override would answer with `/dev/null`.
#[must_use]
pub fn command_for_hook_paths() -> tokio::process::Command {
    tokio::process::Command::from(build(false))
}

fn build(hooks_path: bool) -> std::process::Command {
    let mut command = std::process::Command::new("git");
    for (key, value) in NO_PROGRAMS.iter().chain(OUTSIDE_ONLY) {
        if !hooks_path && *key == "core.hooksPath" {
            continue;
        }
        command.args([OsStr::new("-c"), OsStr::new(&format!("{key}={value}"))]);
    }
    command.args(["--no-pager", "--no-optional-locks"]);
    for (name, value) in ENVIRONMENT {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
}

/// [`command`] for async code.
#[must_use]
pub fn tokio_command() -> tokio::process::Command {
    tokio::process::Command::from(command())
}

/// Adds to a [`command`], before its subcommand, the overrides that switch off each filter driver named in
/// `listing`, the output of `git config -z --get-regexp '^filter\.'` (records of `key LF value NUL`): the driver's
/// `clean`, `smudge` and `process` set empty (git runs no filter for an empty command) and `required` false (so a
/// file passes through unfiltered instead of failing).
///
/// # Errors
/// A listing that is not UTF-8, or a driver whose name holds `=` (`-c` cannot name it): the driver, so the caller
/// runs nothing.
pub fn blank_filters(command: &mut std::process::Command, listing: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(listing).map_err(|_| "git's filter listing is not UTF-8".to_owned())?;
    let mut drivers: Vec<&str> = Vec::new();
    for record in text.split('\0').filter(|record| !record.is_empty()) {
        let key = record.split_once('\n').map_or(record, |(key, _)| key);
        // `filter.<driver>.<name>`: the driver is everything between the first and the last dot.
        let Some(driver) = key
            .strip_prefix("filter.")
            .and_then(|rest| rest.rsplit_once('.'))
            .map(|(driver, _)| driver)
        else {
            continue;
        };
        if driver.contains('=') {
            return Err(format!("filter driver `{driver}` has a name that cannot be overridden"));
        }
        if !drivers.contains(&driver) {
            drivers.push(driver);
        }
    }
    for driver in drivers {
        for (name, value) in [("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")] {
            command.args(["-c".to_owned(), format!("filter.{driver}.{name}={value}")]);
        }
    }
    Ok(())
}

#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(test)]
#[path = "git_tests.rs"]
mod tests;
