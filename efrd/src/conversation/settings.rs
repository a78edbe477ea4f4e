//! The settings a turn runs with: the prompt's, else the config's, else the catalog's defaults.
//!
//! Source: docs/protocol.md, "The contract": "turn settings" and "the daemon applies turn settings": a model that is
//! not in models.list, or an effort (the prompt's own or the config's) that is not one of the model's efforts, is
//! `invalid` with data `{setting, value, choices}` (plus `model` for an effort); a turn from a remote origin runs with
//! a mode of at most cautious.
//!
//! Auto's fallback (docs/protocol.md, "The contract": "the wire types of the auto sandbox (phase 1)": turn_started
//! settings gain an optional fallback, and sandbox_unavailable is recorded): when the turn starts, [`sandbox_fallback`]
//! reads the sandbox's cached probe; a sandbox that cannot run makes the turn run as cautious, with the probe's reason.
//! A cautious turn then records `sandbox_unavailable` too ([`cautious_uncontained`]): its read-only commands run
//! contained by Landlock and seccomp alone, or, where nothing can contain them, ask.

use efr_protocol::events::SandboxUnavailable;
use efr_protocol::wire::{Mode, ModeFallback, Origin, Overridden, PromptSettings, SandboxStatus, TurnSettings};
use efr_protocol::{ErrorBody, ErrorCode};

use crate::config::Config;
use crate::config::schema::Mode as ConfigMode;
use efr_model::{Catalog, CatalogOrigin};

/// Resolves a prompt's settings against the config and the catalog.
///
/// # Errors
/// `invalid` with `{setting, value, choices}` for a model or an effort outside the catalog; `unavailable` when the
/// catalog has no model at all (no login, no list) and neither the prompt nor the config names one.
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
    // Whether auto's sandbox can run is decided when the turn starts ([`sandbox_fallback`]), not here: prompt.send
    // stays fast, and a prompt that waits in the queue is judged by the sandbox of its own start. A phone's cap is
    // decided here, and said as the fallback of the result and of turn_started.
    let mut fallback = None;
    if origin == Origin::Phone && matches!(mode, Mode::Auto | Mode::Full) {
        fallback = Some(ModeFallback {
            asked: mode,
            reason: PHONE_CAP.to_owned(),
        });
        mode = Mode::Cautious;
    }

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
    // With no list at all (an OpenAI-compatible server whose list was not fetched yet, as when socket activation
    // starts efrd on this very prompt, and nothing cached), a model named by the prompt or the config is taken as
    // named: the provider is the one to refuse it, and the turn fails with its answer.
    let effort = if catalog.origin == CatalogOrigin::Missing && catalog.models.is_empty() {
        effort
    } else {
        let info = catalog
            .validate(&model, effort.as_deref())
            .map_err(|error| ErrorBody::new(ErrorCode::Invalid, error.to_string()).with_data(error.data()))?;
        effort.or_else(|| info.default_effort.clone())
    };
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

/// Full mode's gate for a prompt whose settings resolved to full (docs/adr/0029-full-mode.md): the config must allow
/// it (`[permissions] allow_full`) and efrd must not refuse it ([`crate::config::full::refusal`]; the snapshot store
/// is in `snapshots`).
///
/// # Errors
/// `forbidden` when the config does not allow it; `unavailable` with data `{"full_refusal": …}` when efrd refuses it.
pub fn full_gate(config: &Config, snapshots: &std::path::Path) -> Result<(), ErrorBody> {
    use crate::config::full::{FullFacts, refusal, refusal_words};
    if !config.permissions.allow_full {
        return Err(ErrorBody::new(
            ErrorCode::Forbidden,
            "full mode is off: [permissions] allow_full is false",
        )
        .with_data(serde_json::json!({"setting": "mode", "value": "full"})));
    }
    match refusal(config, FullFacts::of_process(snapshots)) {
        None => Ok(()),
        Some(refused) => Err(ErrorBody::new(
            ErrorCode::Unavailable,
            format!("efrd refuses full mode: {}", refusal_words(refused)),
        )
        .with_data(serde_json::json!({"setting": "mode", "value": "full", "full_refusal": refused}))),
    }
}

/// The fallback's reason for a turn of a full conversation that a job notice starts (docs/protocol.md, "The
/// contract": "full mode").
pub const JOB_NOTICE_CAP: &str = "a turn that a job notice starts runs with at most auto";

/// The fallback's reason for a phone's prompt asked in auto or full (docs/protocol.md, "Remote devices": a
/// prompt.send from a phone runs with a mode of at most cautious).
pub const PHONE_CAP: &str = "a turn from a phone runs with at most cautious";

/// The wire mode of the config's default mode.
fn wire_mode(mode: ConfigMode) -> Mode {
    match mode {
        ConfigMode::Manual => Mode::Manual,
        ConfigMode::Cautious => Mode::Cautious,
        ConfigMode::Auto => Mode::Auto,
        ConfigMode::Full => Mode::Full,
    }
}

/// Auto's fallback at a turn's start: when `settings.mode` is auto and `status` (the sandbox's probe) says contained
/// calls cannot run, the turn runs as cautious: `settings` gets mode cautious and `fallback {asked: auto, reason}`,
/// and the returned `sandbox_unavailable` (with no call_id: the probe found it) is recorded with turn_started.
/// Other modes, and auto with a working sandbox, are left as they are (`None`).
pub fn sandbox_fallback(settings: &mut TurnSettings, status: &SandboxStatus) -> Option<SandboxUnavailable> {
    if settings.mode != Mode::Auto || status.available {
        return None;
    }
    let reason = status
        .reason
        .clone()
        .unwrap_or_else(|| "the sandbox cannot run, and the probe said no more".to_owned());
    settings.mode = Mode::Cautious;
    settings.fallback = Some(ModeFallback {
        asked: Mode::Auto,
        reason: reason.clone(),
    });
    Some(SandboxUnavailable { reason, call_id: None })
}

/// What a cautious turn's `sandbox_unavailable` says after the probe's reason when nothing can contain a read.
pub const CAUTIOUS_UNCONTAINED: &str =
    "neither bubblewrap nor Landlock can contain a read here, so cautious asks before every command";

/// Cautious's notice at a turn's start: when `settings.mode` is cautious and `status` says bubblewrap's sandbox
/// cannot run, the returned `sandbox_unavailable` (no call_id) says with the probe's reason how the turn's reads run:
/// contained by Landlock and seccomp alone when `landlock_only` ([`crate::sandbox::probe::LANDLOCK_ONLY`]), else not
/// at all, so cautious asks before each
/// (docs/adr/0020-landlock-only-reads.md). The mode stays cautious, so `settings` gets no fallback.
#[must_use]
pub fn cautious_uncontained(
    settings: &TurnSettings,
    status: &SandboxStatus,
    landlock_only: bool,
) -> Option<SandboxUnavailable> {
    if settings.mode != Mode::Cautious || status.available {
        return None;
    }
    let reason = status
        .reason
        .as_deref()
        .unwrap_or("the sandbox cannot run, and the probe said no more");
    Some(SandboxUnavailable {
        reason: if landlock_only {
            format!("{reason}; {}", crate::sandbox::probe::LANDLOCK_ONLY)
        } else {
            format!("{reason}; {CAUTIOUS_UNCONTAINED}")
        },
        call_id: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_no_list_at_all_a_named_model_is_taken_as_named_and_none_named_is_unavailable() {
        let missing = Catalog::resolve(
            efr_model::ProviderKind::OpenAiCompat,
            None,
            None,
            &efr_model::CatalogConfig::default(),
        );
        assert_eq!(missing.origin, CatalogOrigin::Missing);
        let mut config = Config::default();
        config.model.model = Some("local-model".into());
        let (resolved, _) = resolve(&missing, &config, None, Origin::Terminal).unwrap();
        assert_eq!((resolved.model.as_str(), resolved.effort), ("local-model", None));
        let error = resolve(&missing, &Config::default(), None, Origin::Terminal).unwrap_err();
        assert_eq!(error.code, ErrorCode::Unavailable, "{error:?}");
        // A list that is known still refuses a model outside it.
        let known = Catalog::resolve(
            efr_model::ProviderKind::OpenAiApi,
            None,
            None,
            &efr_model::CatalogConfig::default(),
        );
        assert_eq!(
            resolve(&known, &config, None, Origin::Terminal).unwrap_err().code,
            ErrorCode::Invalid
        );
    }

    fn settings(mode: Mode) -> TurnSettings {
        TurnSettings {
            mode,
            model: "gpt-5".into(),
            effort: None,
            fallback: None,
        }
    }

    #[test]
    fn auto_without_a_sandbox_runs_as_cautious_and_says_why() {
        let down = SandboxStatus {
            available: false,
            reason: Some("bubblewrap is not installed at /nonexistent/bwrap".into()),
            ..SandboxStatus::default()
        };
        let mut turn = settings(Mode::Auto);
        let event = sandbox_fallback(&mut turn, &down).unwrap();
        assert_eq!(turn.mode, Mode::Cautious);
        assert_eq!(
            turn.fallback,
            Some(ModeFallback {
                asked: Mode::Auto,
                reason: "bubblewrap is not installed at /nonexistent/bwrap".into()
            })
        );
        assert_eq!(event.reason, "bubblewrap is not installed at /nonexistent/bwrap");
        assert_eq!(event.call_id, None);
        // A probe that failed without a reason still gives one.
        let mut turn = settings(Mode::Auto);
        let event = sandbox_fallback(&mut turn, &SandboxStatus::default()).unwrap();
        assert!(!event.reason.is_empty());
    }

    #[test]
    fn cautious_without_a_sandbox_says_its_reads_run_uncontained() {
        let down = SandboxStatus {
            available: false,
            reason: Some("bubblewrap is not installed at /nonexistent/bwrap".into()),
            ..SandboxStatus::default()
        };
        let event = cautious_uncontained(&settings(Mode::Cautious), &down, false).unwrap();
        assert_eq!(
            event.reason,
            format!("bubblewrap is not installed at /nonexistent/bwrap; {CAUTIOUS_UNCONTAINED}")
        );
        assert_eq!(event.call_id, None);
        // Contained by Landlock alone: said so.
        let event = cautious_uncontained(&settings(Mode::Cautious), &down, true).unwrap();
        assert_eq!(
            event.reason,
            format!(
                "bubblewrap is not installed at /nonexistent/bwrap; {}",
                crate::sandbox::probe::LANDLOCK_ONLY
            )
        );
        let up = SandboxStatus {
            available: true,
            ..SandboxStatus::default()
        };
        assert_eq!(cautious_uncontained(&settings(Mode::Cautious), &up, false), None);
        for mode in [Mode::Manual, Mode::Auto, Mode::Full] {
            assert_eq!(cautious_uncontained(&settings(mode), &down, false), None);
        }
    }

    #[test]
    fn auto_with_a_sandbox_and_other_modes_stay() {
        let up = SandboxStatus {
            available: true,
            ..SandboxStatus::default()
        };
        let mut turn = settings(Mode::Auto);
        assert_eq!(sandbox_fallback(&mut turn, &up), None);
        assert_eq!(turn, settings(Mode::Auto));
        for mode in [Mode::Manual, Mode::Cautious, Mode::Full] {
            let mut turn = settings(mode);
            assert_eq!(sandbox_fallback(&mut turn, &SandboxStatus::default()), None);
            assert_eq!(turn, settings(mode));
        }
    }
}
