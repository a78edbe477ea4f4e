//! One shell line, analysed: whether it is read-only, and if not, every reason why; whether it uses the network,
//! runs as another user or may wait at the terminal; and which floors it hits.
//!
//! [`analyse`] parses the line ([`super::shell`]), walks every command in the order bash runs it (substitutions
//! first, with the directory each may run in), takes the wrappers off each command, and asks [`super::readonly`]
//! about what is left. A line is read-only when no [`Concern`] was found and no floor was hit.
//!
//! # Wrappers
//!
//! | wrapper | what is checked |
//! |---|---|
//! | `sudo`, `doas`, `run0`, `pkexec` | [`Concern::Privileged`], interactive (a password) unless `-n`, then the command |
//! | `su` | privileged and interactive; `su -c 'line'` is analysed like `bash -c` |
//! | `env` | its `NAME=value` words as assignments, then the command; `env` alone is read-only; `-C` makes the folder unknown |
//! | `command`, `builtin`, `nice`, `time`, `timeout`, `stdbuf`, `setsid`, `busybox` | the command (`command -v x` alone is read-only) |
//!
//! The options of `env`, `command`, `builtin`, `busybox`, `setsid`, `nice`, `time`, `timeout` and `stdbuf` are read
//! strictly, in every form getopt takes (clusters, attached values), and only those listed: any other option, an
//! abbreviated long one included (`env --u`, which getopt reads as `--unset`), is unknown, because efr could not
//! tell where the command starts (`env -S`, `--split-string`, is one of these).
//! | `nohup`, `xargs` | not read-only (`nohup.out`; commands built from input), and the command for the floors |
//! | `bash -c`, `sh -c`, `zsh -c`, `dash -c`, `ksh -c` | the script, parsed and analysed, at most [`MAX_SHELL_DEPTH`] deep; a script that expands is unknown |
//! | `bash` alone, `bash script.sh` | not read-only (a shell waits for input; a script efr cannot see) |
//! | `eval` | unknown; a static argument is still analysed, for the floors |
//! | `exec` | unknown (it replaces the hidden shell), and the command for the floors |
//! | `watch` | not read-only, and its command, parsed like `bash -c`, for the floors |
//! | `busybox`, `setsid` | the command |
//! | `source`, `.` | unknown |
//!
//! A command named by a path counts as its file name when it lies in `/bin`, `/usr/bin`, `/usr/local/bin`, `/sbin`
//! or `/usr/sbin` (`/usr/bin/ls` is `ls`); any other path (`./ls`) is a program efr cannot see.
//!
//! # Environment
//!
//! An assignment before a command is fine only for the variables of a short list that cannot change what programs
//! load or run ([`dangerous_env`]: language, time zone, terminal, colours, output formats, a pager set to `cat`);
//! any other (`PATH`, `LD_PRELOAD`, `HOME`, `GIT_DIR`, ...) is a concern. An assignment with no command (`X=1`)
//! persists in the hidden shell, where a later line would read it, so it is not read-only.
//!
//! # Redirections
//!
//! A redirection that writes a file (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&file`) is not read-only, except to
//! `/dev/null`, `/dev/stdout`, `/dev/stderr`, `/dev/tty` and `/dev/fd/N`; `2>&1`, `>&-`, `<` and heredocs are fine.

mod command;
mod options;

use std::path::{Path, PathBuf};

use super::floors::EfrDirs;
use super::git_config::GitPlace;
use super::shell::{Cwd, ParseProblem, Word};

/// How deep `bash -c 'bash -c …'` is followed; deeper is unknown.
pub const MAX_SHELL_DEPTH: usize = 3;

/// What the analysis needs besides the line.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The directory the line starts in (absolute; a relative one makes every relative path unplaceable).
    pub cwd: &'a Path,
    /// The turn's project roots (absolute).
    pub project_roots: &'a [PathBuf],
    /// The user's home folder, for `~` and `$HOME`.
    pub home: Option<&'a Path>,
    /// efr's own roots, for the floors.
    pub efr: &'a EfrDirs,
    /// The config's extra read-only commands.
    pub extra_read_only: &'a [String],
    /// The config's `[sandbox] extra_masks` (absolute): read like a credential store.
    pub extra_masks: &'a [PathBuf],
}

/// Why a line is not read-only. Cautious mode names the first by [`rank`](Self::rank) in its question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Concern {
    /// A command uses the network.
    Network {
        /// The command, such as `curl` or `git fetch`.
        command: String,
    },
    /// A command writes a path outside every project root.
    WritesOutside {
        /// The path as a question shows it.
        path: String,
    },
    /// A command runs as another user.
    Privileged {
        /// `sudo`, `doas`, ….
        command: String,
    },
    /// The line does not parse.
    Unparsed {
        /// Why.
        problem: ParseProblem,
    },
    /// A construct efr does not analyse.
    Unknown {
        /// What, such as "a for loop" or "`eval`".
        construct: String,
    },
    /// A command may wait for input at the terminal.
    Interactive {
        /// The command.
        command: String,
    },
    /// A redirection writes a file.
    WritesFile {
        /// The target as written.
        target: String,
    },
    /// An assignment changes what programs load or run.
    Environment {
        /// The variable.
        name: String,
    },
    /// A command that is not read-only; the text completes "cautious asks before …".
    NotReadOnly(String),
}

impl Concern {
    /// The order in which cautious names concerns: network first (spec: "cautious asks before any network access"),
    /// then writes outside the project, privileged commands, what efr cannot read, waits at the terminal, and the
    /// rest.
    #[must_use]
    pub fn rank(&self) -> u8 {
        match self {
            Self::Network { .. } => 0,
            Self::WritesOutside { .. } => 1,
            Self::Privileged { .. } => 2,
            Self::Unparsed { .. } | Self::Unknown { .. } => 3,
            Self::Interactive { .. } => 4,
            Self::WritesFile { .. } | Self::Environment { .. } => 5,
            Self::NotReadOnly(_) => 6,
        }
    }

    /// Whether the concern shows no need of more than cautious's read-only sandbox gives: only a construct efr does
    /// not analyse or cannot parse (`eval "$x"`, `source x`), not a write, the network, another user or a wait at
    /// the terminal, and not `source`, `.` or `exec`, whose point is the hidden shell's own state (a contained call
    /// runs in a child of it). With efr's sandbox, cautious runs such a line in the read-only sandbox without a
    /// question; without it, it asks (docs/adr/0009-cautious-reads-contained.md).
    #[must_use]
    pub fn needs_only_reading(&self) -> bool {
        match self {
            Self::Unparsed { .. } => true,
            Self::Unknown { construct } => !["`source`", "`.`", "`exec`"]
                .iter()
                .any(|shell_state| construct.starts_with(shell_state)),
            _ => false,
        }
    }

    /// The question's reason line in cautious mode.
    #[must_use]
    pub fn cautious_reason(&self) -> String {
        match self {
            Self::Network { .. } => "cautious asks before any network access".to_owned(),
            Self::WritesOutside { path } => format!("cautious asks before writing outside the project ({path})"),
            Self::Privileged { command } => {
                format!("cautious asks before running a command as another user ({command})")
            }
            Self::Unparsed { .. } => "cautious asks before a line it cannot parse".to_owned(),
            Self::Unknown { construct } => format!("cautious asks before {construct}, which it does not analyse"),
            Self::Interactive { command } => {
                format!("cautious asks before `{command}`, which may wait for input at the terminal")
            }
            Self::WritesFile { target } => format!("cautious asks before writing to a file ({target})"),
            Self::Environment { name } => format!("cautious asks before a command run with {name} set"),
            Self::NotReadOnly(text) => format!("cautious asks before {text}"),
        }
    }
}

/// The analysis of one line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineAnalysis {
    /// Every concern, in the order found.
    pub concerns: Vec<Concern>,
    /// Some command may wait for input at the terminal (a question about it is `interactive`).
    pub interactive: bool,
    /// Some command runs as another user.
    pub privileged: bool,
    /// Some command uses the network.
    pub network: bool,
    /// The first floor the line hits: the refusal text.
    pub refusal: Option<&'static str>,
    /// The targets of recursive deletes outside every project root or that efr cannot place, as a question shows
    /// them (full mode asks about these).
    pub guarded_deletes: Vec<String>,
    /// Where each git command of the line looks for its repository, one entry per directory it may start in
    /// (cautious checks these before it runs the line; [`crate::git_config`]).
    pub git: Vec<GitPlace>,
    /// What the line reads in a credential store or efr's state root (a path under one of the default masks, a glob
    /// or a recursive read from a folder above one, a path that expands to what efr cannot resolve), each completing
    /// "cautious asks before …". Not a concern: inside efr's read-only sandbox these read as empty, so cautious asks
    /// about them only when the sandbox is not available (docs/adr/0009-cautious-reads-contained.md).
    pub store_reads: Vec<String>,
    /// Every command the line runs, with its wrappers off, in the order found: what auto mode's exits read
    /// (efrd's `exits::find`), so that the line is parsed once.
    pub commands: Vec<SeenCommand>,
    /// Each command that runs as another user, as written with its wrapper (`sudo apt-get install x`, `su -c …`).
    pub privileged_commands: Vec<String>,
    /// The paths the line writes or deletes outside every project root (placed, absolute, normalized; a floor is a
    /// [`refusal`](Self::refusal), never here).
    pub outside_writes: Vec<OutsideWrite>,
    /// Every path the line names that efr can place (operands, option values after `=`, redirections), absolute
    /// and normalized, without repeats.
    pub paths: Vec<PathBuf>,
}

/// One command of a line with its wrappers off (`sudo env A=1 curl x` is `curl x`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenCommand {
    /// The program, as [`analyse`] names it (`/usr/bin/ls` is `ls`).
    pub name: String,
    /// Its arguments.
    pub args: Vec<Word>,
    /// Where it may run.
    pub cwd: Cwd,
    /// The command of the privileged wrapper that runs it as another user, as written (`sudo apt-get install x`);
    /// `None` when it runs as the user.
    pub privileged: Option<String>,
}

impl SeenCommand {
    /// The static values of the arguments (a word that expands is left out).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.args.iter().filter_map(|w| w.value.as_deref())
    }

    /// The command as written: its name and its arguments' source text, joined by spaces.
    #[must_use]
    pub fn text(&self) -> String {
        let mut out = self.name.clone();
        for word in &self.args {
            out.push(' ');
            out.push_str(&word.source);
        }
        out
    }
}

/// A path a line writes outside every project root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutsideWrite {
    /// The path (absolute, normalized).
    pub path: PathBuf,
    /// The command deletes it (`rm`, `rmdir`, `unlink`, `find -delete`) rather than writing it.
    pub delete: bool,
}

impl LineAnalysis {
    /// Whether cautious runs the line without a question.
    #[must_use]
    pub fn read_only(&self) -> bool {
        self.concerns.is_empty() && self.refusal.is_none()
    }

    /// The concern a question names: the first of the lowest [`Concern::rank`].
    #[must_use]
    pub fn first_concern(&self) -> Option<&Concern> {
        self.concerns.iter().min_by_key(|c| c.rank())
    }
}

/// Analyses one shell line.
#[must_use]
pub fn analyse(line: &str, scope: &Scope<'_>) -> LineAnalysis {
    command::analyse(line, scope)
}

/// Whether assigning `value` to `name` before a command may change what programs load or run: every variable but
/// a short list that only sets language, time zone, terminal, colours and output formats (`LANG`, `LC_*` and
/// `LANGUAGE` without a `/`, which would name a locale folder; `TZ`, `TERM`, `COLUMNS`, `LINES`, `NO_COLOR`,
/// `CLICOLOR`, `CLICOLOR_FORCE`, `FORCE_COLOR`, `GREP_COLOR`, `GREP_COLORS`, `LS_COLORS`, `TIME_STYLE`,
/// `QUOTING_STYLE`, `BLOCK_SIZE`, `GIT_TERMINAL_PROMPT`, `GIT_AUTHOR_*`, `GIT_COMMITTER_*`), and a
/// pager (`PAGER`, `GIT_PAGER`, `MANPAGER`, `SYSTEMD_PAGER`) set to `cat` or empty. A list of the dangerous ones
/// cannot be complete: `HOME` and `XDG_CONFIG_HOME` move git's and the shells' own config into the project,
/// `GNUPGHOME` gpg's, `GCONV_PATH` loads a library.
#[must_use]
pub fn dangerous_env(name: &str, value: &Word) -> bool {
    const SAFE: &[&str] = &[
        "TZ",
        "TERM",
        "COLUMNS",
        "LINES",
        "NO_COLOR",
        "CLICOLOR",
        "CLICOLOR_FORCE",
        "FORCE_COLOR",
        "GREP_COLOR",
        "GREP_COLORS",
        "LS_COLORS",
        "TIME_STYLE",
        "QUOTING_STYLE",
        "BLOCK_SIZE",
        "GIT_TERMINAL_PROMPT",
    ];
    let value = value.value.as_deref();
    if matches!(name, "PAGER" | "GIT_PAGER" | "MANPAGER" | "SYSTEMD_PAGER") {
        return !matches!(value, Some("cat" | ""));
    }
    if name == "LANG" || name == "LANGUAGE" || name.starts_with("LC_") {
        return value.is_none_or(|v| v.contains('/'));
    }
    let safe = SAFE.contains(&name) || name.starts_with("GIT_AUTHOR_") || name.starts_with("GIT_COMMITTER_");
    !safe
}
