//! efr's own startup files for the hidden shell, and the line typed for each run.
//!
//! # What the shell loads
//!
//! The environment is the caller's (the user's, as the prompt's terminal had it); the user's rc files are *not*
//! read: they set prompts, themes, key bindings, `PROMPT_COMMAND` and `precmd` hooks, greeters and slow plugin
//! managers, none of which a hidden shell wants, and some of which would print into a run's output. So:
//!
//! - bash starts as `bash --noediting --noprofile --rcfile <dir>/bashrc -i` (Debian's `/etc/bash.bashrc` still runs
//!   first; the rc below comes last and wins);
//! - zsh starts as `zsh -i` with `ZDOTDIR=<dir>`: `/etc/zsh/zshenv` runs, then our `.zshenv` turns `GLOBAL_RCS` off
//!   (no `/etc/zsh/zshrc`) and our `.zshrc` restores the user's `ZDOTDIR` (or unsets it) so a nested zsh behaves as
//!   usual.
//!
//! The rc sets a plain prompt (`$ `), no history file, no idle logout (`TMOUT`), no line editor (lines are read in the terminal's line mode,
//! which keeps the screen plain and the input-wait rules simple), `PAGER=cat` and `GIT_PAGER=cat` (a pager would wait
//! for keys that no one types), `GIT_EDITOR=:` (git starts no editor: `git commit` without `-m` stops at once), and prints the ready marker last.
//!
//! # How a run is typed
//!
//! The command line is written to a file (mode 0600) in the shell's own folder, and the shell is given one line:
//!
//! ```text
//!  __efr_id=7; \builtin printf '<S marker>' >/dev/tty; __efr_fds; \builtin . '<dir>/run-7'; __efr_fds "$?"; \builtin printf '<E marker with $?>' >/dev/tty
//! ```
//!
//! Sourcing keeps everything a terminal would (cd, exports, functions, aliases carry over; `exit` and `exec` act on
//! the shell) while the line typed is always one complete line: a multi-line command, a heredoc or an unclosed quote
//! stays inside the file (a syntax error ends the `.` with status 2, and the end marker still prints). The markers
//! are printed by the typed line itself, not by a prompt hook, so a command that changes `PS1`, `PROMPT_COMMAND` or
//! `precmd` cannot remove them; they go to `/dev/tty`, so `exec >/dev/null` cannot hide them. The leading space
//! keeps the line out of history, and `\builtin` stays clear of aliases and functions named `printf` or `.`.
//!
//! # Standard descriptors
//!
//! A command can take the shell's own standard descriptors away (`exec 1>&-`, `exec 2>&-`, `exec 0<&-`): in a
//! terminal every later command would then fail with "write error: Bad file descriptor" or, with standard input gone,
//! bash would end. The rc's `__efr_fds`, called by the typed line before and after the command, reopens them on the
//! terminal (the pty's slave by its `/dev/pts/N` path) and prints a line saying so, which lands in the run's output
//! for the model to read; the shell, its variables and functions stay. What counts as taken away:
//!
//! - standard output and error: closed. A redirect to a file (`exec >log`, `exec 2>/dev/null`) is the command's
//!   choice and stays, as in a terminal;
//! - standard input: closed *or* not a terminal. bash reads its next command line from it, so `exec </dev/null`
//!   would end the shell and `exec <file` would run the file's lines as commands; zsh reads from a copy of its own,
//!   but its commands would lose the terminal. The line typed for the run has already been read when `__efr_fds`
//!   runs, so the reopened terminal is where the next line comes from.
//!
//! One case skips the end of the typed line: an interrupt (SIGINT) makes an interactive shell drop the rest of the
//! line. For that, the rc also installs a prompt hook (`PROMPT_COMMAND` in bash, `precmd_functions` in zsh) that
//! prints the end marker for `$__efr_id`; it is only a fallback, and the shell's actor has another for when a
//! command removed the hook too (see `actor`).

use std::path::Path;

use super::capture::MARKER_OSC;

/// The user's shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShellKind {
    /// GNU bash (the default).
    #[default]
    Bash,
    /// zsh, when configured.
    Zsh,
}

impl ShellKind {
    /// The program name looked up in `PATH` when no program is given.
    pub fn program(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::Zsh => "zsh",
        }
    }
}

/// Quotes `text` for bash and zsh as one word.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The `printf` format of a marker, with `%s` for the run id and (for the end) the status.
fn marker_format(nonce: &str, kind: &str) -> String {
    match kind {
        "E" => format!(r"\033]{MARKER_OSC};{nonce};E;%s;%s\007"),
        "S" => format!(r"\033]{MARKER_OSC};{nonce};S;%s\007"),
        _ => format!(r"\033]{MARKER_OSC};{nonce};R\007"),
    }
}

/// The shell function that reopens the standard descriptors on the terminal (`tty`, the pty's slave) when a command
/// took them away, and says so on the terminal (so in the run's output); it returns its argument, the status to keep.
/// See "Standard descriptors" in the module's doc for what counts as taken away.
///
/// `\exec`, not `\builtin exec`: in bash, redirections on `builtin exec` are undone when it returns.
fn reopen_function(tty: &Path) -> String {
    let tty = quote(&tty.to_string_lossy());
    let reopen = |fd: u8, name: &str, how: &str| {
        let note = quote(&format!(
            "efr: the shell's {name} (fd {fd}) {how}; reopened on the terminal for this and later calls"
        ));
        format!("{{ \\exec {fd}<>{tty}; \\builtin printf '%s\\n' {note} >/dev/tty; }}")
    };
    format!(
        "__efr_fds() {{\n\
         \x20 \\builtin test -t 0 || {}\n\
         \x20 \\builtin test -e /dev/fd/1 || {}\n\
         \x20 \\builtin test -e /dev/fd/2 || {}\n\
         \x20 \\builtin return \"${{1:-0}}\"\n\
         }}\n",
        reopen(0, "standard input", "was closed or is not the terminal"),
        reopen(1, "standard output", "was closed"),
        reopen(2, "standard error", "was closed"),
    )
}

/// The files to write into the shell's folder, as (file name, content); `tty` is the path of the pty's slave.
pub(crate) fn startup_files(
    kind: ShellKind,
    nonce: &str,
    user_zdotdir: Option<&str>,
    tty: &Path,
) -> Vec<(&'static str, String)> {
    let ready = quote(&marker_format(nonce, "R"));
    let end = quote(&marker_format(nonce, "E"));
    let reopen = reopen_function(tty);
    let common = format!(
        "unset HISTFILE TMOUT\n\
         export PAGER=cat GIT_PAGER=cat GIT_EDITOR=:\n\
         __efr_id=\n\
         __efr_end() {{ \\builtin printf {end} \"$__efr_id\" \"$1\" >/dev/tty 2>/dev/null; }}\n\
         {reopen}"
    );
    match kind {
        ShellKind::Bash => vec![(
            "bashrc",
            format!(
                "# efr's hidden shell (bash). The user's rc files are not read; see efrd/src/tools/shell/rc.rs.\n\
                 {common}\
                 HISTCONTROL=ignorespace\n\
                 PS1='$ '\n\
                 PS2='> '\n\
                 PROMPT_COMMAND='__efr_end \"$?\"'\n\
                 \\builtin printf {ready} >/dev/tty\n"
            ),
        )],
        ShellKind::Zsh => {
            let restore = match user_zdotdir {
                Some(dir) => format!("ZDOTDIR={}\n", quote(dir)),
                None => "unset ZDOTDIR\n".to_owned(),
            };
            vec![
                (
                    ".zshenv",
                    "# efr's hidden shell (zsh): skip the global zshrc, zprofile, zlogin.\nunsetopt GLOBAL_RCS\n"
                        .to_owned(),
                ),
                (
                    ".zshrc",
                    format!(
                        "# efr's hidden shell (zsh). The user's rc files are not read; see efrd/src/tools/shell/rc.rs.\n\
                         {restore}\
                         {common}\
                         unsetopt ZLE PROMPT_SP PROMPT_CR BEEP\n\
                         setopt HIST_IGNORE_SPACE NO_PROMPT_SUBST\n\
                         PS1='$ '\n\
                         PS2='> '\n\
                         RPROMPT=\n\
                         __efr_precmd() {{ __efr_end \"$?\"; }}\n\
                         precmd_functions=(__efr_precmd)\n\
                         \\builtin printf {ready} >/dev/tty\n"
                    ),
                ),
            ]
        }
    }
}

/// The arguments that start the shell, given its folder.
pub(crate) fn shell_args(kind: ShellKind, dir: &Path) -> Vec<std::ffi::OsString> {
    match kind {
        ShellKind::Bash => {
            vec![
                "--noediting".into(),
                "--noprofile".into(),
                "--rcfile".into(),
                dir.join("bashrc").into(),
                "-i".into(),
            ]
        }
        ShellKind::Zsh => vec!["-i".into()],
    }
}

/// The line typed for run `id`, whose command is in `file`.
pub(crate) fn run_line(nonce: &str, id: u64, file: &Path) -> String {
    let start = quote(&marker_format(nonce, "S"));
    let end = quote(&marker_format(nonce, "E"));
    let file = quote(&file.to_string_lossy());
    format!(
        " __efr_id={id}; \\builtin printf {start} {id} >/dev/tty; __efr_fds; \\builtin . {file}; __efr_fds \"$?\"; \\builtin printf {end} {id} \"$?\" >/dev/tty\n"
    )
}

/// The line typed when the end marker went missing after an interrupt: it only reports the end of run `id`.
pub(crate) fn resync_line(nonce: &str, id: u64) -> String {
    let end = quote(&marker_format(nonce, "E"));
    format!(" \\builtin printf {end} {id} 130 >/dev/tty\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn the_run_line_brackets_the_commands_output_with_markers_that_capture_reads() {
        use crate::tools::shell::capture::{Capture, Marker};
        let dir = tempfile::tempdir().unwrap();
        // A space in the path: the line quotes it.
        let file = dir.path().join("x y").join("run-7");
        std::fs::create_dir(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "echo hello; (exit 3)\n").unwrap();
        let line = run_line("abc", 7, &file);
        assert_eq!(line.matches('\n').count(), 1, "one line: the shell reads it whole");
        assert!(line.starts_with(' '), "a leading space keeps the line out of history");
        // bash runs the line on a real terminal (`script` gives it a pty and copies the pty's output to stdout),
        // after the rc's function that the line calls.
        let typed = dir.path().join("line.sh");
        std::fs::write(&typed, format!("{}{line}", reopen_function(Path::new("/dev/tty")))).unwrap();
        let out = std::process::Command::new("script")
            .arg("-qec")
            .arg(format!("bash --norc --noprofile {}", quote(&typed.to_string_lossy())))
            .arg("/dev/null")
            .stdin(std::process::Stdio::null())
            .output()
            .expect("script (util-linux) runs");
        let shown = String::from_utf8_lossy(&out.stdout);
        let mut capture = Capture::new("abc".into());
        capture.begin(7);
        vte::Parser::new().advance(&mut capture, &out.stdout);
        assert_eq!(capture.markers, vec![Marker::Start(7), Marker::End(7, 3)], "{shown:?}");
        assert_eq!(capture.window.snapshot().for_client(), "hello\n", "{shown:?}");
    }
}
