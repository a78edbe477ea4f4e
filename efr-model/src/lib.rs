//! Model providers: one provider-neutral request ([`ModelRequest`]) in, one [`ModelEvent`] stream out.
//!
//! efrd speaks three wire formats (docs/architecture.md, "Models"): the OpenAI Responses API (`openai-api`), the
//! Anthropic Messages API (`anthropic-api`) and Chat Completions (`openai-compat`, for llama.cpp, Ollama, vLLM). Each
//! has a module that builds its request body and parses its stream; [`Provider`] sends the request, retries what may be
//! retried, and yields the events. The rest of efrd never sees a provider's own shapes.
//!
//! - [`request`]: the neutral request and history.
//! - [`event`]: [`ModelEvent`], [`Usage`], [`StopReason`] and [`ModelError`].
//! - [`openai`], [`anthropic`], [`compat`]: request bodies and stream parsers, one per format.
//! - [`http`]: error statuses and bodies, `Retry-After`.
//! - [`parse`]: the SSE layer and the pieces the parsers share; parsing is pure, so tests and benches feed it bytes.
//! - [`endpoint`]: [`ProviderKind`], the endpoints and the key's headers.
//! - [`list`]: a provider's model list (`GET /v1/models`).
//! - [`provider`]: [`Provider`], [`ProviderConfig`], [`Auth`].
//! - [`retry`]: [`RetryConfig`] and the retry of a call that failed before any output.
//! - [`keys`]: the API key store (login, logout, key hints).
//! - [`catalog`]: `models.list` data and the check of a prompt's model and effort.
//!
//! ```no_run
//! # async fn demo(keys: std::sync::Arc<efr_model::KeyStore>) {
//! use efr_model::{Auth, ModelRequest, Provider, ProviderConfig, ProviderKind};
//! use futures::StreamExt;
//!
//! let config = ProviderConfig::new(ProviderKind::AnthropicApi, "https://api.anthropic.com");
//! let provider = Provider::new(config, Auth::Store(keys)).expect("http client");
//! let mut request = ModelRequest::new("claude-sonnet-4-5");
//! request.history.push(efr_model::HistoryItem::UserText { text: "hello".into() });
//! let mut events = std::pin::pin!(provider.stream(&request));
//! while let Some(event) = events.next().await {
//!     println!("{event:?}");
//! }
//! # }
//! ```

pub mod anthropic;
pub mod catalog;
pub mod compat;
pub mod endpoint;
pub mod event;
pub mod http;
pub mod keys;
pub mod list;
pub mod openai;
pub mod parse;
pub mod provider;
pub mod request;
pub mod retry;

pub use catalog::{
    CachedList, Catalog, CatalogCache, CatalogConfig, CatalogLoad, CatalogOrigin, ConfigModel, ModelInfo, ModelSource,
    SettingsError,
};
pub use endpoint::ProviderKind;
pub use event::{ModelError, ModelEvent, StopReason, Usage};
pub use keys::{EnvKeys, KeyCheck, KeyError, KeySource, KeyStatus, KeyStore, Login, key_hint};
pub use list::BackendModel;
pub use provider::{Auth, Provider, ProviderConfig};
pub use request::{HistoryItem, ModelRequest, ReasoningCarry, Tool};
pub use retry::RetryConfig;
