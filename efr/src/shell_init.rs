//! `efr shell-init bash|zsh`: the shell integration that defines `,`, `,new` and `,undo` (`efr undo`).
//!
//! `eval "$(efr shell-init zsh)"` (or `bash`) in the shell's rc file defines:
//!
//! - `, why did that fail?` runs
//!   `efr prompt --shell <bash|zsh> --last-command LINE --last-status N --recent "STATUS<TAB>LINE" ... [--new] -- WORDS`:
//!   the last command line and its exit status, the last (at most [`RECENT_COMMANDS`]) commands with their statuses,
//!   oldest first (the last command included), and the words as typed (globbing is off for them, so `fail?` stays
//!   `fail?`). A `,` or `,new` line never becomes the "last command" itself.
//! - `,new` makes the next `,` pass `--new` (a new conversation); `,new some text` sends at once with `--new`.
//!
//! How each shell learns the last command:
//!
//! | shell | line | status |
//! |---|---|---|
//! | bash | `history 1` in a `PROMPT_COMMAND` hook (a history number seen before means no command ran) | `$?` in that hook |
//! | zsh | `preexec`'s first argument | `$?` in a `precmd` hook |
//!
//! The user's own hooks stay: bash's hook is put in front of `PROMPT_COMMAND` (it must read `$?` before anything
//! else changes it, and returns it again for the hooks after it), zsh's are added with `add-zsh-hook`. Loading the
//! script twice adds nothing twice and keeps the state.
//!
//! The script calls efr by the absolute path of the executable that printed it ([`std::env::current_exe`]), so a
//! `,` works whatever PATH the shell has later. [`EFR_BIN_VAR`] (`EFR_SHELL_INIT_EFR`) replaces that path when set
//! and not empty, read when `efr shell-init` runs: tests put a recorder there, packagers a wrapper.

use std::path::{Path, PathBuf};

/// The shells `efr shell-init` writes an integration for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InitShell {
    /// GNU bash (PROMPT_COMMAND and history).
    Bash,
    /// zsh (precmd and preexec).
    Zsh,
}

/// The environment variable that, when set and not empty at `efr shell-init` time, names the program the script
/// calls instead of the running efr (an absolute path is best: the script does not look it up itself).
pub const EFR_BIN_VAR: &str = "EFR_SHELL_INIT_EFR";

/// How many recent commands `,` passes with `--recent`, at most.
pub const RECENT_COMMANDS: usize = 10;

/// Where the template names the efr program; replaced by its quoted path.
const BIN_PLACEHOLDER: &str = "__EFR_BIN__";
/// Where the template names the length of the recent list; replaced by [`RECENT_COMMANDS`].
const RECENT_PLACEHOLDER: &str = "__EFR_RECENT__";

const BASH_TEMPLATE: &str = include_str!("shell_init/bash.sh");
const ZSH_TEMPLATE: &str = include_str!("shell_init/zsh.sh");

/// The script that `eval "$(efr shell-init <shell>)"` runs, calling the efr that [`efr_program`] names.
#[must_use]
pub fn script(shell: InitShell) -> String {
    script_for(shell, &efr_program())
}

/// The script for `shell` with `efr` as the program that `,` calls. `efr` is quoted for the shell, so any path
/// (spaces, quotes, `$`) is passed as it is.
#[must_use]
pub fn script_for(shell: InitShell, efr: &Path) -> String {
    let template = match shell {
        InitShell::Bash => BASH_TEMPLATE,
        InitShell::Zsh => ZSH_TEMPLATE,
    };
    template
        .replace(BIN_PLACEHOLDER, &single_quote(&efr.to_string_lossy()))
        .replace(RECENT_PLACEHOLDER, &RECENT_COMMANDS.to_string())
}

/// The program `,` calls: [`EFR_BIN_VAR`] when set and not empty, else the running executable, else plain `efr`
/// (looked up on the shell's PATH when `,` runs; only when the kernel cannot say where this executable is).
#[must_use]
pub fn efr_program() -> PathBuf {
    match std::env::var_os(EFR_BIN_VAR) {
        Some(value) if !value.is_empty() => PathBuf::from(value),
        _ => std::env::current_exe().unwrap_or_else(|_| PathBuf::from("efr")),
    }
}

/// `text` as one single-quoted word of bash and zsh: `'` becomes `'\''`; nothing else is special inside quotes.
fn single_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_is_quoted_for_the_shell() {
        assert_eq!(single_quote("/usr/bin/efr"), "'/usr/bin/efr'");
        assert_eq!(single_quote("/a b/it's $x"), r"'/a b/it'\''s $x'");
    }

    #[test]
    fn each_shell_gets_its_own_script_with_the_program_in_it() {
        for (shell, hook) in [
            (InitShell::Bash, "PROMPT_COMMAND"),
            (InitShell::Zsh, "add-zsh-hook precmd"),
        ] {
            let text = script_for(shell, Path::new("/opt/my efr/efr"));
            assert!(text.contains("__efr_bin='/opt/my efr/efr'\n"), "{text}");
            assert!(text.contains(hook), "{shell:?}");
            assert!(text.contains("alias ,="), "{shell:?}");
            assert!(text.contains("alias ,new="), "{shell:?}");
            assert!(text.contains("alias ,undo="), "{shell:?}");
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        for shell in [InitShell::Bash, InitShell::Zsh] {
            let text = script_for(shell, Path::new("/bin/efr"));
            assert!(!text.contains("__EFR_"), "{text}");
            assert!(text.contains(&format!("> {RECENT_COMMANDS} ))")), "{text}");
        }
    }
}
