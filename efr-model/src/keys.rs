//! The API keys of `openai-api` and `anthropic-api`: login, logout, the key a call uses, and what efr knows of it.
//!
//! A stored key lives in `<state>/keys/<provider>.json` (the folder mode 0700, the file created with mode 0600 and
//! renamed into place, so no reader ever sees a partial or wider file). In memory it is a [`SecretString`]; it is never
//! logged, and `Debug` prints of this module's types never show it. A key is shown only as its
//! [`key_hint`]. An environment key (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) counts as a login while nothing is stored
//! (docs/protocol.md, "The contract": "logins with an API key"); a stored key wins over it. `openai-compat` has no
//! login (the spec's admin.login_api_key names only the two hosted providers): a server that needs a key
//! (`key_required = true`) gets it from `OPENAI_COMPAT_API_KEY` in efrd's environment.
//!
//! `refused_at` (the provider last answered 401 to the key) and `checked_at` (the provider last answered a request
//! with the key, refused or not) are kept in memory per provider: the spec reports them "since the daemon started".

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::endpoint::ProviderKind;
use super::event::ModelError;
use super::list::fetch_models;

/// The prefixes a key hint keeps, longest first: Anthropic (`sk-ant-`), OpenAI project keys (`sk-proj-`), and other
/// OpenAI keys (`sk-`).
pub const KEY_PREFIXES: &[&str] = &["sk-ant-", "sk-proj-", "sk-"];

/// How a key is shown: its known prefix (see [`KEY_PREFIXES`]), `...`, and its last four characters, such as
/// `sk-ant-...a1b2` (spec: admin.login_api_key's key_hint). The last four are left out (`sk-...`) when fewer than
/// eight characters follow the prefix, so a short key is never shown whole; a key with no known prefix shows as
/// `...a1b2`.
#[must_use]
pub fn key_hint(key: &str) -> String {
    let prefix = KEY_PREFIXES
        .iter()
        .copied()
        .find(|prefix| key.starts_with(prefix))
        .unwrap_or("");
    let rest: Vec<char> = key[prefix.len()..].chars().collect();
    if rest.len() < 8 {
        return format!("{prefix}...");
    }
    let last: String = rest[rest.len() - 4..].iter().collect();
    format!("{prefix}...{last}")
}

/// Where a provider's key comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    /// Stored by a login.
    Stored,
    /// The provider's environment variable, with nothing stored.
    Environment,
}

/// What efr knows of one provider's key (for `admin.status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyStatus {
    /// The provider.
    pub provider: ProviderKind,
    /// Where the key in use comes from; `None` when there is none.
    pub source: Option<KeySource>,
    /// The key's hint; `None` when there is no key.
    pub key_hint: Option<String>,
    /// When the provider last refused the key in use (HTTP 401); cleared by a login and a logout.
    pub refused_at: Option<DateTime<Utc>>,
    /// When the provider last answered a request with the key, refused or not, or a login checked it.
    pub checked_at: Option<DateTime<Utc>>,
}

/// The result of a login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// The provider.
    pub provider: ProviderKind,
    /// The new key's hint.
    pub key_hint: String,
    /// Whether the key was checked with a request (false when the check was skipped).
    pub checked: bool,
}

/// Why a login or logout failed. A failed login stores nothing and keeps the key that was there.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The provider takes no login (`openai-compat` takes its key from the config).
    #[error("{0} takes no API key login (only openai-api and anthropic-api do)")]
    Unsupported(ProviderKind),
    /// The key is empty or holds characters no key has (whitespace inside, control characters, non-ASCII).
    #[error("the key is not a valid API key: {0}")]
    Invalid(&'static str),
    /// The provider refused the key when it was checked.
    #[error("{provider} refused the key ({message}); nothing was stored")]
    Refused {
        /// The provider.
        provider: ProviderKind,
        /// The provider's error code.
        message: String,
    },
    /// The check could not reach an answer about the key (network, server error); retry, or log in without the
    /// check.
    #[error("the key could not be checked: {0}; nothing was stored")]
    Check(ModelError),
    /// Writing or removing the key file failed.
    #[error("cannot write the key file {path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
}

/// The environment keys, read once (tests give their own).
#[derive(Default)]
pub struct EnvKeys {
    openai: Option<SecretString>,
    anthropic: Option<SecretString>,
    compat: Option<SecretString>,
}

/// The environment variable of the openai-compat key (see the module docs).
pub const COMPAT_KEY_VAR: &str = "OPENAI_COMPAT_API_KEY";

impl EnvKeys {
    /// The keys in this process's `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` and [`COMPAT_KEY_VAR`] (empty counts as
    /// unset).
    #[must_use]
    pub fn from_process() -> Self {
        Self::new(
            std::env::var("OPENAI_API_KEY").ok(),
            std::env::var("ANTHROPIC_API_KEY").ok(),
        )
        .with_compat(std::env::var(COMPAT_KEY_VAR).ok())
    }

    /// The same keys with `compat` as the openai-compat key (empty or blank counts as unset).
    #[must_use]
    pub fn with_compat(mut self, compat: Option<String>) -> Self {
        self.compat = compat.filter(|key| !key.trim().is_empty()).map(SecretString::from);
        self
    }

    /// The given keys (empty or blank counts as unset).
    #[must_use]
    pub fn new(openai: Option<String>, anthropic: Option<String>) -> Self {
        let keep = |key: Option<String>| key.filter(|key| !key.trim().is_empty()).map(SecretString::from);
        Self {
            openai: keep(openai),
            anthropic: keep(anthropic),
            compat: None,
        }
    }

    fn get(&self, provider: ProviderKind) -> Option<&SecretString> {
        match provider {
            ProviderKind::OpenAiApi => self.openai.as_ref(),
            ProviderKind::AnthropicApi => self.anthropic.as_ref(),
            ProviderKind::OpenAiCompat => self.compat.as_ref(),
        }
    }
}

impl std::fmt::Debug for EnvKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvKeys")
            .field("openai", &self.openai.is_some())
            .field("anthropic", &self.anthropic.is_some())
            .field("compat", &self.compat.is_some())
            .finish()
    }
}

/// The login check: one cheap authenticated request (the model list) at the provider's base URL.
#[derive(Debug, Clone)]
pub struct KeyCheck {
    /// The HTTP client.
    pub http: reqwest::Client,
    /// The provider's base URL, such as `https://api.anthropic.com`.
    pub base_url: String,
}

#[derive(Default)]
struct KeyState {
    stored: Option<SecretString>,
    refused_at: Option<DateTime<Utc>>,
    checked_at: Option<DateTime<Utc>>,
}

#[derive(Serialize, Deserialize)]
struct KeyFile {
    provider: String,
    key: String,
    stored_at: DateTime<Utc>,
}

/// The key store of one daemon (see the module docs). Shared as `Arc<KeyStore>`; every method takes `&self`.
pub struct KeyStore {
    dir: PathBuf,
    env: EnvKeys,
    state: Mutex<HashMap<ProviderKind, KeyState>>,
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyStore")
            .field("dir", &self.dir)
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

const LOGIN_PROVIDERS: [ProviderKind; 2] = [ProviderKind::OpenAiApi, ProviderKind::AnthropicApi];

impl KeyStore {
    /// Opens the store under `state_dir` (the folder `keys/` is made on the first login) and reads the stored keys.
    /// A key file that cannot be read is logged and skipped, never removed: a login replaces it.
    #[must_use]
    pub fn open(state_dir: &Path, env: EnvKeys) -> Self {
        let dir = state_dir.join("keys");
        let mut state = HashMap::new();
        for provider in LOGIN_PROVIDERS {
            let entry: &mut KeyState = state.entry(provider).or_default();
            entry.stored = read_key_file(&key_path(&dir, provider));
        }
        Self {
            dir,
            env,
            state: Mutex::new(state),
        }
    }

    fn with<T>(&self, provider: ProviderKind, f: impl FnOnce(&mut KeyState) -> T) -> T {
        // A panic while the lock was held leaves plain data behind: keep using it.
        let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(state.entry(provider).or_default())
    }

    /// The key a call to `provider` uses: the stored one, else the environment's; `None` when there is none.
    #[must_use]
    pub fn key(&self, provider: ProviderKind) -> Option<SecretString> {
        self.with(provider, |state| state.stored.clone())
            .or_else(|| self.env.get(provider).cloned())
    }

    /// What efr knows of `provider`'s key.
    #[must_use]
    pub fn status(&self, provider: ProviderKind) -> KeyStatus {
        let (stored, refused_at, checked_at) = self.with(provider, |state| {
            (state.stored.clone(), state.refused_at, state.checked_at)
        });
        let (source, key) = match (stored, self.env.get(provider)) {
            (Some(key), _) => (Some(KeySource::Stored), Some(key)),
            (None, Some(key)) => (Some(KeySource::Environment), Some(key.clone())),
            (None, None) => (None, None),
        };
        KeyStatus {
            provider,
            source,
            key_hint: key.map(|key| key_hint(key.expose_secret())),
            refused_at,
            checked_at,
        }
    }

    /// Records that `provider` refused the key in use (HTTP 401) at `at`; it also counts as an answer.
    pub fn mark_refused(&self, provider: ProviderKind, at: DateTime<Utc>) {
        self.with(provider, |state| {
            state.refused_at = Some(at);
            state.checked_at = Some(at);
        });
    }

    /// Records that `provider` answered a request with the key in use at `at`.
    pub fn mark_checked(&self, provider: ProviderKind, at: DateTime<Utc>) {
        self.with(provider, |state| state.checked_at = Some(at));
    }

    /// Stores `key` for `provider` after checking it with one authenticated request when `check` is given. Leading
    /// and trailing whitespace is cut (a pasted key often ends with a newline).
    ///
    /// # Errors
    /// [`KeyError::Unsupported`] for `openai-compat`; [`KeyError::Invalid`] for a key that cannot be one;
    /// [`KeyError::Refused`] when the check got a 401; [`KeyError::Check`] when the check got no answer about the
    /// key; [`KeyError::Io`] when the file cannot be written. Each leaves the stored key as it was.
    pub async fn login(
        &self,
        provider: ProviderKind,
        key: SecretString,
        check: Option<&KeyCheck>,
    ) -> Result<Login, KeyError> {
        if !LOGIN_PROVIDERS.contains(&provider) {
            return Err(KeyError::Unsupported(provider));
        }
        let key = SecretString::from(key.expose_secret().trim());
        validate(key.expose_secret())?;
        let checked = if let Some(check) = check {
            match fetch_models(&check.http, provider, &check.base_url, Some(&key)).await {
                Ok(_) => true,
                Err(ModelError::KeyRefused { message, .. }) => return Err(KeyError::Refused { provider, message }),
                Err(error) => return Err(KeyError::Check(error)),
            }
        } else {
            false
        };
        let now = Utc::now();
        self.write(provider, &key, now)?;
        let hint = key_hint(key.expose_secret());
        self.with(provider, |state| {
            state.stored = Some(key);
            state.refused_at = None;
            state.checked_at = checked.then_some(now);
        });
        tracing::info!(provider = provider.name(), key_hint = %hint, checked, "API key stored");
        Ok(Login {
            provider,
            key_hint: hint,
            checked,
        })
    }

    /// Removes `provider`'s stored key. Returns false when nothing was stored (an environment key is not a stored
    /// one and stays in use).
    ///
    /// # Errors
    /// [`KeyError::Unsupported`] for `openai-compat`; [`KeyError::Io`] when the file cannot be removed.
    pub fn logout(&self, provider: ProviderKind) -> Result<bool, KeyError> {
        if !LOGIN_PROVIDERS.contains(&provider) {
            return Err(KeyError::Unsupported(provider));
        }
        let path = key_path(&self.dir, provider);
        let removed = match fs::remove_file(&path) {
            Ok(()) => true,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
            Err(source) => return Err(KeyError::Io { path, source }),
        };
        let held = self.with(provider, |state| {
            state.refused_at = None;
            state.checked_at = None;
            state.stored.take().is_some()
        });
        tracing::info!(
            provider = provider.name(),
            logged_out = removed || held,
            "API key logout"
        );
        Ok(removed || held)
    }

    fn write(&self, provider: ProviderKind, key: &SecretString, now: DateTime<Utc>) -> Result<(), KeyError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| KeyError::Io { path, source }
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(io(&self.dir))?;
        let path = key_path(&self.dir, provider);
        let temp = self
            .dir
            .join(format!(".{}.{:016x}.tmp", provider.name(), rand::random::<u64>()));
        let file = KeyFile {
            provider: provider.name().to_owned(),
            key: key.expose_secret().to_owned(),
            stored_at: now,
        };
        let mut text = serde_json::to_vec(&file).map_err(|error| io(&path)(std::io::Error::other(error)))?;
        text.push(b'\n');
        let written = (|| {
            // Created with its mode: the key is never in a file that others may read, not even for a moment.
            let mut out = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)?;
            out.write_all(&text)?;
            out.sync_all()?;
            fs::rename(&temp, &path)?;
            fs::File::open(&self.dir)?.sync_all()
        })();
        text.fill(0);
        written.map_err(|source| {
            let _ = fs::remove_file(&temp);
            io(&path)(source)
        })
    }
}

fn key_path(dir: &Path, provider: ProviderKind) -> PathBuf {
    dir.join(format!("{}.json", provider.name()))
}

fn read_key_file(path: &Path) -> Option<SecretString> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "cannot read the stored API key; log in again");
            return None;
        }
    };
    if let Ok(meta) = fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(path = %path.display(), "the stored API key file is readable by others; it should be 0600");
    }
    match serde_json::from_str::<KeyFile>(&text) {
        Ok(file) if validate(&file.key).is_ok() => Some(SecretString::from(file.key)),
        // serde's message may quote the file, so it is not logged.
        _ => {
            tracing::warn!(path = %path.display(), "the stored API key file is damaged; log in again");
            None
        }
    }
}

fn validate(key: &str) -> Result<(), KeyError> {
    if key.is_empty() {
        return Err(KeyError::Invalid("it is empty"));
    }
    if !key.chars().all(|c| c.is_ascii_graphic()) {
        return Err(KeyError::Invalid(
            "it holds spaces, control characters or non-ASCII characters",
        ));
    }
    Ok(())
}
