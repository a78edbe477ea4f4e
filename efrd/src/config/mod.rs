//! Roots and `config.toml`: where efrd keeps its files, and the settings the user wrote.
//!
//! - [`roots`]: the four roots (config, data, state, runtime) and where each came from, resolved from the
//!   environment by a pure function; creating the folders (0700) is a separate step.
//! - [`schema`]: the typed sections of `config.toml` (`[model]`, `[providers.*]`, `[permissions]`, `[daemon]`,
//!   `[network]`, ...).
//! - [`parse`]: text to a checked config, or an error with line, column and dotted key; unknown keys are warnings.
//! - [`always`]: `[[auto.always]]`, the always rules, and their save into the file with `toml_edit`.
//! - [`auto`]: `[auto]`, the judges of auto mode's exits (the classifier model, the judge timeout, the pause
//!   after denials).
//! - [`instructions`]: `[instructions]`, the project instructions' size bound and the short variant.
//! - [`context`]: `[context]`, when a conversation's context is compacted.
//! - [`full`]: full mode's refusals and the changes of the file that loosen permissions (held while it runs).
//! - [`validate`]: the rules a well-typed config must meet, and the warnings a valid one may deserve.
//! - [`state`]: the config in effect, its reload (`admin.config_reload`) and its `admin.status` report.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use efrd::config::{ConfigState, Roots};
//!
//! let roots = Roots::from_process_env()?;
//! roots.create_all()?;
//! let (config, warnings) = ConfigState::load(&roots.config_file())?;
//! for warning in &warnings {
//!     eprintln!("config: {warning}");
//! }
//! let mode = config.current().permissions.default_mode;
//! let outcome = config.reload(); // later, on admin.config_reload
//! # let _ = (mode, outcome);
//! # Ok(())
//! # }
//! ```
//!

pub mod always;
pub mod auto;
pub mod context;
pub mod error;
pub mod full;
pub mod instructions;
pub mod key_path;
pub mod parse;
pub mod provider;
pub mod roots;
pub mod schema;
pub mod state;
pub mod validate;

pub use always::AlwaysRule;
pub use auto::{AutoSection, ClassifierModel};
pub use error::ConfigError;
pub use key_path::KeyPath;
pub use roots::{DirError, Root, RootSource, Roots, RootsError, ensure_private_dir};
pub use schema::{
    BusName, BusRule, BusSection, CompatSection, Config, DaemonSection, ExtraModel, Mode, ModelSection, NetworkSection,
    PermissionsSection, ProviderId, ProviderSection, ProvidersSection, RemoteSection, RetrySection, RoutingSection,
    SandboxSection, ShellProgram, ShellSection,
};
pub use state::{
    ConfigCheck, ConfigState, ConfigStatus, EXIT_CONFIG_INVALID, RESTART_SECTIONS, ReloadOutcome, RuleWarnings,
};
