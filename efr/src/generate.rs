//! `efr completions SHELL` and the man pages, both from the clap definitions of [`crate::cli`], so they never drift
//! from the command line: clap_complete writes the completions, clap_mangen the pages (efr(1) and one page per
//! visible subcommand, `efr-sandbox-check.1` for `efr sandbox check`).

use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionShell};
use crate::report;

/// Prints the completions of `shell` to stdout.
#[must_use]
pub fn completions(shell: CompletionShell) -> ExitCode {
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    let mut text = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "efr", &mut text);
    crate::out::print_exact(&String::from_utf8_lossy(&text));
    ExitCode::SUCCESS
}

/// Writes efr's man pages into `dir` and lists them on stdout, one path a line.
#[must_use]
pub fn man_pages(dir: &Path) -> ExitCode {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let mut written = Vec::new();
    match write_pages(&root, dir, &mut written) {
        Ok(()) => {
            crate::out::print_exact(&written.iter().map(|page| format!("{page}\n")).collect::<String>());
            ExitCode::SUCCESS
        }
        Err(error) => {
            report::error(&format!("cannot write the man pages into {}: {error}", dir.display()));
            ExitCode::from(report::FAILED)
        }
    }
}

/// Writes the page of `command` and those of its visible subcommands, depth first.
fn write_pages(command: &clap::Command, dir: &Path, written: &mut Vec<String>) -> std::io::Result<()> {
    for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    let page = clap_mangen::Man::new(command.clone())
        .source(format!("efr {}", env!("CARGO_PKG_VERSION")))
        .manual("efr manual");
    let path = page.generate_to(dir)?;
    written.push(path.display().to_string());
    Ok(())
}
