//! Which exits a rule may cover, the rule a question offers, and the floors that disable a rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use efr_protocol::wire::{ExitAction, ExitFacts, ExitKind, ExitSource, ExitTarget, Needs, TargetClass};

use super::*;

const HOME: &str = "/home/ada";
const PROJECT: &str = "/home/ada/src/efr";

fn floors() -> RuleFloors {
    RuleFloors {
        home: Some(HOME.into()),
        efr_dirs: EfrDirs {
            config: Some("/home/ada/.config/efr".into()),
            ..EfrDirs::default()
        },
    }
}

fn record(kind: ExitKind, grants: Vec<Grant>, targets: Vec<ExitTarget>) -> ExitRecord {
    ExitRecord {
        kind,
        source: ExitSource::Line,
        action: ExitAction {
            tool: "shell".into(),
            command: Some("x".into()),
            ..ExitAction::default()
        },
        needs: Needs {
            grants,
            unsandboxed: false,
        },
        targets,
        facts: ExitFacts::default(),
        judgement: None,
    }
}

fn host(name: &str) -> ExitRecord {
    record(
        ExitKind::Host,
        vec![Grant::Host {
            host: name.into(),
            port: None,
        }],
        Vec::new(),
    )
}

fn write(path: &str, class: TargetClass) -> ExitRecord {
    let parent = Path::new(path).parent().unwrap().to_owned();
    record(
        ExitKind::Write,
        vec![Grant::Write { path: parent }],
        vec![ExitTarget {
            path: path.into(),
            class,
            masked: false,
            backup_before_write: false,
        }],
    )
}

#[test]
fn a_host_exit_offers_its_rule_and_the_rule_covers_the_same_exit_in_the_project_only() {
    let rule = offer(&[host("crates.io")], Some(Path::new(PROJECT)), &floors()).unwrap();
    assert_eq!(rule.rule, "host crates.io in the project efr");
    assert_eq!(rule.project, Path::new(PROJECT));
    let rules = [rule];
    assert_eq!(
        covering(&rules, &[host("crates.io")], Some(Path::new(PROJECT)), &floors()),
        Some(vec![0])
    );
    assert_eq!(
        covering(&rules, &[host("evil.example")], Some(Path::new(PROJECT)), &floors()),
        None
    );
    assert_eq!(
        covering(
            &rules,
            &[host("crates.io")],
            Some(Path::new("/home/ada/src/other")),
            &floors()
        ),
        None,
        "another project"
    );
    assert_eq!(
        covering(&rules, &[host("crates.io")], None, &floors()),
        None,
        "no project"
    );
    // Two exits of one call: each must be covered.
    assert_eq!(
        covering(
            &rules,
            &[host("crates.io"), host("b.example")],
            Some(Path::new(PROJECT)),
            &floors()
        ),
        None
    );
}

#[test]
fn exits_only_the_user_may_approve_offer_no_rule() {
    let project = Some(Path::new(PROJECT));
    let unmask = record(
        ExitKind::Unmask,
        vec![Grant::Unmask {
            path: "/home/ada/.ssh".into(),
        }],
        Vec::new(),
    );
    let open = record(ExitKind::OpenNetwork, vec![Grant::OpenNetwork], Vec::new());
    let floor = record(
        ExitKind::FloorEdit,
        vec![Grant::Write { path: HOME.into() }],
        Vec::new(),
    );
    let system = write("/etc/hosts", TargetClass::System);
    for exit in [unmask, open, floor, system] {
        assert!(
            offer(std::slice::from_ref(&exit), project, &floors()).is_none(),
            "{exit:?}"
        );
        // A rule written by hand for such an exit covers nothing either.
        let by_hand = AlwaysRule {
            kind: exit.kind,
            project: PROJECT.into(),
            grants: exit.needs.grants.clone(),
            rule: String::new(),
        };
        assert_eq!(covering(&[by_hand], &[exit], project, &floors()), None);
    }
    assert!(
        offer(&[host("a"), host("b")], project, &floors()).is_none(),
        "one record only"
    );
    let mut unsandboxed = host("a");
    unsandboxed.needs.unsandboxed = true;
    assert!(offer(&[unsandboxed], project, &floors()).is_none());
}

#[test]
fn a_floor_disables_a_rule_and_a_reload_says_so() {
    let home_write = write("/home/ada/notes/todo.txt", TargetClass::Home);
    let rule = offer(std::slice::from_ref(&home_write), Some(Path::new(PROJECT)), &floors()).unwrap();
    assert_eq!(rule.rule, "write writes in ~/notes in the project efr");
    assert!(disabled(&rule, &floors()).is_none());
    assert!(warnings(std::slice::from_ref(&rule), &floors()).is_empty());

    let units = AlwaysRule {
        kind: ExitKind::Write,
        project: PROJECT.into(),
        grants: vec![Grant::Write {
            path: "/home/ada/.config/systemd/user".into(),
        }],
        rule: "write units".into(),
    };
    let above = AlwaysRule {
        grants: vec![Grant::Write {
            path: "/home/ada/.config".into(),
        }],
        rule: String::new(),
        ..units.clone()
    };
    let efr_config = AlwaysRule {
        grants: vec![Grant::Write {
            path: "/home/ada/.config/efr".into(),
        }],
        rule: "efr".into(),
        ..units.clone()
    };
    let unmask = AlwaysRule {
        kind: ExitKind::Unmask,
        grants: vec![Grant::Unmask {
            path: "/home/ada/.ssh".into(),
        }],
        rule: "keys".into(),
        ..units.clone()
    };
    let all = [rule, units.clone(), above, efr_config, unmask];
    let said = warnings(&all, &floors());
    assert_eq!(said.len(), 4, "{said:#?}");
    assert!(
        said[0].starts_with(
            "auto.always[1] (write units) is disabled: it would write the floor file ~/.config/systemd/user/"
        ),
        "{said:#?}"
    );
    assert!(
        said[1].contains("auto.always[2] (write writes in ~/.config in the project efr)"),
        "{said:#?}"
    );
    assert!(said[2].contains("holds efr's own files"), "{said:#?}");
    assert!(said[3].contains("only the user may approve"), "{said:#?}");
    // A disabled rule covers nothing, even the exit it names.
    let unit_write = write("/home/ada/.config/systemd/user/x.service", TargetClass::Home);
    assert_eq!(
        covering(&[units], &[unit_write], Some(Path::new(PROJECT)), &floors()),
        None
    );
}
