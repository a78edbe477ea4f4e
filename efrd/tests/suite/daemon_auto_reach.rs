//! What efrd itself keeps out of a contained call's reach in auto mode, with the real launcher and bubblewrap:
//! dotfiles when the prompt has no project, patches through links (writes and reads), what a direct call left in
//! the hidden shell, the project's git configuration and hooks (also through a `.git` link or file), a planted
//! `commondir`, efr's own roots inside a project, and repositories that could run a program, which a cautious git
//! read without a sandbox asks about.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::json;

use common::auto::{bounded, daemon_with, deny_every_question, tempdir};
use common::tools::{event_of, left_running_call, patch_call, prompt_to, shell_call, start, text, tool_output};
use common::{command_id, events_until, model};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_typed_in_the_home_folder_has_no_project_so_dotfiles_stay_out_of_reach() {
    let home = tempdir();
    std::fs::write(home.path().join(".bashrc"), "# mine\n").unwrap();
    let server = model(vec![
        shell_call("call_rc", "echo 'alias ls=evil' >> ~/.bashrc"),
        text("contained"),
        patch_call(
            "call_unit",
            "*** Begin Patch\n*** Add File: .config/systemd/user/evil.service\n+[Service]\n*** End Patch\n",
        ),
        text("asked"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();

    // auto: an edit of ~/.bashrc is a floor_edit exit, which only the user approves; denied, nothing is written.
    let (_, conversation, id) = start(&mut client, home.path(), "auto", "go").await;
    let events = bounded("auto question", events_until(&mut client, id, "approval_requested")).await;
    let asked = events.last().unwrap();
    assert_eq!(asked["exit"]["kind"], "floor_edit", "{asked}");
    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_rc", "decision": "deny"}),
        )
        .await
        .unwrap();
    bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    let output = tool_output(&server, "call_rc");
    assert!(output.contains("floor_edit exit"), "the model is told why: {output}");
    assert_eq!(
        std::fs::read_to_string(home.path().join(".bashrc")).unwrap(),
        "# mine\n"
    );

    // cautious: a patch in the home folder is outside any project, so it asks; denied, nothing is written.
    prompt_to(&mut client, Some(&conversation), home.path(), "cautious", "again").await;
    let events = bounded(
        "cautious turn",
        common::events_through(&mut client, id, "approval_requested"),
    )
    .await;
    let asked = events.last().unwrap();
    assert_eq!(asked["call_id"], "call_unit", "{asked}");
    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_unit", "decision": "deny"}),
        )
        .await
        .unwrap();
    bounded("cautious end", events_until(&mut client, id, "turn_completed")).await;
    assert!(!home.path().join(".config/systemd/user/evil.service").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_through_a_link_out_of_the_project_is_judged_where_it_writes() {
    let home = tempdir();
    let project = tempdir();
    let outside = tempdir();
    std::fs::write(outside.path().join("target.txt"), "mine\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("target.txt"), project.path().join("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), project.path().join("dir")).unwrap();
    std::os::unix::fs::symlink(home.path().join("config"), project.path().join("cfg")).unwrap();
    // Links to a file the sandbox masks (a credential store under HOME): a patch must not read it out.
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/id_test"), "SECRET-KEY-MATERIAL\n").unwrap();
    std::os::unix::fs::symlink(home.path().join(".ssh/id_test"), project.path().join("k1")).unwrap();
    std::os::unix::fs::symlink(home.path().join(".ssh/id_test"), project.path().join("k2")).unwrap();
    let steal = "*** Begin Patch\n*** Update File: k1\n*** Move to: leak.txt\n*** End Patch\n";
    let show = "*** Begin Patch\n*** Delete File: k2\n*** End Patch\n";
    let update = "*** Begin Patch\n*** Update File: link.txt\n@@\n-mine\n+theirs\n*** End Patch\n";
    let add = "*** Begin Patch\n*** Add File: dir/escape.sh\n+evil\n*** End Patch\n";
    let config = "*** Begin Patch\n*** Add File: cfg/injected.toml\n+[model]\n*** End Patch\n";
    let server = model(vec![
        patch_call("call_update", update),
        patch_call("call_add", add),
        patch_call("call_cfg", config),
        patch_call("call_steal", steal),
        patch_call("call_show", show),
        text("auto done"),
        patch_call("call_cautious", update),
        text("cautious done"),
        patch_call("call_full", config),
        text("full done"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();

    // auto: each write lands outside the sandbox's writable roots: it asks for an exit (the user denies each here)
    // or fails as the same write inside the sandbox would; nothing changes.
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "go").await;
    let events = bounded("auto turn", deny_every_question(&mut client, id, &conversation)).await;
    for call in ["call_update", "call_add", "call_steal", "call_show"] {
        let done = event_of(&events, "tool_call_completed", call);
        assert!(!done.to_string().contains("SECRET-KEY-MATERIAL"), "{done}");
        let seen = tool_output(&server, call);
        match done["status"].as_str() {
            Some("denied") => assert!(seen.contains("exit"), "{call}: {seen}"),
            Some("failed") => assert!(
                seen.contains("not writable in efr's sandbox") || seen.contains("hides from a contained call"),
                "{call}: {seen}"
            ),
            _ => panic!("{call} ran: {done}"),
        }
    }
    assert!(!project.path().join("leak.txt").exists());
    assert!(
        std::fs::symlink_metadata(project.path().join("k2")).is_ok(),
        "the link stays"
    );
    // efr's own config is a floor before it is a sandbox matter: refused in every mode.
    let done = event_of(&events, "tool_call_completed", "call_cfg");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(done["refusal"].is_string(), "{done}");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("target.txt")).unwrap(),
        "mine\n"
    );
    assert!(!outside.path().join("escape.sh").exists());
    assert!(!home.path().join("config/injected.toml").exists());

    // cautious: the update writes outside the project, so it asks (denied here).
    prompt_to(&mut client, Some(&conversation), project.path(), "cautious", "again").await;
    let events = bounded(
        "cautious ask",
        common::events_through(&mut client, id, "approval_requested"),
    )
    .await;
    assert_eq!(events.last().unwrap()["call_id"], "call_cautious");
    client
        .ok(
            "approval.respond",
            json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_cautious",
                "decision": "deny"}),
        )
        .await
        .unwrap();
    bounded("cautious end", events_until(&mut client, id, "turn_completed")).await;
    assert_eq!(
        std::fs::read_to_string(outside.path().join("target.txt")).unwrap(),
        "mine\n"
    );

    // full: efr's own config is a floor, reached through a link or not.
    prompt_to(&mut client, Some(&conversation), project.path(), "full", "once more").await;
    let events = bounded("full turn", events_until(&mut client, id, "turn_completed")).await;
    let done = event_of(&events, "tool_call_completed", "call_full");
    assert_eq!(done["status"], "failed", "{done}");
    assert!(done["refusal"].is_string(), "{done}");
    assert!(!home.path().join("config/injected.toml").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_direct_call_set_in_the_hidden_shell_never_runs_around_a_contained_call() {
    let home = tempdir();
    let project = tempdir();
    let outside = tempdir();
    std::fs::create_dir(project.path().join("sub")).unwrap();
    let out = outside.path().display();
    // The hooks, then a listing of what is set, so the test knows they are in place before it asserts they never
    // run around the contained call.
    let setup = format!(
        "trap 'touch {out}/trap' DEBUG; trap 'touch {out}/exit' EXIT; trap 'touch {out}/hup' HUP; \
         PROMPT_COMMAND='touch {out}/prompt'; printf() {{ touch {out}/function; builtin printf \"$@\"; }}; cd sub; \
         trap -p DEBUG EXIT HUP; declare -p PROMPT_COMMAND; declare -F printf"
    );
    let server = model(vec![
        shell_call("call_setup", &setup),
        text("set"),
        shell_call("call_contained", "echo contained; pwd"),
        text("ran"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "full", "set up").await;
    let events = bounded("full turn", events_until(&mut client, id, "turn_completed")).await;
    // The hooks are set in the hidden shell, and the DEBUG trap already ran there (before each command of the line).
    let set = event_of(&events, "tool_call_completed", "call_setup");
    let listing = set["output"].as_str().unwrap();
    for hook in [
        format!("trap -- 'touch {out}/trap' DEBUG"),
        format!("trap -- 'touch {out}/exit' EXIT"),
        format!("trap -- 'touch {out}/hup' SIGHUP"),
        format!("declare -- PROMPT_COMMAND=\"touch {out}/prompt\""),
        "\nprintf\n".to_owned(),
    ] {
        assert!(listing.contains(&hook), "{hook:?} is not set: {set}");
    }
    assert!(outside.path().join("trap").exists(), "the DEBUG trap never ran: {set}");
    // From here on, nothing may touch these files.
    for name in ["trap", "prompt", "function", "exit", "hup"] {
        let path = outside.path().join(name);
        if path.exists() {
            std::fs::remove_file(path).unwrap();
        }
    }

    prompt_to(
        &mut client,
        Some(&conversation),
        project.path(),
        "auto",
        "now contained",
    )
    .await;
    let events = bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    let done = event_of(&events, "tool_call_completed", "call_contained");
    assert_eq!(done["status"], "ok", "{done}");
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("contained"), "{done}");
    // The working directory carries to the new shell.
    assert!(output.trim_end().ends_with("/sub"), "{done}");
    let touched: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(touched.is_empty(), "ran outside the sandbox: {touched:?}");
}

/// Runs git on the host (outside any sandbox) in `repo`.
fn host_git(repo: &Path, args: &[&str]) -> std::process::Output {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=Host", "-c", "user.email=host@example.invalid"])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        output.status.success() || args.first() == Some(&"config"),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_config_hooks_and_efrs_home_inside_the_project_are_out_of_a_contained_calls_reach() {
    // The project is a git repository that holds the daemon's EFR_HOME (as /var/tmp holds /var/tmp/efr-home); the
    // user's HOME is elsewhere, so the project is not above the home folder.
    let project = tempdir();
    let user_home = tempdir();
    let outside = tempdir();
    let efr_home = project.path().join("efr-home");
    std::fs::create_dir(&efr_home).unwrap();
    host_git(project.path(), &["init", "-q"]);
    std::fs::write(project.path().join("tracked.txt"), "one\n").unwrap();
    host_git(project.path(), &["add", "tracked.txt"]);
    host_git(project.path(), &["commit", "-qm", "one"]);
    let marker = outside.path().join("fsmonitor-ran");
    // The shell's own error goes to /dev/null: the refused write is not read back as an exit.
    let hook = "printf '#!/bin/sh\\ntouch /tmp/hooked\\n' 2>/dev/null > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit";
    let commit = "echo two >> tracked.txt && git add tracked.txt && \
                  git -c user.name=Model -c user.email=model@example.invalid commit -qm two && git log --format=%s";
    // Built at run time, so the floors (a static check of the line) do not see efr's roots: the sandbox must hold.
    let swap_home = "h=efr-home; mv \"$h\" moved && mkdir -p \"$h/config\" && \
                     echo 'default_mode = \"full\"' > \"$h/config/config.toml\"";
    let server = model(vec![
        shell_call(
            "call_config",
            &format!("git config core.fsmonitor 'touch {}; false'", marker.display()),
        ),
        shell_call("call_hook", hook),
        shell_call("call_swap_git", "mv .git .git-moved"),
        shell_call("call_commit", commit),
        shell_call("call_swap_home", swap_home),
        shell_call("call_add_home", "h=efr-home; mkdir \"$h/new\""),
        text("tried"),
    ])
    .await;
    let user_home_str = user_home.path().to_str().unwrap();
    let efrd = daemon_with(&efr_home, &server, &[("HOME", user_home_str)]);
    let config_before = std::fs::read_to_string(efr_home.join("config/config.toml")).unwrap();
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "auto", "try to get out").await;
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;
    for call in [
        "call_config",
        "call_hook",
        "call_swap_git",
        "call_commit",
        "call_swap_home",
        "call_add_home",
    ] {
        let started = event_of(&events, "tool_call_started", call);
        assert_eq!(started["launch"], json!({"kind": "contained"}), "{started}");
        let done = event_of(&events, "tool_call_completed", call);
        assert!(done["sandbox"].get("setup_error").is_none(), "{done}");
        let expected = if call == "call_commit" { "ok" } else { "failed" };
        assert_eq!(done["status"], expected, "{call}: {done}");
    }

    // git's config and hooks are as they were, and the git folder is where it was.
    let fsmonitor = host_git(project.path(), &["config", "--get", "core.fsmonitor"]);
    assert!(
        fsmonitor.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&fsmonitor.stdout)
    );
    assert!(!project.path().join(".git/hooks/pre-commit").exists());
    assert!(!project.path().join(".git-moved").exists());
    // git itself worked inside the sandbox: the commit is there.
    assert!(tool_output(&server, "call_commit").contains("two"));
    let log = host_git(project.path(), &["log", "--format=%s"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout), "two\none\n");
    // A read-only git command on the host, as a cautious turn would run it, runs nothing of the call's.
    host_git(project.path(), &["status", "--short"]);
    assert!(!marker.exists(), "git ran the call's fsmonitor outside the sandbox");

    // efr's home inside the project cannot be moved aside or added to; its config is the daemon's.
    let swap = tool_output(&server, "call_swap_home");
    assert!(swap.contains("busy") || swap.contains("Read-only"), "{swap}");
    assert!(!project.path().join("moved").exists());
    assert!(!efr_home.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(efr_home.join("config/config.toml")).unwrap(),
        config_before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commondir_planted_in_the_projects_git_folder_is_taken_away() {
    let home = tempdir();
    let project = tempdir();
    let outside = tempdir();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(project.path())
            .env("HOME", home.path())
            .status()
            .expect("git runs (apt-get install git)");
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    let pwned = outside.path().join("pwned");
    let plant = format!(
        "mkdir .evil && cp -r .git/objects .git/refs .git/HEAD .evil/ && \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {}; false\"\\n' > .evil/config && \
         echo ../.evil > .git/commondir && echo planted",
        pwned.display()
    );
    let server = model(vec![shell_call("call_plant", &plant), text("done")]).await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "auto", "plant").await;
    bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    let seen = tool_output(&server, "call_plant");
    assert!(seen.contains("planted"), "the call ran contained and wrote it: {seen}");
    assert!(seen.contains("efr removed"), "{seen}");
    assert!(!project.path().join(".git/commondir").exists());
    // Outside the sandbox, git reads the project's own config again: nothing runs.
    git(&["status", "--short"]);
    assert!(!pwned.exists(), "the planted fsmonitor ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_bubblewrap_a_cautious_git_read_in_a_repository_that_could_run_a_program_runs_it_nowhere() {
    let home = tempdir();
    let project = tempdir();
    let outside = tempdir();
    host_git(project.path(), &["init", "-q"]);
    host_git(project.path(), &["commit", "--allow-empty", "-qm", "one"]);
    let (in_sub, in_lib) = (outside.path().join("sub-ran"), outside.path().join("lib-ran"));
    let server = model(vec![
        shell_call("call_log", "git log --format=%s"),
        text("one commit"),
        shell_call("call_sub", "git -C sub status --short"),
        shell_call("call_top", "git status --short"),
        text("read twice"),
    ])
    .await;
    // Without bubblewrap cautious's reads run contained by Landlock and seccomp alone, with git's program keys
    // switched off: no repository needs a check first.
    let efrd = daemon_with(home.path(), &server, &[("EFR_BWRAP", "/nonexistent/bwrap")]);
    let mut client = efrd.client().await.unwrap();

    // cautious, before: the project's repository is plain, so a read-only git command runs at once.
    let (_, conversation, id) = start(&mut client, project.path(), "cautious", "log").await;
    let events = bounded("first cautious turn", events_until(&mut client, id, "turn_completed")).await;
    assert!(events.iter().all(|e| e["kind"] != "approval_requested"), "{events:?}");
    assert_eq!(
        event_of(&events, "tool_call_started", "call_log")["launch"]["kind"],
        "contained"
    );
    assert!(tool_output(&server, "call_log").contains("one"));

    // Two repositories that could run a program, as a contained call of auto would make them (a turn of auto runs
    // as cautious here, so the test makes them itself): one of its own in `sub`, and one in `lib` that the
    // project's index links as a submodule, so that a plain `git status` of the project enters it.
    let sh = |line: String| {
        let status = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(project.path())
            .status()
            .unwrap();
        assert!(status.success());
    };
    sh(format!(
        "git init -q sub && git -C sub config core.fsmonitor 'touch {}; false' && \
         git init -q lib && git -C lib -c user.name=M -c user.email=m@example.invalid commit --allow-empty -qm x && \
         git update-index --add --cacheinfo \"160000,$(git -C lib rev-parse HEAD),lib\" && \
         git -C lib config core.fsmonitor 'touch {}; false'",
        in_sub.display(),
        in_lib.display()
    ));

    // cautious, after: each git read runs at once, contained, and nothing the repositories name ran.
    prompt_to(&mut client, Some(&conversation), project.path(), "cautious", "status").await;
    let events = bounded("cautious end", events_until(&mut client, id, "turn_completed")).await;
    assert!(events.iter().all(|e| e["kind"] != "approval_requested"), "{events:?}");
    for call in ["call_sub", "call_top"] {
        let started = event_of(&events, "tool_call_started", call);
        assert_eq!(started["launch"]["kind"], "contained", "{started}");
    }
    assert!(!in_sub.exists() && !in_lib.exists(), "git ran a planted fsmonitor");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_a_command_runs_in_the_sandbox_a_cautious_git_read_runs_contained_without_a_question() {
    let home = tempdir();
    let project = tempdir();
    host_git(project.path(), &["init", "-q"]);
    let server = model(vec![
        left_running_call("call_watch", "sleep 30"),
        text("left running"),
        shell_call("call_status", "git status --short"),
        text("read"),
    ])
    .await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    // auto: a contained command left running, which could rewrite the repository at any moment.
    let (_, _, id) = start(&mut client, project.path(), "auto", "watch").await;
    let events = bounded("auto turn", events_until(&mut client, id, "turn_completed")).await;
    let started = event_of(&events, "tool_call_started", "call_watch");
    assert_eq!(started["launch"], json!({"kind": "contained"}), "{started}");
    assert_eq!(
        event_of(&events, "tool_call_completed", "call_watch")["left_running"],
        true
    );

    // cautious, in another conversation of the same project: git reads in the read-only sandbox, where the
    // repository's config runs nothing, so nothing needs a question (docs/adr/0009-cautious-reads-contained.md).
    let (_, _, id) = start(&mut client, project.path(), "cautious", "status").await;
    let events = bounded("cautious turn", events_until(&mut client, id, "turn_completed")).await;
    assert!(events.iter().all(|e| e["kind"] != "approval_requested"), "{events:?}");
    let started = event_of(&events, "tool_call_started", "call_status");
    assert_eq!(started["launch"], json!({"kind": "contained"}), "{started}");
    assert_eq!(event_of(&events, "tool_call_completed", "call_status")["status"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_whose_git_is_a_link_or_a_file_runs_contained_and_a_swapped_link_is_put_back() {
    // `linked/.git -> ../elsewhere/repo.git` (a link), and `separate/.git` a `gitdir:` file, as `git init
    // --separate-git-dir` makes both repositories.
    let base = tempdir();
    let home = base.path().join("home");
    let linked = base.path().join("linked");
    let separate = base.path().join("separate");
    let elsewhere = base.path().join("elsewhere");
    for dir in [&home, &linked, &separate, &elsewhere] {
        std::fs::create_dir(dir).unwrap();
    }
    host_git(&linked, &["init", "-q", "--separate-git-dir", "../elsewhere/repo.git"]);
    std::fs::remove_file(linked.join(".git")).unwrap();
    std::os::unix::fs::symlink("../elsewhere/repo.git", linked.join(".git")).unwrap();
    host_git(&linked, &["status", "--short"]);
    host_git(
        &separate,
        &["init", "-q", "--separate-git-dir", "../elsewhere/separate.git"],
    );
    assert!(std::fs::symlink_metadata(separate.join(".git")).unwrap().is_file());
    let marker = base.path().join("fsmonitor-ran");
    let work = "git status --short && echo new > made.txt && echo wrote";
    let set_config = format!("git config core.fsmonitor 'touch {}; false'", marker.display());
    let server = model(vec![
        shell_call("call_link_work", work),
        shell_call(
            "call_link_config",
            &format!("echo '[core]' 2>/dev/null >> .git/config || {set_config}"),
        ),
        shell_call("call_link_swap", "mkdir evil && ln -sfn evil .git && echo swapped"),
        text("linked done"),
        shell_call("call_file_work", work),
        shell_call("call_file_config", &set_config),
        text("separate done"),
    ])
    .await;
    let efrd = daemon_with(&home, &server, &[]);
    let mut client = efrd.client().await.unwrap();
    for (project, calls) in [
        (&linked, &["call_link_work", "call_link_config", "call_link_swap"][..]),
        (&separate, &["call_file_work", "call_file_config"][..]),
    ] {
        let (_, conversation, id) = start(&mut client, project, "auto", "work in the repository").await;
        // A refused write to the separate git folder (outside the project) is an exit the user denies here.
        let events = bounded("the auto turn", deny_every_question(&mut client, id, &conversation)).await;
        for call in calls {
            let started = event_of(&events, "tool_call_started", call);
            assert_eq!(started["launch"], json!({"kind": "contained"}), "{started}");
            let done = event_of(&events, "tool_call_completed", call);
            assert!(done["sandbox"].get("setup_error").is_none(), "{call}: {done}");
            let expected = if call.ends_with("config") { "failed" } else { "ok" };
            assert_eq!(done["status"], expected, "{call}: {done}");
        }
        // git ran in the sandbox and the project was writable.
        for call in calls.iter().filter(|c| c.ends_with("work")) {
            assert!(
                tool_output(&server, call).contains("wrote"),
                "{}",
                tool_output(&server, call)
            );
        }
        assert!(project.join("made.txt").exists());
    }
    // The git folder's config stayed read-only: nothing was added, and host git runs nothing of the calls'.
    for repo in ["repo.git", "separate.git"] {
        let config = std::fs::read_to_string(elsewhere.join(repo).join("config")).unwrap();
        assert!(
            !config.contains("fsmonitor") && !config.ends_with("[core]\n"),
            "{config}"
        );
    }
    // The link the call swapped is put back, and the model is told.
    let swap = tool_output(&server, "call_link_swap");
    assert!(swap.contains("swapped") && swap.contains("efr put back"), "{swap}");
    assert_eq!(
        std::fs::read_link(linked.join(".git")).unwrap(),
        Path::new("../elsewhere/repo.git")
    );
    host_git(&linked, &["status", "--short"]);
    host_git(&separate, &["status", "--short"]);
    assert!(!marker.exists(), "git ran a call's fsmonitor outside the sandbox");
}
