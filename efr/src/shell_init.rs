//! `efr shell-init bash|zsh`: the shell integration (defines `,` and `,new`). Being built (issue 8, item 3).

/// The shells `efr shell-init` writes an integration for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InitShell {
    /// GNU bash (PROMPT_COMMAND and history).
    Bash,
    /// zsh (precmd and preexec).
    Zsh,
}

/// The script that `eval "$(efr shell-init <shell>)"` runs.
pub fn script(shell: InitShell) -> String {
    format!("# efr shell-init {shell:?}: not built yet\n")
}
