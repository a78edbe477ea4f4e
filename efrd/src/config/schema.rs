//! The typed sections of `config.toml`, with their defaults.
//!
//! Every section and every key is optional: a missing file, a missing section and a missing key all mean the
//! default, so `Config::default()` is exactly what an empty file gives. Keys that this efrd does not know are not
//! errors (serde ignores them and [`super::parse`] turns each into a warning), so an older efrd still reads a file
//! written for a newer one.
//!
//! ```toml
//! [model]
//! provider = "anthropic-api"        # openai-api | anthropic-api | openai-compat
//! model = "claude-sonnet-4-5"       # absent: the provider's default from the model catalog
//! effort = "medium"                 # a plain string, checked against the model's efforts by the catalog
//!
//! [[model.extra_models]]            # models that the builtin catalog does not know, source "config"
//! id = "qwen3-coder"
//! efforts = ["low", "high"]
//! default_effort = "low"            # must be one of efforts
//! context_window = 131072           # tokens
//!
//! [providers.openai-compat]
//! base_url = "http://127.0.0.1:8080/v1"
//! key_required = false
//! retry = { max_attempts = 3 }
//! idle_timeout_secs = 600           # no byte for this long fails the model call; default 300
//!
//! [permissions]
//! default_mode = "cautious"         # manual | cautious | auto | full
//! allow_full = true                 # full mode may run at all; default false
//! allow_full_as_root = true         # also when efrd runs as root (a throwaway container); default false
//! away_question_secs = 120          # an away user's approval question expires after this; default 120
//! unanswered_away_secs = 1800       # a question unanswered this long, with no input, means away; 0: never
//!
//! [shell]
//! program = "zsh"                   # bash | zsh: the hidden shell of the model's shell calls; default bash
//!
//! [sandbox]
//! extra_masks = ["/home/ada/.vault-token"]  # absolute paths a contained call sees masked, after the defaults
//!
//! [instructions]                    # see config/instructions.rs
//! max_bytes = 32768                 # the most bytes of AGENTS.md text a request carries
//!
//! [network]                         # the network of auto mode's contained calls, through efr-proxy
//! allow = ["crates.io", "**.crates.io", "github.com", "*.example.com:8443"]  # host patterns; none: no network
//! deny = ["gist.github.com"]        # checked first: deny wins over allow
//! netview = true                    # false: report `netview_off` in the sandbox status
//!
//! [bus]                             # the session bus of auto mode's contained calls, through efr-bus-proxy
//! enabled = true                    # false: no bus in contained calls (`bus_proxy_off: config`)
//! talk = ["org.gnome.Shell.Screenshot"]  # names they may call and hear, added to the default (notifications, portals)
//! own = ["org.example.Test.*"]      # names they may also own (RequestName)
//! see = ["org.example.Seen"]        # names they may only see
//! call = ["org.freedesktop.secrets=org.freedesktop.Secret.Service.SearchItems@/org/freedesktop/secrets"]
//! broadcast = ["org.example.Clock=org.example.Clock.Tick@/"]  # signals they may receive
//!
//! [undo]                            # a turn's snapshots for undo (docs/undo.md)
//! enabled = true                    # false: snapshots find changes only, and turn.undo refuses with `off`
//! max_files = 100000                # the most files one snapshot covers
//! max_bytes = 2147483648            # the most bytes one snapshot covers (2 GiB)
//! max_file_bytes = 67108864         # the biggest file covered (64 MiB); a bigger one is not_covered
//! max_secs = 30                     # the longest one snapshot's walk takes
//! keep_turns = 30                   # the newest turns per conversation whose snapshots efrd keeps
//! collect_secs = 600                # how often efrd collects old snapshots, journals, scratch and trash while it runs
//! trash_max_bytes = 4294967296      # the most bytes efr's trash holds (4 GiB); the oldest undos' files go first
//! trash_days = 30                   # how long the trash keeps a file
//!
//! [context]                         # compaction of the model's context, see config/context.rs
//! trigger_percent = 80              # compact at this share of the model's window
//!
//! [auto]                            # the judges of auto mode's exits, see config/auto.rs
//! classifier_model = "gpt-5-mini"   # absent: the provider's small model; "none": the turn's model judges
//! judge_timeout_secs = 20           # a model judge that does not answer in time denies
//!
//! [daemon]                          # every daemon.* key needs a restart
//! log_level = "info"                # a tracing filter directive, such as "info" or "efrd=debug,warn"
//! idle_exit_secs = 600              # absent: never exit when idle
//! subscriber_queue = 1024           # events buffered per subscriber before it is ended with overflow
//! conversation_idle_secs = 1800     # an idle conversation's actor and hidden shell are let go after this
//!
//! [remote]                          # the tailnet listener of the phone (docs/remote.md); needs a restart
//! enabled = true                    # default false: no listener
//! port = 8765                       # on the tailnet IPv4 address only
//! tailscaled_socket = "/run/tailscale/tailscaled.sock"  # tailscaled's LocalAPI
//! ping_interval_secs = 25           # efrd pings each phone this often; two unanswered pings close it (1 to 300)
//! token_lifetime_secs = 300         # how long a pairing's token is good (1 to 300: the spec's 5 minutes at most)
//! ```

use efr_protocol::internal::bus_policy::{NamePattern, Rule as BusPolicyRule};
use efr_protocol::internal::host::HostPattern;
use serde::{Deserialize, Serialize};

pub use super::provider::ProviderId;

/// The whole `config.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `[model]`: which provider and model a turn uses when the prompt names none.
    pub model: ModelSection,
    /// `[providers.*]`: per-provider endpoints and retry.
    pub providers: ProvidersSection,
    /// `[permissions]`: the default permission mode.
    pub permissions: PermissionsSection,
    /// `[daemon]`: process settings; each needs a restart to change.
    pub daemon: DaemonSection,
    /// `[shell]`: the hidden shell of each conversation.
    pub shell: ShellSection,
    /// `[sandbox]`: what contained calls see.
    pub sandbox: SandboxSection,
    /// `[instructions]`: the project instructions' size bound and the short variant (`config/instructions.rs`).
    pub instructions: super::instructions::InstructionsSection,
    /// `[network]`: which hosts contained calls may reach through efr-proxy.
    pub network: NetworkSection,
    /// `[bus]`: what contained calls may do on their filtered session bus, beyond the default policy.
    pub bus: BusSection,
    /// `[remote]`: the tailnet listener of the phone; each key needs a restart.
    pub remote: RemoteSection,
    /// `[undo]`: the bounds of a turn's snapshots for undo.
    pub undo: UndoSection,
    /// `[auto]`: the judges of auto mode's exits (`config/auto.rs`).
    pub auto: super::auto::AutoSection,
    /// `[context]`: when a conversation's context is compacted (`config/context.rs`).
    pub context: super::context::ContextSection,
    /// `[jobs]`: background jobs' notices and moves (docs/jobs.md).
    pub jobs: JobsSection,
    /// `[routing]`: which conversation a terminal's prompt goes to (README.md, "Projects and routing").
    pub routing: RoutingSection,
}

/// `[routing]`: routing by scope (docs/adr/0030-projects-and-routing.md). A change applies to the next prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RoutingSection {
    /// After how long without an event a terminal's conversation is left for a new one (the switch `new` with the
    /// reason `idle`), and no longer picked up, in seconds; default 28,800 (8 hours: a conversation of the same
    /// working day goes on, yesterday's does not). 0 never leaves one for idleness.
    pub idle_after_secs: u64,
}

impl Default for RoutingSection {
    fn default() -> Self {
        Self {
            idle_after_secs: 8 * 3600,
        }
    }
}

impl RoutingSection {
    /// The idle gap; `None` when idleness never starts a new conversation.
    #[must_use]
    pub fn idle_after(self) -> Option<std::time::Duration> {
        (self.idle_after_secs > 0).then(|| std::time::Duration::from_secs(self.idle_after_secs))
    }
}

/// `[jobs]`: background jobs (docs/jobs.md). A change applies at once, to notices and previews that come after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobsSection {
    /// A job's notice may wake the model (a turn of its own); false: every notice waits for the next prompt, held
    /// with the reason `wakes_off`.
    pub wakes: bool,
    /// How long the token of a call.background preview may be confirmed, in seconds.
    pub preview_secs: u64,
}

impl Default for JobsSection {
    fn default() -> Self {
        Self {
            wakes: true,
            preview_secs: 60,
        }
    }
}

/// `[remote]`: the tailnet WebSocket that a paired phone connects to (docs/remote.md). Read at the start: a change
/// needs a restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RemoteSection {
    /// Whether efrd listens on the tailnet at all; default false.
    pub enabled: bool,
    /// The TCP port on the tailnet IPv4 address; default 8765.
    pub port: u16,
    /// The Unix socket of tailscaled's LocalAPI; default `/run/tailscale/tailscaled.sock`.
    pub tailscaled_socket: std::path::PathBuf,
    /// How often efrd pings each WebSocket, in seconds; two pings without their pong close the connection with 1001.
    /// [`PING_INTERVAL_RANGE`], default 25 (docs/remote.md, "The connection, for client authors").
    pub ping_interval_secs: u64,
    /// How long a pairing's token is good, in seconds. [`TOKEN_LIFETIME_RANGE`], default 300: the spec's 5 minutes
    /// (docs/protocol.md, "Remote devices") are the longest; a shorter one is allowed.
    pub token_lifetime_secs: u64,
}

/// The allowed `[remote] ping_interval_secs`: a dead phone's connection stays open at most two intervals.
pub const PING_INTERVAL_RANGE: std::ops::RangeInclusive<u64> = 1..=300;

/// The allowed `[remote] token_lifetime_secs`: never longer than the spec's 5 minutes.
pub const TOKEN_LIFETIME_RANGE: std::ops::RangeInclusive<u64> = 1..=300;

impl Default for RemoteSection {
    fn default() -> Self {
        Self {
            enabled: false,
            port: 8765,
            tailscaled_socket: "/run/tailscale/tailscaled.sock".into(),
            ping_interval_secs: 25,
            token_lifetime_secs: 300,
        }
    }
}

/// `[undo]`: the bounds of a turn's covered snapshots (docs/undo.md). A change applies to turns that start after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UndoSection {
    /// Covered snapshots; false: a turn's snapshots only find its changes, and turn.undo refuses with `off`.
    pub enabled: bool,
    /// The most files one snapshot records.
    pub max_files: usize,
    /// The most bytes of file contents one snapshot covers.
    pub max_bytes: u64,
    /// The biggest file (in bytes) a snapshot covers.
    pub max_file_bytes: u64,
    /// The longest one snapshot's walk takes, in seconds.
    pub max_secs: u64,
    /// The newest turns of each conversation whose snapshots are kept (so they can be undone); older turns' are
    /// removed at efrd's start and by the collection while it runs, with the contents no kept snapshot holds.
    pub keep_turns: usize,
    /// How often, in seconds, the collection runs while efrd runs (at least 1): old snapshots, the undo journals of
    /// their turns, the `$SCRATCH` folders of conversations that no longer exist, the trash past its age.
    pub collect_secs: u64,
    /// The most bytes efr's trash holds; past it, the oldest undos' files are removed first.
    pub trash_max_bytes: u64,
    /// How many days the trash keeps a file.
    pub trash_days: u64,
}

impl UndoSection {
    /// The bounds of a turn's covered snapshots; `None` when undo is off.
    #[must_use]
    pub fn undo_bounds(&self) -> Option<efr_snapshot::UndoBounds> {
        self.enabled.then(|| efr_snapshot::UndoBounds {
            max_files: self.max_files,
            max_bytes: self.max_bytes,
            max_file_bytes: self.max_file_bytes,
            max_time: std::time::Duration::from_secs(self.max_secs),
        })
    }

    /// The bounds of the trash.
    #[must_use]
    pub fn trash_bounds(&self) -> efr_snapshot::TrashBounds {
        efr_snapshot::TrashBounds {
            max_bytes: self.trash_max_bytes,
            max_age: std::time::Duration::from_secs(self.trash_days.saturating_mul(86_400)),
        }
    }
}

impl Default for UndoSection {
    fn default() -> Self {
        Self {
            enabled: true,
            max_files: 100_000,
            max_bytes: 2 << 30,
            max_file_bytes: 64 << 20,
            max_secs: 30,
            keep_turns: 30,
            collect_secs: 600,
            trash_max_bytes: 4 << 30,
            trash_days: 30,
        }
    }
}

/// `[network]`: the host rules of contained calls (docs/network.md). Each entry is a host pattern
/// ([`HostPattern`]: `example.com`, `*.example.com`, `**.example.com` or `*`, with an optional `:port`, 443 when
/// absent); a pattern that does not parse is a config error at its line, column and key (`network.allow[2]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NetworkSection {
    /// Hosts that auto mode's contained calls may reach through efr-proxy, one `host` grant each; empty (the
    /// default): contained calls have no network. A change applies to calls that start after it.
    pub allow: Vec<HostPattern>,
    /// Hosts that contained calls may never reach, checked before `allow` (deny wins). efrd adds to it the hosts
    /// that the user's credential files and helpers hold a token for, unless `allow` names them exactly (the
    /// `network` module's `credentials`).
    pub deny: Vec<HostPattern>,
    /// The network view of contained calls; false reports `netview_off` in the sandbox status. Default true.
    pub netview: bool,
}

impl Default for NetworkSection {
    fn default() -> Self {
        Self {
            allow: Vec::new(),
            deny: Vec::new(),
            netview: true,
        }
    }
}

/// `[bus]`: the rules that auto mode's contained calls get on their filtered session bus (docs/bus.md, "Policy"),
/// added to the default policy (talk to `org.freedesktop.Notifications` and `org.freedesktop.portal.*`). Names are
/// [`BusName`]s, rules [`BusRule`]s; one that does not parse is a config error at its line, column and key
/// (`bus.call[1]`). A change applies to calls that start after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BusSection {
    /// The filtered session bus of auto's contained calls; false: they get no bus, and the sandbox status says
    /// `bus_proxy_off: config`. Default true.
    pub enabled: bool,
    /// Names the calls may see (their owner is visible) but not talk to.
    pub see: Vec<BusName>,
    /// Names the calls may talk to: method calls, their replies and signals pass.
    pub talk: Vec<BusName>,
    /// Names the calls may also own (`RequestName`).
    pub own: Vec<BusName>,
    /// Methods the calls may call on names they may not talk to: `NAME=INTERFACE.MEMBER@PATH`.
    pub call: Vec<BusRule>,
    /// Signals the calls may receive from names they may not talk to: `NAME=INTERFACE.MEMBER@PATH`.
    pub broadcast: Vec<BusRule>,
}

impl Default for BusSection {
    fn default() -> Self {
        Self {
            enabled: true,
            see: Vec::new(),
            talk: Vec::new(),
            own: Vec::new(),
            call: Vec::new(),
            broadcast: Vec::new(),
        }
    }
}

/// A bus name as written in `[bus]`: `org.foo.Bar`, or `org.foo.*` for `org.foo` and every name under it; checked
/// when read by the bus proxy's own grammar (`efr_protocol::internal::bus_policy::NamePattern`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BusName(String);

/// A call or broadcast rule as written in `[bus]`: `NAME=INTERFACE.MEMBER@PATH` (`INTERFACE.MEMBER` may be `*` or
/// `INTERFACE.*`; `@PATH` may be left out, or end in `/*`); checked by `efr_protocol::internal::bus_policy::Rule`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct BusRule(String);

impl TryFrom<String> for BusName {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        NamePattern::parse(&text).map_err(|e| format!("{text:?} is not a bus name ({e})"))?;
        Ok(Self(text))
    }
}

impl TryFrom<String> for BusRule {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        BusPolicyRule::parse(&text).map_err(|e| format!("{text:?} is not a bus rule ({e})"))?;
        Ok(Self(text))
    }
}

impl From<BusName> for String {
    fn from(name: BusName) -> Self {
        name.0
    }
}

impl From<BusRule> for String {
    fn from(rule: BusRule) -> Self {
        rule.0
    }
}

impl BusName {
    /// The name as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl BusRule {
    /// The rule as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SandboxSection {
    /// Paths that every contained call sees masked, after the default list (credential stores, `/run/user/$UID`,
    /// efr's own roots); absolute, normal (no `.` or `..`), not `/`. A change applies to calls that start after it.
    pub extra_masks: Vec<std::path::PathBuf>,
}

/// `[shell]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ShellSection {
    /// The shell that runs the model's shell calls (found on `PATH`); default `bash`. A change applies to hidden
    /// shells started after it: a running one keeps its shell until it is closed.
    pub program: ShellProgram,
}

/// The shells a hidden shell can be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShellProgram {
    /// GNU bash.
    #[default]
    Bash,
    /// zsh.
    Zsh,
}

/// `[model]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelSection {
    /// The provider of turns that name no model; absent: the catalog's default provider.
    pub provider: Option<ProviderId>,
    /// The model id; absent: the provider's default model in the catalog.
    pub model: Option<String>,
    /// The reasoning effort, a plain string (spec: "the effort is a plain string"); absent: the model's default.
    pub effort: Option<String>,
    /// `[[model.extra_models]]`: models added to `models.list` with source `config`.
    pub extra_models: Vec<ExtraModel>,
}

/// One `[[model.extra_models]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtraModel {
    /// The model id as the provider knows it; unique among the extra models.
    pub id: String,
    /// The efforts the model takes (plain strings); empty: the model takes no effort.
    #[serde(default)]
    pub efforts: Vec<String>,
    /// The effort used when none is given; must be one of `efforts`.
    #[serde(default)]
    pub default_effort: Option<String>,
    /// The context window in tokens; absent: unknown, and no context limit is reported.
    #[serde(default)]
    pub context_window: Option<u64>,
}

/// `[providers]`: one optional table per provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProvidersSection {
    /// `[providers.openai-api]`.
    #[serde(rename = "openai-api")]
    pub openai_api: ProviderSection,
    /// `[providers.anthropic-api]`.
    #[serde(rename = "anthropic-api")]
    pub anthropic_api: ProviderSection,
    /// `[providers.openai-compat]`.
    #[serde(rename = "openai-compat")]
    pub openai_compat: CompatSection,
}

/// `[providers.openai-api]` and `[providers.anthropic-api]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderSection {
    /// The API's base URL (`http` or `https`); absent: the provider's public endpoint. Tests point it at the
    /// scripted model server on loopback.
    pub base_url: Option<String>,
    /// Retry of 429, 5xx and transport errors.
    pub retry: RetrySection,
    /// Seconds without a byte from the provider (before its answer starts or inside its stream) after which the
    /// model call fails with a timeout, 1 to [`MAX_IDLE_TIMEOUT_SECS`]; absent: 300.
    pub idle_timeout_secs: Option<u64>,
}

/// `[providers.openai-compat]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompatSection {
    /// The server's base URL, such as `http://127.0.0.1:8080/v1`; needed before the provider can be used.
    pub base_url: Option<String>,
    /// Whether the server needs an API key; default false, as local servers (llama.cpp, Ollama) take none.
    pub key_required: bool,
    /// Retry of 429, 5xx and transport errors.
    pub retry: RetrySection,
    /// As under `[providers.openai-api]`: a local server may need longer for its first token.
    pub idle_timeout_secs: Option<u64>,
}

/// `retry = { max_attempts = N }` under a provider.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetrySection {
    /// Attempts in all, the first one included, 1 to [`MAX_ATTEMPTS_LIMIT`]; absent: the model layer's default.
    pub max_attempts: Option<u32>,
}

/// The largest `idle_timeout_secs` accepted: an hour without a byte is a dead connection, not a slow model.
pub const MAX_IDLE_TIMEOUT_SECS: u64 = 3600;

/// The largest `max_attempts` accepted: more would keep a turn waiting for minutes with backoff.
pub const MAX_ATTEMPTS_LIMIT: u32 = 10;

/// A permission mode (docs/architecture.md, "Policy and modes"), by its config name.
/// Ordered from the tightest to the loosest (a change to a later one loosens permissions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Ask before every call that runs a command or changes a file.
    Manual,
    /// Run read-only commands and edits inside the project; ask before anything else.
    #[default]
    Cautious,
    /// Run every call contained in the sandbox and judge exits.
    Auto,
    /// Run as the user with no sandbox and no question; the floors still hold.
    Full,
}

impl Mode {
    /// The config and wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Cautious => "cautious",
            Self::Auto => "auto",
            Self::Full => "full",
        }
    }
}

/// `[permissions]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PermissionsSection {
    /// The mode of a turn whose prompt names none; default `cautious`.
    pub default_mode: Mode,
    /// Whether a turn may run in full mode at all (admin.status `full_mode.allowed`); default false. A reload that
    /// turns it off stops the jobs that full mode's calls started (docs/adr/0029-full-mode.md).
    pub allow_full: bool,
    /// Whether full mode may run when efrd runs as root, which it refuses otherwise (full_refusal `root`); default
    /// false. For a throwaway container or VM where everything runs as root and the machine is the boundary.
    pub allow_full_as_root: bool,
    /// Seconds a question with a limit waits before it expires and its call does not run (full mode's guarded
    /// deletes); absent: the policy's own limit, 120 s.
    pub question_limit_secs: Option<u32>,
    /// Seconds an approval question waits while the conversation's user is away (presence.set, or efr's idle
    /// watch) before it expires with approval_expired `away: true` and its call does not run; absent:
    /// [`DEFAULT_AWAY_QUESTION_SECS`]. A user who becomes present before then keeps the question waiting.
    /// Source: docs/protocol.md, "The contract": "phase A"; docs/auto.md, "Presence".
    pub away_question_secs: Option<u32>,
    /// Seconds an approval question may wait unanswered, with no prompt or answer in its conversation, before efrd
    /// takes its user as away (presence_changed with source `timeout`; the question then waits
    /// `away_question_secs` more); absent: [`DEFAULT_UNANSWERED_AWAY_SECS`]; 0: never. efr's own idle watch (600 s
    /// with no key while it shows a turn) says away sooner; this one holds where no efr shows the turn.
    pub unanswered_away_secs: Option<u32>,
}

/// Seconds an unanswered question waits before its user is taken as away when `[permissions]
/// unanswered_away_secs` is absent: half an hour, three times efr's idle watch, so a terminal that shows the turn
/// says away first.
pub const DEFAULT_UNANSWERED_AWAY_SECS: u32 = 1800;

/// Seconds an away user's question waits when `[permissions] away_question_secs` is absent: two minutes, as long
/// as a question with a limit waits, so a user who stepped away briefly still finds it.
pub const DEFAULT_AWAY_QUESTION_SECS: u32 = 120;

impl PermissionsSection {
    /// `away_question_secs`, or its default; at least 1.
    #[must_use]
    pub fn away_question_secs(&self) -> u32 {
        self.away_question_secs.unwrap_or(DEFAULT_AWAY_QUESTION_SECS).max(1)
    }

    /// `unanswered_away_secs`, or its default; `None` for 0 (never).
    #[must_use]
    pub fn unanswered_away_secs(&self) -> Option<u32> {
        Some(self.unanswered_away_secs.unwrap_or(DEFAULT_UNANSWERED_AWAY_SECS)).filter(|&secs| secs > 0)
    }
}

/// `[daemon]`. Every key here needs a restart (see [`super::RESTART_SECTIONS`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DaemonSection {
    /// A `tracing` filter directive (`RUST_LOG` syntax), such as `info` or `efrd=debug,warn`; default `info`.
    pub log_level: String,
    /// Seconds with no connection and no running turn after which efrd exits (socket activation starts it again);
    /// absent: never. At least 1.
    pub idle_exit_secs: Option<u64>,
    /// Events queued per subscriber before its stream ends with `busy` `{"overflow": true}`
    /// (docs/architecture.md, "The request lifecycle"); [`SUBSCRIBER_QUEUE_RANGE`], default 1024.
    pub subscriber_queue: usize,
    /// Seconds a conversation stays live with nothing to do (no turn, no queued prompt, no subscriber, no command
    /// left running) before efrd lets it go: its hidden shell closes and its memory is freed; the next request loads
    /// it from the log again. At least 1; default 1800.
    pub conversation_idle_secs: u64,
    /// Whether the search index (SQLite FTS5) is kept; default true. False: what is searchable is still stored and
    /// a search reads it all, so it finds the same, more slowly on a long log (within its caps); turned on again,
    /// efrd indexes what was stored meanwhile (docs/adr/0025-search-index.md).
    pub search_index: bool,
}

/// The accepted values of `daemon.subscriber_queue`.
pub const SUBSCRIBER_QUEUE_RANGE: std::ops::RangeInclusive<usize> = 16..=1_048_576;

impl Default for DaemonSection {
    fn default() -> Self {
        Self {
            log_level: "info".to_owned(),
            idle_exit_secs: None,
            subscriber_queue: 1024,
            conversation_idle_secs: 1800,
            search_index: true,
        }
    }
}
