//! The tests of `contained.rs`: the plans of contained calls, read-only and writable.

use super::*;
use efr_protocol::internal::{MaskSource, ProtectedSource};

fn layout() -> Layout {
    Layout {
        home: "/home/u".into(),
        runtime_dir: "/run/user/1000".into(),
        efr_roots: vec![
            "/home/u/.config/efr".into(),
            "/home/u/.local/share/efr".into(),
            "/home/u/.local/state/efr".into(),
            "/run/user/1000/efr".into(),
        ],
        scratch_root: "/home/u/.local/state/efr/scratch".into(),
        config_masks: Vec::new(),
    }
}

fn env() -> Vec<(String, String)> {
    vec![
        ("PATH".into(), "/home/u/bin:/usr/bin:/bin".into()),
        ("HOME".into(), "/home/u".into()),
        ("FOO".into(), "exported earlier".into()),
        ("OPENAI_API_KEY".into(), "sk-proj-secret".into()),
        ("ANTHROPIC_API_KEY".into(), "sk-ant-secret".into()),
        ("OLDPWD".into(), "/somewhere".into()),
        ("PWD".into(), "/stale".into()),
        ("HUGE".into(), "x".repeat(MAX_EXEC_STRING)),
    ]
}

fn plan_of(roots: &[PathBuf], grants: &[Grant]) -> LaunchPlan {
    let layout = layout();
    let env = env();
    call_plan(&CallPlan {
        layout: &layout,
        bwrap: Path::new("/usr/bin/bwrap"),
        shell: Path::new("/usr/bin/bash"),
        line: "cargo test && echo 'done'",
        cwd: Path::new("/home/u/src/app/sub"),
        env: &env,
        project_roots: roots,
        scratch: Path::new("/home/u/.local/state/efr/scratch/c1"),
        grants,
        report: Path::new("/run/user/1000/efr/shells/shell-x/report-1"),
        read_only: false,
        desktop: None,
    })
}

#[test]
fn the_plan_runs_the_line_in_the_users_shell_where_the_shell_is() {
    let plan = plan_of(&["/home/u/src/app".into()], &[]);
    plan.validate().unwrap();
    assert_eq!(
        plan.command,
        LaunchCommand::Shell {
            shell: "/usr/bin/bash".into(),
            line: "cargo test && echo 'done'".into()
        }
    );
    assert_eq!(plan.cwd, Path::new("/home/u/src/app/sub"));
    assert_eq!(
        plan.report,
        ReportTo::File {
            path: "/run/user/1000/efr/shells/shell-x/report-1".into()
        }
    );
    assert!(plan.grants.is_empty());
}

#[test]
fn the_environment_is_the_shells_without_keys_with_scratch() {
    let plan = plan_of(&["/home/u/src/app".into()], &[]);
    assert_eq!(plan.env["PATH"], "/home/u/bin:/usr/bin:/bin", "the shell's PATH wins");
    assert_eq!(plan.env["FOO"], "exported earlier");
    assert_eq!(plan.env["SCRATCH"], "/home/u/.local/state/efr/scratch/c1");
    assert_eq!(plan.env["PWD"], "/home/u/src/app/sub");
    for gone in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLDPWD", "HUGE"] {
        assert!(!plan.env.contains_key(gone), "{gone} is left out");
    }
    // Without a PATH of its own the call gets the base plan's.
    let layout = layout();
    let plan = call_plan(&CallPlan {
        env: &[],
        ..CallPlan {
            layout: &layout,
            bwrap: Path::new("/usr/bin/bwrap"),
            shell: Path::new("/bin/zsh"),
            line: "true",
            cwd: Path::new("/"),
            env: &[],
            project_roots: &[],
            scratch: Path::new("/s"),
            grants: &[],
            report: Path::new("/r"),
            read_only: false,
            desktop: None,
        }
    });
    assert_eq!(plan.env["PATH"], "/usr/local/bin:/usr/bin:/bin");
}

#[test]
fn writable_are_the_project_roots_and_scratch_and_efr_roots_are_masked() {
    let roots = vec![PathBuf::from("/home/u/src/app"), PathBuf::from("/home/u/src/lib")];
    let plan = plan_of(&roots, &[]);
    let writable: Vec<_> = plan.writable.iter().map(|w| (w.path.as_path(), w.source)).collect();
    assert_eq!(
        writable,
        vec![
            (Path::new("/home/u/src/app"), WritableSource::Project),
            (
                Path::new("/home/u/.local/state/efr/scratch/c1"),
                WritableSource::Scratch
            ),
            (Path::new("/home/u/src/lib"), WritableSource::Project),
        ]
    );
    for root in layout().efr_roots {
        assert!(
            plan.masks
                .iter()
                .any(|m| m.path == root && m.source == MaskSource::EfrRoot),
            "{} is masked",
            root.display()
        );
    }
    assert!(plan.masks.iter().any(|m| m.path == Path::new("/home/u/.ssh")));
    assert!(plan.masks.iter().any(|m| m.path == Path::new("/run/user/1000")));
    // What a file tool of a contained call may write.
    assert!(writable_in(&plan, Path::new("/home/u/src/app/src/main.rs")));
    assert!(writable_in(&plan, Path::new("/home/u/src/lib/x")));
    assert!(writable_in(
        &plan,
        Path::new("/home/u/.local/state/efr/scratch/c1/notes")
    ));
    assert!(!writable_in(&plan, Path::new("/home/u/.local/state/efr/keys")));
    assert!(!writable_in(&plan, Path::new("/home/u/.bashrc")));
    assert!(!writable_in(&plan, Path::new("/tmp/x")), "the call's /tmp is its own");
    assert!(!writable_in(&plan, Path::new("/home/u/src/app/../../.ssh/config")));
    // A project root that holds a credential store keeps it masked.
    let plan = plan_of(&["/home/u".into()], &[]);
    assert!(writable_in(&plan, Path::new("/home/u/notes.txt")));
    assert!(!writable_in(&plan, Path::new("/home/u/.ssh/id_ed25519")));
    // A write grant opens its path.
    let plan = plan_of(
        &[],
        &[Grant::Write {
            path: "/home/u/.cache/pip".into(),
        }],
    );
    assert!(writable_in(&plan, Path::new("/home/u/.cache/pip/wheels")));
    assert!(
        !writable_in(&plan, Path::new("/home/u/src/app/x")),
        "no project: not writable"
    );
}

#[test]
fn a_read_only_call_shows_its_folders_under_tmp_once_and_never_tmp_itself() {
    let roots = [PathBuf::from("/tmp/p"), PathBuf::from("/home/u/q")];
    assert_eq!(
        under_private_tmp(&roots, Path::new("/tmp/p/src")),
        [PathBuf::from("/tmp/p")]
    );
    assert_eq!(
        under_private_tmp(&[], Path::new("/tmp/a/./b")),
        [PathBuf::from("/tmp/a/b")]
    );
    assert!(under_private_tmp(&roots[1..], Path::new("/tmp")).is_empty());
    assert!(under_private_tmp(&[], Path::new("/tmpx/a")).is_empty());
    assert_eq!(
        under_private_tmp(&[PathBuf::from("/tmp/a/b")], Path::new("/tmp/a")),
        [PathBuf::from("/tmp/a")]
    );
}

#[test]
fn the_read_only_plan_writes_nothing_masks_as_auto_and_neutralises_git() {
    let layout = layout();
    let mut env = env();
    env.push(("GIT_CONFIG_COUNT".into(), "1".into()));
    env.push(("GIT_CONFIG_KEY_0".into(), "color.ui".into()));
    env.push(("GIT_CONFIG_VALUE_0".into(), "never".into()));
    env.push(("SCRATCH".into(), "/elsewhere".into()));
    let roots = vec![PathBuf::from("/home/u/src/app")];
    let plan = call_plan(&CallPlan {
        layout: &layout,
        bwrap: Path::new("/usr/bin/bwrap"),
        shell: Path::new("/usr/bin/bash"),
        line: "git status",
        cwd: Path::new("/home/u/src/app"),
        env: &env,
        project_roots: &roots,
        scratch: Path::new("/home/u/.local/state/efr/scratch/c1"),
        grants: &[],
        report: Path::new("/r"),
        read_only: true,
        desktop: None,
    });
    plan.validate().unwrap();
    assert!(plan.writable.is_empty(), "{:?}", plan.writable);
    assert!(plan.protected.is_empty(), "{:?}", plan.protected);
    assert_eq!(
        plan.masks,
        base_plan(
            &layout,
            Path::new("/b"),
            Vec::new(),
            Path::new("/"),
            None,
            Path::new("/s")
        )
        .masks
    );
    for path in ["/home/u/src/app/x", "/home/u/.local/state/efr/scratch/c1/x", "/tmp/x"] {
        assert!(!writable_in(&plan, Path::new(path)), "{path}");
    }
    assert!(readable_in(&plan, Path::new("/home/u/src/app/README")));
    assert!(!readable_in(&plan, Path::new("/home/u/.ssh/id_ed25519")));
    assert!(
        !plan.env.contains_key("SCRATCH"),
        "no $SCRATCH in the read-only sandbox"
    );
    assert!(!plan.env.contains_key("OPENAI_API_KEY"));
    // The user's own command-line config stays first; efr's comes after it and wins.
    assert_eq!(plan.env["GIT_CONFIG_KEY_0"], "color.ui");
    let neutral: Vec<(&str, &str)> = git_neutral().collect();
    assert_eq!(plan.env["GIT_CONFIG_COUNT"], (1 + neutral.len()).to_string());
    let keys: Vec<(&str, &str)> = (1..=neutral.len())
        .map(|n| {
            (
                plan.env[&format!("GIT_CONFIG_KEY_{n}")].as_str(),
                plan.env[&format!("GIT_CONFIG_VALUE_{n}")].as_str(),
            )
        })
        .collect();
    assert_eq!(keys, neutral);
    assert!(keys.contains(&("core.fsmonitor", "false")) && keys.contains(&("core.hooksPath", "/dev/null")));
    assert!(keys.contains(&("protocol.allow", "never")));
    assert_eq!(plan.env["GIT_PAGER"], "cat");
}

#[test]
fn every_project_roots_git_config_and_hooks_are_protected_and_not_writable() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let (app, lib) = (base.join("app"), base.join("lib"));
    for root in [&app, &lib] {
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
    }
    let plan = plan_of(&[app.clone(), lib.clone()], &[]);
    plan.validate().unwrap();
    for root in [&app, &lib] {
        for (path, source) in [
            (root.join(".git"), ProtectedSource::GitDir),
            (root.join(".git/config"), ProtectedSource::GitConfig),
            (root.join(".git/hooks"), ProtectedSource::GitHooks),
        ] {
            assert!(
                plan.protected.iter().any(|p| p.path == path && p.source == source),
                "{} is protected",
                path.display()
            );
        }
        // git's own writes stay possible; config and hooks are not a file tool's to write either.
        assert!(writable_in(&plan, &root.join(".git/objects/ab/cd")));
        assert!(writable_in(&plan, &root.join(".git/index")));
        assert!(!writable_in(&plan, &root.join(".git/config")));
        assert!(!writable_in(&plan, &root.join(".git/hooks/pre-commit")));
        assert!(writable_in(&plan, &root.join("src/lib.rs")));
    }
}

#[test]
fn lines_quote_their_paths() {
    assert_eq!(quote("it's"), r"'it'\''s'");
    assert_eq!(
        launcher_line(Path::new("/opt/efr/efr-launcher"), Path::new("/run/a b/plan-1.json")),
        "'/opt/efr/efr-launcher' --plan-file '/run/a b/plan-1.json'"
    );
    assert_eq!(env_line(Path::new("/run/x/env-1")), r"\command env -0 >'/run/x/env-1'");
}

#[test]
fn env_output_parses_and_skips_what_a_plan_cannot_hold() {
    let bytes = b"A=1\0B=x=y\0MULTI=line1\nline2\0=nameless\0noequals\0BAD=\xff\0EMPTY=\0";
    assert_eq!(
        parse_env(bytes),
        vec![
            ("A".into(), "1".into()),
            ("B".into(), "x=y".into()),
            ("MULTI".into(), "line1\nline2".into()),
            ("EMPTY".into(), String::new()),
        ]
    );
    let kept = without_held_secrets(vec![("OPENAI_API_KEY", "k"), ("HOME", "/h")]);
    assert_eq!(kept, vec![("HOME", "/h")]);
}

#[test]
fn the_report_tells_exit_codes_setup_errors_and_no_end_apart() {
    let launched = r#"{"kind":"launched","launcher_pid":7,"launcher_start":9}"#;
    assert_eq!(
        Outcome::of_report(&format!("{launched}\n{{\"kind\":\"exited\",\"exit_code\":3}}\n")),
        Outcome::Exited {
            exit_code: 3,
            exec_error: None
        }
    );
    assert_eq!(
        Outcome::of_report(&format!(
            "{launched}\n{{\"kind\":\"setup_error\",\"stage\":\"bwrap\",\"message\":\"bwrap: Can't chdir to /tmp/x\"}}\n"
        )),
        Outcome::SetupError {
            message: "bwrap: Can't chdir to /tmp/x".into()
        }
    );
    assert_eq!(Outcome::of_report(launched), Outcome::NoEnd);
    assert_eq!(Outcome::of_report("{not json"), Outcome::NoEnd);
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    assert_eq!(Outcome::take(&report), Outcome::NoEnd, "a missing report has no end");
    std::fs::write(&report, "{\"kind\":\"exited\",\"exit_code\":0}\n").unwrap();
    assert!(matches!(Outcome::take(&report), Outcome::Exited { exit_code: 0, .. }));
    assert!(!report.exists(), "the report is removed once read");
}

#[test]
fn one_time_files_are_private_and_never_reused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plan.json");
    write_private(&file, b"{}").unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let again = write_private(&file, b"{}").unwrap_err();
    assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
}
