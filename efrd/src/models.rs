//! The model layer as the config sets it up: which provider is active, its settings from the config, the key store,
//! the catalog and the shared HTTP client.
//!
//! The rules of providers, keys and catalogs live in the other files of `model/`; this file only joins them to the
//! config. The plan of a turn's model call (instructions, tools) is the turn's ([`crate::turn::plan`]).

use std::sync::{Arc, RwLock};

use efr_protocol::{ErrorBody, ErrorCode};

use crate::config::{Config, ConfigCheck, ConfigState, ProviderId};
use efr_model::catalog::{CatalogCache, CatalogConfig, ConfigModel};
use efr_model::{Auth, Catalog, KeyStore, Provider, ProviderConfig, ProviderKind};

/// The default base URL of each provider (docs/architecture.md, "Models": each is configurable).
fn default_base_url(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAiApi => "https://api.openai.com",
        ProviderKind::AnthropicApi => "https://api.anthropic.com",
        ProviderKind::OpenAiCompat => "http://127.0.0.1:8080",
    }
}

/// The provider kind of a config name.
#[must_use]
pub fn kind_of(id: ProviderId) -> ProviderKind {
    match id {
        ProviderId::OpenaiApi => ProviderKind::OpenAiApi,
        ProviderId::AnthropicApi => ProviderKind::AnthropicApi,
        ProviderId::OpenaiCompat => ProviderKind::OpenAiCompat,
    }
}

/// Providers, keys and the catalog of the active provider.
#[derive(Debug)]
pub struct Models {
    config: Arc<ConfigState>,
    keys: Arc<KeyStore>,
    cache: CatalogCache,
    catalog: Arc<RwLock<Catalog>>,
    http: reqwest::Client,
}

impl Models {
    /// The model layer for `config`, with keys and the catalog cache in `state_dir`. The catalog starts from the
    /// cache (or the built-in list) until [`Self::refresh_catalog`] fetches it. It installs the config's rule that
    /// `[auto] classifier_model` is in models.list ([`ConfigState::set_check`]), so a reload refuses a file that
    /// breaks it; `config.recheck()` runs it on the config in effect (at start, after a catalog refresh).
    ///
    /// # Errors
    /// `internal` when the HTTP client cannot be built (no TLS roots).
    pub fn new(config: Arc<ConfigState>, keys: Arc<KeyStore>, state_dir: &std::path::Path) -> Result<Self, ErrorBody> {
        let cache = CatalogCache::new(state_dir);
        let http = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| ErrorBody::internal(format!("cannot build the HTTP client: {e}")))?;
        let current = config.current();
        let kind = active_kind(&current, &keys);
        let catalog = Arc::new(RwLock::new(Catalog::resolve(
            kind,
            None,
            cache.read(kind),
            &catalog_config(&current),
        )));
        config.set_check(classifier_check(Arc::clone(&keys), cache.clone(), Arc::clone(&catalog)));
        Ok(Self {
            config,
            keys,
            cache,
            catalog,
            http,
        })
    }

    /// The config in force, for the provider settings it reads (the daemon's copy is [`crate::daemon::Daemon::config`]).
    fn config(&self) -> Arc<Config> {
        self.config.current()
    }

    /// The key store.
    #[must_use]
    pub fn keys(&self) -> &Arc<KeyStore> {
        &self.keys
    }

    /// The shared HTTP client.
    #[must_use]
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// The catalog of the active provider.
    #[must_use]
    pub fn catalog(&self) -> Catalog {
        self.catalog
            .read()
            .map_or_else(|e| e.into_inner().clone(), |c| c.clone())
    }

    /// The provider of new conversations: `[model] provider`, else the one with a key (anthropic-api when only it
    /// has one), else openai-api.
    #[must_use]
    pub fn active(&self) -> ProviderKind {
        active_kind(&self.config(), &self.keys)
    }

    /// The base URL of `kind` from the config (or its default).
    #[must_use]
    pub fn base_url(&self, kind: ProviderKind) -> String {
        let config = self.config();
        let configured = match kind {
            ProviderKind::OpenAiApi => config.providers.openai_api.base_url.clone(),
            ProviderKind::AnthropicApi => config.providers.anthropic_api.base_url.clone(),
            ProviderKind::OpenAiCompat => config.providers.openai_compat.base_url.clone(),
        };
        configured.unwrap_or_else(|| default_base_url(kind).to_owned())
    }

    /// A client of `kind` with the config's settings and the key store's key.
    #[must_use]
    pub fn provider(&self, kind: ProviderKind) -> Provider {
        let config = self.config();
        let mut provider_config = ProviderConfig::new(kind, self.base_url(kind));
        let retry = match kind {
            ProviderKind::OpenAiApi => config.providers.openai_api.retry.max_attempts,
            ProviderKind::AnthropicApi => config.providers.anthropic_api.retry.max_attempts,
            ProviderKind::OpenAiCompat => config.providers.openai_compat.retry.max_attempts,
        };
        if let Some(attempts) = retry {
            provider_config.retry.max_attempts = attempts;
        }
        let idle = match kind {
            ProviderKind::OpenAiApi => config.providers.openai_api.idle_timeout_secs,
            ProviderKind::AnthropicApi => config.providers.anthropic_api.idle_timeout_secs,
            ProviderKind::OpenAiCompat => config.providers.openai_compat.idle_timeout_secs,
        };
        if let Some(secs) = idle {
            provider_config.idle_timeout = std::time::Duration::from_secs(secs);
        }
        let auth = match kind {
            ProviderKind::OpenAiCompat if !config.providers.openai_compat.key_required => Auth::None,
            _ => Auth::Store(Arc::clone(&self.keys)),
        };
        Provider::with_client(provider_config, auth, self.http.clone())
    }

    /// Fetches the active provider's model list (cached on disk) and makes it the catalog.
    pub async fn refresh_catalog(&self) -> Catalog {
        let provider = self.provider(self.active());
        let load = Catalog::load(&provider, &self.cache, &catalog_config(&self.config())).await;
        if let Ok(mut catalog) = self.catalog.write() {
            *catalog = load.catalog.clone();
        }
        load.catalog
    }

    /// The catalog of `kind`: the active provider's as [`Self::catalog`] holds it; another provider's from its disk
    /// cache, else its built-in list, else an empty one (origin `missing`).
    #[must_use]
    pub fn catalog_of(&self, kind: ProviderKind) -> Catalog {
        if kind == self.active() {
            return self.catalog();
        }
        Catalog::resolve(kind, None, self.cache.read(kind), &CatalogConfig::default())
    }

    /// The client of the active provider for a turn: the active provider with its key.
    ///
    /// # Errors
    /// `unauthorized` when the provider needs a key and none is stored or set in the environment.
    pub fn provider_for_turn(&self) -> Result<Provider, ErrorBody> {
        self.provider_with_key(self.active())
    }

    /// The client of `kind`, when it has the key it needs.
    ///
    /// # Errors
    /// `unauthorized` when the provider needs a key and none is stored or set in the environment.
    pub fn provider_with_key(&self, kind: ProviderKind) -> Result<Provider, ErrorBody> {
        let needs_key = match kind {
            ProviderKind::OpenAiCompat => self.config().providers.openai_compat.key_required,
            _ => true,
        };
        if needs_key && self.keys.key(kind).is_none() {
            let message = match kind {
                ProviderKind::OpenAiCompat => format!(
                    "no API key for {kind}: set {} in efrd's environment (key_required = true; efr login covers \
                     openai-api and anthropic-api only)",
                    efr_model::keys::COMPAT_KEY_VAR
                ),
                _ => efr_protocol::error::login::no_api_key(kind.name()),
            };
            return Err(ErrorBody::new(ErrorCode::Unauthorized, message));
        }
        Ok(self.provider(kind))
    }

    /// The context window of `model` in tokens, when the catalog knows it.
    #[must_use]
    pub fn context_window(&self, model: &str) -> Option<u64> {
        self.catalog()
            .models
            .iter()
            .find(|m| m.id == model)
            .and_then(|m| m.context_window)
    }
}

fn active_kind(config: &Config, keys: &KeyStore) -> ProviderKind {
    if let Some(id) = config.model.provider {
        return kind_of(id);
    }
    if keys.key(ProviderKind::OpenAiApi).is_none() && keys.key(ProviderKind::AnthropicApi).is_some() {
        return ProviderKind::AnthropicApi;
    }
    ProviderKind::OpenAiApi
}

/// The rule that `[auto] classifier_model` is in its provider's models.list: the active provider's catalog (of the
/// config being checked), or another provider's cached list. A provider with no list passes (nothing to check).
fn classifier_check(keys: Arc<KeyStore>, cache: CatalogCache, catalog: Arc<RwLock<Catalog>>) -> ConfigCheck {
    Arc::new(move |text: &str, config: &Config| {
        let active = active_kind(config, &keys);
        crate::config::auto::check_listed(text, &config.auto, |provider, id| {
            let kind = provider.map_or(active, kind_of);
            let current = catalog.read().map_or_else(|e| e.into_inner().clone(), |c| c.clone());
            let list = if current.provider == kind {
                current
            } else {
                let extra = if kind == active {
                    catalog_config(config)
                } else {
                    CatalogConfig::default()
                };
                Catalog::resolve(kind, None, cache.read(kind), &extra)
            };
            (!list.models.is_empty()).then(|| list.models.iter().any(|m| m.id == id))
        })
    })
}

fn catalog_config(config: &Config) -> CatalogConfig {
    CatalogConfig {
        models: config
            .model
            .extra_models
            .iter()
            .map(|m| ConfigModel {
                id: m.id.clone(),
                efforts: m.efforts.clone(),
                default_effort: m.default_effort.clone(),
                context_window: m.context_window,
            })
            .collect(),
        default_model: config.model.model.clone(),
    }
}
