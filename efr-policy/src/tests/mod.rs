//! The decision's table tests: shell lines × modes ([`table`]), patches ([`patch`]), and the question's flags.

mod patch;
mod table;

use std::path::PathBuf;

use efr_protocol::wire::{Mode, Origin};

use super::{Call, Decision, EfrDirs, LaunchKind, PolicyConfig, PolicyContext, ShellCall, decide};

const HOME: &str = "/home/u";
const PROJECT: &str = "/home/u/proj";

/// The context every table row runs in: one project under the home folder, the usual efr roots.
fn ctx() -> PolicyContext {
    PolicyContext {
        project_roots: vec![PathBuf::from(PROJECT)],
        origin: Origin::Terminal,
        home: Some(PathBuf::from(HOME)),
        efr_dirs: EfrDirs {
            config: Some(PathBuf::from("/home/u/.config/efr")),
            data: Some(PathBuf::from("/home/u/.local/share/efr")),
            state: Some(PathBuf::from("/home/u/.local/state/efr")),
            runtime: Some(PathBuf::from("/run/user/1000/efr")),
            scratch: Some(PathBuf::from("/home/u/.local/state/efr/scratch")),
        },
        config: PolicyConfig::default(),
        git: Vec::new(),
        sandbox: false,
        uncontained: false,
        extra_masks: Vec::new(),
    }
}

/// `ctx` with every repository the line's git commands use found plain, as in a fresh clone.
fn plain_git(ctx: &PolicyContext, call: &Call) -> PolicyContext {
    let mut ctx = ctx.clone();
    if let Call::Shell(shell) = call {
        ctx.git = super::analyse_call(shell, &ctx)
            .git
            .into_iter()
            .map(|place| (place, super::GitTrust::Plain))
            .collect();
    }
    ctx
}

fn shell(line: &str) -> Call {
    Call::Shell(ShellCall {
        command: line.to_owned(),
        cwd: PathBuf::from(PROJECT),
    })
}

/// An expected decision.
#[derive(Debug, Clone, Copy)]
enum E {
    /// Run direct.
    Run,
    /// Run contained.
    Contained,
    /// Ask, with no expiry, the reason holding this text.
    Ask(&'static str),
    /// Ask, expiring in 120 s, the reason holding this text (full mode's guarded delete).
    Guard(&'static str),
    /// Refuse, the refusal holding this text.
    Refuse(&'static str),
}

/// Why `got` is not `want`, if it is not.
fn mismatch(got: &Decision, want: E) -> Option<String> {
    let ok = match (want, got) {
        (
            E::Run,
            Decision::Run {
                launch: LaunchKind::Direct,
            },
        ) => true,
        (
            E::Contained,
            Decision::Run {
                launch: LaunchKind::Contained,
            },
        ) => true,
        (E::Ask(text), Decision::Ask(q)) => q.reason.contains(text) && q.expires_in_secs.is_none(),
        (E::Guard(text), Decision::Ask(q)) => q.reason.contains(text) && q.expires_in_secs == Some(120) && q.local_only,
        (E::Refuse(text), Decision::Refuse { refusal }) => refusal.contains(text),
        _ => false,
    };
    (!ok).then(|| format!("want {want:?}, got {got:?}"))
}

#[test]
fn a_phone_turn_is_decided_as_cautious_at_most() {
    let mut ctx = ctx();
    ctx.origin = Origin::Phone;
    for mode in [Mode::Auto, Mode::Full, Mode::Cautious] {
        let d = decide(&shell("curl https://example.com"), mode, &ctx);
        assert!(
            mismatch(&d, E::Ask("cautious asks before any network access")).is_none(),
            "{mode:?}: {d:?}"
        );
        assert_eq!(
            decide(&shell("ls"), mode, &ctx),
            Decision::Run {
                launch: LaunchKind::Direct
            }
        );
    }
    // Manual stays manual.
    let d = decide(&shell("ls"), Mode::Manual, &ctx);
    assert!(
        mismatch(&d, E::Ask("manual asks before every command")).is_none(),
        "{d:?}"
    );
}

#[test]
fn a_daemon_turn_is_decided_as_auto_at_most() {
    let mut ctx = ctx();
    ctx.origin = Origin::Daemon;
    assert_eq!(
        decide(&shell("ls"), Mode::Full, &ctx),
        Decision::Run {
            launch: LaunchKind::Contained
        }
    );
    assert_eq!(
        decide(&shell("ls"), Mode::Cautious, &ctx),
        Decision::Run {
            launch: LaunchKind::Direct
        }
    );
}

#[test]
fn scratch_is_the_calls_own_while_the_rest_of_the_state_root_is_a_floor() {
    let scratch = "touch /home/u/.local/state/efr/scratch/c1/notes.txt";
    assert!(
        matches!(decide(&shell(scratch), Mode::Full, &ctx()), Decision::Run { .. }),
        "{:?}",
        decide(&shell(scratch), Mode::Full, &ctx())
    );
    for line in [
        "ls /home/u/.local/state/efr/keys",
        "cat /home/u/.local/state/efr/scratch/../keys/openai-api.json",
        "cd /home/u/.local/state/efr && cat keys/openai-api.json",
    ] {
        let d = decide(&shell(line), Mode::Full, &ctx());
        assert!(matches!(d, Decision::Refuse { .. }), "{line}: {d:?}");
    }
}

#[test]
fn an_unknown_mode_is_decided_as_manual() {
    let d = decide(&shell("ls"), Mode::Unknown, &ctx());
    assert!(
        mismatch(&d, E::Ask("manual asks before every command")).is_none(),
        "{d:?}"
    );
}

#[test]
fn interactive_and_privileged_questions_are_local_only() {
    let ask = |line: &str, mode| match decide(&shell(line), mode, &ctx()) {
        Decision::Ask(q) => q,
        other => panic!("{line}: {other:?}"),
    };
    let q = ask("sudo apt-get install -y jq", Mode::Cautious);
    assert!(q.interactive && q.local_only);
    assert_eq!(q.reason, "cautious asks before any network access");
    let q = ask("sudo -n true", Mode::Cautious);
    assert!(!q.interactive && q.local_only);
    let q = ask("python3", Mode::Cautious);
    assert!(q.interactive && q.local_only);
    let q = ask("git commit", Mode::Manual);
    assert!(q.interactive && q.local_only);
    let q = ask("rm -rf build", Mode::Cautious);
    assert!(!q.interactive && !q.local_only);
    assert_eq!(q.launch, LaunchKind::Direct);
}

#[test]
fn summaries_name_the_command_and_the_guarded_target() {
    let Decision::Ask(q) = decide(&shell("curl https://example.com"), Mode::Cautious, &ctx()) else {
        panic!()
    };
    assert_eq!(q.summary, "curl https://example.com");
    let long = format!("echo {} && curl x", "a".repeat(300));
    let Decision::Ask(q) = decide(&shell(&long), Mode::Cautious, &ctx()) else {
        panic!()
    };
    assert_eq!(q.summary.chars().count(), super::decide::SUMMARY_CHARS + 2);
    assert!(q.summary.ends_with(" …"));
    let Decision::Ask(q) = decide(&shell("cat <<EOF > f\nx\nEOF"), Mode::Manual, &ctx()) else {
        panic!()
    };
    assert_eq!(q.summary, "cat <<EOF > f …");
    let Decision::Ask(q) = decide(&shell("rm -rf /tmp/build"), Mode::Full, &ctx()) else {
        panic!()
    };
    assert_eq!(q.summary, "delete /tmp/build and all it holds: rm -rf /tmp/build");
}

#[test]
fn extra_read_only_commands_from_config() {
    let mut ctx = ctx();
    assert!(matches!(
        decide(&shell("cargo-tree --depth 1"), Mode::Cautious, &ctx),
        Decision::Ask(_)
    ));
    ctx.config.extra_read_only.push("cargo-tree".to_owned());
    assert_eq!(
        decide(&shell("cargo-tree --depth 1"), Mode::Cautious, &ctx),
        Decision::Run {
            launch: LaunchKind::Direct
        }
    );
    // The config does not lift the other rules: a redirection still writes.
    assert!(matches!(
        decide(&shell("cargo-tree > t.txt"), Mode::Cautious, &ctx),
        Decision::Ask(_)
    ));
}

#[test]
fn a_relative_cwd_places_nothing() {
    let call = Call::Shell(ShellCall {
        command: "rm -rf build".to_owned(),
        cwd: PathBuf::from("proj"),
    });
    let d = decide(&call, Mode::Full, &ctx());
    assert!(
        mismatch(&d, E::Guard("full mode asks before a delete outside the project")).is_none(),
        "{d:?}"
    );
}

#[test]
fn a_line_too_long_to_parse_is_never_read_only() {
    let long = format!("ls {}", "a".repeat(crate::shell::MAX_LINE_BYTES));
    let d = decide(&shell(&long), Mode::Cautious, &ctx());
    assert!(
        mismatch(&d, E::Ask("cautious asks before a line it cannot parse")).is_none(),
        "{d:?}"
    );
    let deep = format!("{}ls{}", "$(echo ".repeat(100), ")".repeat(100));
    let d = decide(&shell(&deep), Mode::Cautious, &ctx());
    assert!(
        mismatch(&d, E::Ask("cautious asks before a line it cannot parse")).is_none(),
        "{d:?}"
    );
}

#[test]
fn launch_kinds_map_to_the_wire() {
    use efr_protocol::wire::Launch;
    assert_eq!(LaunchKind::Direct.to_wire(), Launch::Direct);
    assert_eq!(
        LaunchKind::Contained.to_wire(),
        Launch::Contained { grants: Vec::new() }
    );
    assert_eq!(LaunchKind::Unsandboxed.to_wire(), Launch::Unsandboxed);
}

#[test]
fn cautious_runs_git_only_where_every_repository_it_uses_was_found_plain() {
    use super::{GitPlace, GitTrust};
    let place = |dir: &str, location: &[&str]| GitPlace {
        dir: Some(PathBuf::from(dir)),
        location: location.iter().map(|s| (*s).to_owned()).collect(),
    };
    let decide_with = |line: &str, checks: Vec<(GitPlace, GitTrust)>| {
        let mut ctx = ctx();
        ctx.git = checks;
        decide(&shell(line), Mode::Cautious, &ctx)
    };
    let reason = |decision: Decision| match decision {
        Decision::Ask(question) => question.reason,
        other => panic!("want a question, got {other:?}"),
    };

    // The places the analysis finds: the directory after `cd`, `-C` as written, `~` expanded; after `;` either
    // directory (the `cd` may have failed).
    let call = |line: &str| super::ShellCall {
        command: line.to_owned(),
        cwd: PathBuf::from(PROJECT),
    };
    let places = |line: &str| super::analyse_call(&call(line), &ctx()).git;
    assert_eq!(places("ls"), Vec::<GitPlace>::new());
    assert_eq!(places("git status"), vec![place(PROJECT, &[])]);
    assert_eq!(
        places("cd sub && git log -1; git -C ~/other diff"),
        vec![
            place("/home/u/proj/sub", &[]),
            place(PROJECT, &["-C", "/home/u/other"]),
            place("/home/u/proj/sub", &["-C", "/home/u/other"])
        ]
    );
    assert_eq!(
        places("bash -c 'git --git-dir=x/.git show'"),
        vec![place(PROJECT, &["--git-dir=x/.git"])]
    );
    assert_eq!(places("cd \"$D\" && git status")[0].dir, None);

    // Not checked (a caller that skipped the check) or not placeable: ask.
    assert!(reason(decide_with("git status", Vec::new())).contains("did not check"));
    assert!(reason(decide_with("cd \"$D\" && git status", Vec::new())).contains("cannot place"));
    // Plain: run.
    let plain = vec![(place(PROJECT, &[]), GitTrust::Plain)];
    assert_eq!(
        decide_with("git status", plain.clone()),
        Decision::Run {
            launch: LaunchKind::Direct
        }
    );
    // One repository of two runs something: ask, naming it.
    let runs = GitTrust::Runs {
        what: "config key `core.fsmonitor`".to_owned(),
        repository: PathBuf::from("/home/u/proj/sub"),
    };
    let mut checks = plain.clone();
    checks.push((place("/home/u/proj/sub", &[]), runs));
    assert_eq!(
        reason(decide_with("git status && cd sub && git status", checks)),
        "cautious asks before git in sub, whose own config key `core.fsmonitor` can make git run a program"
    );
    let unchecked = vec![(
        place(PROJECT, &[]),
        GitTrust::Unchecked("git took more than 5 s".to_owned()),
    )];
    assert!(reason(decide_with("git log", unchecked)).contains("(git took more than 5 s)"));
    // Another concern comes first; the other modes do not look at git's config.
    assert!(reason(decide_with("git fetch", plain)).contains("network"));
    let mut ctx = ctx();
    ctx.git = Vec::new();
    assert_eq!(
        decide(&shell("git status"), Mode::Full, &ctx),
        Decision::Run {
            launch: LaunchKind::Direct
        }
    );
}

/// What an agent reads most, from the hardening rounds' point of view: none of it may ask (a question for every
/// `git status` teaches users to say yes).
#[test]
fn common_read_only_commands_run_without_a_question() {
    for line in [
        "ls -la",
        "cat src/main.rs",
        "grep -rn foo src",
        "rg -n foo",
        "find . -name '*.rs'",
        "git status",
        "git diff",
        "git log --oneline -10",
        "head -50 file",
        "wc -l *.rs",
        "sed -n '1,50p' file",
        "awk '{print $1}' file",
        "cat file | grep x | sort | uniq -c",
        "echo $HOME",
        "pwd",
        "cd src && ls",
        "git show HEAD --stat",
        "ls -la | head",
        "find . -type f | wc -l",
        "diff a b",
        "jq . package.json",
        "du -sh .",
        "which cargo",
        "printenv PATH",
        "date",
        "uname -a",
        "git branch -a",
        "git log -p -1 -- file",
        "git blame file",
        "sort file | head",
        "cut -d: -f1 /etc/passwd",
        "[ -f Cargo.toml ] && cat Cargo.toml",
        "test -d src && ls src",
        "ls src/*.rs",
        "wc -l src/*.rs",
        "head -n 20 src/*.rs",
        "grep -c fn src/*.rs",
        "sed -n 1,10p src/*.rs",
        "git diff HEAD~1 -- src/",
        "git log --format='%h %s' -5",
        "cat -n src/lib.rs | sed -n '10,20p'",
        "grep -rn 'TODO' --include='*.rs' .",
        "ls -1 | wc -l",
        "echo \"$PATH\" | tr ':' '\\n'",
        "stat -c %s file",
        "git rev-parse --show-toplevel",
        "git ls-files | head",
        "cd .. && ls",
        "echo ${#PATH}",
        "nl -ba file | head -40",
    ] {
        let c = shell(line);
        let got = decide(&c, Mode::Cautious, &plain_git(&ctx(), &c));
        assert_eq!(
            got,
            Decision::Run {
                launch: LaunchKind::Direct
            },
            "{line}"
        );
    }
}

/// With the sandbox, every line cautious runs without a question runs in the read-only sandbox, and so do the reads
/// of credential stores and efr's state root that ask without it; the rest asks as before
/// (docs/adr/0009-cautious-reads-contained.md).
#[test]
fn with_the_sandbox_cautious_runs_its_reads_contained_read_only() {
    let contained = Decision::Run {
        launch: LaunchKind::ContainedReadOnly,
    };
    let mut with = ctx();
    with.sandbox = true;
    for (line, expected) in table::TABLE {
        let call = shell(line);
        let without = decide(&call, Mode::Cautious, &plain_git(&ctx(), &call));
        // No git check: the sandbox neutralises the repository's config.
        let got = decide(&call, Mode::Cautious, &with);
        match without {
            Decision::Run { .. } => assert_eq!(got, contained, "{line}"),
            Decision::Refuse { .. } => assert_eq!(got, without, "{line}"),
            // Without the sandbox these ask about a store or a repository efr could not find plain.
            Decision::Ask(ref q)
                if q.reason.contains("when efr's sandbox is not available")
                    || q.reason.starts_with("cautious asks before git") =>
            {
                assert_eq!(got, contained, "{line}");
            }
            Decision::Ask(ref q) => {
                let Call::Shell(shell_call) = &call else { unreachable!() };
                let analysis = super::analyse_call(shell_call, &with);
                if analysis.concerns.iter().all(super::Concern::needs_only_reading) {
                    // A line efr cannot analyse that shows no need of more than reading: the sandbox holds it.
                    assert_eq!(got, contained, "{line}");
                    continue;
                }
                let Decision::Ask(g) = &got else {
                    panic!("{line}: {got:?}")
                };
                assert_eq!(g.reason, q.reason, "{line}");
            }
        }
        let _ = expected;
    }
    for line in [
        "cat ~/.ssh/id_ed25519",
        "cat \"$HOME/.ssh/id_ed25519\"",
        "cat $HOME/.ssh/*",
        "head -c 100 ~/.ssh/id_ed25519",
        "base64 ~/.ssh/id_ed25519",
        "cat \"$PWD/../.local/state/efr/keys/openai\"",
        "grep -r PRIVATE ~",
        "cat ~/.ss*/id_*",
        "git status",
    ] {
        assert_eq!(decide(&shell(line), Mode::Cautious, &with), contained, "{line}");
        let Decision::Ask(q) = decide(&shell(line), Mode::Cautious, &plain_git(&ctx(), &shell(line))) else {
            if line == "git status" {
                continue;
            }
            panic!("{line} runs without the sandbox");
        };
        assert!(
            q.reason
                .starts_with("cautious asks before reading a credential store when efr's sandbox is not available"),
            "{line}: {}",
            q.reason
        );
        assert_eq!(q.launch, LaunchKind::Direct);
    }
    // A line efr cannot analyse runs in the read-only sandbox without a question, unless its point is the hidden
    // shell's own state; without the sandbox it asks.
    assert_eq!(
        decide(&shell("eval \"$x\""), Mode::Cautious, &with),
        Decision::Run {
            launch: LaunchKind::ContainedReadOnly
        }
    );
    let Decision::Ask(q) = decide(&shell("eval \"$x\""), Mode::Cautious, &ctx()) else {
        panic!("eval without a sandbox")
    };
    assert_eq!(q.launch, LaunchKind::Direct);
    for line in [
        "source .venv/bin/activate",
        "curl https://example.com",
        "rm -rf build",
        "export X=1",
    ] {
        let Decision::Ask(q) = decide(&shell(line), Mode::Cautious, &with) else {
            panic!("{line}")
        };
        assert_eq!(q.launch, LaunchKind::Direct, "{line}");
    }
    // Other modes do not change.
    assert_eq!(
        decide(&shell("ls"), Mode::Auto, &with),
        Decision::Run {
            launch: LaunchKind::Contained
        }
    );
    assert_eq!(LaunchKind::ContainedReadOnly.to_wire(), LaunchKind::Contained.to_wire());
}

/// Without the sandbox, a read of a path the config's `[sandbox] extra_masks` names asks, as a credential store
/// does; with it, the read runs in the read-only sandbox, which masks the path.
#[test]
fn without_the_sandbox_cautious_asks_before_reading_an_extra_mask() {
    let mut without = ctx();
    without.extra_masks = vec![PathBuf::from("/home/u/secrets"), PathBuf::from("/srv/vault.key")];
    for line in [
        "cat ~/secrets/token",
        "cat /srv/vault.key",
        "grep -r x ~/secrets",
        "cat /home/u/secrets/*",
    ] {
        let call = shell(line);
        let Decision::Ask(q) = decide(&call, Mode::Cautious, &plain_git(&without, &call)) else {
            panic!("{line} runs without the sandbox");
        };
        assert!(q.reason.contains("[sandbox] extra_masks"), "{line}: {}", q.reason);
        assert_eq!(q.launch, LaunchKind::Direct);
        let mut with = without.clone();
        with.sandbox = true;
        assert_eq!(
            decide(&call, Mode::Cautious, &with),
            Decision::Run {
                launch: LaunchKind::ContainedReadOnly
            },
            "{line}"
        );
    }
    // Other reads run as before.
    let call = shell("cat README.md");
    assert_eq!(
        decide(&call, Mode::Cautious, &plain_git(&without, &call)),
        Decision::Run {
            launch: LaunchKind::Direct
        }
    );
}

/// When nothing can contain a read (neither bubblewrap nor Landlock), cautious asks before every read it would run
/// unasked; a line that asked before still asks for its own reason.
#[test]
fn with_nothing_to_contain_a_read_cautious_asks_before_every_command() {
    let mut bare = ctx();
    bare.uncontained = true;
    for line in ["ls", "cat README.md", "git status", "grep -rn x src"] {
        let call = shell(line);
        let Decision::Ask(q) = decide(&call, Mode::Cautious, &plain_git(&bare, &call)) else {
            panic!("{line} ran");
        };
        assert_eq!(q.reason, super::UNCONTAINED, "{line}");
        assert_eq!(q.launch, LaunchKind::Direct);
        // With a containment, the same line runs contained.
        let mut with = bare.clone();
        with.uncontained = false;
        with.sandbox = true;
        assert_eq!(
            decide(&call, Mode::Cautious, &with),
            Decision::Run {
                launch: LaunchKind::ContainedReadOnly
            },
            "{line}"
        );
    }
    let Decision::Ask(q) = decide(&shell("rm -rf build"), Mode::Cautious, &bare) else {
        panic!("rm ran")
    };
    assert_ne!(q.reason, super::UNCONTAINED);
}
