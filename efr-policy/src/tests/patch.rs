//! Patch calls: inside and outside the project, relative paths, `..`, `.git`, efr's roots, moves, and symbolic
//! links resolved for real on disk.

use std::path::{Path, PathBuf};

use efr_protocol::wire::Mode;

use super::E::{self, Ask, Contained as C, Refuse, Run as R};
use super::{PROJECT, ctx, decide, mismatch};
use crate::paths::resolve;
use crate::{Call, ChangeKind, Decision, PatchCall, PatchChange, PolicyContext};

const M: E = Ask("manual asks before every file change");
const OUTSIDE: E = Ask("cautious asks before changing files outside the project");

fn change(path: &str, kind: ChangeKind) -> PatchChange {
    PatchChange {
        path: PathBuf::from(path),
        kind,
    }
}

fn update(path: &str) -> PatchChange {
    change(path, ChangeKind::Update)
}

fn patch(changes: Vec<PatchChange>) -> Call {
    Call::Patch(PatchCall { changes })
}

fn check(call: &Call, ctx: &PolicyContext, expected: [E; 4]) -> Vec<String> {
    let modes = [Mode::Manual, Mode::Cautious, Mode::Auto, Mode::Full];
    modes
        .iter()
        .zip(expected)
        .filter_map(|(mode, want)| {
            mismatch(&decide(call, *mode, ctx), want).map(|why| format!("{call:?} in {mode:?}: {why}"))
        })
        .collect()
}

#[test]
fn patches_by_where_their_paths_are() {
    let ctx = ctx();
    let git = Ask("cautious asks before changing git's own files (.git/hooks/pre-commit)");
    let config = Refuse("efr's config (floor)");
    let state = Refuse("efr's keys and state (floor)");
    #[rustfmt::skip]
    let rows: Vec<(Vec<PatchChange>, [E; 4])> = vec![
        // changes                                                                 manual cautious auto full
        (vec![update("/home/u/proj/src/main.rs")],                                 [M, R, C, R]),
        (vec![change("/home/u/proj/new.rs", ChangeKind::Add), change("/home/u/proj/old.rs", ChangeKind::Delete)], [M, R, C, R]),
        (vec![update("/home/u/proj/./src/../README.md")],                          [M, R, C, R]),
        (vec![update("/etc/hosts")],                                               [M, Ask("outside the project (/etc/hosts)"), C, R]),
        (vec![update("/home/u/.bashrc")],                                          [M, Ask("outside the project (~/.bashrc)"), C, R]),
        (vec![update("/home/u/proj/../other/a.rs")],                               [M, Ask("outside the project (~/other/a.rs)"), C, R]),
        (vec![update("/home/u/proj2/a.rs")],                                       [M, OUTSIDE, C, R]),
        (vec![update("src/main.rs")],                                              [M, Ask("outside the project (src/main.rs)"), C, R]),
        (vec![update("/home/u/proj/a.rs"), update("/tmp/b.rs")],                   [M, Ask("(/tmp/b.rs)"), C, R]),
        (vec![change("/home/u/proj/a.rs", ChangeKind::Move { to: "/tmp/a.rs".into() })], [M, Ask("(/tmp/a.rs)"), C, R]),
        (vec![change("/home/u/proj/a.rs", ChangeKind::Move { to: "/home/u/proj/b.rs".into() })], [M, R, C, R]),
        (vec![update("/home/u/proj/.git/hooks/pre-commit")],                       [M, git, C, R]),
        (vec![update("/home/u/proj/.git/config")],                                 [M, Ask("git's own files"), C, R]),
        (vec![update("/home/u/proj/.gitignore")],                                  [M, R, C, R]),
        (vec![update("/home/u/.config/efr/config.toml")],                          [config, config, config, config]),
        (vec![change("/home/u/proj/x", ChangeKind::Move { to: "/home/u/.config/efr/config.toml".into() })], [config, config, config, config]),
        (vec![change("/home/u/.local/state/efr/keys/openai", ChangeKind::Delete)], [state, state, state, state]),
        (vec![update("/dev/sda")],                                                 [Refuse("raw device"), Refuse("raw device"), Refuse("raw device"), Refuse("raw device")]),
        (vec![],                                                                   [M, R, C, R]),
    ];
    let failures: Vec<String> = rows
        .iter()
        .flat_map(|(changes, want)| check(&patch(changes.clone()), &ctx, *want))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn outside_any_project_every_patch_asks_in_cautious() {
    let mut ctx = ctx();
    ctx.project_roots.clear();
    let failures = check(&patch(vec![update("/home/u/proj/a.rs")]), &ctx, [M, OUTSIDE, C, R]);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn patch_summaries_name_the_files() {
    let call = patch(vec![
        update("/home/u/proj/src/a.rs"),
        change("/home/u/proj/b.rs", ChangeKind::Add),
        change("/home/u/notes.txt", ChangeKind::Delete),
        change(
            "/home/u/proj/c.rs",
            ChangeKind::Move {
                to: "/home/u/proj/d.rs".into(),
            },
        ),
    ]);
    let Decision::Ask(q) = decide(&call, Mode::Manual, &ctx()) else {
        panic!()
    };
    assert_eq!(q.summary, "change src/a.rs, add b.rs, delete ~/notes.txt and 1 more");
    assert!(!q.interactive && !q.local_only && q.expires_in_secs.is_none());
    let call = patch(vec![change(
        "/home/u/proj/c.rs",
        ChangeKind::Move {
            to: "/home/u/proj/d.rs".into(),
        },
    )]);
    let Decision::Ask(q) = decide(&call, Mode::Manual, &ctx()) else {
        panic!()
    };
    assert_eq!(q.summary, "move c.rs to d.rs");
    assert!(PROJECT.starts_with("/home/u"));
}

/// A symbolic link inside the project that points outside: lexically the path is inside, so the caller must
/// resolve it (`paths::resolve`) before deciding. Real folders and a real link.
#[test]
fn symbolic_links_out_of_the_project_are_seen_once_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = base.join("proj");
    let outside = base.join("outside");
    std::fs::create_dir_all(project.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "x").unwrap();
    std::os::unix::fs::symlink(&outside, project.join("link")).unwrap();

    let mut ctx = ctx();
    ctx.project_roots = vec![resolve(&project).unwrap()];
    let through_link = project.join("link/secret.txt");
    let lexical = patch(vec![PatchChange {
        path: through_link.clone(),
        kind: ChangeKind::Update,
    }]);
    assert_eq!(
        decide(&lexical, Mode::Cautious, &ctx),
        Decision::Run {
            launch: crate::LaunchKind::Direct
        }
    );

    let resolved = resolve(&through_link).unwrap();
    assert_eq!(resolved, outside.join("secret.txt"));
    let call = patch(vec![PatchChange {
        path: resolved,
        kind: ChangeKind::Update,
    }]);
    let d = decide(&call, Mode::Cautious, &ctx);
    assert!(mismatch(&d, OUTSIDE).is_none(), "{d:?}");

    // A new file under a real folder of the project stays inside once resolved.
    let new = resolve(&project.join("src/new/mod.rs")).unwrap();
    assert!(new.starts_with(&project));
    let call = patch(vec![PatchChange {
        path: new,
        kind: ChangeKind::Add,
    }]);
    assert_eq!(
        decide(&call, Mode::Cautious, &ctx),
        Decision::Run {
            launch: crate::LaunchKind::Direct
        }
    );
    assert!(Path::new(&project).is_dir());
}
