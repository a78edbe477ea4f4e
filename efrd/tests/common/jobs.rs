//! What the job tests share: the processes on the whole machine, a background shell call, jobs.stop and
//! call.background.

use std::time::{Duration, Instant};

use efr_protocol::ErrorCode;
use efr_test_support::client::Client;
use efr_test_support::scripted::Reply;
use serde_json::{Value, json};

use super::command_id;
use super::tools::shell_call_with;

/// The processes on the whole machine whose command line is exactly `line` (`pgrep` itself left out).
pub fn pgrep(line: &str) -> Vec<String> {
    let out = std::process::Command::new("pgrep")
        .args(["-f", "-a", "-x", line])
        .output()
        .expect("pgrep (procps) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.contains("pgrep"))
        .map(str::to_owned)
        .collect()
}

/// Waits until `pgrep(line)` finds `count` processes, at most 5 s; what it found last.
pub fn wait_count(line: &str, count: usize) -> Vec<String> {
    let start = Instant::now();
    loop {
        let found = pgrep(line);
        if found.len() == count || start.elapsed() > Duration::from_secs(5) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A shell call `id` of `line` with `background` set, and the members of `extra` (an object) beside.
pub fn job_call(id: &str, line: &str, extra: &Value) -> Reply {
    let mut input = json!({"command": line, "background": true});
    let members = input.as_object_mut().expect("an object");
    members.extend(extra.as_object().expect("extra is an object").clone());
    shell_call_with(id, &input)
}

/// jobs.stop of `job` in `conversation`: the result (the test fails on an error).
pub async fn stop(client: &mut Client, conversation: &str, job: &str) -> Value {
    client
        .ok(
            "jobs.stop",
            json!({"command_id": command_id(), "conversation_id": conversation, "job_id": job}),
        )
        .await
        .expect("jobs.stop answers")
}

/// call.background of `call`, with `confirm` when given: the result or the error.
pub async fn background(
    client: &mut Client,
    conversation: &str,
    call: &str,
    confirm: Option<&str>,
) -> Result<Value, efr_protocol::ErrorBody> {
    let mut params = json!({"command_id": command_id(), "conversation_id": conversation, "call_id": call});
    if let Some(token) = confirm {
        params["confirm"] = json!(token);
    }
    client
        .call("call.background", params)
        .await
        .expect("call.background answers")
}

/// call.background of a call whose command is about to run: asked again (for up to 10 s) while the shell has not
/// started it yet.
pub async fn background_when_running(client: &mut Client, conversation: &str, call: &str) -> Value {
    let start = Instant::now();
    loop {
        match background(client, conversation, call, None).await {
            Ok(result) => return result,
            Err(error) if start.elapsed() < Duration::from_secs(10) => {
                assert_eq!(error.code, ErrorCode::Invalid, "{error:?}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the call never ran: {error:?}"),
        }
    }
}

/// Reads a job's output file until it holds `text`, at most 5 s; what it read last.
pub fn wait_output(path: &str, text: &str) -> String {
    let start = Instant::now();
    loop {
        let output = std::fs::read_to_string(path).unwrap_or_default();
        if output.contains(text) || start.elapsed() > Duration::from_secs(5) {
            return output;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
