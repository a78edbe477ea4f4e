//! The permission policy: who decides whether a call runs (docs/architecture.md, "Policy and modes").
//!
//! One pure function, [`decide()`], takes a [`Call`] (a shell line with its directory, or a patch with its absolute
//! paths), the turn's [`Mode`](efr_protocol::wire::Mode) and a [`PolicyContext`] (project roots, origin, home, efr's
//! roots, config knobs), and returns a [`Decision`]: run (with a [`LaunchKind`]), ask (a [`Question`] with summary,
//! reason, interactive, local_only, an optional expiry and the launch once allowed) or refuse (a few words).
//!
//! ```
//! use std::path::PathBuf;
//! use efr_protocol::wire::{Mode, Origin};
//! use efr_policy::{Call, Decision, LaunchKind, PolicyContext, ShellCall, decide};
//!
//! let ctx = PolicyContext::new(vec![PathBuf::from("/home/u/proj")], Origin::Terminal);
//! let call = Call::Shell(ShellCall { command: "ls -la | grep foo".into(), cwd: "/home/u/proj".into() });
//! assert_eq!(decide(&call, Mode::Cautious, &ctx), Decision::Run { launch: LaunchKind::Direct });
//!
//! let call = Call::Shell(ShellCall { command: "curl https://example.com".into(), cwd: "/home/u/proj".into() });
//! let Decision::Ask(question) = decide(&call, Mode::Cautious, &ctx) else { panic!() };
//! assert_eq!(question.reason, "cautious asks before any network access");
//! ```
//!
//! # The rules
//!
//! | mode | shell call | patch |
//! |---|---|---|
//! | manual | ask: "manual asks before every command" | ask: "manual asks before every file change" |
//! | cautious | run read-only lines (in any directory) in the read-only sandbox when it can run ([`PolicyContext::sandbox`]), else direct unless they read a credential store; ask before anything else, naming the first concern | run direct when every path is inside a project root and outside `.git`, else ask |
//! | auto | run contained ([`decide_auto`], where the exits engine will plug in) | run contained |
//! | full | run direct; a recursive delete outside the project asks, expiring in 120 s | run direct |
//!
//! In every mode a floor refuses first ([`floors`]: deleting a system or home folder, formatting a disk, writing a
//! raw device, writing efr's config, data or runtime roots, touching efr's state root). A phone's turn is decided as
//! cautious at most and a job notice's turn as auto at most ([`effective_mode`]); a mode this build does not know is
//! decided as manual.
//!
//! Cautious names one reason, the first concern by rank ([`analysis::Concern::rank`]): network ("cautious asks
//! before any network access"), writing outside the project, running as another user, a line or construct efr does
//! not analyse, a wait at the terminal, a redirection or dangerous environment variable, and then any command that
//! is not on the read-only list ([`readonly`]). A read-only line with git in it runs only when every repository
//! its git commands use was checked and found plain ([`PolicyContext::git`], [`git_config`]); else cautious asks,
//! naming what could run. The summary names the command (its first line, cut at
//! [`decide::SUMMARY_CHARS`]) or the patch's files.
//!
//! A question is `interactive` when a command may wait for input at the terminal (sudo, ssh, an editor, a REPL,
//! `git commit` without a message), and `local_only` when it is interactive (a phone can neither see the terminal
//! nor answer its input: input.respond is forbidden to a phone), privileged, or a guarded delete. This holds
//! whatever the turn's origin: a phone watching a terminal's turn cannot answer such a question either.
//!
//! # Paths
//!
//! [`decide()`] compares paths lexically ([`paths`]); symbolic links are the caller's to resolve with
//! [`paths::resolve`] before the call (patch paths and project roots alike). A relative patch path is never inside a
//! project, so cautious asks before it. Shell paths are placed against the call's directory, followed through `cd`
//! ([`shell::walk`]).
//!
//! # Modules
//!
//! | module | owns |
//! |---|---|
//! | [`shell`] | parsing a line with tree-sitter-bash into commands, words, redirections, substitutions |
//! | [`readonly`] | the read-only list; network, privileged and interactive commands; git, sed and awk |
//! | [`analysis`] | one line's concerns: wrappers, environment, redirections, nested shells |
//! | [`floors`] | the floors and full mode's guarded delete |
//! | [`kills`] | the kill floors a line shows by itself (efr's programs by name, pid 1, groups, sessions, users) |
//! | [`git_config`] | what a repository's own config and hooks can make git run (cautious's check before git) |
//! | [`paths`] | lexical normalization, inside-a-root, resolving links |
//! | [`decide`](mod@decide) | the decision and its types |

pub mod analysis;
pub mod decide;
pub mod floors;
pub mod git_config;
pub mod kills;
pub mod paths;
pub mod readonly;
pub mod shell;

#[cfg(test)]
mod tests;

pub use analysis::{Concern, LineAnalysis, OutsideWrite, SeenCommand};
pub use decide::{
    Call, ChangeKind, Decision, LaunchKind, PatchCall, PatchChange, PolicyConfig, PolicyContext, Question, ShellCall,
    UNCONTAINED, analyse_call, approved_by, decide, decide_auto, decide_shell, effective_mode,
};
pub use floors::EfrDirs;
pub use git_config::{GitPlace, GitTrust};
