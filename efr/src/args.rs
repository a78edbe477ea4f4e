//! The command line before clap parses it: flags written in front of a command word, and the errors of
//! `efr login`, which must never echo an argument.
//!
//! # Flags before a command
//!
//! The root of `efr` takes a prompt's flags and words (`efr --mode auto "fix the test"`), and a first word that
//! names a command runs that command. So that `efr --json status` means `efr status --json` and not the prompt
//! "status", [`reorder`] moves the flags in front of a command word behind it (behind the innermost command:
//! `efr --json sandbox check` is `efr sandbox check --json`). A flag that the command does not take is refused
//! with a message that names the flag and the command (`efr --mode auto diff`: `--mode` is a prompt's flag), so
//! no prompt is sent by mistake. A word that only starts like a command is a prompt: `efr "status of the build"`
//! (one argument) is a prompt; `efr prompt status` sends the word "status"; after `--` every word is the prompt's.
//! A prompt of one word that looks like a mistyped command (`efr --json stauts`) is left to
//! [`crate::mistyped`], which refuses to send it.
//!
//! # `efr login`'s errors
//!
//! clap's errors quote the argument they refuse; for `efr login --api-key sk-...` that would print the key (and
//! it stays in the shell's history). [`login_error`] says what went wrong without any value.

use std::ffi::OsString;

use clap::CommandFactory;
use clap::error::ErrorKind;

use crate::cli::Cli;

/// The root's flags that take a value, given as the next word unless written `--flag=value`.
const VALUED: [&str; 9] = [
    "--mode",
    "--model",
    "--effort",
    "--conversation",
    "--away-after",
    "--shell",
    "--last-command",
    "--last-status",
    "--recent",
];

/// The command line, ready for clap.
#[derive(Debug, PartialEq, Eq)]
pub struct Reordered {
    /// The arguments, the program's name first, with the flags in front of a command moved behind it.
    pub args: Vec<OsString>,
    /// The command word, when the first word (after the flags) names a command: `status`, `login`, `prompt`, ...
    pub command: Option<String>,
}

/// `args` with each UTF-8 argument [`printable`](crate::clean::printable): for quoting them in an error, never for
/// running them. An argument that is not UTF-8 stays (clap refuses it without quoting it).
#[must_use]
pub fn printable(args: &[OsString]) -> Vec<OsString> {
    args.iter()
        .map(|arg| match arg.to_str() {
            Some(text) => crate::clean::printable(text).into_owned().into(),
            None => arg.clone(),
        })
        .collect()
}

/// Moves the flags written in front of a command word behind the command (see the module doc).
///
/// `args` is the whole argv, the program's name first.
///
/// # Errors
/// A message (without `efr: `) when a flag in front of a command is not one of that command's flags. It names the
/// flag and the command, never a flag's value.
pub fn reorder(args: Vec<OsString>) -> Result<Reordered, String> {
    let mut flags: Vec<(String, std::ops::Range<usize>)> = Vec::new();
    let mut i = 1;
    let word = loop {
        let Some(arg) = args.get(i).and_then(|a| a.to_str()) else {
            break None;
        };
        if arg == "--" {
            break None;
        }
        if ["-h", "--help", "-V", "--version"].contains(&arg) {
            // Help and version are clap's: the command line stays as it is.
            return Ok(Reordered { args, command: None });
        }
        if arg.len() < 2 || !arg.starts_with('-') {
            break Some(arg.to_owned());
        }
        let name = arg.split('=').next().unwrap_or(arg).to_owned();
        let end = if VALUED.contains(&name.as_str()) && !arg.contains('=') {
            (i + 2).min(args.len())
        } else {
            i + 1
        };
        flags.push((name, i..end));
        i = end;
    };
    let root = Cli::command();
    let Some(word) = word.filter(|w| root.find_subcommand(w).is_some()) else {
        return Ok(Reordered { args, command: None });
    };
    if flags.is_empty() {
        return Ok(Reordered {
            args,
            command: Some(word),
        });
    }
    // The innermost command named: `sandbox check` takes `--json`, `sandbox` does not.
    let mut leaf = root.find_subcommand(&word).cloned().unwrap_or_default();
    let mut path = vec![word.clone()];
    let mut j = i + 1;
    while let Some(next) = args.get(j).and_then(|a| a.to_str())
        && let Some(sub) = leaf.find_subcommand(next).cloned()
    {
        path.push(next.to_owned());
        leaf = sub;
        j += 1;
    }
    let path = path.join(" ");
    for (name, _) in &flags {
        let long = name.strip_prefix("--").unwrap_or("");
        if !leaf.get_arguments().any(|a| a.get_long() == Some(long)) {
            return Err(refusal(name, &path, &word));
        }
    }
    let mut out = Vec::with_capacity(args.len());
    out.extend(args[..1].iter().cloned());
    out.extend(args[i..j].iter().cloned());
    for (_, range) in &flags {
        out.extend(args[range.clone()].iter().cloned());
    }
    out.extend(args[j..].iter().cloned());
    Ok(Reordered {
        args: out,
        command: Some(word),
    })
}

/// Why a flag in front of `efr <path>` is refused, and what to write instead.
fn refusal(flag: &str, path: &str, word: &str) -> String {
    let root = Cli::command();
    let prompt_flag = root
        .get_arguments()
        .any(|a| a.get_long().is_some_and(|long| flag.strip_prefix("--") == Some(long)));
    if prompt_flag {
        format!(
            "{flag} is a prompt's flag, not one of `efr {path}`; to send a prompt that starts with \"{word}\", \
             write `efr {flag} ... prompt {word} ...`"
        )
    } else {
        format!("{flag} is not a flag of `efr {path}` (see `efr {path} --help`)")
    }
}

/// The message for a usage error of `efr login`, which names no argument's value (see the module doc).
#[must_use]
pub fn login_error(kind: ErrorKind) -> String {
    const USAGE: &str = "usage: efr login --api-key [--provider openai-api|anthropic-api] [--no-check] [--json]";
    match kind {
        ErrorKind::UnknownArgument | ErrorKind::TooManyValues => format!(
            "efr login reads the key from stdin or asks for it; a key on the command line is refused (it would \
             stay in your shell history)\n{USAGE}"
        ),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation | ErrorKind::NoEquals => {
            format!("efr login: a flag's value is not valid (not shown, in case it is a key)\n{USAGE}")
        }
        _ => format!("efr login: {USAGE}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reordered(args: &[&str]) -> Result<(Vec<String>, Option<String>), String> {
        let args = std::iter::once("efr")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        reorder(args).map(|r| {
            let args = r.args[1..].iter().map(|a| a.to_string_lossy().into_owned()).collect();
            (args, r.command)
        })
    }

    fn words(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn flags_in_front_of_a_command_go_behind_it() {
        let (args, command) = reordered(&["--json", "status"]).unwrap();
        assert_eq!(
            (args, command.as_deref()),
            (words(&["status", "--json"]), Some("status"))
        );
        let (args, _) = reordered(&["--json", "diff", "--conversation", "X"]).unwrap();
        assert_eq!(args, words(&["diff", "--json", "--conversation", "X"]));
        let (args, _) = reordered(&["--conversation", "X", "--json", "diff", "--stat"]).unwrap();
        assert_eq!(args, words(&["diff", "--conversation", "X", "--json", "--stat"]));
        let (args, _) = reordered(&["--json", "sandbox", "check"]).unwrap();
        assert_eq!(args, words(&["sandbox", "check", "--json"]));
        let (args, _) = reordered(&["--mode=auto", "--new", "prompt", "status"]).unwrap();
        assert_eq!(args, words(&["prompt", "--mode=auto", "--new", "status"]));
    }

    #[test]
    fn a_prompts_flag_in_front_of_a_command_is_refused_by_name() {
        let error = reordered(&["--mode", "auto", "diff"]).unwrap_err();
        assert!(
            error.starts_with("--mode is a prompt's flag, not one of `efr diff`"),
            "{error}"
        );
        assert!(!error.contains("auto"), "no value: {error}");
        let error = reordered(&["--json", "shell-init", "bash"]).unwrap_err();
        assert!(error.contains("`efr shell-init`"), "{error}");
        let error = reordered(&["--bogus", "status"]).unwrap_err();
        assert_eq!(error, "--bogus is not a flag of `efr status` (see `efr status --help`)");
    }

    #[test]
    fn prompts_stay_as_they_are() {
        for args in [
            &["status of the build"][..],
            &["--json", "stauts"],
            &["prompt", "status"],
            &["--json", "--", "status"],
            &["--mode", "status", "hello"],
            &["--help", "status"],
            &["fix", "the", "status", "line"],
        ] {
            let (out, _) = reordered(args).unwrap();
            assert_eq!(out, words(args), "{args:?}");
        }
        assert_eq!(reordered(&["status"]).unwrap().1.as_deref(), Some("status"));
        assert_eq!(reordered(&["say", "hi"]).unwrap().1, None);
    }

    #[test]
    fn login_errors_name_no_value() {
        let refused = login_error(ErrorKind::UnknownArgument);
        assert!(refused.contains("a key on the command line is refused"), "{refused}");
        assert!(login_error(ErrorKind::InvalidValue).contains("not shown"));
        assert!(login_error(ErrorKind::MissingRequiredArgument).contains("--api-key"));
    }
}
