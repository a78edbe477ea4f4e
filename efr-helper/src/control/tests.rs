#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::os::unix::net::UnixStream as StdUnixStream;

use serde_json::json;
use tokio::net::UnixStream;

use super::*;

/// Answers `echo` with its params and `fail` with an error; counts the ends.
#[derive(Debug, Default)]
struct Fake {
    answered: Vec<String>,
    ends: u32,
}

impl Handler for Fake {
    async fn answer(&mut self, method: &str, params: Option<Value>) -> Result<Value, ErrorBody> {
        self.answered.push(method.to_owned());
        match method {
            "echo" => super::params::<Value>(method, params).and_then(to_value),
            "fail" => Err(ErrorBody::new(ErrorCode::NotFound, "no such plan")),
            other => Err(unknown_method("fake", other, &["echo", "fail"])),
        }
    }

    async fn end(&mut self) {
        self.ends += 1;
    }
}

async fn send_body(stream: &mut UnixStream, body: &[u8]) {
    let len = u32::try_from(body.len()).unwrap();
    stream.write_all(&len.to_be_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
}

async fn send(stream: &mut UnixStream, frame: &Value) {
    send_body(stream, &serde_json::to_vec(frame).unwrap()).await;
}

async fn receive(stream: &mut UnixStream) -> Value {
    let mut header = [0_u8; 4];
    stream.read_exact(&mut header).await.unwrap();
    let mut body = vec![0_u8; u32::from_be_bytes(header) as usize];
    stream.read_exact(&mut body).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// The serving task: the loop's result and the handler as it ended.
type Served = tokio::task::JoinHandle<(Result<(), String>, Fake)>;

/// The helper's end served by a task with a fresh [`Fake`]; the client's end.
fn served() -> (Served, UnixStream) {
    let (ours, theirs) = StdUnixStream::pair().unwrap();
    let task = tokio::spawn(async move {
        let mut fake = Fake::default();
        let result = serve_socket(OwnedFd::from(theirs), &mut fake).await;
        (result, fake)
    });
    ours.set_nonblocking(true).unwrap();
    (task, UnixStream::from_std(ours).unwrap())
}

#[tokio::test]
async fn requests_are_answered_in_order_and_the_end_is_called_once() {
    let (task, mut client) = served();
    send(&mut client, &json!({"id": 1, "method": "echo", "params": {"a": 1}})).await;
    assert_eq!(receive(&mut client).await, json!({"id": 1, "item": {"a": 1}}));
    assert_eq!(receive(&mut client).await, json!({"id": 1, "end": {}}));
    send(&mut client, &json!({"id": 2, "method": "fail", "params": {}})).await;
    let error = receive(&mut client).await;
    assert_eq!(error["id"], 2);
    assert_eq!(error["error"]["code"], "not_found");
    // A cancel gets no answer: the next frame read answers the next request.
    send(&mut client, &json!({"cancel": 2})).await;
    send(&mut client, &json!({"id": 3, "method": "echo"})).await;
    let error = receive(&mut client).await;
    assert_eq!(error["id"], 3);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("echo needs params"),
        "{error}"
    );
    send(&mut client, &json!({"id": 4, "method": "other", "params": {}})).await;
    let error = receive(&mut client).await;
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("fake serves echo and fail"),
        "{error}"
    );
    drop(client);
    let (result, fake) = task.await.unwrap();
    assert_eq!(result, Ok(()));
    assert_eq!(fake.answered, ["echo", "fail", "echo", "other"]);
    assert_eq!(fake.ends, 1);
}

#[tokio::test]
async fn bad_frames_are_answered_without_id_and_the_stream_stays_in_step() {
    let (task, mut client) = served();
    send_body(&mut client, b"[1, 2]").await;
    let error = receive(&mut client).await;
    assert_eq!(error.get("id"), None);
    assert_eq!(error["error"]["code"], "invalid");
    send_body(&mut client, &vec![b' '; MAX_CONTROL_FRAME + 1]).await;
    let error = receive(&mut client).await;
    assert_eq!(error["error"]["code"], "too_large");
    send(&mut client, &json!({"id": 7, "method": "echo", "params": {"b": true}})).await;
    assert_eq!(receive(&mut client).await, json!({"id": 7, "item": {"b": true}}));
    assert_eq!(receive(&mut client).await, json!({"id": 7, "end": {}}));
    drop(client);
    let (result, fake) = task.await.unwrap();
    assert_eq!(result, Ok(()));
    assert_eq!(fake.ends, 1);
}

#[tokio::test]
async fn a_stream_cut_inside_a_frame_ends_the_loop_cleanly() {
    let (task, mut client) = served();
    client.write_all(&100_u32.to_be_bytes()).await.unwrap();
    client.write_all(b"{\"id\"").await.unwrap();
    drop(client);
    let (result, fake) = task.await.unwrap();
    assert_eq!(result, Ok(()));
    assert!(fake.answered.is_empty());
    assert_eq!(fake.ends, 1);
}
