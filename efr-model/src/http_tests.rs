//! Unit tests of error statuses and bodies, on the providers' documented error bodies.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};

use super::{ErrorBody, retry_after, status_error};
use crate::event::ModelError;

fn doc(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/provider-streams")
        .join(name);
    std::fs::read_to_string(path).expect("example")
}

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_str(value).expect("value"));
    }
    map
}

#[test]
fn documented_bodies() {
    let none = HeaderMap::new();
    let refused = status_error("openai-api", 401, &none, &doc("http_openai_401_invalid_api_key.json"));
    // The message is the code only: OpenAI's text quotes part of the key.
    assert_eq!(
        refused,
        ModelError::KeyRefused {
            provider: "openai-api".into(),
            message: "invalid_api_key".into()
        }
    );
    let invalid = status_error(
        "anthropic-api",
        400,
        &none,
        &doc("http_anthropic_400_invalid_request_error.json"),
    );
    assert!(
        matches!(invalid, ModelError::Rejected { status: 400, ref message } if message.starts_with("messages.0.content.1"))
    );
    let missing = status_error(
        "anthropic-api",
        404,
        &none,
        &doc("http_anthropic_404_not_found_error_docs.json"),
    );
    assert_eq!(
        missing,
        ModelError::Rejected {
            status: 404,
            message: "The requested resource could not be found.".into()
        }
    );
}

#[test]
fn statuses_map_to_kinds() {
    let none = HeaderMap::new();
    let anthropic =
        |kind: &str, message: &str| format!(r#"{{"type":"error","error":{{"type":"{kind}","message":"{message}"}}}}"#);
    assert!(matches!(
        status_error("a", 429, &none, &anthropic("rate_limit_error", "slow")),
        ModelError::RateLimited { retry_after: None, .. }
    ));
    assert!(matches!(
        status_error("a", 529, &none, &anthropic("overloaded_error", "Overloaded")),
        ModelError::Overloaded { .. }
    ));
    assert!(
        matches!(status_error("a", 500, &none, ""), ModelError::Server { status: Some(500), ref message } if message == "HTTP 500")
    );
    assert!(
        matches!(status_error("a", 503, &none, "<html>busy</html>"), ModelError::Server { status: Some(503), ref message } if message == "<html>busy</html>")
    );
    let overflow = anthropic(
        "invalid_request_error",
        "prompt is too long: 212000 tokens > 200000 maximum",
    );
    assert!(matches!(
        status_error("a", 400, &none, &overflow),
        ModelError::ContextOverflow { .. }
    ));
    let openai = r#"{"error":{"message":"Your input exceeds the context window of this model.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#;
    assert!(matches!(
        status_error("o", 400, &none, openai),
        ModelError::ContextOverflow { .. }
    ));
    let llama = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#;
    assert!(matches!(
        status_error("c", 400, &none, llama),
        ModelError::ContextOverflow { .. }
    ));
    let ollama = r#"{"error":"model 'qwen9' not found"}"#;
    assert_eq!(
        status_error("c", 404, &none, ollama),
        ModelError::Rejected {
            status: 404,
            message: "model 'qwen9' not found".into()
        }
    );
    let quota = r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
    assert!(
        matches!(
            status_error("o", 429, &none, quota),
            ModelError::Rejected { status: 429, .. }
        ),
        "a spent quota is final"
    );
}

#[test]
fn retry_after_headers() {
    assert_eq!(
        retry_after(&headers(&[("retry-after", "7")])),
        Some(Duration::from_secs(7))
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after", "1.5")])),
        Some(Duration::from_millis(1500))
    );
    assert_eq!(
        retry_after(&headers(&[("retry-after", "20"), ("retry-after-ms", "250")])),
        Some(Duration::from_millis(250))
    );
    assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
    assert_eq!(retry_after(&headers(&[("retry-after", "-3")])), None);
    assert_eq!(
        retry_after(&headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")])),
        None,
        "a past date"
    );
    let later = (chrono::Utc::now() + chrono::Duration::seconds(120))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let wait = retry_after(&headers(&[("retry-after", &later)])).expect("a future date");
    assert!(
        wait > Duration::from_secs(100) && wait <= Duration::from_secs(120),
        "{wait:?}"
    );
    let mut with_status = headers(&[("retry-after", "3")]);
    with_status.insert("x-other", HeaderValue::from_static("1"));
    assert!(
        matches!(status_error("a", 429, &with_status, ""), ModelError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(3))
    );
}

#[test]
fn stream_error_bodies() {
    let responses =
        r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null,"sequence_number":1}"#;
    assert!(matches!(
        ErrorBody::parse(responses).into_stream_error("o"),
        ModelError::RateLimited { .. }
    ));
    let unknown = r#"{"type":"error","code":"ERR_SOMETHING","message":"Something went wrong"}"#;
    assert_eq!(
        ErrorBody::parse(unknown).into_stream_error("o"),
        ModelError::Server {
            status: None,
            message: "Something went wrong".into()
        }
    );
    let long = format!(r#"{{"error":{{"message":"{}"}}}}"#, "x".repeat(5000));
    assert!(ErrorBody::parse(&long).message.len() < 700, "messages are cut");
}
