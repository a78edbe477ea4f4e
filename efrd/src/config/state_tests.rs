//! Loading and reloading a real config.toml in a tempdir.

use super::*;
use crate::config::schema::{Mode, ProviderId};

struct Fixture {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

impl Fixture {
    fn new(text: Option<&str>) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.toml");
        if let Some(text) = text {
            std::fs::write(&path, text).unwrap();
        }
        Self { _tmp: tmp, path }
    }

    fn write(&self, text: &str) {
        std::fs::write(&self.path, text).unwrap();
    }
}

#[test]
fn a_missing_file_is_the_defaults() {
    let f = Fixture::new(None);
    let (state, warnings) = ConfigState::load(&f.path).unwrap();
    assert_eq!(*state.current(), Config::default());
    assert!(warnings.is_empty());
    let status = state.status();
    assert_eq!(status.path, f.path);
    assert!(!status.exists);
    assert_eq!(status.symlink_target, None);
    assert_eq!(status.reload_error, None);
    assert!(status.restart_needed.is_empty());
}

#[test]
fn load_reports_every_warning_of_the_file() {
    let f = Fixture::new(Some(
        "[model]\nprovider = \"anthropic-api\"\nmodel = \"gpt-5\"\ncolour = \"red\"\n\
         [permissions]\ndefault_mode = \"full\"\nallow_full = true\n",
    ));
    let (state, warnings) = ConfigState::load(&f.path).unwrap();
    assert_eq!(state.current().model.provider, Some(ProviderId::AnthropicApi));
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert_eq!(
        warnings[0],
        "The key model.colour is not known to this efrd and is ignored (a newer efr may use it)."
    );
    assert!(warnings[1].contains("looks like an OpenAI model"), "{warnings:?}");
    assert!(warnings[2].contains("default_mode is full"), "{warnings:?}");
}

#[test]
fn a_broken_file_at_start_is_an_error() {
    let f = Fixture::new(Some("[permissions]\ndefault_mode = \"careful\"\n"));
    let err = ConfigState::load(&f.path).unwrap_err();
    assert_eq!(
        (err.line, err.column, err.key.as_deref()),
        (Some(2), Some(16), Some("permissions.default_mode"))
    );
    assert_eq!(EXIT_CONFIG_INVALID, 4);
}

#[test]
fn a_reload_after_the_file_was_removed_applies_the_defaults_and_says_so() {
    let f = Fixture::new(Some("[permissions]\ndefault_mode = \"auto\"\n"));
    let (state, _) = ConfigState::load(&f.path).unwrap();
    std::fs::remove_file(&f.path).unwrap();
    let outcome = state.reload();
    assert!(outcome.applied);
    assert_eq!(
        outcome.warnings,
        vec![format!(
            "{} does not exist: efrd runs with the defaults",
            f.path.display()
        )]
    );
    assert_eq!(
        state.current().permissions.default_mode,
        Config::default().permissions.default_mode
    );
}

#[test]
fn reload_applies_live_keys_and_keeps_the_previous_config_on_error() {
    let f = Fixture::new(Some("[permissions]\ndefault_mode = \"manual\"\n"));
    let (state, _) = ConfigState::load(&f.path).unwrap();
    let mut changes = state.subscribe();
    assert_eq!(state.current().permissions.default_mode, Mode::Manual);

    f.write("[permissions]\ndefault_mode = \"auto\"\n[model]\nmodel = \"gpt-5\"\n");
    let outcome = state.reload();
    assert_eq!(
        outcome,
        ReloadOutcome {
            applied: true,
            error: None,
            restart_needed: vec![],
            warnings: vec![]
        }
    );
    assert_eq!(state.current().permissions.default_mode, Mode::Auto);
    assert!(changes.has_changed().unwrap(), "subscribers see the applied config");
    assert_eq!(changes.borrow_and_update().model.model.as_deref(), Some("gpt-5"));

    // A broken file: nothing changes, the error is kept for admin.status.
    f.write("[permissions]\ndefault_mode = \"auto\"\n[model]\nmodel = \"gpt-5\nprovider = \"openai-api\"\n");
    let before = state.current();
    let outcome = state.reload();
    assert!(!outcome.applied);
    let error = outcome.error.clone().unwrap();
    assert_eq!(
        (error.line, error.key.as_deref()),
        (Some(4), Some("model.model")),
        "{error}"
    );
    assert_eq!(state.current(), before, "the previous config stays in effect");
    assert_eq!(state.current().permissions.default_mode, Mode::Auto);
    assert!(!changes.has_changed().unwrap(), "no change is announced");
    assert_eq!(state.status().reload_error, Some(error));

    // A file that parses but breaks a rule is refused the same way.
    f.write("[daemon]\nsubscriber_queue = 1\n");
    let outcome = state.reload();
    assert_eq!(
        outcome.error.as_ref().and_then(|e| e.key.as_deref()),
        Some("daemon.subscriber_queue")
    );
    assert_eq!(state.current(), before);

    // Fixed: applied, and the error is gone.
    f.write("[permissions]\ndefault_mode = \"cautious\"\n");
    let outcome = state.reload();
    assert!(outcome.applied && outcome.error.is_none());
    assert_eq!(state.current().permissions.default_mode, Mode::Cautious);
    assert_eq!(state.status().reload_error, None);
}

#[test]
fn daemon_keys_wait_for_a_restart() {
    let f = Fixture::new(Some("[daemon]\nlog_level = \"info\"\nsubscriber_queue = 512\n"));
    let (state, _) = ConfigState::load(&f.path).unwrap();

    f.write(
        "[daemon]\nlog_level = \"debug\"\nsubscriber_queue = 512\nidle_exit_secs = 60\n\
         [permissions]\ndefault_mode = \"auto\"\n",
    );
    let outcome = state.reload();
    assert!(outcome.applied);
    assert_eq!(outcome.restart_needed, ["daemon.idle_exit_secs", "daemon.log_level"]);
    let current = state.current();
    assert_eq!(current.permissions.default_mode, Mode::Auto, "live keys apply");
    assert_eq!(
        current.daemon.log_level, "info",
        "restart keys keep the value efrd started with"
    );
    assert_eq!(current.daemon.idle_exit_secs, None);
    assert_eq!(
        state.status().restart_needed,
        ["daemon.idle_exit_secs", "daemon.log_level"]
    );

    // A failed reload keeps the list; a file that returns to the start values clears it.
    f.write("[daemon\n");
    assert_eq!(
        state.reload().restart_needed,
        ["daemon.idle_exit_secs", "daemon.log_level"]
    );
    f.write("[daemon]\nsubscriber_queue = 512\n");
    let outcome = state.reload();
    assert!(outcome.restart_needed.is_empty(), "{outcome:?}");
    assert!(state.status().restart_needed.is_empty());
}

#[test]
fn warnings_come_once_from_the_reload_that_brings_them() {
    let f = Fixture::new(None);
    let (state, _) = ConfigState::load(&f.path).unwrap();
    f.write("[model]\nprovider = \"openai-api\"\nmodel = \"claude-opus-4\"\nspeed = 3\n");
    let first = state.reload();
    assert_eq!(first.warnings.len(), 2, "{first:?}");
    assert!(first.warnings[0].contains("model.speed"));
    assert!(first.warnings[1].contains("looks like an Anthropic model"));
    // The same file again: nothing new to say.
    assert!(state.reload().warnings.is_empty());
    // A new unknown key and full mode: only those.
    f.write(
        "[model]\nprovider = \"openai-api\"\nmodel = \"claude-opus-4\"\nspeed = 3\n\
         [permissions]\ndefault_mode = \"full\"\nallow_full = true\nwhy = 1\n",
    );
    let next = state.reload();
    assert_eq!(next.warnings.len(), 2, "{next:?}");
    assert!(next.warnings[0].contains("permissions.why"));
    assert!(next.warnings[1].contains("default_mode is full"));
}

#[test]
fn a_bus_filter_switched_off_is_said_once() {
    let f = Fixture::new(None);
    let (state, _) = ConfigState::load(&f.path).unwrap();
    f.write(
        "[bus]
enabled = false
",
    );
    let off = state.reload();
    assert_eq!(off.warnings.len(), 1, "{off:?}");
    assert!(off.warnings[0].contains("the bus filter is off"), "{off:?}");
    assert!(state.reload().warnings.is_empty(), "said once");
    f.write(
        "[bus]
enabled = true
",
    );
    assert!(state.reload().warnings.is_empty());
}

#[test]
fn status_reports_a_symlink() {
    let f = Fixture::new(None);
    let dir = f.path.parent().unwrap();
    std::fs::write(dir.join("real.toml"), "[permissions]\ndefault_mode = \"manual\"\n").unwrap();
    std::os::unix::fs::symlink("real.toml", &f.path).unwrap();
    let (state, _) = ConfigState::load(&f.path).unwrap();
    assert_eq!(state.current().permissions.default_mode, Mode::Manual);
    let status = state.status();
    assert!(status.exists);
    assert_eq!(status.symlink_target, Some(PathBuf::from("real.toml")));

    // A dangling link is an error, not "no file".
    std::fs::remove_file(dir.join("real.toml")).unwrap();
    let outcome = state.reload();
    assert!(!outcome.applied);
    assert!(
        outcome
            .error
            .unwrap()
            .message
            .contains("symlink to a file that does not exist")
    );
    let status = state.status();
    assert!(!status.exists);
    assert_eq!(status.symlink_target, Some(PathBuf::from("real.toml")));
    assert_eq!(state.current().permissions.default_mode, Mode::Manual);
}

#[test]
fn unreadable_files_are_errors_without_a_place() {
    let f = Fixture::new(None);
    std::fs::create_dir(&f.path).unwrap();
    let err = ConfigState::load(&f.path).unwrap_err();
    assert!(err.message.ends_with("is not a file"), "{err}");
    assert_eq!((err.line, err.column, err.key), (None, None, None));

    let f = Fixture::new(None);
    std::fs::write(&f.path, b"# ok\nmodel = \"\xff\"\n").unwrap();
    let err = ConfigState::load(&f.path).unwrap_err();
    assert!(err.message.ends_with("is not valid UTF-8"), "{err}");
    assert_eq!((err.line, err.column), (Some(2), Some(10)));

    let f = Fixture::new(None);
    let big = format!("# {}\n", "x".repeat(usize::try_from(MAX_CONFIG_BYTES).unwrap()));
    std::fs::write(&f.path, big).unwrap();
    let err = ConfigState::load(&f.path).unwrap_err();
    assert!(err.message.contains("at most 1048576"), "{err}");
}

#[test]
fn an_installed_check_refuses_a_reload_at_its_place_and_rechecks() {
    let f = Fixture::new(Some("[auto]\nclassifier_model = \"gpt-5-mini\"\n"));
    let (state, _) = ConfigState::load(&f.path).unwrap();
    // Stands in for the model layer's rule: only gpt-5-mini is listed.
    let listed = |_: Option<ProviderId>, id: &str| Some(id == "gpt-5-mini");
    state.set_check(Arc::new(move |text: &str, config: &Config| {
        crate::config::auto::check_listed(text, &config.auto, listed)
    }));
    assert_eq!(state.recheck(), Ok(()));

    f.write("[auto]\njudge_timeout_secs = 9\n\nclassifier_model = \"gpt-9\"\n");
    let outcome = state.reload();
    assert!(!outcome.applied);
    let error = outcome.error.unwrap();
    assert_eq!(
        (error.line, error.column, error.key.as_deref()),
        (Some(4), Some(20), Some("auto.classifier_model")),
        "{error}"
    );
    assert_eq!(state.current().auto.judge_timeout_secs, 20, "the previous config stays");
    assert_eq!(state.status().reload_error, Some(error.clone()));
    // The config in effect still names a listed model; the file does not, which recheck reports at the file's
    // place only when the config in effect is the file's.
    assert_eq!(state.recheck(), Ok(()));

    f.write("[auto]\nclassifier_model = \"none\"\n");
    assert!(state.reload().applied);
    assert_eq!(state.status().reload_error, None);
}

#[test]
fn a_loosening_reload_waits_for_the_last_full_turn_and_a_tightening_one_does_not() {
    let f = Fixture::new(Some("[permissions]\ndefault_mode = \"cautious\"\n"));
    let (state, _) = ConfigState::load(&f.path).unwrap();
    state.full_turn_started();
    state.full_turn_started();
    f.write("[permissions]\ndefault_mode = \"auto\"\n");
    let outcome = state.reload();
    assert!(!outcome.applied, "{outcome:?}");
    assert!(
        outcome
            .warnings
            .iter()
            .any(|w| w.contains("permissions.default_mode") && w.contains("held")),
        "{outcome:?}"
    );
    assert_eq!(state.status().held, Some(vec!["permissions.default_mode".to_owned()]));
    assert_eq!(state.current().permissions.default_mode, Mode::Cautious);
    assert!(state.full_turn_ended().is_empty(), "one full turn still runs");
    assert_eq!(state.current().permissions.default_mode, Mode::Cautious);
    assert_eq!(state.full_turn_ended(), ["permissions.default_mode"]);
    assert_eq!(state.current().permissions.default_mode, Mode::Auto);
    assert_eq!(state.status().held, None);

    state.full_turn_started();
    f.write("[permissions]\ndefault_mode = \"manual\"\n");
    assert!(state.reload().applied, "a tightening applies at once");
    assert_eq!(state.current().permissions.default_mode, Mode::Manual);
    assert!(state.full_turn_ended().is_empty());
}
