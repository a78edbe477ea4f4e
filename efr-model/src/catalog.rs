//! The model catalog (`models.list`): the active provider's models, where the list came from, and the check of a
//! prompt's settings against it.
//!
//! The list comes from the provider's `GET /v1/models` ([`fetch_models`](crate::list::fetch_models)) and is cached on disk with its
//! `fetched_at` (`<state>/catalog/<provider>.json`). When the fetch fails, the cache serves (origin `cache`), then a
//! small list built into efr for `openai-api` (origin `builtin`); `anthropic-api` and `openai-compat` have none
//! (origin `missing`, an empty list). The `[model]` config adds models (source `config`) or replaces a listed one.
//!
//! The lists give ids only; efforts, default efforts and context windows come from efr's rules per model family
//! ([`family`]), which the config can override per model.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::endpoint::ProviderKind;
use super::event::ModelError;
use super::list::BackendModel;
use super::provider::Provider;

/// Where a model's entry comes from (spec: models.list `source`; `builtin` means the provider's catalog).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelSource {
    /// The provider's list (fetched, cached or built in).
    Builtin,
    /// The `[model]` config.
    Config,
}

/// Where the list came from (spec: the catalog's `origin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatalogOrigin {
    /// Fetched from the provider just now.
    Backend,
    /// Read from the disk cache of an earlier fetch.
    Cache,
    /// efr's own list (`openai-api` only).
    Builtin,
    /// No list: no fetch worked, nothing is cached, and efr has none built in.
    Missing,
}

/// One model of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model id the provider takes.
    pub id: String,
    /// The reasoning efforts the model takes, such as `low`, `medium`, `high`; empty for a model without.
    pub efforts: Vec<String>,
    /// The effort a turn uses when neither the prompt nor the config names one.
    pub default_effort: Option<String>,
    /// Whether a turn uses this model when the prompt names none (exactly one model has it in a non-empty list).
    pub default: bool,
    /// The context window in tokens, when known.
    pub context_window: Option<u64>,
    /// Where the entry comes from.
    pub source: ModelSource,
}

/// A model the `[model]` config adds, or whose listed entry it replaces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigModel {
    /// The model id.
    pub id: String,
    /// Its efforts (empty for none).
    #[serde(default)]
    pub efforts: Vec<String>,
    /// Its default effort; must be one of `efforts`.
    #[serde(default)]
    pub default_effort: Option<String>,
    /// Its context window in tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
}

/// The catalog part of the `[model]` config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatalogConfig {
    /// Models to add or replace.
    pub models: Vec<ConfigModel>,
    /// The default model, when the config names one and it is in the list.
    pub default_model: Option<String>,
}

/// The catalog of one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    /// The provider.
    pub provider: ProviderKind,
    /// Where the list came from.
    pub origin: CatalogOrigin,
    /// When the list was fetched (backend or cache).
    pub fetched_at: Option<DateTime<Utc>>,
    /// The models, in the provider's order, then the config's.
    pub models: Vec<ModelInfo>,
}

/// A prompt setting that the catalog does not offer (spec: `invalid` with data `{setting, value, choices}`, plus
/// `model` for an effort).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting} {value:?} is not one of: {}", if choices.is_empty() { "(none)".to_owned() } else { choices.join(", ") })]
pub struct SettingsError {
    /// `model` or `effort`.
    pub setting: &'static str,
    /// The value asked for.
    pub value: String,
    /// The values that would do.
    pub choices: Vec<String>,
    /// The model whose efforts these are (for an effort).
    pub model: Option<String>,
}

impl SettingsError {
    /// The error's `data` member on the wire: `{setting, value, choices}` and `model` for an effort.
    #[must_use]
    pub fn data(&self) -> serde_json::Value {
        let mut data = json!({"setting": self.setting, "value": self.value, "choices": self.choices});
        if let Some(model) = &self.model {
            data["model"] = json!(model);
        }
        data
    }
}

/// The result of [`Catalog::load`]: the catalog, and the fetch's error when it failed (a 401 there means the key
/// was refused; the provider already marked it).
#[derive(Debug, Clone)]
pub struct CatalogLoad {
    /// The catalog.
    pub catalog: Catalog,
    /// Why the fetch failed, when it did.
    pub fetch_error: Option<ModelError>,
}

/// The list of `openai-api` built into efr: (id, default).
const OPENAI_BUILTIN: &[(&str, bool)] = &[("gpt-5", true), ("gpt-5-mini", false), ("gpt-4.1", false)];

/// Efforts, default effort and context window of a model by its family, for a list that gives ids only.
/// OpenAI: `gpt-5*` takes minimal to high (codex models low to high), `o1`/`o3`/`o4` low to high, each with
/// default `medium`; other models take none. Anthropic: Claude 3.7 and 4.x take low to high (a thinking budget,
/// `anthropic::thinking_budget`), default `medium`. Windows: gpt-5 400k, gpt-4.1 1,047,576, gpt-4o 128k, o-series
/// and Claude 200k.
#[must_use]
pub fn family(provider: ProviderKind, id: &str) -> (Vec<String>, Option<String>, Option<u64>) {
    let efforts = |list: &[&str]| list.iter().map(|effort| (*effort).to_owned()).collect::<Vec<_>>();
    let medium = Some("medium".to_owned());
    match provider {
        ProviderKind::OpenAiApi if id.starts_with("gpt-5") && id.contains("codex") => {
            (efforts(&["low", "medium", "high"]), medium, Some(400_000))
        }
        ProviderKind::OpenAiApi if id.starts_with("gpt-5") => {
            (efforts(&["minimal", "low", "medium", "high"]), medium, Some(400_000))
        }
        ProviderKind::OpenAiApi if ["o1", "o3", "o4"].iter().any(|family| id.starts_with(family)) => {
            (efforts(&["low", "medium", "high"]), medium, Some(200_000))
        }
        ProviderKind::OpenAiApi if id.starts_with("gpt-4.1") => (Vec::new(), None, Some(1_047_576)),
        ProviderKind::OpenAiApi if id.starts_with("gpt-4o") => (Vec::new(), None, Some(128_000)),
        ProviderKind::AnthropicApi if id.starts_with("claude-") => {
            let thinks = [
                "claude-3-7",
                "claude-4",
                "claude-opus-4",
                "claude-sonnet-4",
                "claude-haiku-4",
            ]
            .iter()
            .any(|family| id.contains(family));
            if thinks {
                (efforts(&["low", "medium", "high"]), medium, Some(200_000))
            } else {
                (Vec::new(), None, Some(200_000))
            }
        }
        _ => (Vec::new(), None, None),
    }
}

/// Whether an `openai-api` list entry is a model a turn can use: embeddings, audio, image, moderation and
/// completion-only models are left out.
fn is_chat_model(provider: ProviderKind, id: &str) -> bool {
    if provider != ProviderKind::OpenAiApi {
        return true;
    }
    const FAMILIES: &[&str] = &["gpt-", "o1", "o3", "o4", "codex", "chatgpt"];
    const NOT: &[&str] = &[
        "audio",
        "realtime",
        "tts",
        "transcribe",
        "image",
        "search",
        "embedding",
        "moderation",
        "instruct",
        "dall-e",
        "whisper",
    ];
    FAMILIES.iter().any(|family| id.starts_with(family)) && !NOT.iter().any(|word| id.contains(word))
}

impl Catalog {
    /// The catalog from what is at hand, with no I/O: the fetched list (with its time), else the cached one, else
    /// the built-in one, then the config's models.
    #[must_use]
    pub fn resolve(
        provider: ProviderKind,
        fetched: Option<(DateTime<Utc>, Vec<BackendModel>)>,
        cached: Option<CachedList>,
        config: &CatalogConfig,
    ) -> Self {
        let (origin, fetched_at, listed) = match (fetched, cached) {
            (Some((at, models)), _) => (CatalogOrigin::Backend, Some(at), models),
            (None, Some(cache)) => (CatalogOrigin::Cache, Some(cache.fetched_at), cache.models),
            (None, None) if provider == ProviderKind::OpenAiApi => {
                let models = OPENAI_BUILTIN
                    .iter()
                    .map(|(id, _)| BackendModel {
                        id: (*id).to_owned(),
                        context_window: None,
                    })
                    .collect();
                (CatalogOrigin::Builtin, None, models)
            }
            (None, None) => (CatalogOrigin::Missing, None, Vec::new()),
        };
        let mut models: Vec<ModelInfo> = Vec::new();
        for listed in listed.into_iter().filter(|model| is_chat_model(provider, &model.id)) {
            if models.iter().any(|model| model.id == listed.id) {
                continue;
            }
            let (efforts, default_effort, window) = family(provider, &listed.id);
            models.push(ModelInfo {
                id: listed.id,
                efforts,
                default_effort,
                default: false,
                context_window: listed.context_window.or(window),
                source: ModelSource::Builtin,
            });
        }
        for added in &config.models {
            let entry = ModelInfo {
                id: added.id.clone(),
                efforts: added.efforts.clone(),
                default_effort: added
                    .default_effort
                    .clone()
                    .filter(|effort| added.efforts.contains(effort)),
                default: false,
                context_window: added.context_window.or_else(|| family(provider, &added.id).2),
                source: ModelSource::Config,
            };
            match models.iter_mut().find(|model| model.id == added.id) {
                Some(model) => *model = entry,
                None => models.push(entry),
            }
        }
        // The default: the config's, else efr's preferred model of the provider, else the first.
        let preferred = OPENAI_BUILTIN.iter().find(|(_, default)| *default).map(|(id, _)| *id);
        let default = config
            .default_model
            .as_deref()
            .and_then(|id| models.iter().position(|model| model.id == id))
            .or_else(|| preferred.and_then(|id| models.iter().position(|model| model.id == id)))
            .or(if models.is_empty() { None } else { Some(0) });
        if let Some(index) = default {
            models[index].default = true;
        }
        Self {
            provider,
            origin,
            fetched_at,
            models,
        }
    }

    /// Fetches the provider's list and builds the catalog: on success the cache is rewritten (a failed write is
    /// logged); on failure the cache, the built-in list or nothing serves, and the error comes back beside it.
    pub async fn load(provider: &Provider, cache: &CatalogCache, config: &CatalogConfig) -> CatalogLoad {
        let kind = provider.kind();
        match provider.models().await {
            Ok(models) => {
                let now = Utc::now();
                if let Err(error) = cache.write(kind, now, &models) {
                    tracing::warn!(provider = kind.name(), %error, "cannot cache the model list");
                }
                CatalogLoad {
                    catalog: Self::resolve(kind, Some((now, models)), None, config),
                    fetch_error: None,
                }
            }
            Err(error) => {
                tracing::info!(provider = kind.name(), %error, "model list fetch failed, using the cache");
                let cached = cache.read(kind);
                CatalogLoad {
                    catalog: Self::resolve(kind, None, cached, config),
                    fetch_error: Some(error),
                }
            }
        }
    }

    /// The model a turn uses when the prompt names none.
    #[must_use]
    pub fn default_model(&self) -> Option<&ModelInfo> {
        self.models.iter().find(|model| model.default)
    }

    /// Checks a prompt's model and effort against the list and returns the model's entry.
    ///
    /// # Errors
    /// A [`SettingsError`] for a model not in the list (`setting: "model"`, the ids as choices) or an effort not in
    /// the model's efforts (`setting: "effort"`, its efforts as choices, and the model).
    pub fn validate(&self, model: &str, effort: Option<&str>) -> Result<&ModelInfo, SettingsError> {
        let Some(info) = self.models.iter().find(|info| info.id == model) else {
            return Err(SettingsError {
                setting: "model",
                value: model.to_owned(),
                choices: self.models.iter().map(|info| info.id.clone()).collect(),
                model: None,
            });
        };
        if let Some(effort) = effort
            && !info.efforts.iter().any(|known| known == effort)
        {
            return Err(SettingsError {
                setting: "effort",
                value: effort.to_owned(),
                choices: info.efforts.clone(),
                model: Some(info.id.clone()),
            });
        }
        Ok(info)
    }
}

/// A cached list: what [`CatalogCache`] keeps per provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CachedList {
    /// The provider's name.
    pub provider: String,
    /// When the list was fetched.
    pub fetched_at: DateTime<Utc>,
    /// The list.
    pub models: Vec<BackendModel>,
}

/// The disk cache of model lists: `<dir>/<provider>.json`, written whole and renamed into place.
#[derive(Debug, Clone)]
pub struct CatalogCache {
    dir: PathBuf,
}

impl CatalogCache {
    /// The cache in `<state_dir>/catalog`.
    #[must_use]
    pub fn new(state_dir: &Path) -> Self {
        Self {
            dir: state_dir.join("catalog"),
        }
    }

    fn path(&self, provider: ProviderKind) -> PathBuf {
        self.dir.join(format!("{}.json", provider.name()))
    }

    /// The cached list of `provider`; `None` when there is none or it cannot be read (logged).
    #[must_use]
    pub fn read(&self, provider: ProviderKind) -> Option<CachedList> {
        let path = self.path(provider);
        let text = std::fs::read_to_string(&path).ok()?;
        match serde_json::from_str::<CachedList>(&text) {
            Ok(list) if list.provider == provider.name() => Some(list),
            Ok(_) => None,
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "the cached model list is damaged; ignored");
                None
            }
        }
    }

    /// Writes the list of `provider` fetched at `fetched_at`.
    ///
    /// # Errors
    /// The I/O error of the folder, the file or the rename.
    pub fn write(
        &self,
        provider: ProviderKind,
        fetched_at: DateTime<Utc>,
        models: &[BackendModel],
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let list = CachedList {
            provider: provider.name().to_owned(),
            fetched_at,
            models: models.to_vec(),
        };
        let temp = self
            .dir
            .join(format!(".{}.{:016x}.tmp", provider.name(), rand::random::<u64>()));
        std::fs::write(&temp, serde_json::to_vec_pretty(&list).map_err(std::io::Error::other)?)?;
        std::fs::rename(&temp, self.path(provider)).inspect_err(|_| {
            let _ = std::fs::remove_file(&temp);
        })
    }
}
