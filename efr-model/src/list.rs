//! A provider's model list: `GET /v1/models`, for the catalog and for the check of a new key.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::endpoint::{ProviderKind, auth_headers, endpoint};
use super::event::ModelError;
use super::http::error_answer;

/// A model of a provider's list, as fetched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendModel {
    /// The model id.
    pub id: String,
    /// The context window, when the list gives it (`context_window`, `max_input_tokens` or `context_length`).
    #[serde(default)]
    pub context_window: Option<u64>,
}

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ListedModel>,
}

#[derive(Deserialize)]
struct ListedModel {
    id: String,
    #[serde(default)]
    context_window: Option<u64>,
    #[serde(default)]
    max_input_tokens: Option<u64>,
    #[serde(default)]
    context_length: Option<u64>,
}

/// Fetches a provider's model list: `GET <base>/v1/models` (Anthropic with `?limit=1000`, one page) with the key's
/// headers; both APIs answer `{"data": [{"id": ...}, ...]}`. Also the login check: one cheap authenticated request.
///
/// # Errors
/// The HTTP errors of a call ([`ModelError::KeyRefused`] for a 401), [`ModelError::Transport`] when there is no
/// answer within 30 s, [`ModelError::BadResponse`] when the body is not a list.
pub async fn fetch_models(
    http: &reqwest::Client,
    provider: ProviderKind,
    base_url: &str,
    key: Option<&SecretString>,
) -> Result<Vec<BackendModel>, ModelError> {
    let mut url = endpoint(base_url, "/v1/models");
    if provider == ProviderKind::AnthropicApi {
        url.push_str("?limit=1000");
    }
    let request = http.get(url).headers(auth_headers(provider, key)?).send();
    let response = tokio::time::timeout(std::time::Duration::from_secs(30), request)
        .await
        .map_err(|_| ModelError::Transport {
            message: "no answer to the model list within 30 s".to_owned(),
        })??;
    if !response.status().is_success() {
        return Err(error_answer(provider, response).await);
    }
    let list: ModelList = response
        .json()
        .await
        .map_err(|error| ModelError::bad(format!("model list: {error}")))?;
    Ok(list
        .data
        .into_iter()
        .map(|model| BackendModel {
            context_window: model.context_window.or(model.max_input_tokens).or(model.context_length),
            id: model.id,
        })
        .collect())
}
