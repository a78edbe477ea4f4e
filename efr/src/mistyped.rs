//! A mistyped command is not a prompt: `efr stauts` or `efr conversations` must not reach the model.
//!
//! The root of `efr` takes a prompt's words, so a command word typed wrong used to be sent as a one-word prompt, in
//! the configured mode. [`guess`] catches a prompt of one word (letters and hyphens only) that is a command in
//! another case, within a small edit distance of a visible command (the optimal string alignment distance: a swap of
//! two neighbours counts one, as in `stauts`), or a word a user would guess for one ([`ALIASES`]: `conversations`,
//! `list`, `log`, `stop`, ...). [`intercept`] then asks "did you mean `efr …`?" on a terminal (run it, send the
//! word as a prompt after all, or nothing) and fails with that message in a pipe. `efr prompt WORD` always sends.

use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, PromptArgs};
use crate::{report, tty};

/// Words a user would guess for a command, with the command they most likely want (its words after `efr`).
pub const ALIASES: &[(&str, &[&str])] = &[
    ("conversations", &["context"]),
    ("conversation", &["context"]),
    ("history", &["context"]),
    ("list", &["context"]),
    ("ls", &["context"]),
    ("log", &["diff"]),
    ("logs", &["diff"]),
    ("changes", &["diff"]),
    ("find", &["search"]),
    ("grep", &["search"]),
    ("stop", &["shell", "stop"]),
    ("kill", &["shell", "stop"]),
    ("cancel", &["shell", "stop"]),
    ("interrupt", &["shell", "stop"]),
    ("start", &["daemon", "install"]),
    ("install", &["daemon", "install"]),
    ("setup", &["daemon", "install"]),
    ("uninstall", &["daemon", "uninstall"]),
    ("doctor", &["sandbox", "check"]),
    ("check", &["sandbox", "check"]),
    ("reload", &["config", "reload"]),
    ("devices", &["device", "list"]),
    ("phones", &["device", "list"]),
    ("help", &["--help"]),
    ("version", &["--version"]),
];

/// The command a mistyped word most likely meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guess {
    /// The word as typed.
    pub word: String,
    /// The command's words after `efr` (`["shell", "stop"]`).
    pub command: Vec<String>,
}

impl Guess {
    /// `efr shell stop`.
    #[must_use]
    pub fn command_line(&self) -> String {
        format!("efr {}", self.command.join(" "))
    }

    /// The message of a pipe: what was refused, the guess, and how to send the word after all.
    #[must_use]
    pub fn message(&self) -> String {
        format!(
            "`{word}` is not an efr command, so nothing was sent; did you mean `{command}`? (to send \"{word}\" to \
             the model as a prompt: `efr prompt {word}`)",
            word = self.word,
            command = self.command_line()
        )
    }
}

/// The most permissive edit distance for a word of `len` characters: none below 3, one up to 6, two from 7.
const fn max_distance(len: usize) -> usize {
    match len {
        0..=2 => 0,
        3..=6 => 1,
        _ => 2,
    }
}

/// The guess for a prompt's words, when they are one word that looks like a command (see the module doc).
#[must_use]
pub fn guess(words: &[String]) -> Option<Guess> {
    let [word] = words else { return None };
    if word.len() < 2 || !word.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
        return None;
    }
    let lower = word.to_ascii_lowercase();
    let found = |command: Vec<String>| {
        Some(Guess {
            word: word.clone(),
            command,
        })
    };
    if let Some((_, command)) = ALIASES.iter().find(|(alias, _)| *alias == lower) {
        return found(command.iter().map(|w| (*w).to_owned()).collect());
    }
    let root = Cli::command();
    let best = root
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| (distance(&lower, sub.get_name()), sub.get_name().to_owned()))
        .filter(|(d, _)| *d <= max_distance(lower.len()))
        .min_by_key(|(d, _)| *d)?;
    found(vec![best.1])
}

/// The optimal string alignment distance of `a` and `b` (ASCII): insertions, deletions, substitutions and swaps of
/// two neighbours each count one.
#[must_use]
pub fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let width = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * width];
    for i in 0..=a.len() {
        d[i * width] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(width) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[(i - 1) * width + j] + 1)
                .min(d[i * width + j - 1] + 1)
                .min(d[(i - 1) * width + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[(i - 2) * width + j - 2] + 1);
            }
            d[i * width + j] = best;
        }
    }
    d[a.len() * width + b.len()]
}

/// What the user answered on a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Run the guessed command.
    Run,
    /// Send the word as a prompt after all.
    Prompt,
    /// Nothing.
    Nothing,
}

/// Reads the answer to "did you mean ...?" from stdin (a line): `y` runs, `p` sends, anything else is nothing.
fn ask(guess: &Guess) -> Answer {
    eprint!(
        "efr: `{word}` is not a command; did you mean `{command}`? [y: run it / p: send \"{word}\" as a prompt / \
         N: nothing] ",
        word = guess.word,
        command = guess.command_line()
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Run,
        "p" | "prompt" => Answer::Prompt,
        _ => Answer::Nothing,
    }
}

/// Checks a prompt given without `prompt`: `None` when it goes to the model, else the exit code of what happened
/// instead (the message printed in a pipe; on a terminal, nothing sent, or the guessed command run in this
/// process's place).
#[must_use]
pub fn intercept(args: &PromptArgs) -> Option<ExitCode> {
    let guess = guess(&args.text)?;
    if !(tty::stdin_is_tty() && tty::stdout_is_tty()) {
        report::error(&guess.message());
        return Some(ExitCode::from(report::FAILED));
    }
    match ask(&guess) {
        Answer::Prompt => None,
        Answer::Nothing => {
            eprintln!("efr: nothing was sent");
            Some(ExitCode::from(report::FAILED))
        }
        Answer::Run => {
            let program = std::env::current_exe().unwrap_or_else(|_| "efr".into());
            // exec returns only when it failed.
            let error = std::process::Command::new(&program).args(&guess.command).exec();
            report::error(&format!("cannot run `{}`: {error}", guess.command_line()));
            Some(ExitCode::from(report::FAILED))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(word: &str) -> Option<String> {
        guess(&[word.to_owned()]).map(|g| g.command_line())
    }

    #[test]
    fn near_misses_and_guessed_words_name_a_command() {
        assert_eq!(of("stauts").as_deref(), Some("efr status"));
        assert_eq!(of("Status").as_deref(), Some("efr status"));
        assert_eq!(of("sandox").as_deref(), Some("efr sandbox"));
        assert_eq!(of("dif").as_deref(), Some("efr diff"));
        assert_eq!(of("comletions").as_deref(), Some("efr completions"));
        assert_eq!(of("conversations").as_deref(), Some("efr context"));
        assert_eq!(of("list").as_deref(), Some("efr context"));
        assert_eq!(of("log").as_deref(), Some("efr diff"));
        assert_eq!(of("stop").as_deref(), Some("efr shell stop"));
    }

    #[test]
    fn real_prompts_of_one_word_and_longer_prompts_are_sent() {
        for word in [
            "hello", "continue", "why", "fix", "hi", "thanks", "go", "yes", "explain", "-", "status?",
        ] {
            assert_eq!(of(word), None, "{word}");
        }
        assert_eq!(guess(&["stauts".to_owned(), "now".to_owned()]), None);
        assert_eq!(guess(&["list the files".to_owned()]), None);
        assert_eq!(guess(&[]), None);
    }

    #[test]
    fn the_distance_counts_a_swap_as_one() {
        assert_eq!(distance("stauts", "status"), 1);
        assert_eq!(distance("hello", "shell"), 2);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("diff", "diff"), 0);
    }

    #[test]
    fn the_message_says_how_to_send_the_word() {
        let message = guess(&["stauts".to_owned()]).unwrap().message();
        assert!(message.contains("did you mean `efr status`?"), "{message}");
        assert!(message.contains("`efr prompt stauts`"), "{message}");
    }
}
