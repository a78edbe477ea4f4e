//! The settings a turn runs with: the prompt's, else the config's, else the catalog's defaults.
//!
//! Source: the spec's changelog entries "turn settings" and "the daemon applies turn settings": a model that is not
//! in models.list, or an effort (the prompt's own or the config's) that is not one of the model's efforts, is
//! `invalid` with data `{setting, value, choices}` (plus `model` for an effort); a turn from a remote origin runs
//! with a mode of at most cautious.

use efr_protocol::wire::{Mode, ModeFallback, Origin, Overridden, PromptSettings, TurnSettings};
use efr_protocol::{ErrorBody, ErrorCode};

use crate::config::Config;
use crate::config::schema::Mode as ConfigMode;
use crate::model::Catalog;

/// Resolves a prompt's settings against the config and the catalog.
///
/// # Errors
/// `invalid` with `{setting, value, choices}` for a model or an effort outside the catalog; `unavailable` when the
/// catalog has no model at all (no login, no list).
pub fn resolve(
    catalog: &Catalog,
    config: &Config,
    asked: Option<&PromptSettings>,
    origin: Origin,
) -> Result<(TurnSettings, Overridden), ErrorBody> {
    let asked = asked.cloned().unwrap_or_default();
    let overridden = Overridden {
        mode: asked.mode.is_some(),
        model: asked.model.is_some(),
        effort: asked.effort.is_some(),
    };

    let mut mode = asked.mode.unwrap_or_else(|| wire_mode(config.permissions.default_mode));
    if mode == Mode::Unknown {
        return Err(ErrorBody::new(ErrorCode::Invalid, "settings.mode is not one this efrd knows")
            .with_data(serde_json::json!({"setting": "mode", "value": "unknown", "choices": ["manual", "cautious", "auto", "full"]})));
    }
    if origin == Origin::Phone && matches!(mode, Mode::Auto | Mode::Full) {
        mode = Mode::Cautious;
    }
    // auto runs every call in efr's sandbox, which turns do not use yet: such a turn runs as cautious and says why
    // (the spec's fallback of a turn whose sandbox cannot run).
    let fallback = (mode == Mode::Auto).then(|| {
        mode = Mode::Cautious;
        ModeFallback {
            asked: Mode::Auto,
            reason: "efr's sandbox does not run turns' calls yet".to_owned(),
        }
    });

    let model = match asked.model.or_else(|| config.model.model.clone()) {
        Some(model) => model,
        None => catalog.default_model().map(|m| m.id.clone()).ok_or_else(|| {
            ErrorBody::new(
                ErrorCode::Unavailable,
                "no model is known: log in or name one in [model]",
            )
        })?,
    };
    let effort = asked.effort.or_else(|| config.model.effort.clone());
    let info = catalog
        .validate(&model, effort.as_deref())
        .map_err(|error| ErrorBody::new(ErrorCode::Invalid, error.to_string()).with_data(error.data()))?;
    let effort = effort.or_else(|| info.default_effort.clone());
    Ok((
        TurnSettings {
            mode,
            model,
            effort,
            fallback,
        },
        overridden,
    ))
}

/// The wire mode of the config's default mode.
fn wire_mode(mode: ConfigMode) -> Mode {
    match mode {
        ConfigMode::Manual => Mode::Manual,
        ConfigMode::Cautious => Mode::Cautious,
        ConfigMode::Auto => Mode::Auto,
        ConfigMode::Full => Mode::Full,
    }
}
