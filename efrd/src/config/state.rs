//! The config in effect, its reload, and what `admin.status` reports about it.
//!
//! [`ConfigState`] holds the config that efrd runs with. A reload ([`ConfigState::reload`]) reads the file again:
//!
//! - a broken file changes nothing: the previous config stays in effect and the error is kept as `reload_error`
//!   until a reload succeeds;
//! - a good file is applied at once, except the keys that need a restart ([`RESTART_SECTIONS`]): those keep the
//!   value efrd started with, and each one whose value in the file now differs is listed in `restart_needed`;
//! - `warnings` are those of the new config that the previous config did not have, so each comes once, from the
//!   reload that brought it (docs/protocol.md, "The contract": "warnings"), plus one per unknown key;
//! - a good file that loosens permissions ([`super::full::loosens`]) while a full-mode turn runs is held: nothing of
//!   it applies (`applied` false, a warning names the keys), admin.status shows `held` with the keys, and it applies
//!   when the last full turn ends ([`ConfigState::full_turn_ended`]); a later reload that loosens nothing replaces
//!   it and applies at once (docs/adr/0029-full-mode.md).
//!
//! At start a broken file is an error ([`ConfigState::load`]), not a silent fallback to the defaults: running with
//! other permissions than the user wrote would be worse than not running. efrd prints the error and exits with
//! [`EXIT_CONFIG_INVALID`].
//!
//! Components that apply config live subscribe to changes with [`ConfigState::subscribe`] (a `tokio::sync::watch`).
//!
//! A rule that needs more than the file (`[auto] classifier_model` against models.list, which the model layer owns)
//! is a [`ConfigCheck`] that the owner installs ([`ConfigState::set_check`]); a reload runs it after the parse, and a
//! broken rule refuses the file like any other error, with its line, column and key.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use super::error::ConfigError;
use super::parse::parse;
use super::schema::Config;
use super::validate::{unknown_key_warning, warnings};

/// The exit code of efrd when `config.toml` is broken at start.
pub const EXIT_CONFIG_INVALID: i32 = 4;

/// The largest `config.toml` read; a bigger file is an error, not a slow start.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The top-level sections whose keys take effect only at the next start: the `[daemon]` keys shape the process
/// itself (the log subscriber, the idle timer, the queues of subscriptions already open).
pub const RESTART_SECTIONS: &[&str] = &["daemon", "remote"];

/// The outcome of one reload, in the form of the `admin.config_reload` result (the contract: "applied, error,
/// restart_needed, warnings").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadOutcome {
    /// True when the file was read and its live keys are now in effect.
    pub applied: bool,
    /// Why the file was refused; the previous config stays in effect.
    pub error: Option<ConfigError>,
    /// Dotted keys whose new value waits for a restart, sorted; empty when none.
    pub restart_needed: Vec<String>,
    /// What the user should know, one sentence each; empty when none.
    pub warnings: Vec<String>,
}

/// What `admin.status` reports about the config (the contract: "the path of config.toml, whether it exists, an
/// optional symlink_target, the optional reload_error of the last reload ..., and the restart_needed keys").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigStatus {
    /// The path of `config.toml`.
    pub path: PathBuf,
    /// Whether it exists now (following a symlink).
    pub exists: bool,
    /// Where it points, when `config.toml` is a symlink (as written in the link, not resolved).
    pub symlink_target: Option<PathBuf>,
    /// The error of the last reload, until a reload succeeds.
    pub reload_error: Option<ConfigError>,
    /// Keys whose value in the file waits for a restart.
    pub restart_needed: Vec<String>,
    /// The dotted keys of a held change (it loosens permissions and came while full mode ran); `None` when none.
    pub held: Option<Vec<String>>,
}

/// A rule of a parsed config that another module owns: `(text, config)` in, the [`ConfigError`] of a broken rule out
/// (its place found in `text`).
pub type ConfigCheck = Arc<dyn Fn(&str, &Config) -> Result<(), ConfigError> + Send + Sync>;

/// The warnings of a config's rules that another module owns (the always rules a floor disables): config in,
/// one sentence per warning out. A reload reports those that the previous config did not have.
pub type RuleWarnings = Arc<dyn Fn(&Config) -> Vec<String> + Send + Sync>;

/// How long [`ConfigState::save_always`] waits for the reload that applies a saved rule.
pub const SAVE_RELOAD_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// The config in effect and its reload state. Shared by reference (`Arc<ConfigState>`); every method takes `&self`.
pub struct ConfigState {
    path: PathBuf,
    tx: watch::Sender<Arc<Config>>,
    inner: Mutex<Inner>,
    check: Mutex<Option<ConfigCheck>>,
    rule_warnings: Mutex<Option<RuleWarnings>>,
}

impl std::fmt::Debug for ConfigState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigState")
            .field("path", &self.path)
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Inner {
    /// The config read at start: the restart sections of the effective config always come from it.
    boot: Config,
    /// The config of the last good read, as written (restart sections not held back); warnings are diffed
    /// against it.
    file: Config,
    /// The unknown keys of the last good read.
    unknown_keys: Vec<String>,
    reload_error: Option<ConfigError>,
    restart_needed: Vec<String>,
    /// The full-mode turns that run now.
    full_turns: usize,
    /// A loosening config that waits for the full turns to end, with the keys that loosen.
    held: Option<(Config, Vec<String>)>,
}

impl ConfigState {
    /// Reads `path` at start. A missing file means the defaults.
    ///
    /// Returns the state and the warnings of the file (all of them: nothing was in effect before).
    ///
    /// # Errors
    /// The [`ConfigError`] of a broken or unreadable file.
    pub fn load(path: &Path) -> Result<(Self, Vec<String>), ConfigError> {
        let (config, unknown_keys) = read(path, None)?;
        let mut first_warnings: Vec<String> = unknown_keys.iter().map(|k| unknown_key_warning(k)).collect();
        first_warnings.extend(warnings(&config));
        let state = Self {
            path: path.to_owned(),
            tx: watch::Sender::new(Arc::new(config.clone())),
            inner: Mutex::new(Inner {
                boot: config.clone(),
                file: config,
                unknown_keys,
                reload_error: None,
                restart_needed: Vec::new(),
                full_turns: 0,
                held: None,
            }),
            check: Mutex::new(None),
            rule_warnings: Mutex::new(None),
        };
        Ok((state, first_warnings))
    }

    /// Installs the rule that later reloads also check (one; a second call replaces it).
    pub fn set_check(&self, check: ConfigCheck) {
        *self.check.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(check);
    }

    /// Runs the installed rule on the file as it is now and the config in effect, without reloading: for a rule whose
    /// facts changed (a new model list). `Ok` when no rule is installed or the file cannot be read (a reload reports
    /// that).
    ///
    /// # Errors
    /// The rule's [`ConfigError`].
    pub fn recheck(&self) -> Result<(), ConfigError> {
        let Some(check) = self.installed_check() else {
            return Ok(());
        };
        let Ok(Some(text)) = read_text(&self.path) else {
            return Ok(());
        };
        check(&text, &self.current())
    }

    /// Installs the warnings of the rules another module owns (one; a second call replaces it), and logs those of
    /// the config in effect now.
    pub fn set_rule_warnings(&self, hook: RuleWarnings) {
        for warning in hook(&self.lock().file) {
            tracing::warn!("config: {warning}");
        }
        *self
            .rule_warnings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(hook);
    }

    fn rule_warnings(&self, config: &Config) -> Vec<String> {
        let hook = self
            .rule_warnings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        hook.map(|hook| hook(config)).unwrap_or_default()
    }

    fn installed_check(&self) -> Option<ConfigCheck> {
        self.check
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The config in effect now.
    #[must_use]
    pub fn current(&self) -> Arc<Config> {
        self.tx.borrow().clone()
    }

    /// A receiver that sees each config that a reload applies.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<Arc<Config>> {
        self.tx.subscribe()
    }

    /// The path of `config.toml`.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves Inner consistent (every field is replaced whole), so the poison is
        // ignored rather than turned into a second panic.
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads the file again and applies it (see the module docs). Concurrent reloads run one after the other.
    pub fn reload(&self) -> ReloadOutcome {
        let check = self.installed_check();
        let mut inner = self.lock();
        let (file, unknown_keys) = match read(&self.path, check.as_ref()) {
            Ok(read) => read,
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "config reload refused; the previous config stays");
                inner.reload_error = Some(error.clone());
                return ReloadOutcome {
                    applied: false,
                    error: Some(error),
                    restart_needed: inner.restart_needed.clone(),
                    warnings: Vec::new(),
                };
            }
        };

        let old_warnings = warnings(&inner.file);
        let mut new_warnings: Vec<String> = unknown_keys
            .iter()
            .filter(|k| !inner.unknown_keys.contains(k))
            .map(|k| unknown_key_warning(k))
            .collect();
        new_warnings.extend(warnings(&file).into_iter().filter(|w| !old_warnings.contains(w)));
        let old_rules = self.rule_warnings(&inner.file);
        new_warnings.extend(self.rule_warnings(&file).into_iter().filter(|w| !old_rules.contains(w)));
        // A removed file is read as an empty one; say so, since "applied" alone reads as the file's content.
        if !self.path.exists() {
            new_warnings.push(format!(
                "{} does not exist: efrd runs with the defaults",
                self.path.display()
            ));
        }

        let restart_needed = restart_keys(&inner.boot, &file);
        let mut effective = file.clone();
        effective.daemon = inner.boot.daemon.clone();

        inner.file = file;
        inner.unknown_keys = unknown_keys;
        inner.reload_error = None;
        inner.restart_needed.clone_from(&restart_needed);
        let loosens = if inner.full_turns > 0 {
            super::full::loosens(&self.current(), &effective)
        } else {
            Vec::new()
        };
        if !loosens.is_empty() {
            tracing::info!(keys = ?loosens, "config reload held: it loosens permissions while a full turn runs");
            new_warnings.push(format!(
                "This change loosens permissions ({}) while a full-mode turn runs: it is held, and applies when the \
                 turn ends.",
                loosens.join(", ")
            ));
            inner.held = Some((effective, loosens));
            return ReloadOutcome {
                applied: false,
                error: None,
                restart_needed,
                warnings: new_warnings,
            };
        }
        inner.held = None;
        self.apply(effective);
        drop(inner);
        ReloadOutcome {
            applied: true,
            error: None,
            restart_needed,
            warnings: new_warnings,
        }
    }

    /// Makes `effective` the config in effect (subscribers see it when it differs).
    fn apply(&self, effective: Config) {
        self.tx.send_if_modified(|current| {
            let changed = **current != effective;
            if changed {
                *current = Arc::new(effective);
            }
            changed
        });
    }

    /// A full-mode turn starts: a reload that loosens permissions waits until it ends.
    pub fn full_turn_started(&self) {
        self.lock().full_turns += 1;
    }

    /// A full-mode turn ended: when it was the last one, a held change applies now. Returns the keys it loosened
    /// (empty when nothing was held or another full turn still runs).
    pub fn full_turn_ended(&self) -> Vec<String> {
        let mut inner = self.lock();
        inner.full_turns = inner.full_turns.saturating_sub(1);
        if inner.full_turns > 0 {
            return Vec::new();
        }
        let Some((config, keys)) = inner.held.take() else {
            return Vec::new();
        };
        tracing::info!(keys = ?keys, "the held config change applies: the full turns ended");
        self.apply(config);
        keys
    }

    /// Saves `rule` as the last `[[auto.always]]` table of the file (`config/always.rs`), then reloads, waiting at
    /// most `reload_within` ([`SAVE_RELOAD_WITHIN`]) for the reload.
    pub async fn save_always(
        self: &Arc<Self>,
        rule: super::always::AlwaysRule,
        reload_within: std::time::Duration,
    ) -> efr_protocol::wire::always::AlwaysOutcome {
        use efr_protocol::wire::always::{AlwaysOutcome, NotSavedReason};
        let me = Arc::clone(self);
        let words = rule.rule.clone();
        let written = tokio::task::spawn_blocking(move || {
            let check = me.installed_check();
            let load = |text: &str| {
                parse(text).is_ok_and(|parsed| check.as_ref().is_none_or(|check| check(text, &parsed.config).is_ok()))
            };
            super::always::prepare(&me.path, &rule, &load)?.commit()
        })
        .await
        .unwrap_or(Err(NotSavedReason::Io));
        let index = match written {
            Ok(index) => index,
            Err(reason) => return AlwaysOutcome::NotSaved { reason },
        };
        let me = Arc::clone(self);
        let reload = tokio::task::spawn_blocking(move || me.reload());
        match tokio::time::timeout(reload_within, reload).await {
            Err(_) => AlwaysOutcome::NotSaved {
                reason: NotSavedReason::ReloadTimeout,
            },
            Ok(Ok(outcome)) if outcome.applied => AlwaysOutcome::Saved { index, rule: words },
            // Checked before the write, refused after it: a fact of the check (the model list) changed meanwhile.
            Ok(Ok(_)) => AlwaysOutcome::NotSaved {
                reason: NotSavedReason::LoadCheck,
            },
            Ok(Err(_)) => AlwaysOutcome::NotSaved {
                reason: NotSavedReason::Io,
            },
        }
    }

    /// What `admin.status` reports now.
    #[must_use]
    pub fn status(&self) -> ConfigStatus {
        let inner = self.lock();
        let symlink_target = std::fs::read_link(&self.path).ok();
        ConfigStatus {
            path: self.path.clone(),
            exists: self.path.exists(),
            symlink_target,
            reload_error: inner.reload_error.clone(),
            restart_needed: inner.restart_needed.clone(),
            held: inner.held.as_ref().map(|(_, keys)| keys.clone()),
        }
    }
}

/// Reads and parses the file, then runs `check`; a missing file is the defaults.
fn read(path: &Path, check: Option<&ConfigCheck>) -> Result<(Config, Vec<String>), ConfigError> {
    let Some(text) = read_text(path)? else {
        return Ok((Config::default(), Vec::new()));
    };
    let parsed = parse(&text)?;
    if let Some(check) = check {
        check(&text, &parsed.config)?;
    }
    Ok((parsed.config, parsed.unknown_keys))
}

fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    let cannot = |e: &io::Error| ConfigError::whole_file(format!("cannot read {}: {e}", path.display()));
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            // A dangling symlink is a mistake to report, not an absent file.
            return match std::fs::symlink_metadata(path) {
                Ok(_) => Err(ConfigError::whole_file(format!(
                    "{} is a symlink to a file that does not exist",
                    path.display()
                ))),
                Err(_) => Ok(None),
            };
        }
        Err(e) => return Err(cannot(&e)),
    };
    if !meta.is_file() {
        return Err(ConfigError::whole_file(format!("{} is not a file", path.display())));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::whole_file(format!(
            "{} is {} bytes; a config file may hold at most {MAX_CONFIG_BYTES}",
            path.display(),
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| cannot(&e))?;
    String::from_utf8(bytes).map(Some).map_err(|e| {
        let (line, column) = super::error::line_column(
            &String::from_utf8_lossy(&e.as_bytes()[..e.utf8_error().valid_up_to()]),
            usize::MAX,
        );
        ConfigError {
            message: format!("{} is not valid UTF-8", path.display()),
            line: Some(line),
            column: Some(column),
            key: None,
        }
    })
}

/// The dotted keys of the restart sections whose value differs between `boot` and `file`, sorted.
fn restart_keys(boot: &Config, file: &Config) -> Vec<String> {
    // Serializing a Config cannot fail (plain strings, numbers, enums and tables); were it ever to, no key is
    // listed rather than a wrong one.
    let (Ok(toml::Value::Table(boot)), Ok(toml::Value::Table(file))) =
        (toml::Value::try_from(boot), toml::Value::try_from(file))
    else {
        return Vec::new();
    };
    let mut keys = Vec::new();
    for section in RESTART_SECTIONS {
        let empty = toml::Table::new();
        let as_table = |t: &toml::Table| -> toml::Table {
            match t.get(*section) {
                Some(toml::Value::Table(s)) => s.clone(),
                _ => empty.clone(),
            }
        };
        let (old, new) = (as_table(&boot), as_table(&file));
        let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            if old.get(name) != new.get(name) {
                keys.push(format!("{section}.{name}"));
            }
        }
    }
    keys
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
