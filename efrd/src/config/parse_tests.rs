//! Broken files and where their errors point, a full file, and unknown keys.

use super::*;
use crate::config::error::line_column;
use crate::config::schema::{ExtraModel, Mode, ProviderId};

fn err(text: &str) -> ConfigError {
    parse(text).expect_err("the file should be refused")
}

/// (line, column, key) of an error.
fn place(e: &ConfigError) -> (Option<u32>, Option<u32>, Option<&str>) {
    (e.line, e.column, e.key.as_deref())
}

#[test]
fn empty_file_is_the_defaults() {
    let parsed = parse("").unwrap();
    assert_eq!(parsed.config, Config::default());
    assert!(parsed.unknown_keys.is_empty());
    assert_eq!(parsed.config.permissions.default_mode, Mode::Cautious);
    assert_eq!(parsed.config.daemon.log_level, "info");
    assert_eq!(parsed.config.daemon.subscriber_queue, 1024);
}

#[test]
fn full_file() {
    let text = r#"
[model]
provider = "openai-compat"
model = "qwen3-coder"
effort = "high"

[[model.extra_models]]
id = "qwen3-coder"
efforts = ["low", "high"]
default_effort = "low"
context_window = 131072

[[model.extra_models]]
id = "tiny"

[providers.openai-api]
base_url = "https://api.example.test/v1"
retry = { max_attempts = 5 }

[providers.anthropic-api.retry]
max_attempts = 2

[providers.openai-compat]
base_url = "http://127.0.0.1:8080/v1"
key_required = true

[permissions]
default_mode = "auto"

[daemon]
log_level = "efrd=debug,warn"
idle_exit_secs = 600
subscriber_queue = 256
"#;
    let c = parse(text).unwrap().config;
    assert_eq!(c.model.provider, Some(ProviderId::OpenaiCompat));
    assert_eq!(c.model.model.as_deref(), Some("qwen3-coder"));
    assert_eq!(c.model.effort.as_deref(), Some("high"));
    assert_eq!(
        c.model.extra_models,
        vec![
            ExtraModel {
                id: "qwen3-coder".into(),
                efforts: vec!["low".into(), "high".into()],
                default_effort: Some("low".into()),
                context_window: Some(131_072),
            },
            ExtraModel {
                id: "tiny".into(),
                efforts: vec![],
                default_effort: None,
                context_window: None
            },
        ]
    );
    assert_eq!(
        c.providers.openai_api.base_url.as_deref(),
        Some("https://api.example.test/v1")
    );
    assert_eq!(c.providers.openai_api.retry.max_attempts, Some(5));
    assert_eq!(c.providers.anthropic_api.retry.max_attempts, Some(2));
    assert_eq!(c.providers.anthropic_api.base_url, None);
    assert!(c.providers.openai_compat.key_required);
    assert_eq!(c.permissions.default_mode, Mode::Auto);
    assert_eq!(c.daemon.log_level, "efrd=debug,warn");
    assert_eq!(c.daemon.idle_exit_secs, Some(600));
    assert_eq!(c.daemon.subscriber_queue, 256);
}

#[test]
fn unknown_keys_are_reported_not_refused() {
    let text = "future = 1\n[model]\nmodel = \"gpt-5\"\nmood = \"happy\"\n[providers.mistral-api]\nbase_url = \"x\"\n\
                [[model.extra_models]]\nid = \"a\"\nshape = \"round\"\n[daemon.\"odd key\"]\nx = 1\n";
    let parsed = parse(text).unwrap();
    assert_eq!(parsed.config.model.model.as_deref(), Some("gpt-5"));
    assert_eq!(
        parsed.unknown_keys,
        [
            "daemon.\"odd key\"",
            "future",
            "model.extra_models[0].shape",
            "model.mood",
            "providers.mistral-api"
        ]
    );
}

#[test]
fn syntax_error_unterminated_string() {
    let e = err("[model]\nprovider = \"openai-api\"\nmodel = \"gpt-5\n");
    // toml points at the end of the line, where the closing quote is missing.
    assert_eq!(place(&e), (Some(3), Some(15), Some("model.model")), "{e}");
    assert_eq!(e.message, "invalid basic string, expected `\"`");
}

#[test]
fn syntax_error_in_an_array_of_tables() {
    let text =
        "[[model.extra_models]]\nid = \"a\"\n\n[[model.extra_models]]\nid = \"b\"\nefforts = [\"low\" \"high\"]\n";
    let e = err(text);
    assert_eq!(
        place(&e),
        (Some(6), Some(18), Some("model.extra_models[1].efforts")),
        "{e}"
    );
}

#[test]
fn syntax_error_bad_header() {
    let e = err("[model]\nmodel = \"x\"\n[permissions\ndefault_mode = \"auto\"\n");
    assert_eq!((e.line, e.key.as_deref()), (Some(3), None), "{e}");
    assert!(e.column.is_some(), "{e}");
}

#[test]
fn duplicate_key() {
    let e = err("[daemon]\nlog_level = \"info\"\nlog_level = \"debug\"\n");
    assert_eq!(place(&e), (Some(3), Some(1), Some("daemon.log_level")), "{e}");
    assert!(e.message.contains("duplicate"), "{e}");
}

#[test]
fn unknown_variant() {
    let e = err("[model]\nprovider = \"openai\"\n");
    assert_eq!(place(&e), (Some(2), Some(12), Some("model.provider")), "{e}");
    assert!(e.message.contains("openai-api") && e.message.contains("openai"), "{e}");

    let e = err("[permissions]\n  default_mode = \"yolo\"\n");
    assert_eq!(place(&e), (Some(2), Some(18), Some("permissions.default_mode")), "{e}");
}

#[test]
fn wrong_type() {
    let e = err("[daemon]\nsubscriber_queue = \"big\"\n");
    assert_eq!(place(&e), (Some(2), Some(20), Some("daemon.subscriber_queue")), "{e}");
    let e = err("[providers.openai-compat]\nkey_required = \"yes\"\n");
    assert_eq!(
        place(&e),
        (Some(2), Some(16), Some("providers.openai-compat.key_required")),
        "{e}"
    );
    let e = err("[daemon]\nsubscriber_queue = -5\n");
    assert_eq!(place(&e), (Some(2), Some(20), Some("daemon.subscriber_queue")), "{e}");
}

#[test]
fn missing_field_names_the_field() {
    let e = err("[model]\nmodel = \"m\"\n\n[[model.extra_models]]\nefforts = []\n");
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(4), Some("model.extra_models[0].id")),
        "{e}"
    );
    assert!(e.message.contains("missing field"), "{e}");
}

#[test]
fn rule_errors_point_at_the_value() {
    let text = "[[model.extra_models]]\nid = \"a\"\nefforts = [\"low\"]\ndefault_effort = \"high\"\n";
    let e = err(text);
    assert_eq!(
        place(&e),
        (Some(4), Some(18), Some("model.extra_models[0].default_effort")),
        "{e}"
    );
    assert!(e.message.contains("\"high\" is not one of"), "{e}");

    let e = err("[providers.openai-compat]\nbase_url = \"http://127.0.0.1:/v1\"\n");
    assert!(e.message.contains("no port after it"), "{e}");
    let e = err("[providers.openai-compat]\nbase_url = \"localhost:8080\"\n");
    assert_eq!(
        place(&e),
        (Some(2), Some(12), Some("providers.openai-compat.base_url")),
        "{e}"
    );

    let e = err("[providers.openai-api]\nretry = { max_attempts = 99 }\n");
    assert_eq!(
        place(&e),
        (Some(2), Some(26), Some("providers.openai-api.retry.max_attempts")),
        "{e}"
    );

    let e = err("[providers.openai-compat]\nidle_timeout_secs = 0\n");
    assert_eq!(
        place(&e),
        (Some(2), Some(21), Some("providers.openai-compat.idle_timeout_secs")),
        "{e}"
    );
    assert!(e.message.contains("from 1 to 3600"), "{e}");
}

#[test]
fn columns_count_characters() {
    // "größe" has 5 characters and 7 bytes; the column of the error after it counts characters.
    let e = err("# größe\n[model]\nmodel = \"größe\" x\n");
    assert_eq!((e.line, e.column), (Some(3), Some(17)), "{e}");
    assert_eq!(line_column("größe\nab", 7), (1, 6));
    assert_eq!(line_column("größe\nab", 9), (2, 2));
    assert_eq!(line_column("", 3), (1, 1));
}

#[test]
fn display_holds_place_key_and_message() {
    let e = err("[model]\nprovider = 3\n");
    let shown = e.to_string();
    assert!(shown.starts_with("line 2, column 12: model.provider: "), "{shown}");
    assert_eq!(ConfigError::whole_file("gone").to_string(), "gone");
}

#[test]
fn key_paths_display_as_toml_writes_them() {
    assert_eq!(KeyPath::keys(&["a", "b-c"]).index(2).key("d").to_string(), "a.b-c[2].d");
    assert_eq!(KeyPath::keys(&["a", "odd key", ""]).to_string(), "a.\"odd key\".\"\"");
    assert_eq!(KeyPath::default().to_string(), "");
}

#[test]
fn shell_program_is_bash_or_zsh_and_another_is_a_clear_error() {
    assert_eq!(
        parse("").unwrap().config.shell.program,
        crate::config::ShellProgram::Bash
    );
    let parsed = parse("[shell]\nprogram = \"zsh\"\n").unwrap();
    assert_eq!(parsed.config.shell.program, crate::config::ShellProgram::Zsh);
    let e = err("[shell]\nprogram = \"fish\"\n");
    assert_eq!(place(&e).2, Some("shell.program"), "{e}");
    assert!(e.message.contains("bash") && e.message.contains("zsh"), "{e}");
}

#[test]
fn network_lists_parse_as_host_patterns() {
    let parsed = parse(
        "[network]\nallow = [\"crates.io\", \"**.Crates.IO.\", \"*.example.com:8443\"]\ndeny = [\"gist.github.com\"]\n",
    )
    .unwrap();
    let network = &parsed.config.network;
    let allow: Vec<String> = network.allow.iter().map(ToString::to_string).collect();
    assert_eq!(allow, ["crates.io", "**.crates.io", "*.example.com:8443"]);
    assert_eq!(network.deny[0].to_string(), "gist.github.com");
    assert!(network.netview, "netview stays true by default");
    assert!(!parse("[network]\nnetview = false\n").unwrap().config.network.netview);
    assert_eq!(Config::default().network.allow, Vec::new());
}

#[test]
fn a_bad_host_pattern_names_its_line_column_and_key() {
    let e = err("[network]\nallow = [\"crates.io\",\n  \"exa*mple.com\"]\n");
    assert_eq!(place(&e), (Some(3), Some(3), Some("network.allow[1]")), "{e}");
    assert!(e.message.contains("exa*mple.com"), "{e}");
    let e = err("[network]\ndeny = [\"1.2.3.4\"]\n");
    assert_eq!(place(&e), (Some(2), Some(9), Some("network.deny[0]")), "{e}");
    assert!(e.message.contains("IP address"), "{e}");
    let e = err("[network]\nallow = [\"example.com:0\"]\n");
    assert_eq!(e.key.as_deref(), Some("network.allow[0]"), "{e}");
    let e = err("[network]\nallow = \"example.com\"\n");
    assert_eq!(e.key.as_deref(), Some("network.allow"), "{e}");
}

#[test]
fn bus_lists_parse_as_names_and_rules() {
    let parsed = parse(
        "[bus]\ntalk = [\"org.gnome.Shell.*\"]\nown = [\"org.example.Test\"]\nsee = [\"org.example.Seen\"]\n\
         call = [\"org.freedesktop.secrets=org.freedesktop.Secret.Service.SearchItems@/org/freedesktop/secrets\"]\n\
         broadcast = [\"org.example.Clock=*\"]\n",
    )
    .unwrap();
    let bus = &parsed.config.bus;
    assert_eq!(bus.talk[0].as_str(), "org.gnome.Shell.*");
    assert_eq!(bus.own[0].as_str(), "org.example.Test");
    assert_eq!(bus.see[0].as_str(), "org.example.Seen");
    assert!(bus.call[0].as_str().starts_with("org.freedesktop.secrets="));
    assert_eq!(bus.broadcast[0].as_str(), "org.example.Clock=*");
    assert!(parsed.unknown_keys.is_empty(), "{:?}", parsed.unknown_keys);
    assert_eq!(Config::default().bus, crate::config::BusSection::default());
}

#[test]
fn a_bad_bus_rule_names_its_line_column_and_key() {
    let e = err("[bus]\ncall = [\"org.foo=org.foo.Iface.Get\",\n  \"org.foo=Iface\"]\n");
    assert_eq!(place(&e), (Some(3), Some(3), Some("bus.call[1]")), "{e}");
    assert!(
        e.message.contains("org.foo=Iface") && e.message.contains("needs a dot"),
        "{e}"
    );
    let e = err("[bus]\ntalk = [\":1.42\"]\n");
    assert_eq!(place(&e), (Some(2), Some(9), Some("bus.talk[0]")), "{e}");
    assert!(e.message.contains("is not a bus name"), "{e}");
    let e = err("[bus]\nown = [\"org\"]\n");
    assert_eq!(e.key.as_deref(), Some("bus.own[0]"), "{e}");
    let e = err("[bus]\nbroadcast = [\"org.foo=a.b.M@x\"]\n");
    assert_eq!(e.key.as_deref(), Some("bus.broadcast[0]"), "{e}");
    assert!(e.message.contains("at byte 14"), "{e}");
}

#[test]
fn the_remote_timings_default_to_the_spec_and_are_bounded() {
    let remote = parse("").unwrap().config.remote;
    assert_eq!((remote.ping_interval_secs, remote.token_lifetime_secs), (25, 300));
    let remote = parse("[remote]\nping_interval_secs = 2\ntoken_lifetime_secs = 3\n")
        .unwrap()
        .config
        .remote;
    assert_eq!((remote.ping_interval_secs, remote.token_lifetime_secs), (2, 3));

    let e = err("[remote]\nenabled = true\nping_interval_secs = 0\n");
    assert_eq!(place(&e), (Some(3), Some(22), Some("remote.ping_interval_secs")), "{e}");
    assert!(e.message.contains("from 1 to 300"), "{e}");
    // The spec's 5 minutes are the longest a token may be good.
    let e = err("[remote]\ntoken_lifetime_secs = 301\n");
    assert_eq!(
        place(&e),
        (Some(2), Some(23), Some("remote.token_lifetime_secs")),
        "{e}"
    );
    assert!(e.message.contains("from 1 to 300"), "{e}");
    let e = err("[remote]\nping_interval_secs = \"soon\"\n");
    assert_eq!(e.key.as_deref(), Some("remote.ping_interval_secs"), "{e}");
}

#[test]
fn jobs_section_turns_wakes_off_and_bounds_a_preview() {
    let defaults = parse("").unwrap().config.jobs;
    assert!(defaults.wakes);
    assert_eq!(defaults.preview_secs, 60);
    let jobs = parse("[jobs]\nwakes = false\npreview_secs = 5\n").unwrap().config.jobs;
    assert!(!jobs.wakes);
    assert_eq!(jobs.preview_secs, 5);
    let e = err("[jobs]\nwakes = \"no\"\n");
    assert_eq!(place(&e), (Some(2), Some(9), Some("jobs.wakes")), "{e}");
}
