//! Shared setup of efr's integration tests: the real efrd (built next to efr), a scripted model server, and the
//! real `efr` binary run as a process in the daemon's `EFR_HOME`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub mod tmux;

use efr_test_support::binaries::sibling;
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::{Reply, Script, ScriptedModel};

/// The key the tests log in with (through the environment of efrd).
pub const KEY: &str = "sk-proj-testkey0000000000000000a1b2";

/// The efr binary under test.
pub fn efr() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_efr"))
}

/// The efrd binary (and efr-launcher beside it, which efrd uses for contained calls and its sandbox probe).
pub fn efrd() -> &'static Path {
    static EFRD: OnceLock<PathBuf> = OnceLock::new();
    EFRD.get_or_init(|| {
        let _launcher = sibling(efr(), "efr-launcher", "efr-launcher");
        sibling(efr(), "efrd", "efrd")
    })
}

/// A model server that answers each call with the given replies, in order.
pub async fn model(replies: Vec<Reply>) -> ScriptedModel {
    ScriptedModel::start(Script::replies(replies))
        .await
        .expect("scripted model server")
}

/// A text reply, streamed in small chunks, with usage 120 in / 30 out.
pub fn text(answer: &str) -> Reply {
    Reply::text(answer).with_usage(120, 30).with_chunks(7, 5)
}

/// A reply that is one shell call.
pub fn shell(id: &str, command: &str) -> Reply {
    Reply::shell(id, command).with_stop("tool_use")
}

/// A reply that is one apply_patch call.
pub fn patch(id: &str, patch: &str) -> Reply {
    Reply::patch(id, patch).with_stop("tool_use")
}

/// efrd in `home`, pointed at `model`; logged in to openai-api through its environment when `logged_in`.
pub fn daemon(home: &Path, model: &ScriptedModel, logged_in: bool) -> TestDaemon {
    let envs: &[(&str, &str)] = if logged_in { &[("OPENAI_API_KEY", KEY)] } else { &[] };
    TestDaemon::start(efrd(), home, Some(&config_for(&model.base_url())), envs).expect("efrd starts")
}

/// `efr` with `args`, in `cwd`, talking to the efrd of `home`, stdin from `input` (null when `None`), stdout and
/// stderr piped. Fails the test when efr runs longer than 60 s (it is killed then).
pub fn run_efr(home: &Path, cwd: &Path, args: &[&str], input: Option<&str>) -> Output {
    run_efr_bytes(home, cwd, args, input.map(str::as_bytes))
}

/// [`run_efr`] with stdin from any bytes, written from a thread of their own: efr may stop reading early (a prompt
/// over its limit), which must not block nor fail the test's side.
pub fn run_efr_bytes(home: &Path, cwd: &Path, args: &[&str], input: Option<&[u8]>) -> Output {
    let mut command = Command::new(efr());
    command
        .args(args)
        .current_dir(cwd)
        .env("EFR_HOME", home)
        .env_remove("EFR_RUNTIME_DIR")
        .env("SHELL", "/bin/bash")
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start efr");
    let writer = input.map(|input| {
        let mut stdin = child.stdin.take().unwrap();
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            if let Some(writer) = writer {
                writer.join().unwrap();
            }
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "efr {args:?} ran over 60 s; stdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// stdout and stderr of an output, as text.
pub fn texts(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// [`run_efr`] on a blocking thread, so the test's runtime keeps serving the scripted model meanwhile.
pub async fn efr_run(home: &Path, cwd: &Path, args: &[&str], input: Option<&str>) -> Output {
    let (home, cwd) = (home.to_owned(), cwd.to_owned());
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    let input = input.map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_efr(&home, &cwd, &args, input.as_deref())
    })
    .await
    .unwrap()
}
