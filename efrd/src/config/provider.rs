//! The model providers as the config names them: a leaf that `schema` and `auto` both use.

use serde::{Deserialize, Serialize};

/// A model provider, by its config name (kebab-case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderId {
    /// The OpenAI Responses API.
    OpenaiApi,
    /// The Anthropic Messages API.
    AnthropicApi,
    /// Any server that speaks OpenAI Chat Completions (llama.cpp, Ollama, vLLM, ...).
    OpenaiCompat,
}

impl ProviderId {
    /// The config name: `openai-api`, `anthropic-api` or `openai-compat`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::OpenaiApi => "openai-api",
            Self::AnthropicApi => "anthropic-api",
            Self::OpenaiCompat => "openai-compat",
        }
    }
}
