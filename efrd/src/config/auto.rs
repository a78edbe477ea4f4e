//! `[auto]`: the judges of auto mode's exits (docs/auto.md, "The judges"; docs/adr/0016-exit-kinds.md, "Decision" 5).
//!
//! ```toml
//! [auto]
//! classifier_model = "gpt-5-mini"   # a model of the turn's provider, or "anthropic-api/claude-haiku-4-5", or "none"
//! judge_timeout_secs = 20           # the longest wait for one model judge's answer (1 to 300); past it: deny
//! pause_after_denials_in_a_row = 3  # this many exits denied in a row pause the model judges for the turn
//! pause_after_denials_per_turn = 8  # this many exits denied in one turn pause them too
//! ```
//!
//! `classifier_model` absent: the turn's provider's small fast model when its models.list has it (`openai-api`:
//! `gpt-5-mini`; `anthropic-api`: its first `haiku` model; `openai-compat`: none, a local server often serves one
//! model), else no classifier and the turn's own model judges. `"none"`: no classifier. A model that is not in
//! models.list is a config error at its line, column and key ([`check_listed`]); the catalog is the model layer's,
//! so that check takes what it lists as an argument.

use serde::{Deserialize, Serialize};

use super::error::{ConfigError, error_at_key};
use super::key_path::KeyPath;
use super::provider::ProviderId;

/// The default of `judge_timeout_secs`: long enough for a small model's short answer over a slow link, short enough
/// that a hung provider does not hold a turn.
pub const DEFAULT_JUDGE_TIMEOUT_SECS: u64 = 20;
/// The allowed `judge_timeout_secs`.
pub const JUDGE_TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=300;
/// The default of `pause_after_denials_in_a_row`.
pub const DEFAULT_PAUSE_IN_A_ROW: u64 = 3;
/// The default of `pause_after_denials_per_turn`.
pub const DEFAULT_PAUSE_PER_TURN: u64 = 8;
/// The allowed pause limits: at least one denial, and not so many that a looping turn never reaches the user.
pub const PAUSE_RANGE: std::ops::RangeInclusive<u64> = 1..=1000;

/// `[auto]`. A change applies to turns that start after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AutoSection {
    /// The classifier model; absent: the provider's default (see the module docs).
    pub classifier_model: Option<ClassifierModel>,
    /// The longest wait for one model judge's answer, in seconds; [`JUDGE_TIMEOUT_RANGE`], default
    /// [`DEFAULT_JUDGE_TIMEOUT_SECS`]. A judge that does not answer in time denies (it fails closed).
    pub judge_timeout_secs: u64,
    /// Exits denied in a row that pause the model judges for the rest of the turn (classifier_paused `in_a_row`);
    /// [`PAUSE_RANGE`], default [`DEFAULT_PAUSE_IN_A_ROW`].
    pub pause_after_denials_in_a_row: u64,
    /// Exits denied in one turn that pause them (classifier_paused `per_turn`); [`PAUSE_RANGE`], default
    /// [`DEFAULT_PAUSE_PER_TURN`].
    pub pause_after_denials_per_turn: u64,
    /// `[[auto.always]]`: the always rules (`config/always.rs`); empty when none. A rule applies at once, to the
    /// next exit it covers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub always: Vec<super::always::AlwaysRule>,
}

impl Default for AutoSection {
    fn default() -> Self {
        Self {
            classifier_model: None,
            judge_timeout_secs: DEFAULT_JUDGE_TIMEOUT_SECS,
            pause_after_denials_in_a_row: DEFAULT_PAUSE_IN_A_ROW,
            pause_after_denials_per_turn: DEFAULT_PAUSE_PER_TURN,
            always: Vec::new(),
        }
    }
}

/// `classifier_model` as written: `model`, `provider/model` (a provider's config name, then the id), or `none`.
///
/// A model id may hold `/` itself (`qwen/qwen3-coder` on a compat server): only a first part that names a provider
/// makes it `provider/model`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ClassifierModel {
    /// No classifier: the turn's model judges.
    None,
    /// A model.
    Model {
        /// The provider; `None`: the turn's.
        provider: Option<ProviderId>,
        /// The model id.
        id: String,
    },
}

impl TryFrom<String> for ClassifierModel {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        if text == "none" {
            return Ok(Self::None);
        }
        let providers = [
            ProviderId::OpenaiApi,
            ProviderId::AnthropicApi,
            ProviderId::OpenaiCompat,
        ];
        let (provider, id) = match text.split_once('/') {
            Some((head, id)) => match providers.into_iter().find(|p| p.as_str() == head) {
                Some(provider) => (Some(provider), id.to_owned()),
                None => (None, text.clone()),
            },
            None => (None, text.clone()),
        };
        if id.is_empty() {
            return Err(format!("{text:?} names no model"));
        }
        if id.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "a model id must not contain spaces or control characters: {text:?}"
            ));
        }
        Ok(Self::Model { provider, id })
    }
}

impl From<ClassifierModel> for String {
    fn from(model: ClassifierModel) -> Self {
        match model {
            ClassifierModel::None => "none".to_owned(),
            ClassifierModel::Model { provider: None, id } => id,
            ClassifierModel::Model {
                provider: Some(provider),
                id,
            } => format!("{}/{id}", provider.as_str()),
        }
    }
}

/// The rules of `[auto]` that need no catalog: the timeout and the pause limits in their ranges.
///
/// # Errors
/// The key and the message of the first broken rule.
pub fn check(section: &AutoSection) -> Result<(), (KeyPath, String)> {
    super::always::check(&section.always)?;
    let at = |key: &str| KeyPath::keys(&["auto", key]);
    if !JUDGE_TIMEOUT_RANGE.contains(&section.judge_timeout_secs) {
        return Err((
            at("judge_timeout_secs"),
            format!(
                "judge_timeout_secs must be from {} to {}, not {}",
                JUDGE_TIMEOUT_RANGE.start(),
                JUDGE_TIMEOUT_RANGE.end(),
                section.judge_timeout_secs
            ),
        ));
    }
    for (key, value) in [
        ("pause_after_denials_in_a_row", section.pause_after_denials_in_a_row),
        ("pause_after_denials_per_turn", section.pause_after_denials_per_turn),
    ] {
        if !PAUSE_RANGE.contains(&value) {
            return Err((
                at(key),
                format!(
                    "{key} must be from {} to {}, not {value}",
                    PAUSE_RANGE.start(),
                    PAUSE_RANGE.end()
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `classifier_model` against models.list: `listed(provider, id)` says whether the provider's list (the
/// turn's provider when `provider` is `None`) holds `id`, and `None` when that provider has no list to check against
/// (no fetch, no cache), which passes. `text` is the file the config was read from, for the error's place.
///
/// # Errors
/// A [`ConfigError`] with the line, column and key `auto.classifier_model` of a model that is not listed.
pub fn check_listed(
    text: &str,
    section: &AutoSection,
    listed: impl Fn(Option<ProviderId>, &str) -> Option<bool>,
) -> Result<(), ConfigError> {
    let Some(ClassifierModel::Model { provider, id }) = &section.classifier_model else {
        return Ok(());
    };
    if listed(*provider, id) != Some(false) {
        return Ok(());
    }
    let whose = provider.map_or_else(|| "the provider's".to_owned(), |p| format!("{}'s", p.as_str()));
    let key = KeyPath::keys(&["auto", "classifier_model"]);
    Err(error_at_key(
        text,
        &key,
        format!("the classifier model {id:?} is not in {whose} models.list"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse::parse;

    #[test]
    fn defaults_and_a_full_section() {
        let parsed = parse("").unwrap();
        assert_eq!(parsed.config.auto, AutoSection::default());
        assert_eq!(parsed.config.auto.judge_timeout_secs, 20);
        assert_eq!(parsed.config.auto.pause_after_denials_in_a_row, 3);
        assert_eq!(parsed.config.auto.pause_after_denials_per_turn, 8);
        let text = "[auto]\nclassifier_model = \"anthropic-api/claude-haiku-4-5\"\njudge_timeout_secs = 5\n\
                    pause_after_denials_in_a_row = 2\npause_after_denials_per_turn = 4\n";
        let parsed = parse(text).unwrap();
        assert!(parsed.unknown_keys.is_empty(), "{:?}", parsed.unknown_keys);
        let auto = parsed.config.auto;
        assert_eq!(
            auto.classifier_model,
            Some(ClassifierModel::Model {
                provider: Some(ProviderId::AnthropicApi),
                id: "claude-haiku-4-5".into()
            })
        );
        assert_eq!(
            (
                auto.judge_timeout_secs,
                auto.pause_after_denials_in_a_row,
                auto.pause_after_denials_per_turn
            ),
            (5, 2, 4)
        );
    }

    #[test]
    fn classifier_model_forms() {
        let read = |text: &str| ClassifierModel::try_from(text.to_owned());
        assert_eq!(read("none"), Ok(ClassifierModel::None));
        assert_eq!(
            read("gpt-5-mini"),
            Ok(ClassifierModel::Model {
                provider: None,
                id: "gpt-5-mini".into()
            })
        );
        // A slash that does not follow a provider's name is part of the id.
        assert_eq!(
            read("qwen/qwen3-coder"),
            Ok(ClassifierModel::Model {
                provider: None,
                id: "qwen/qwen3-coder".into()
            })
        );
        assert_eq!(
            read("openai-compat/qwen/qwen3"),
            Ok(ClassifierModel::Model {
                provider: Some(ProviderId::OpenaiCompat),
                id: "qwen/qwen3".into()
            })
        );
        for bad in ["", "openai-api/", "gpt 5", "gpt-5\n"] {
            assert!(read(bad).is_err(), "{bad:?}");
        }
        for text in ["none", "gpt-5-mini", "openai-api/gpt-5-mini", "qwen/qwen3"] {
            assert_eq!(String::from(read(text).unwrap()), text);
        }
    }

    #[test]
    fn bad_values_are_errors_at_their_line_column_and_key() {
        let cases = [
            ("[auto]\nclassifier_model = \"gpt 5\"\n", 2, "auto.classifier_model"),
            (
                "[auto]\nclassifier_model = \"openai-api/\"\n",
                2,
                "auto.classifier_model",
            ),
            ("[auto]\njudge_timeout_secs = 0\n", 2, "auto.judge_timeout_secs"),
            ("[auto]\n\njudge_timeout_secs = 301\n", 3, "auto.judge_timeout_secs"),
            (
                "[auto]\npause_after_denials_in_a_row = 0\n",
                2,
                "auto.pause_after_denials_in_a_row",
            ),
            (
                "[auto]\npause_after_denials_per_turn = 5000\n",
                2,
                "auto.pause_after_denials_per_turn",
            ),
            (
                "[auto]\npause_after_denials_per_turn = -1\n",
                2,
                "auto.pause_after_denials_per_turn",
            ),
        ];
        for (text, line, key) in cases {
            let error = parse(text).expect_err(text);
            assert_eq!(error.key.as_deref(), Some(key), "{text}: {error}");
            assert_eq!(error.line, Some(line), "{text}: {error}");
            assert!(error.column.is_some(), "{text}: {error}");
            assert!(!error.message.is_empty());
        }
    }

    #[test]
    fn a_classifier_that_is_not_listed_is_an_error_at_its_place() {
        let text =
            "[model]\nprovider = \"openai-api\"\n\n[auto]\njudge_timeout_secs = 5\nclassifier_model = \"gpt-9-nano\"\n";
        let auto = parse(text).unwrap().config.auto;
        let openai = ["gpt-5", "gpt-5-mini"];
        let listed = |provider: Option<ProviderId>, id: &str| match provider {
            None | Some(ProviderId::OpenaiApi) => Some(openai.contains(&id)),
            _ => None,
        };
        let error = check_listed(text, &auto, listed).unwrap_err();
        assert_eq!(
            (error.line, error.column, error.key.as_deref()),
            (Some(6), Some(20), Some("auto.classifier_model")),
            "{error}"
        );
        assert!(error.message.contains("\"gpt-9-nano\" is not in"), "{error}");

        // A listed model, "none", no key at all, and a provider without a list all pass.
        let ok = "[auto]\nclassifier_model = \"gpt-5-mini\"\n";
        assert!(check_listed(ok, &parse(ok).unwrap().config.auto, listed).is_ok());
        let none = "[auto]\nclassifier_model = \"none\"\n";
        assert!(check_listed(none, &parse(none).unwrap().config.auto, listed).is_ok());
        assert!(check_listed("", &AutoSection::default(), listed).is_ok());
        let other = "[auto]\nclassifier_model = \"anthropic-api/claude-x\"\n";
        assert!(check_listed(other, &parse(other).unwrap().config.auto, listed).is_ok());
    }
}
