//! The save of an always rule on real files: comments and order kept byte for byte, and each not_saved reason.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::sync::Arc;
use std::time::Duration;

use efr_protocol::wire::always::{AlwaysOutcome, NotSavedReason};
use efr_protocol::wire::{ExitKind, Grant};

use super::*;
use crate::config::ConfigState;

fn rule(host: &str) -> AlwaysRule {
    AlwaysRule {
        kind: ExitKind::Host,
        project: "/home/ada/src/efr".into(),
        grants: vec![Grant::Host {
            host: host.into(),
            port: None,
        }],
        rule: format!("host {host} in the project efr"),
    }
}

const COMMENTED: &str = "# my efr config\n\n[model]\nmodel = \"gpt-5\"   # the big one\n\n\
                         [auto]\n# ask the small model first\njudge_timeout_secs = 30\n\n\
                         [network]\nallow = [\"crates.io\"]  # cargo\n";

fn parses(text: &str) -> bool {
    crate::config::parse::parse(text).is_ok()
}

fn state_of(path: &Path) -> Arc<ConfigState> {
    Arc::new(ConfigState::load(path).unwrap().0)
}

/// `text` without the `[[auto.always]]` tables that efrd wrote (they end where the next section starts).
fn without_rules(text: &str) -> String {
    let start = text.find("[[auto.always]]").expect("a rule");
    let end = start + text[start..].find("[network]").expect("the section after");
    format!("{}{}", &text[..start], &text[end..])
}

#[tokio::test]
async fn a_rule_keeps_every_byte_of_a_commented_file_and_is_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, COMMENTED).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let state = state_of(&path);
    let outcome = state.save_always(rule("a.example"), Duration::from_secs(5)).await;
    assert_eq!(
        outcome,
        AlwaysOutcome::Saved {
            index: 0,
            rule: "host a.example in the project efr".into()
        }
    );
    let text = std::fs::read_to_string(&path).unwrap();
    // The rule goes at the end of `[auto]`; every other byte is the user's, in its order.
    assert_eq!(
        without_rules(&text),
        COMMENTED,
        "the user's bytes stay as they were:\n{text}"
    );
    assert!(
        text.contains("[[auto.always]]\nkind = \"host\"\nproject = \"/home/ada/src/efr\"\n"),
        "{text}"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o640,
        "the file keeps its mode"
    );
    assert_eq!(
        state.current().auto.always,
        vec![rule("a.example")],
        "the reload applied it"
    );
    assert_eq!(state.current().auto.judge_timeout_secs, 30);

    // A second rule goes after the first, with the next index.
    let second = state.save_always(rule("b.example"), Duration::from_secs(5)).await;
    assert!(matches!(second, AlwaysOutcome::Saved { index: 1, .. }), "{second:?}");
    let again = std::fs::read_to_string(&path).unwrap();
    assert_eq!(without_rules(&again), COMMENTED, "{again}");
    assert!(again.find("a.example") < again.find("b.example"), "{again}");
    assert_eq!(state.current().auto.always.len(), 2);
}

#[test]
fn an_inline_list_and_a_missing_file_take_the_rule_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let draft = prepare(&path, &rule("a.example"), &parses).unwrap();
    assert_eq!(draft.commit().unwrap(), 0);
    let parsed = crate::config::parse::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(parsed.config.auto.always, vec![rule("a.example")]);
    assert!(
        !std::fs::read_to_string(&path).unwrap().contains("[auto]\n"),
        "no empty [auto] header"
    );

    let inline = "[auto]\nalways = [{ kind = \"host\", project = \"/p\", grants = [{ kind = \"host\", host = \"x.example\" }] }]\n";
    std::fs::write(&path, inline).unwrap();
    assert_eq!(
        prepare(&path, &rule("a.example"), &parses).unwrap().commit().unwrap(),
        1
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("[auto]\nalways = [{ kind = \"host\", project = \"/p\""),
        "{text}"
    );
    assert_eq!(crate::config::parse::parse(&text).unwrap().config.auto.always.len(), 2);
}

#[test]
fn a_link_is_followed_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let dotfiles = dir.path().join("dotfiles");
    std::fs::create_dir(&dotfiles).unwrap();
    std::fs::write(dotfiles.join("efr.toml"), COMMENTED).unwrap();
    let path = dir.path().join("config.toml");
    std::os::unix::fs::symlink(dotfiles.join("efr.toml"), &path).unwrap();
    prepare(&path, &rule("a.example"), &parses).unwrap().commit().unwrap();
    assert!(
        std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink(),
        "the link stays"
    );
    assert!(
        std::fs::read_to_string(dotfiles.join("efr.toml"))
            .unwrap()
            .contains("[[auto.always]]")
    );
}

#[test]
fn a_file_changed_during_the_write_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, COMMENTED).unwrap();
    let draft = prepare(&path, &rule("a.example"), &parses).unwrap();
    let edited = format!("{COMMENTED}\n[undo]\n# the user's edit, saved while efrd wrote\n");
    std::fs::write(&path, &edited).unwrap();
    assert_eq!(draft.commit(), Err(NotSavedReason::Changed));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited, "the user's edit stays");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file is left"
    );
}

#[tokio::test]
async fn a_file_without_write_permission_is_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, COMMENTED).unwrap();
    let state = state_of(&path);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let outcome = state.save_always(rule("a.example"), Duration::from_secs(5)).await;
    assert_eq!(
        outcome,
        AlwaysOutcome::NotSaved {
            reason: NotSavedReason::ReadOnly
        }
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), COMMENTED);

    // A link into a folder that cannot be written (a home manager's store) is read-only too.
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::write(store.join("efr.toml"), COMMENTED).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o555)).unwrap();
    let linked = dir.path().join("linked.toml");
    std::os::unix::fs::symlink(store.join("efr.toml"), &linked).unwrap();
    let refused = prepare(&linked, &rule("a.example"), &parses).map(|_| ());
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(refused, Err(NotSavedReason::ReadOnly));
}

#[tokio::test]
async fn a_file_that_does_not_load_is_load_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, COMMENTED).unwrap();
    let state = state_of(&path);
    // Edited since the last reload into a file that does not load: efrd does not save into it.
    let broken = "[auto]\njudge_timeout_secs = 0\n";
    std::fs::write(&path, broken).unwrap();
    let outcome = state.save_always(rule("a.example"), Duration::from_secs(5)).await;
    assert_eq!(
        outcome,
        AlwaysOutcome::NotSaved {
            reason: NotSavedReason::LoadCheck
        }
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
    std::fs::write(&path, "[auto\n").unwrap();
    assert_eq!(
        prepare(&path, &rule("a.example"), &parses).map(|_| ()),
        Err(NotSavedReason::LoadCheck)
    );
    // `auto.always` that is not a list cannot take the rule.
    std::fs::write(&path, "[auto]\nalways = 3\n").unwrap();
    assert_eq!(
        prepare(&path, &rule("a.example"), &|_| true).map(|_| ()),
        Err(NotSavedReason::LoadCheck)
    );
}

#[tokio::test]
async fn a_config_folder_that_is_gone_is_io() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("config");
    std::fs::create_dir(&folder).unwrap();
    let path = folder.join("config.toml");
    let state = state_of(&path);
    std::fs::remove_dir(&folder).unwrap();
    let outcome = state.save_always(rule("a.example"), Duration::from_secs(5)).await;
    assert_eq!(
        outcome,
        AlwaysOutcome::NotSaved {
            reason: NotSavedReason::Io
        }
    );
    assert!(!folder.exists());
}

#[tokio::test]
async fn a_reload_that_does_not_finish_in_time_is_reload_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, COMMENTED).unwrap();
    let state = state_of(&path);
    // The check of a reload that another module installed (the model list) takes long: its two runs before
    // the write (the file as read, then with the rule) pass at once; the reload's waits past the limit.
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = Arc::clone(&runs);
    state.set_check(Arc::new(move |_, _| {
        if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 1 {
            std::thread::sleep(Duration::from_millis(800));
        }
        Ok(())
    }));
    let outcome = state.save_always(rule("a.example"), Duration::from_millis(100)).await;
    assert_eq!(
        outcome,
        AlwaysOutcome::NotSaved {
            reason: NotSavedReason::ReloadTimeout
        }
    );
    assert!(
        std::fs::read_to_string(&path).unwrap().contains("[[auto.always]]"),
        "the rule was written"
    );
}

#[test]
fn a_rule_needs_an_absolute_project_and_a_grant() {
    let mut bad = rule("a.example");
    bad.project = "src/efr".into();
    let err = check(std::slice::from_ref(&bad)).unwrap_err();
    assert_eq!(err.0.to_string(), "auto.always[0].project");
    bad.project = "/p".into();
    bad.grants.clear();
    assert_eq!(
        check(&[rule("x"), bad]).unwrap_err().0.to_string(),
        "auto.always[1].grants"
    );
    let text = "[[auto.always]]\nkind = \"teleport\"\nproject = \"/p\"\ngrants = [{ kind = \"host\", host = \"x\" }]\n";
    let error = crate::config::parse::parse(text).unwrap_err();
    assert_eq!(error.key.as_deref(), Some("auto.always[0].kind"), "{error:?}");
}
