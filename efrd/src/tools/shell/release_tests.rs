//! [`HiddenShell::release`] against a real bash and zsh: a running command handed over keeps running, its run
//! answers as moved, its text after the move comes on the channel, and its end comes last.

use std::time::Duration;

use super::*;

const LONG: Duration = Duration::from_secs(30);

async fn release_hands_over_the_running_command(kind: ShellKind) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let run_dir = dir.path().join("run");
    std::fs::create_dir(&home).unwrap();
    std::fs::create_dir(&run_dir).unwrap();
    let mut opts = ShellOptions::new(kind, home.clone(), run_dir);
    opts.env = vec![
        ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
        ("HOME".into(), home.into()),
        ("LANG".into(), "C.UTF-8".into()),
    ];
    let shell = HiddenShell::start(opts).await.unwrap();
    assert!(
        matches!(shell.release().await, Err(ShellError::NoRun)),
        "nothing runs yet"
    );
    let run = shell
        .run(
            "echo before; sleep 0.5; echo after; sleep 0.3; exit_with() { return 3; }; exit_with",
            LONG,
        )
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + LONG;
    let mut released = loop {
        match shell.release().await {
            Ok(released) => break released,
            Err(ShellError::NoRun) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => panic!("{error}"),
        }
    };
    assert!(
        matches!(shell.release().await, Err(ShellError::NoRun)),
        "a command moves once"
    );
    let answer = run.answer().await;
    assert!(answer.moved && answer.left_running(), "{answer:?}");
    let end = answer.detached.unwrap().ended().await;
    assert_eq!(end.how, EndCause::Moved);
    let moved = end.moved.expect("a moved end says when the command ends");
    let mut text = String::new();
    while let Some(chunk) = tokio::time::timeout(LONG, released.text.recv()).await.unwrap() {
        text.push_str(&chunk);
    }
    assert!(text.contains("after\n") && !text.contains('\r'), "{text:?}");
    assert_eq!(
        tokio::time::timeout(LONG, &mut released.end).await.unwrap().unwrap(),
        Some(3)
    );
    tokio::time::timeout(LONG, moved.ended()).await.unwrap();
    shell.close().await;
}

mod bash {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn release_hands_over_the_running_command() {
        super::release_hands_over_the_running_command(super::ShellKind::Bash).await;
    }
}

mod zsh {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn release_hands_over_the_running_command() {
        super::release_hands_over_the_running_command(super::ShellKind::Zsh).await;
    }
}
