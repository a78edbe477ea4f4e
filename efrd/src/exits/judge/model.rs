//! Model judges over real providers: [`ProviderJudge`] (a [`JudgeModel`] that sends a [`JudgeRequest`] through
//! [`Provider::stream`]), the choice of a turn's classifier from `[auto] classifier_model` and the catalog, and
//! [`Judges::for_turn`].
//!
//! The default classifier of a provider, when `classifier_model` is absent and the provider's models.list has it:
//! `openai-api`: `gpt-5-mini`; `anthropic-api`: the first listed `haiku` model (the list is newest first);
//! `openai-compat`: none (a local server often serves one model, which is the turn's). Without one, the turn's model
//! judges.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use super::{JudgeFuture, JudgeModel, JudgeRequest, Judges};
use crate::config::{AutoSection, ClassifierModel};
use crate::models::{Models, kind_of};
use efr_model::{Catalog, HistoryItem, ModelEvent, ModelRequest, Provider, ProviderKind, StopReason};

/// The most output tokens of a judge's answer: the JSON object is short; a reasoning model's few thoughts fit too.
pub const MAX_OUTPUT_TOKENS: u32 = 4096;

/// The most bytes of answer text collected; a longer answer is not the one object asked for.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The default classifier of `OpenAI`'s list.
const OPENAI_CLASSIFIER: &str = "gpt-5-mini";

/// A model of a provider, asked as a judge: the judge's instructions, its input as the one user message, no tools.
#[derive(Debug, Clone)]
pub struct ProviderJudge {
    provider: Provider,
    model: String,
    effort: Option<String>,
}

impl ProviderJudge {
    /// `model` of `provider`, asked with `effort` (`None`: the model's default).
    #[must_use]
    pub fn new(provider: Provider, model: impl Into<String>, effort: Option<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            effort,
        }
    }
}

impl JudgeModel for ProviderJudge {
    fn name(&self) -> String {
        format!("{}/{}", self.provider.kind().name(), self.model)
    }

    fn ask<'a>(&'a self, request: &'a JudgeRequest) -> JudgeFuture<'a> {
        let mut call = ModelRequest::new(self.model.clone());
        call.instructions.clone_from(&request.instructions);
        call.history = vec![HistoryItem::UserText {
            text: request.input.clone(),
        }];
        call.effort.clone_from(&self.effort);
        call.max_output = Some(MAX_OUTPUT_TOKENS);
        let stream = self.provider.stream(&call);
        Box::pin(async move { collect(stream).await })
    }
}

/// The text of a judge's answer; an error for a failed call, a tool call, a stop other than the end of the answer,
/// or an answer longer than [`MAX_ANSWER_BYTES`]. Messages after the first are joined with a newline (and then are
/// not one JSON object).
async fn collect(
    stream: impl futures::Stream<Item = Result<ModelEvent, efr_model::ModelError>>,
) -> Result<String, String> {
    let mut stream = pin!(stream);
    let mut text = String::new();
    let mut message = None;
    while let Some(event) = stream.next().await {
        match event.map_err(|e| e.to_string())? {
            ModelEvent::TextDelta { index, delta, .. } => {
                if message.is_some_and(|m| m != index) {
                    text.push('\n');
                }
                message = Some(index);
                text.push_str(&delta);
                if text.len() > MAX_ANSWER_BYTES {
                    return Err(format!("the answer is longer than {MAX_ANSWER_BYTES} bytes"));
                }
            }
            ModelEvent::ToolCallStarted { tool, .. } => return Err(format!("the judge called the tool {tool:?}")),
            ModelEvent::Stop {
                reason: StopReason::EndTurn,
                ..
            } => return Ok(text),
            ModelEvent::Stop { reason, .. } => return Err(format!("the answer stopped early ({reason:?})")),
            _ => {}
        }
    }
    Err("the answer ended before it was complete".to_owned())
}

/// Which classifier a turn gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassifierChoice {
    /// None: the turn's model judges.
    None,
    /// A model of a provider, with the effort it is asked with.
    Model {
        /// The provider.
        kind: ProviderKind,
        /// The model id.
        id: String,
        /// The effort.
        effort: Option<String>,
    },
    /// The configured model cannot be asked (not in its provider's models.list, or no key): `name` goes in
    /// `skipped`, `why` in the log.
    Unavailable {
        /// `provider/model`.
        name: String,
        /// Why.
        why: String,
    },
}

/// The classifier of a turn on `turn_kind`: `[auto] classifier_model`, or the provider's default (module docs).
/// `catalog_of` gives a provider's catalog.
#[must_use]
pub fn choose_classifier(
    auto: &AutoSection,
    turn_kind: ProviderKind,
    catalog_of: &dyn Fn(ProviderKind) -> Catalog,
) -> ClassifierChoice {
    match &auto.classifier_model {
        Some(ClassifierModel::None) => ClassifierChoice::None,
        Some(ClassifierModel::Model { provider, id }) => {
            let kind = provider.map_or(turn_kind, kind_of);
            let catalog = catalog_of(kind);
            // A provider with no list at all cannot be checked: the model is asked, and fails closed if it is not.
            if !catalog.models.is_empty() && !catalog.models.iter().any(|m| m.id == *id) {
                return ClassifierChoice::Unavailable {
                    name: format!("{}/{id}", kind.name()),
                    why: "not in the provider's models.list".to_owned(),
                };
            }
            ClassifierChoice::Model {
                kind,
                id: id.clone(),
                effort: judge_effort(&catalog, id),
            }
        }
        None => {
            let catalog = catalog_of(turn_kind);
            let default = match turn_kind {
                ProviderKind::OpenAiApi => catalog.models.iter().find(|m| m.id == OPENAI_CLASSIFIER),
                ProviderKind::AnthropicApi => catalog.models.iter().find(|m| m.id.contains("haiku")),
                ProviderKind::OpenAiCompat => None,
            };
            default.map_or(ClassifierChoice::None, |m| ClassifierChoice::Model {
                kind: turn_kind,
                id: m.id.clone(),
                effort: judge_effort(&catalog, &m.id),
            })
        }
    }
}

/// The effort a judge is asked with: an `OpenAI` model's least effort (`minimal` or `low`: the answer is short and a
/// turn waits for it); none elsewhere (Anthropic thinks only when given an effort).
fn judge_effort(catalog: &Catalog, id: &str) -> Option<String> {
    if catalog.provider != ProviderKind::OpenAiApi {
        return None;
    }
    catalog
        .models
        .iter()
        .find(|m| m.id == id)
        .and_then(|m| m.efforts.first().cloned())
}

impl Judges {
    /// The judges of a turn that runs `turn_model` on `turn_provider`: the classifier that `auto` and the catalogs
    /// choose ([`choose_classifier`]), the turn's model, the timeout and pause limits of `auto`. A classifier that
    /// cannot be asked (not listed, or its provider has no key) is in `unavailable`.
    #[must_use]
    pub fn for_turn(auto: &AutoSection, models: &Models, turn_provider: &Provider, turn_model: &str) -> Self {
        Self::from_parts(
            auto,
            turn_provider,
            turn_model,
            &|kind| models.catalog_of(kind),
            &|kind| models.provider_with_key(kind).map_err(|e| e.message),
        )
    }

    /// [`Self::for_turn`] with the catalogs and providers given: `catalog_of` gives a provider's catalog,
    /// `provider_of` a client of a provider other than the turn's (or why there is none).
    #[must_use]
    pub fn from_parts(
        auto: &AutoSection,
        turn_provider: &Provider,
        turn_model: &str,
        catalog_of: &dyn Fn(ProviderKind) -> Catalog,
        provider_of: &dyn Fn(ProviderKind) -> Result<Provider, String>,
    ) -> Self {
        let turn_kind = turn_provider.kind();
        let mut judges = Self {
            classifier: None,
            turn_model: None,
            timeout: Duration::from_secs(auto.judge_timeout_secs),
            unavailable: Vec::new(),
            pause_in_a_row: auto.pause_after_denials_in_a_row,
            pause_per_turn: auto.pause_after_denials_per_turn,
        };
        match choose_classifier(auto, turn_kind, catalog_of) {
            ClassifierChoice::None => {}
            ClassifierChoice::Unavailable { name, why } => {
                tracing::warn!(classifier = %name, %why, "the classifier model cannot be asked");
                judges.unavailable.push(name);
            }
            ClassifierChoice::Model { kind, id, effort } => {
                let provider = if kind == turn_kind {
                    Ok(turn_provider.clone())
                } else {
                    provider_of(kind)
                };
                match provider {
                    Ok(provider) => {
                        judges.classifier = Some(Arc::new(ProviderJudge::new(provider, id, effort)));
                    }
                    Err(why) => {
                        tracing::warn!(classifier = %format!("{}/{id}", kind.name()), %why, "the classifier model cannot be asked");
                        judges.unavailable.push(format!("{}/{id}", kind.name()));
                    }
                }
            }
        }
        let effort = judge_effort(&catalog_of(turn_kind), turn_model);
        judges.turn_model = Some(Arc::new(ProviderJudge::new(turn_provider.clone(), turn_model, effort)));
        judges
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use efr_model::BackendModel;
    use efr_model::catalog::CatalogConfig;

    fn catalog(kind: ProviderKind, ids: &[&str]) -> Catalog {
        let listed = ids
            .iter()
            .map(|id| BackendModel {
                id: (*id).to_owned(),
                context_window: None,
            })
            .collect();
        Catalog::resolve(
            kind,
            Some((chrono::Utc::now(), listed)),
            None,
            &CatalogConfig::default(),
        )
    }

    fn catalogs(kind: ProviderKind) -> Catalog {
        match kind {
            ProviderKind::OpenAiApi => catalog(kind, &["gpt-5", "gpt-5-mini", "o3"]),
            ProviderKind::AnthropicApi => catalog(kind, &["claude-sonnet-4-5", "claude-haiku-4-5", "claude-3-haiku"]),
            ProviderKind::OpenAiCompat => catalog(kind, &["qwen3-coder"]),
        }
    }

    fn configured(model: &str) -> AutoSection {
        AutoSection {
            classifier_model: Some(ClassifierModel::try_from(model.to_owned()).unwrap()),
            ..AutoSection::default()
        }
    }

    #[test]
    fn each_provider_has_its_default_classifier() {
        let auto = AutoSection::default();
        assert_eq!(
            choose_classifier(&auto, ProviderKind::OpenAiApi, &catalogs),
            ClassifierChoice::Model {
                kind: ProviderKind::OpenAiApi,
                id: "gpt-5-mini".into(),
                effort: Some("minimal".into())
            }
        );
        assert_eq!(
            choose_classifier(&auto, ProviderKind::AnthropicApi, &catalogs),
            ClassifierChoice::Model {
                kind: ProviderKind::AnthropicApi,
                id: "claude-haiku-4-5".into(),
                effort: None
            }
        );
        assert_eq!(
            choose_classifier(&auto, ProviderKind::OpenAiCompat, &catalogs),
            ClassifierChoice::None
        );
        // A list without the default model: the turn's model judges.
        let bare = |kind| catalog(kind, &["gpt-5"]);
        assert_eq!(
            choose_classifier(&auto, ProviderKind::OpenAiApi, &bare),
            ClassifierChoice::None
        );
    }

    #[test]
    fn a_configured_classifier_is_used_when_listed() {
        assert_eq!(
            choose_classifier(&configured("none"), ProviderKind::OpenAiApi, &catalogs),
            ClassifierChoice::None
        );
        assert_eq!(
            choose_classifier(&configured("o3"), ProviderKind::OpenAiApi, &catalogs),
            ClassifierChoice::Model {
                kind: ProviderKind::OpenAiApi,
                id: "o3".into(),
                effort: Some("low".into())
            }
        );
        assert_eq!(
            choose_classifier(
                &configured("anthropic-api/claude-3-haiku"),
                ProviderKind::OpenAiApi,
                &catalogs
            ),
            ClassifierChoice::Model {
                kind: ProviderKind::AnthropicApi,
                id: "claude-3-haiku".into(),
                effort: None
            }
        );
        assert_eq!(
            choose_classifier(&configured("gpt-9"), ProviderKind::OpenAiApi, &catalogs),
            ClassifierChoice::Unavailable {
                name: "openai-api/gpt-9".into(),
                why: "not in the provider's models.list".into()
            }
        );
        // A provider without a list cannot be checked; the model is asked.
        let missing = |kind| Catalog::resolve(kind, None, None, &CatalogConfig::default());
        assert!(matches!(
            choose_classifier(&configured("anything"), ProviderKind::AnthropicApi, &missing),
            ClassifierChoice::Model { .. }
        ));
    }

    #[test]
    fn a_classifier_of_a_provider_without_a_key_is_unavailable() {
        let config = efr_model::ProviderConfig::new(ProviderKind::OpenAiApi, "http://127.0.0.1:9");
        let turn = Provider::new(config, efr_model::Auth::None).unwrap();
        let auto = AutoSection {
            judge_timeout_secs: 7,
            pause_after_denials_in_a_row: 4,
            pause_after_denials_per_turn: 9,
            ..configured("anthropic-api/claude-haiku-4-5")
        };
        let no_key = |kind: ProviderKind| Err(format!("no API key for {}", kind.name()));
        let judges = Judges::from_parts(&auto, &turn, "gpt-5", &catalogs, &no_key);
        assert!(judges.classifier.is_none());
        assert_eq!(judges.unavailable, ["anthropic-api/claude-haiku-4-5"]);
        assert_eq!(judges.turn_model.as_ref().unwrap().name(), "openai-api/gpt-5");
        assert_eq!(
            (judges.timeout, judges.pause_in_a_row, judges.pause_per_turn),
            (Duration::from_secs(7), 4, 9)
        );

        // The turn's own provider needs no other client.
        let judges = Judges::from_parts(&configured("o3"), &turn, "gpt-5", &catalogs, &no_key);
        assert_eq!(judges.classifier.as_ref().unwrap().name(), "openai-api/o3");
        assert!(judges.unavailable.is_empty());
    }
}
