//! The opening handshake of the tailnet WebSocket (docs/protocol.md, "Remote devices": the tailnet WebSocket).
//!
//! GET / over HTTP/1.1, WebSocket version 13, with no query, no subprotocol and no extension (no permessage-deflate).
//! The Origin header must be absent, or exactly `http://<tailnet IPv4>:<port>`. Every other request gets a plain
//! HTTP error and no upgrade. hyper reads the request; tungstenite derives the accept key.

use std::net::SocketAddrV4;

use http::header::{
    CONNECTION, HeaderMap, HeaderValue, ORIGIN, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_KEY,
    SEC_WEBSOCKET_PROTOCOL, SEC_WEBSOCKET_VERSION, UPGRADE,
};
use http::{Method, Request, Response, StatusCode, Version};
use http_body_util::Full;
use hyper::body::Bytes;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// A refused handshake: the status and a line of text for the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The HTTP status.
    pub status: StatusCode,
    /// Why, in a few words.
    pub reason: &'static str,
}

fn refuse(status: StatusCode, reason: &'static str) -> Refused {
    Refused { status, reason }
}

/// Whether a comma-separated header holds `token`, case-insensitively.
fn has_token(headers: &HeaderMap, name: http::header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|part| part.trim().eq_ignore_ascii_case(token))
}

/// Checks an upgrade request to the listener at `local` and returns the `Sec-WebSocket-Accept` value.
///
/// # Errors
/// [`Refused`] with the status to answer: 405 for another method, 505 for another HTTP version, 404 for another
/// path, 400 for a query, a subprotocol, an extension or a bad key, 426 for a request that is not a version 13
/// upgrade, 403 for another Origin.
pub fn check<B>(request: &Request<B>, local: SocketAddrV4) -> Result<String, Refused> {
    if request.method() != Method::GET {
        return Err(refuse(StatusCode::METHOD_NOT_ALLOWED, "only GET is served"));
    }
    if request.version() != Version::HTTP_11 {
        return Err(refuse(
            StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            "only HTTP/1.1 is served",
        ));
    }
    let uri = request.uri();
    if uri.path() != "/" {
        return Err(refuse(StatusCode::NOT_FOUND, "the only path is /"));
    }
    if uri.query().is_some() {
        return Err(refuse(StatusCode::BAD_REQUEST, "the URL has no query"));
    }
    let headers = request.headers();
    if !has_token(headers, UPGRADE, "websocket") || !has_token(headers, CONNECTION, "upgrade") {
        return Err(refuse(
            StatusCode::UPGRADE_REQUIRED,
            "only a WebSocket upgrade is served",
        ));
    }
    if headers.get(SEC_WEBSOCKET_VERSION).map(HeaderValue::as_bytes) != Some(b"13") {
        return Err(refuse(
            StatusCode::UPGRADE_REQUIRED,
            "only WebSocket version 13 is served",
        ));
    }
    if headers.contains_key(SEC_WEBSOCKET_PROTOCOL) {
        return Err(refuse(StatusCode::BAD_REQUEST, "no subprotocol is served"));
    }
    if headers.contains_key(SEC_WEBSOCKET_EXTENSIONS) {
        return Err(refuse(StatusCode::BAD_REQUEST, "no extension is served"));
    }
    if let Some(origin) = headers.get(ORIGIN)
        && origin.as_bytes() != format!("http://{local}").as_bytes()
    {
        return Err(refuse(StatusCode::FORBIDDEN, "the Origin is not this listener"));
    }
    let key = headers
        .get(SEC_WEBSOCKET_KEY)
        .filter(|key| key.len() == 24)
        .ok_or_else(|| refuse(StatusCode::BAD_REQUEST, "Sec-WebSocket-Key is missing or malformed"))?;
    Ok(derive_accept_key(key.as_bytes()))
}

/// The answer to a refused handshake: the status, `text/plain`, the reason, and `Connection: close`.
#[must_use]
pub fn refusal_response(refused: &Refused) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{}\n", refused.reason))));
    *response.status_mut() = refused.status;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    if refused.status == StatusCode::UPGRADE_REQUIRED {
        headers.insert(SEC_WEBSOCKET_VERSION, HeaderValue::from_static("13"));
    }
    response
}

/// The 101 answer that switches to the WebSocket.
///
/// # Errors
/// Never in practice: the accept key is base64.
pub fn switching_response(accept: &str) -> Result<Response<Full<Bytes>>, http::Error> {
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(UPGRADE, "websocket")
        .header(CONNECTION, "Upgrade")
        .header(SEC_WEBSOCKET_ACCEPT, accept)
        .body(Full::new(Bytes::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCAL: SocketAddrV4 = SocketAddrV4::new(std::net::Ipv4Addr::new(100, 101, 102, 103), 8765);

    fn upgrade(uri: &str) -> http::request::Builder {
        Request::get(uri)
            .version(Version::HTTP_11)
            .header("Host", "100.101.102.103:8765")
            .header("Upgrade", "websocket")
            .header("Connection", "keep-alive, Upgrade")
            .header("Sec-WebSocket-Version", "13")
            .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
    }

    fn status(request: http::request::Builder) -> Result<String, StatusCode> {
        check(&request.body(()).unwrap(), LOCAL).map_err(|refused| refused.status)
    }

    #[test]
    fn a_plain_upgrade_gets_the_rfc_accept_key() {
        // RFC 6455, section 1.3.
        assert_eq!(status(upgrade("/")).unwrap(), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert!(status(upgrade("/").header("Origin", "http://100.101.102.103:8765")).is_ok());
    }

    #[test]
    fn every_other_request_gets_its_plain_error() {
        assert_eq!(status(upgrade("/?token=x")), Err(StatusCode::BAD_REQUEST));
        assert_eq!(status(upgrade("/?")), Err(StatusCode::BAD_REQUEST));
        assert_eq!(status(upgrade("/ws")), Err(StatusCode::NOT_FOUND));
        assert_eq!(
            status(upgrade("/").header("Sec-WebSocket-Protocol", "efr")),
            Err(StatusCode::BAD_REQUEST)
        );
        assert_eq!(
            status(upgrade("/").header("Sec-WebSocket-Extensions", "permessage-deflate")),
            Err(StatusCode::BAD_REQUEST)
        );
        for origin in [
            "http://laptop.tail3f2a.ts.net:8765",
            "https://100.101.102.103:8765",
            "http://100.101.102.103",
            "null",
        ] {
            assert_eq!(
                status(upgrade("/").header("Origin", origin)),
                Err(StatusCode::FORBIDDEN),
                "{origin}"
            );
        }
        let old = Request::get("/")
            .header("Upgrade", "websocket")
            .header("Connection", "Upgrade")
            .header("Sec-WebSocket-Version", "8")
            .header("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==");
        assert_eq!(status(old), Err(StatusCode::UPGRADE_REQUIRED));
        assert_eq!(status(Request::get("/")), Err(StatusCode::UPGRADE_REQUIRED));
        assert_eq!(
            status(upgrade("/").version(Version::HTTP_10)),
            Err(StatusCode::HTTP_VERSION_NOT_SUPPORTED)
        );
        assert_eq!(status(upgrade("/").method("POST")), Err(StatusCode::METHOD_NOT_ALLOWED));
    }
}
