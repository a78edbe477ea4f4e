//! The command line of `efr` (clap derive): `efr "prompt"`, `efr prompt ...` and the thin commands.
//!
//! `efr "why does the test fail?"` is the prompt command without its name: the root takes the same flags and
//! words as `efr prompt`, and a first word that names a subcommand wins (`efr prompt status` sends the word
//! "status" as a prompt; `efr "status of the build"`, one argument, is a prompt).
//!
//! Flags written in front of a command word belong to that command: `efr --json status` is `efr status --json`,
//! and a prompt's flag in front of a command (`efr --mode auto diff`) is refused, so no prompt is sent by mistake
//! ([`crate::args`] rewrites the command line before clap sees it). [`AFTER_HELP`] says so in `efr --help`.

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::daemon_cmd::DaemonCommand;
use crate::shell_init::InitShell;

/// The end of `efr --help`: which words are a prompt and which run a command.
pub const AFTER_HELP: &str = "\
A first word that names a command runs it; any other words are a prompt:
  efr \"status of the build\"     a prompt (one argument)
  efr prompt status              the prompt \"status\"
  efr --json status              the command: flags in front of a command are its flags (efr status --json)
  efr --mode auto diff           refused: --mode is a prompt's flag, not one of `efr diff`
  efr stauts                     refused: one word that looks like a command (did you mean `efr status`?); on a
                                 terminal efr asks; `efr prompt stauts` sends it
A command left running in the conversation's hidden shell (past its timeout) blocks its later shell calls:
  efr shell                      show it: the command, for how long, its input wait and the program's prompt
  efr shell stop                 stop it (SIGINT); `efr shell stop --close` closes the hidden shell instead
Exit codes: 0 done, 1 failed or bad input, 2 efrd not reachable, 130 interrupted.";

/// efr: a terminal AI coding agent; this is the client of efrd.
#[derive(Debug, Parser)]
#[command(
    name = "efr",
    version,
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    arg_required_else_help = true
)]
pub struct Cli {
    /// The command; absent: the words are a prompt.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A prompt given without `prompt`.
    #[command(flatten)]
    pub prompt: PromptArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Send a prompt to the terminal's conversation and show the turn.
    Prompt(PromptArgs),
    /// Show efrd's state: version, uptime, providers and logins, the sandbox.
    Status(JsonArg),
    /// List the models that a turn can use.
    Models(JsonArg),
    /// Log in to a provider (the key comes from stdin or a prompt, never from the command line).
    Login(LoginArgs),
    /// Remove a provider's stored login.
    Logout(LogoutArgs),
    /// Write a consistent copy of efrd's event log (efr.db) to PATH while efrd runs.
    Backup(BackupArgs),
    /// Phones over the tailnet: `efr device add`, `efr device list`, `efr device revoke ID`.
    Device {
        /// What to do.
        #[command(subcommand)]
        command: DeviceCommand,
    },
    /// The sandbox: `efr sandbox check`, `efr sandbox host`.
    Sandbox {
        /// What to do.
        #[command(subcommand)]
        command: SandboxCommand,
    },
    /// Find conversations by what was said or run in them: titles, prompts, answers and commands.
    Search(SearchArgs),
    /// Delete a conversation: its log keeps only that it was deleted; its snapshots, journals and scratch go.
    Delete(DeleteArgs),
    /// Take a conversation up in this terminal: a picker of the recent ones (a list in a pipe), or one by its id.
    Resume(ResumeArgs),
    /// Show what a turn changed in files.
    Diff(DiffArgs),
    /// Undo a turn: every file it changed back as it was, and the git refs it moved (docs/undo.md).
    Undo(UndoArgs),
    /// Re-apply an undone turn.
    Redo(UndoArgs),
    /// efr's trash, where a forced undo put the files it replaced: `efr trash list`, `efr trash restore ID`.
    Trash {
        /// What to do.
        #[command(subcommand)]
        command: TrashCommand,
    },
    /// Tell efrd whether you are at the terminal: `efr presence away`, `efr presence present` (docs/auto.md,
    /// "Presence"). Away, an approval question expires after `[permissions] away_question_secs`.
    Presence(PresenceArgs),
    /// Show what fills the model's context: the parts of the next request, the instruction files read, the counts.
    Context(ContextArgs),
    /// Compact the conversation's context now: a summary replaces its older turns in the model's copy (the
    /// transcript keeps everything).
    Compact(CompactArgs),
    /// Background jobs: `efr jobs` lists them, `efr jobs stop ID` ends every process of one, `efr jobs logs ID [-f]`
    /// prints its output (docs/jobs.md).
    #[command(args_conflicts_with_subcommands = true)]
    Jobs {
        /// What to do; absent: list.
        #[command(subcommand)]
        command: Option<JobsCommand>,
        /// The flags of `efr jobs` without a subcommand (list).
        #[command(flatten)]
        args: JobsListArgs,
    },
    /// The conversation's hidden shell: `efr shell [status]`, `efr shell stop [--close]`.
    #[command(args_conflicts_with_subcommands = true)]
    Shell {
        /// What to do; absent: status.
        #[command(subcommand)]
        command: Option<ShellCommand>,
        /// The flags of `efr shell` without a subcommand (status).
        #[command(flatten)]
        args: ShellArgs,
    },
    /// The project registry: `efr projects` lists it, `efr projects add PATH [--name N] [--git-root]`,
    /// `efr projects remove PATH`. A terminal's prompts go to the conversation of the project of its folder.
    #[command(args_conflicts_with_subcommands = true)]
    Projects {
        /// What to do; absent: list.
        #[command(subcommand)]
        command: Option<ProjectsCommand>,
        /// The flags of `efr projects` without a subcommand (list).
        #[command(flatten)]
        args: JsonArg,
    },
    /// efrd's config: `efr config reload`.
    Config {
        /// What to do.
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Print the shell integration: `eval "$(efr shell-init zsh)"`.
    ShellInit {
        /// The shell.
        shell: InitShell,
    },
    /// Install, remove or run efrd.
    Daemon {
        /// What to do.
        #[command(subcommand)]
        command: DaemonCommand,
    },
    /// Print the shell completions of efr: `efr completions bash > ~/.local/share/bash-completion/completions/efr`.
    Completions {
        /// The shell.
        shell: CompletionShell,
    },
    /// Write efr's man pages (efr.1 and one per subcommand) into DIR; the package and its tests build them so.
    #[command(hide = true)]
    ManPages {
        /// The folder the pages go to (it must exist).
        dir: std::path::PathBuf,
    },
}

/// The shells `efr completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    /// bash (bash-completion's folder, or `source` it).
    Bash,
    /// zsh (a `_efr` file in a folder of `$fpath`).
    Zsh,
    /// fish (`~/.config/fish/completions/efr.fish`).
    Fish,
}

/// `efr device ...` (docs/remote.md).
#[derive(Debug, Subcommand)]
pub enum DeviceCommand {
    /// Pair a phone: show a QR code, then the phone's facts, and ask.
    Add {
        /// The device's name; absent: the name the phone sends.
        #[arg(long)]
        name: Option<String>,
    },
    /// List the paired devices.
    List(JsonArg),
    /// Revoke a device: it can no longer connect, and its connections close.
    Revoke {
        /// The device's id (from `efr device list`).
        id: String,
        /// Print the result as JSON (one line) for scripts.
        #[arg(long)]
        json: bool,
    },
}

/// `efr projects ...` (README.md, "Projects and routing").
#[derive(Debug, Subcommand)]
pub enum ProjectsCommand {
    /// List the registered projects and the registry file.
    List(JsonArg),
    /// Register a folder as a project (a relative PATH is taken from here).
    Add {
        /// The folder.
        path: std::path::PathBuf,
        /// A name to show for it.
        #[arg(long, value_name = "N")]
        name: Option<String>,
        /// Register the root of the git repository that holds PATH instead.
        #[arg(long)]
        git_root: bool,
        /// Print the result as JSON (one line) for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Remove the project whose root is PATH (the folder itself is not touched).
    Remove {
        /// The project's root.
        path: std::path::PathBuf,
        /// Print the result as JSON (one line) for scripts.
        #[arg(long)]
        json: bool,
    },
}

/// `efr trash` (docs/undo.md, "The trash").
#[derive(Debug, Subcommand)]
pub enum TrashCommand {
    /// List the files in the trash, newest undo first, with their ids and where each was.
    List(JsonArg),
    /// Put a file back where it was (or at `--to`); a path that exists is never overwritten.
    Restore {
        /// The entry's id (from `efr trash list`).
        id: String,
        /// Put it here instead (a relative path is taken from here).
        #[arg(long, value_name = "PATH")]
        to: Option<std::path::PathBuf>,
        /// Print the result as JSON (one line) for scripts.
        #[arg(long)]
        json: bool,
    },
}

/// `efr jobs [--all] [--json]`.
#[derive(Debug, Args)]
pub struct JobsListArgs {
    /// Only this conversation's jobs (its id); absent: every conversation's.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Print the result as JSON (jobs.list's result, one line).
    #[arg(long)]
    pub json: bool,
}

/// `efr jobs ...`.
#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// List the jobs, newest first (the default).
    List(JobsListArgs),
    /// Stop a job: every process of it ends.
    Stop {
        /// The job (j1, j2, ... as `efr jobs` shows it).
        id: String,
        /// Its conversation, when more than one has a job of that id.
        #[arg(long, value_name = "ID")]
        conversation: Option<String>,
        /// Print the result as JSON (one line) for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Print a job's output (its file); with `-f`, follow it until the job ends.
    Logs {
        /// The job.
        id: String,
        /// Its conversation, when more than one has a job of that id.
        #[arg(long, value_name = "ID")]
        conversation: Option<String>,
        /// Follow the output as the job writes it, until it ends.
        #[arg(short, long)]
        follow: bool,
    },
}

/// `efr presence`.
#[derive(Debug, Args)]
pub struct PresenceArgs {
    /// away or present.
    #[arg(value_enum)]
    pub presence: PresenceArg,
    /// Only this conversation (its id); absent: each conversation that had a prompt since efrd started.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Print the result as JSON (one line) for scripts.
    #[arg(long)]
    pub json: bool,
}

/// The presence of `efr presence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PresenceArg {
    /// You left: questions expire after `[permissions] away_question_secs`.
    Away,
    /// You are back: questions wait for your answer.
    Present,
}

/// `efr backup`.
#[derive(Debug, Args)]
pub struct BackupArgs {
    /// Where the copy goes: a file that does not exist yet (a relative path is taken from here).
    pub path: std::path::PathBuf,
    /// Print the result as JSON (one line) for scripts.
    #[arg(long)]
    pub json: bool,
}

/// `--json`: print the result as JSON, one line.
#[derive(Debug, Args)]
pub struct JsonArg {
    /// Print the result as JSON (one line) for scripts.
    #[arg(long)]
    pub json: bool,
}

/// The permission modes a prompt may ask for (docs/architecture.md, "Policy and modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Ask before every call that runs a command or changes a file.
    Manual,
    /// Run read-only commands and edits in the project; ask before the rest.
    Cautious,
    /// Run every call contained in the sandbox; judge exits.
    Auto,
    /// Run as the user with no sandbox and no question (floors still hold).
    Full,
}

/// The shells the integration passes with `--shell`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    /// bash.
    Bash,
    /// zsh.
    Zsh,
}

/// The flags and words of a prompt.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The permission mode of the turn.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// The model of the turn (see `efr models`).
    #[arg(long)]
    pub model: Option<String>,
    /// The reasoning effort of the turn, one of the model's efforts.
    #[arg(long)]
    pub effort: Option<String>,
    /// Start a new conversation instead of the terminal's.
    #[arg(long, conflicts_with = "conversation")]
    pub new: bool,
    /// Send to this conversation (its id).
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Print each event as JSON, one per line.
    #[arg(long)]
    pub json: bool,
    /// Seconds without a key at the terminal before efr tells efrd you are away, so a question of the turn expires
    /// (after efrd's `[permissions] away_question_secs`) instead of waiting; default 600, 0: never.
    #[arg(long, value_name = "SECS")]
    pub away_after: Option<u64>,
    /// The user's shell (shell integration).
    #[arg(long, value_enum, hide = true)]
    pub shell: Option<ShellArg>,
    /// The terminal's last command line (shell integration).
    #[arg(long, hide = true, value_name = "LINE", allow_hyphen_values = true)]
    pub last_command: Option<String>,
    /// The last command's exit status (shell integration).
    #[arg(long, hide = true, value_name = "N", allow_hyphen_values = true)]
    pub last_status: Option<i32>,
    /// A recent command line, oldest first, `LINE` or `STATUS<TAB>LINE` (shell integration; repeatable).
    #[arg(long, hide = true, value_name = "LINE", allow_hyphen_values = true)]
    pub recent: Vec<String>,
    /// The prompt (`-`: read it from stdin).
    #[arg(value_name = "PROMPT", trailing_var_arg = true)]
    pub text: Vec<String>,
}

/// `efr login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    /// Log in with an API key (read from stdin when it is not a terminal, else asked with echo off).
    #[arg(long, required = true)]
    pub api_key: bool,
    /// The provider.
    #[arg(long, value_enum, default_value = "openai-api")]
    pub provider: ProviderArg,
    /// Store the key without checking it with the provider first.
    #[arg(long)]
    pub no_check: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The providers that take an API key login (spec: admin.login_api_key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    /// OpenAI's API.
    #[value(name = "openai-api")]
    OpenaiApi,
    /// Anthropic's API.
    #[value(name = "anthropic-api")]
    AnthropicApi,
}

impl ProviderArg {
    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::OpenaiApi => "openai-api",
            Self::AnthropicApi => "anthropic-api",
        }
    }
}

/// `efr logout`.
#[derive(Debug, Args)]
pub struct LogoutArgs {
    /// The provider; absent: the active one.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderArg>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `efr config ...`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Read config.toml again; says what applied, what needs a restart, or where the file is wrong.
    Reload(JsonArg),
}

/// `efr sandbox ...`.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Probe the sandbox: every check with pass or fail and the reason.
    Check(JsonArg),
    /// Which network rule decides a host for contained calls (exit 0 when allowed, 1 when refused).
    Host(HostArgs),
    /// Install the AppArmor profile that lets bubblewrap and efr-launcher make user namespaces on Ubuntu 23.10 and
    /// later (needs root; otherwise prints the profile and how to install it).
    SetupApparmor(SetupApparmorArgs),
}

/// `efr sandbox setup-apparmor`.
#[derive(Debug, Args)]
pub struct SetupApparmorArgs {
    /// Print the profile and how to install it; write nothing.
    #[arg(long)]
    pub print: bool,
}

/// `efr sandbox host`.
#[derive(Debug, Args)]
pub struct HostArgs {
    /// The host, with an optional port (443 when absent): `github.com`, `registry.example.com:8443`,
    /// `[::1]:443`; a URL's host and port are taken from it.
    #[arg(value_name = "HOST[:PORT]")]
    pub host: String,
    /// Print the result as JSON (one line) for scripts.
    #[arg(long)]
    pub json: bool,
}

/// `efr search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The words to find (each matches any part of a word; every word must match).
    #[arg(required = true, value_name = "QUERY")]
    pub query: Vec<String>,
    /// Search only this conversation (its hits, newest first).
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// The most rows (1 to 200; with --conversation, hits: 1 to 50).
    #[arg(long)]
    pub limit: Option<u32>,
    /// Print the result as JSON (one line).
    #[arg(long)]
    pub json: bool,
}

/// `efr diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Only the changed files and their line counts.
    #[arg(long)]
    pub stat: bool,
    /// The conversation; absent: the terminal's.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// The turn; absent: the newest turn that ended.
    #[arg(long, value_name = "ID")]
    pub turn: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `efr undo` and `efr redo`.
#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The turn; absent: the newest that ended (for redo: the newest undone).
    #[arg(long, value_name = "ID")]
    pub turn: Option<String>,
    /// The conversation; absent: the terminal's.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Show what would change, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Undo files changed since the turn too; their current versions go to efr's trash.
    #[arg(long)]
    pub force: bool,
    /// List the conversation's turns and whether each can be undone.
    #[arg(long)]
    pub list: bool,
    /// Do not ask for a confirmation on a terminal.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `efr context`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// The conversation; absent: the terminal's.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Measure against this model's limits (see `efr models`); absent: the default model.
    #[arg(long)]
    pub model: Option<String>,
    /// Print the result as JSON (conversation.context's result, one line).
    #[arg(long)]
    pub json: bool,
}

/// `efr resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The conversation's id, or its first 4 or more hex digits; absent: pick one of the recent ones.
    pub id: Option<String>,
    /// Take it although another open terminal holds it.
    #[arg(long)]
    pub take: bool,
    /// Print only the folder to change to (when this one is not in the conversation's project), for `,resume`.
    #[arg(long)]
    pub print_dir: bool,
    /// Print the result as JSON (conversation.resume's result, one line).
    #[arg(long)]
    pub json: bool,
}

/// `efr delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// The conversation's id (a UUID).
    pub id: String,
    /// Delete it although another open terminal holds it.
    #[arg(long)]
    pub force: bool,
    /// Stop its running turn and drop its queued prompts first (else a busy conversation is refused).
    #[arg(long)]
    pub stop: bool,
    /// Print the result as JSON (conversation.delete's result, one line).
    #[arg(long)]
    pub json: bool,
}

/// `efr compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The conversation; absent: the terminal's.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// What the summary should keep above all, in your words.
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
    /// Print the result as JSON (conversation.compact's result, one line).
    #[arg(long)]
    pub json: bool,
}

/// `efr shell ...`.
#[derive(Debug, Subcommand)]
pub enum ShellCommand {
    /// Show the command that holds the hidden shell: since when, its input wait and the program's prompt.
    Status(ShellArgs),
    /// Stop the command that holds the hidden shell (SIGINT), waiting up to 5 s for it to end.
    Stop(ShellStopArgs),
}

/// The flags of `efr shell [status]`.
#[derive(Debug, Args)]
pub struct ShellArgs {
    /// The conversation; absent: the terminal's.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Print the result as JSON (shell.status's result, one line).
    #[arg(long)]
    pub json: bool,
}

/// The flags of `efr shell stop`.
#[derive(Debug, Args)]
pub struct ShellStopArgs {
    /// Close the hidden shell instead of sending SIGINT to the command (for one that ignores SIGINT).
    #[arg(long)]
    pub close: bool,
    /// The conversation; absent: the terminal's.
    #[arg(long, value_name = "ID")]
    pub conversation: Option<String>,
    /// Print the result as JSON: `{"call_id", "command", "close", "ended"}`, one line.
    #[arg(long)]
    pub json: bool,
}
