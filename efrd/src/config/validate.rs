//! Rules that a well-typed config must also meet, and the warnings that a valid config may still deserve.
//!
//! A broken rule is an error (the whole file is refused and efrd keeps the config it had); a warning never refuses
//! anything. Checking a model name against the catalog is the model layer's job, not this module's: the catalog
//! knows the builtin models and their efforts.

use super::key_path::KeyPath;
use super::schema::{
    Config, DaemonSection, MAX_ATTEMPTS_LIMIT, MAX_IDLE_TIMEOUT_SECS, Mode, ModelSection, PING_INTERVAL_RANGE,
    ProviderId, ProvidersSection, RemoteSection, SUBSCRIBER_QUEUE_RANGE, SandboxSection, TOKEN_LIFETIME_RANGE,
};

/// A value that is well-typed but not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// Where.
    pub key: KeyPath,
    /// Why, one sentence.
    pub message: String,
}

fn invalid(key: KeyPath, message: impl Into<String>) -> Result<(), Invalid> {
    Err(Invalid {
        key,
        message: message.into(),
    })
}

/// Checks every rule; the first broken one is the error.
///
/// # Errors
/// An [`Invalid`] naming the key, such as `model.extra_models[0].default_effort` when it is not one of that
/// model's efforts.
pub fn check(config: &Config) -> Result<(), Invalid> {
    model(&config.model)?;
    providers(&config.providers)?;
    // The first broken rule is the error, in this order: [daemon]'s idle time is checked before [sandbox].
    conversation_idle(&config.daemon)?;
    sandbox(&config.sandbox)?;
    if let Err((key, message)) = super::context::check(&config.context) {
        return invalid(KeyPath::keys(&["context", key]), message);
    }
    if let Err(message) = super::instructions::check(&config.instructions) {
        return invalid(KeyPath::keys(&["instructions", "max_bytes"]), message);
    }
    if let Err((key, message)) = super::auto::check(&config.auto) {
        return invalid(key, message);
    }
    daemon(&config.daemon)?;
    remote(&config.remote)
}

/// `[model]`: plain names, each extra model once, its efforts once, its default one of them.
fn model(section: &ModelSection) -> Result<(), Invalid> {
    let model = KeyPath::keys(&["model"]);
    if let Some(name) = &section.model {
        plain_name(model.clone().key("model"), name, "a model id")?;
    }
    if let Some(effort) = &section.effort {
        plain_name(model.clone().key("effort"), effort, "an effort")?;
    }
    for (i, extra) in section.extra_models.iter().enumerate() {
        let at = model.clone().key("extra_models").index(i);
        plain_name(at.clone().key("id"), &extra.id, "a model id")?;
        if section.extra_models[..i].iter().any(|other| other.id == extra.id) {
            return invalid(at.key("id"), format!("the model {:?} is listed twice", extra.id));
        }
        for (j, effort) in extra.efforts.iter().enumerate() {
            plain_name(at.clone().key("efforts").index(j), effort, "an effort")?;
            if extra.efforts[..j].contains(effort) {
                return invalid(
                    at.key("efforts").index(j),
                    format!("the effort {effort:?} is listed twice"),
                );
            }
        }
        if let Some(default) = &extra.default_effort
            && !extra.efforts.contains(default)
        {
            return invalid(
                at.key("default_effort"),
                format!("{default:?} is not one of this model's efforts {:?}", extra.efforts),
            );
        }
        if extra.context_window == Some(0) {
            return invalid(at.key("context_window"), "the context window must be at least 1 token");
        }
    }
    Ok(())
}

/// `[providers]`: each provider's URL, retries and idle timeout.
fn providers(p: &ProvidersSection) -> Result<(), Invalid> {
    let providers = KeyPath::keys(&["providers"]);
    for (name, base_url, max_attempts, idle) in [
        (
            "openai-api",
            &p.openai_api.base_url,
            p.openai_api.retry.max_attempts,
            p.openai_api.idle_timeout_secs,
        ),
        (
            "anthropic-api",
            &p.anthropic_api.base_url,
            p.anthropic_api.retry.max_attempts,
            p.anthropic_api.idle_timeout_secs,
        ),
        (
            "openai-compat",
            &p.openai_compat.base_url,
            p.openai_compat.retry.max_attempts,
            p.openai_compat.idle_timeout_secs,
        ),
    ] {
        let at = providers.clone().key(name);
        if let Some(url) = base_url {
            check_url(at.clone().key("base_url"), url)?;
        }
        if let Some(n) = max_attempts
            && !(1..=MAX_ATTEMPTS_LIMIT).contains(&n)
        {
            return invalid(
                at.key("retry").key("max_attempts"),
                format!("max_attempts must be from 1 to {MAX_ATTEMPTS_LIMIT}, not {n}"),
            );
        }
        if let Some(secs) = idle
            && !(1..=MAX_IDLE_TIMEOUT_SECS).contains(&secs)
        {
            return invalid(
                at.key("idle_timeout_secs"),
                format!("idle_timeout_secs must be from 1 to {MAX_IDLE_TIMEOUT_SECS}, not {secs}"),
            );
        }
    }
    Ok(())
}

/// `[daemon]`'s `conversation_idle_secs`: at least 1.
fn conversation_idle(d: &DaemonSection) -> Result<(), Invalid> {
    if d.conversation_idle_secs == 0 {
        return invalid(
            KeyPath::keys(&["daemon", "conversation_idle_secs"]),
            "conversation_idle_secs must be at least 1",
        );
    }
    Ok(())
}

/// `[sandbox]`: each extra mask absolute, normal, and not `/`.
fn sandbox(section: &SandboxSection) -> Result<(), Invalid> {
    for (i, path) in section.extra_masks.iter().enumerate() {
        let key = KeyPath::keys(&["sandbox", "extra_masks"]).index(i);
        let normal = path
            .components()
            .all(|c| matches!(c, std::path::Component::RootDir | std::path::Component::Normal(_)));
        if !path.is_absolute() || !normal {
            return invalid(
                key,
                format!("{} is not an absolute path without `.` or `..`", path.display()),
            );
        }
        if path == std::path::Path::new("/") {
            return invalid(key, "/ cannot be masked: it is the whole file system");
        }
    }
    Ok(())
}

/// The rest of `[daemon]`: the log filter, the idle exit, the subscriber queue.
fn daemon(d: &DaemonSection) -> Result<(), Invalid> {
    let daemon = KeyPath::keys(&["daemon"]);
    if let Err(e) = tracing_subscriber::EnvFilter::try_new(&d.log_level) {
        return invalid(
            daemon.key("log_level"),
            format!("{:?} is not a log filter: {e}", d.log_level),
        );
    }
    if d.idle_exit_secs == Some(0) {
        return invalid(
            daemon.key("idle_exit_secs"),
            "idle_exit_secs must be at least 1; leave it out to never exit when idle",
        );
    }
    if !SUBSCRIBER_QUEUE_RANGE.contains(&d.subscriber_queue) {
        return invalid(
            daemon.key("subscriber_queue"),
            format!(
                "subscriber_queue must be from {} to {}, not {}",
                SUBSCRIBER_QUEUE_RANGE.start(),
                SUBSCRIBER_QUEUE_RANGE.end(),
                d.subscriber_queue
            ),
        );
    }
    Ok(())
}

/// `[remote]`: the ping interval and the token lifetime in range.
fn remote(remote: &RemoteSection) -> Result<(), Invalid> {
    for (key, value, range) in [
        ("ping_interval_secs", remote.ping_interval_secs, PING_INTERVAL_RANGE),
        ("token_lifetime_secs", remote.token_lifetime_secs, TOKEN_LIFETIME_RANGE),
    ] {
        if !range.contains(&value) {
            return invalid(
                KeyPath::keys(&["remote", key]),
                format!("{key} must be from {} to {}, not {value}", range.start(), range.end()),
            );
        }
    }
    Ok(())
}

/// A model id or an effort: not empty, no whitespace or control characters (it goes into HTTP bodies and logs).
fn plain_name(key: KeyPath, value: &str, what: &str) -> Result<(), Invalid> {
    if value.is_empty() {
        return invalid(key, format!("{what} must not be empty"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return invalid(
            key,
            format!("{what} must not contain spaces or control characters: {value:?}"),
        );
    }
    Ok(())
}

fn check_url(key: KeyPath, value: &str) -> Result<(), Invalid> {
    match reqwest::Url::parse(value) {
        Ok(url) if !matches!(url.scheme(), "http" | "https") => invalid(
            key,
            format!("base_url must be an http or https URL, not {:?}", url.scheme()),
        ),
        Ok(url) if url.host_str().is_none_or(str::is_empty) => invalid(key, "base_url has no host"),
        // The URL parser reads `http://host:` as the default port; a `:` with nothing after it is a typo.
        Ok(_) if authority(value).ends_with(':') => invalid(key, "base_url has a `:` with no port after it"),
        Ok(_) => Ok(()),
        Err(e) => invalid(key, format!("{value:?} is not a URL: {e}")),
    }
}

/// The `host:port` part of a URL as written: after `scheme://`, up to the path, query or fragment.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    rest.split(['/', '?', '#']).next().unwrap_or(rest)
}

/// The company whose naming a model id follows, for the "model of another company" warning.
fn model_company(id: &str) -> Option<ProviderId> {
    let id = id.to_ascii_lowercase();
    let openai = ["gpt-", "o1", "o3", "o4", "codex-", "chatgpt-"];
    if openai.iter().any(|p| id.starts_with(p)) {
        Some(ProviderId::OpenaiApi)
    } else if id.starts_with("claude") {
        Some(ProviderId::AnthropicApi)
    } else {
        None
    }
}

/// What a valid config should still tell the user, one sentence each (the contract: warnings of
/// `admin.config_reload`). [`super::ConfigState`] reports only those that a reload newly brings.
#[must_use]
pub fn warnings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let m = &config.model;
    if let (Some(provider), Some(model)) = (m.provider, &m.model)
        && provider != ProviderId::OpenaiCompat
        && let Some(company) = model_company(model)
        && company != provider
    {
        let who = match company {
            ProviderId::OpenaiApi => "an OpenAI",
            ProviderId::AnthropicApi | ProviderId::OpenaiCompat => "an Anthropic",
        };
        out.push(format!(
            "model.model {model:?} looks like {who} model, but model.provider is {}, so turns will likely fail.",
            provider.as_str()
        ));
    }
    if m.provider == Some(ProviderId::OpenaiCompat) && config.providers.openai_compat.base_url.is_none() {
        out.push(
            "model.provider is openai-compat, but providers.openai-compat.base_url is not set, so turns will fail."
                .to_owned(),
        );
    }
    if config.permissions.default_mode == Mode::Full {
        out.push(
            "permissions.default_mode is full: every call runs as you, with no sandbox and no question.".to_owned(),
        );
        if !config.permissions.allow_full {
            out.push(
                "permissions.default_mode is full, but permissions.allow_full is false, so prompts that name no mode \
                 fail."
                    .to_owned(),
            );
        }
    }
    if !config.bus.enabled {
        out.push(
            "bus.enabled is false: the bus filter is off, and contained calls get no D-Bus (notifications and \
             portals fail inside them)."
                .to_owned(),
        );
    }
    out
}

/// The warning for a key that this efrd does not know.
#[must_use]
pub fn unknown_key_warning(key: &str) -> String {
    format!("The key {key} is not known to this efrd and is ignored (a newer efr may use it).")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::schema::ExtraModel;

    #[test]
    fn defaults_are_valid_and_quiet() {
        let config = Config::default();
        assert_eq!(check(&config), Ok(()));
        assert!(warnings(&config).is_empty());
    }

    #[test]
    fn model_of_another_company() {
        let mut config = Config::default();
        config.model.provider = Some(ProviderId::AnthropicApi);
        config.model.model = Some("gpt-5".into());
        assert_eq!(
            warnings(&config),
            [
                "model.model \"gpt-5\" looks like an OpenAI model, but model.provider is anthropic-api, so turns will \
              likely fail."
            ]
        );
        config.model.provider = Some(ProviderId::OpenaiApi);
        config.model.model = Some("claude-sonnet-4-5".into());
        assert!(
            warnings(&config)[0].contains("an Anthropic model"),
            "{:?}",
            warnings(&config)
        );
        // A compat server may serve any name, and a name of neither company warns of nothing.
        config.model.provider = Some(ProviderId::OpenaiCompat);
        config.providers.openai_compat.base_url = Some("http://127.0.0.1:1/v1".into());
        assert!(warnings(&config).is_empty());
        config.model.provider = Some(ProviderId::OpenaiApi);
        config.model.model = Some("gpt-5".into());
        assert!(warnings(&config).is_empty());
    }

    #[test]
    fn compat_without_url_and_full_mode_warn() {
        let mut config = Config::default();
        config.model.provider = Some(ProviderId::OpenaiCompat);
        config.permissions.default_mode = Mode::Full;
        let w = warnings(&config);
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].contains("base_url is not set"));
        assert!(w[1].contains("default_mode is full"));
        assert!(w[2].contains("allow_full is false"), "{w:?}");
        config.permissions.allow_full = true;
        assert_eq!(warnings(&config).len(), 2);
    }

    fn extra(id: &str, efforts: &[&str], default: Option<&str>) -> ExtraModel {
        ExtraModel {
            id: id.into(),
            efforts: efforts.iter().map(|e| (*e).to_owned()).collect(),
            default_effort: default.map(str::to_owned),
            context_window: Some(1000),
        }
    }

    #[test]
    fn extra_masks_are_absolute_normal_and_not_the_root() {
        let mut config = Config::default();
        config.sandbox.extra_masks = vec!["/home/ada/.vault-token".into()];
        assert_eq!(check(&config), Ok(()));
        for bad in ["~/.vault-token", "/home/ada/../bob", "/"] {
            config.sandbox.extra_masks = vec!["/srv/ok".into(), bad.into()];
            let error = check(&config).unwrap_err();
            assert_eq!(error.key.to_string(), "sandbox.extra_masks[1]", "{bad}");
            assert!(!error.message.is_empty());
        }
    }

    #[test]
    fn each_rule_names_its_key() {
        type Breaker = Box<dyn Fn(&mut Config)>;
        let cases: Vec<(&str, Breaker)> = vec![
            ("model.model", Box::new(|c| c.model.model = Some("gpt 5".into()))),
            ("model.effort", Box::new(|c| c.model.effort = Some(String::new()))),
            (
                "model.extra_models[0].id",
                Box::new(|c| c.model.extra_models = vec![extra("", &[], None)]),
            ),
            (
                "model.extra_models[1].id",
                Box::new(|c| c.model.extra_models = vec![extra("a", &[], None), extra("a", &[], None)]),
            ),
            (
                "model.extra_models[0].efforts[1]",
                Box::new(|c| c.model.extra_models = vec![extra("a", &["low", "low"], None)]),
            ),
            (
                "model.extra_models[0].default_effort",
                Box::new(|c| c.model.extra_models = vec![extra("a", &["low"], Some("high"))]),
            ),
            (
                "model.extra_models[0].context_window",
                Box::new(|c| {
                    let mut m = extra("a", &[], None);
                    m.context_window = Some(0);
                    c.model.extra_models = vec![m];
                }),
            ),
            (
                "providers.openai-api.base_url",
                Box::new(|c| c.providers.openai_api.base_url = Some("nope".into())),
            ),
            (
                "providers.anthropic-api.base_url",
                Box::new(|c| c.providers.anthropic_api.base_url = Some("ftp://x/".into())),
            ),
            (
                "providers.openai-compat.retry.max_attempts",
                Box::new(|c| c.providers.openai_compat.retry.max_attempts = Some(0)),
            ),
            (
                "daemon.log_level",
                Box::new(|c| c.daemon.log_level = "efrd=loud".into()),
            ),
            ("daemon.idle_exit_secs", Box::new(|c| c.daemon.idle_exit_secs = Some(0))),
            ("daemon.subscriber_queue", Box::new(|c| c.daemon.subscriber_queue = 2)),
        ];
        for (key, break_it) in cases {
            let mut config = Config::default();
            break_it(&mut config);
            let err = check(&config).expect_err(key);
            assert_eq!(err.key.to_string(), key, "{}", err.message);
            assert!(!err.message.is_empty());
        }
    }
}
