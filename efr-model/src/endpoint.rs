//! Where a provider's requests go and how they carry the key: the [`ProviderKind`]s, their endpoints, and the
//! key's headers.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::event::ModelError;

/// The `anthropic-version` header every Messages request carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The kinds of provider efr speaks (spec: the provider names of admin.login_api_key and admin.status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProviderKind {
    /// `openai-api`: the Responses API with an OpenAI API key.
    #[serde(rename = "openai-api")]
    OpenAiApi,
    /// `anthropic-api`: the Messages API with an Anthropic API key.
    #[serde(rename = "anthropic-api")]
    AnthropicApi,
    /// `openai-compat`: Chat Completions on any compatible server, key optional.
    #[serde(rename = "openai-compat")]
    OpenAiCompat,
}

impl ProviderKind {
    /// Every kind.
    pub const ALL: [Self; 3] = [Self::OpenAiApi, Self::AnthropicApi, Self::OpenAiCompat];

    /// The kind's name: `openai-api`, `anthropic-api` or `openai-compat`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenAiApi => "openai-api",
            Self::AnthropicApi => "anthropic-api",
            Self::OpenAiCompat => "openai-compat",
        }
    }

    /// The kind of a name; `None` for another name.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }

    /// The streaming endpoint's path under the base URL.
    #[must_use]
    pub fn path(self) -> &'static str {
        match self {
            Self::OpenAiApi => "/v1/responses",
            Self::AnthropicApi => "/v1/messages",
            Self::OpenAiCompat => "/v1/chat/completions",
        }
    }

    /// Whether a call needs a key (`openai-compat` only when its config gives one).
    #[must_use]
    pub fn needs_key(self) -> bool {
        !matches!(self, Self::OpenAiCompat)
    }
}

impl std::fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The headers that carry the key: `Authorization: Bearer` for OpenAI and compatible servers, `x-api-key` with
/// `anthropic-version` for Anthropic (shared/provider-streams/README.md). The key's header is marked sensitive, so
/// the HTTP stack never prints it.
pub fn auth_headers(kind: ProviderKind, key: Option<&SecretString>) -> Result<HeaderMap, ModelError> {
    let mut headers = HeaderMap::new();
    let unusable = || ModelError::KeyRefused {
        provider: kind.name().to_owned(),
        message: "the key holds characters that an HTTP header cannot carry".to_owned(),
    };
    if kind == ProviderKind::AnthropicApi {
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
    }
    if let Some(key) = key {
        let (name, text) = match kind {
            ProviderKind::AnthropicApi => (HeaderName::from_static("x-api-key"), key.expose_secret().to_owned()),
            ProviderKind::OpenAiApi | ProviderKind::OpenAiCompat => (
                reqwest::header::AUTHORIZATION,
                format!("Bearer {}", key.expose_secret()),
            ),
        };
        let mut value = HeaderValue::from_str(&text).map_err(|_| unusable())?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

/// `base_url` joined with `path` (which starts with `/v1/`): a trailing `/` or `/v1` of the base is dropped.
pub fn endpoint(base_url: &str, path: &str) -> String {
    let base = base_url.trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base);
    format!("{base}{path}")
}
