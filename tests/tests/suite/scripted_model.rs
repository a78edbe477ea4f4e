//! The scripted model server on its own: the binary (prints its port, serves the script until killed, refuses a bad
//! script), the model list shapes, an exhausted script, masked keys, and a reply's bytes in each format.

// Test helpers outside #[test] functions may panic too (team rule: tests may unwrap).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use efr_test_support::scripted::encode::{Action, Format, encode};
use efr_test_support::scripted::{
    Reply, ReplyEvent, Script, ScriptToolCall, ScriptUsage, ScriptedModel, Step, mask_key,
};

/// One HTTP/1.1 request with `Connection: close`; the whole answer as text.
fn http(port: u16, request: &str) -> String {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    socket.write_all(request.as_bytes()).expect("write");
    let mut answer = String::new();
    socket.read_to_string(&mut answer).expect("read");
    answer
}

#[test]
fn the_binary_prints_its_port_and_serves_the_script() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("script.json");
    std::fs::write(
        &path,
        r#"{"models": ["gpt-5", "gpt-5-mini"], "steps": [{"reply": {"events": [{"text": "hi"}]}}]}"#,
    )
    .expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_efr-scripted-model"))
        .arg(&path)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("port line");
    let port: u16 = line.trim().parse().expect("a port alone on its line");

    let list = http(port, "GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(list.starts_with("HTTP/1.1 200"), "{list}");
    assert!(list.contains(r#""id":"gpt-5-mini""#), "{list}");

    let body = r#"{"model":"m","messages":[],"stream":true}"#;
    let reply = http(
        port,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(reply.contains("text/event-stream"), "{reply}");
    assert!(reply.contains(r#""content":"hi""#), "{reply}");
    assert!(reply.contains("data: [DONE]"), "{reply}");

    child.kill().expect("kill");
    child.wait().expect("wait");
}

#[test]
fn the_binary_refuses_a_bad_script() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("script.json");
    std::fs::write(&path, r#"{"steps": [{"dance": {}}]}"#).expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_efr-scripted-model"))
        .arg(&path)
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("not a script"), "{stderr}");
    let missing = Command::new(env!("CARGO_BIN_EXE_efr-scripted-model"))
        .arg(dir.path().join("none.json"))
        .output()
        .expect("run");
    assert_eq!(missing.status.code(), Some(2));
    let usage = Command::new(env!("CARGO_BIN_EXE_efr-scripted-model"))
        .output()
        .expect("run");
    assert_eq!(usage.status.code(), Some(2));
}

#[tokio::test]
async fn an_exhausted_script_answers_500_and_requests_are_recorded_masked() {
    let server = ScriptedModel::start(Script::default()).await.expect("server");
    let port = server.port();
    let answer = tokio::task::spawn_blocking(move || {
        let body = r#"{"model":"m","input":[]}"#;
        http(
            port,
            &format!(
                "POST /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer sk-proj-abcdefghijklmnop-9z8y\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        )
    })
    .await
    .expect("join");
    assert!(answer.starts_with("HTTP/1.1 500"), "{answer}");
    assert!(answer.contains("no step left"), "{answer}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-proj-...9z8y"));
    assert_eq!(requests[0].body["model"], "m");
}

#[test]
fn mask_key_follows_the_key_hint_rule() {
    assert_eq!(mask_key("sk-ant-api03-abcdefgh-a1b2"), "sk-ant-...a1b2");
    assert_eq!(mask_key("sk-short"), "sk-...");
    assert_eq!(mask_key("local-server-token-1234"), "...1234");
}

#[test]
fn replies_split_characters_and_end_as_asked() {
    let reply = Reply {
        events: vec![ReplyEvent::Text("größe 🙂".into()), ReplyEvent::Disconnect],
        chunk_bytes: Some(1),
        ..Reply::default()
    };
    let actions = encode(Format::Messages, &reply, &serde_json::json!({"model": "m"}));
    assert!(
        actions
            .iter()
            .all(|a| matches!(a, Action::Data(d) if d.len() == 1) || *a == Action::Abort)
    );
    assert_eq!(actions.last(), Some(&Action::Abort));
    let bytes: Vec<u8> = actions
        .iter()
        .filter_map(|a| if let Action::Data(d) = a { Some(d[0]) } else { None })
        .collect();
    let text = String::from_utf8(bytes).expect("utf-8 once joined");
    assert!(text.contains("größe 🙂"));
    assert!(
        !text.contains("message_stop"),
        "a disconnect ends the body before the completion event"
    );

    let truncated = Reply::of(vec![ReplyEvent::Text("a".into()), ReplyEvent::End]);
    for format in [Format::Responses, Format::Messages, Format::Chat] {
        let actions = encode(format, &truncated, &serde_json::json!({"model": "m"}));
        assert!(!actions.contains(&Action::Abort));
        let text: String = actions
            .iter()
            .filter_map(|a| {
                if let Action::Data(d) = a {
                    Some(String::from_utf8_lossy(d).into_owned())
                } else {
                    None
                }
            })
            .collect();
        for completion in ["response.completed", "message_stop", "[DONE]"] {
            assert!(!text.contains(completion), "{format:?}: {text}");
        }
    }
}

#[test]
fn the_reply_builder_makes_the_shapes_tests_wrote_by_hand() {
    let shell = Reply::shell("call_1", "ls -la").with_stop("tool_use");
    assert_eq!(
        shell,
        Reply {
            events: vec![ReplyEvent::ToolCall(ScriptToolCall {
                id: "call_1".into(),
                name: "shell".into(),
                freeform: false,
                input: vec![r#"{"command":"ls -la"}"#.into()],
            })],
            stop: Some("tool_use".into()),
            ..Reply::default()
        }
    );
    let patch = Reply::patch("call_2", "*** Begin Patch\n*** End Patch\n");
    assert_eq!(
        patch.events,
        [ReplyEvent::ToolCall(ScriptToolCall {
            id: "call_2".into(),
            name: "apply_patch".into(),
            freeform: true,
            input: vec!["*** Begin Patch\n*** End Patch\n".into()],
        })]
    );
    let text = Reply::text("hi").with_usage(120, 30).with_chunks(7, 5);
    assert_eq!(
        text,
        Reply {
            events: vec![ReplyEvent::Text("hi".into())],
            usage: Some(ScriptUsage {
                input: 120,
                output: 30,
                ..ScriptUsage::default()
            }),
            chunk_bytes: Some(7),
            chunk_delay_ms: Some(5),
            ..Reply::default()
        }
    );
    // A pause follows each piece; none when the delay is 0.
    assert_eq!(
        Reply::streamed(["a".to_owned(), "b".to_owned()], 20).events,
        [
            ReplyEvent::Text("a".into()),
            ReplyEvent::DelayMs(20),
            ReplyEvent::Text("b".into()),
            ReplyEvent::DelayMs(20),
        ]
    );
    assert_eq!(
        Reply::streamed(["a".to_owned()], 0).events,
        [ReplyEvent::Text("a".into())]
    );
    let script = Script::replies([Reply::text("one")]);
    assert_eq!(script.steps, [Step::Reply(Reply::text("one"))]);
    assert_eq!(script.models, ["gpt-5"]);
}
