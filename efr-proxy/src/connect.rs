//! The CONNECT request head: read within its limits, then parsed strictly (docs/network.md, "Each connection").
//!
//! - The head (request line and header fields, up to the empty line) is at most [`MAX_HEAD`] bytes and must arrive
//!   within [`HEAD_TIME`]; otherwise the refusal is `limit`.
//! - The request line is `CONNECT host:port HTTP/1.1` (or `HTTP/1.0`, which Python's `http.client` sends up to 3.11),
//!   single spaces, CRLF. The target is authority-form (RFC 9112 section 3.2.3) with a port; a bracketed IPv6 host is
//!   taken so that it can be refused as an IP literal. Absolute-form or origin-form targets, other methods and other
//!   versions are `bad_request`, except a plain-HTTP proxy request (`GET http://...`), which is `not_tls`: efr's proxy
//!   only carries TLS.
//! - Header fields are `name: value` with a token name and no whitespace before the colon; a line folded onto the
//!   previous one (obs-fold) is `bad_request`, and so is a repeated `Host` field. `Host` may be absent (Python's
//!   `http.client` up to 3.11 sends none on a CONNECT): the target is the request line's alone, so the field is never
//!   read.

use std::time::Duration;

use efr_protocol::wire::BlockReason;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest request head, in bytes, the empty line included.
pub const MAX_HEAD: usize = 8 * 1024;

/// How long the whole head may take to arrive.
pub const HEAD_TIME: Duration = Duration::from_secs(10);

/// What a CONNECT asks for, as the client wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The host of the authority, brackets kept for IPv6.
    pub host: String,
    /// The port of the authority.
    pub port: u16,
}

/// A refused request head: the reason, and the target when the request line gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadError {
    /// Why.
    pub reason: BlockReason,
    /// The target, when one could be read (a refusal is tallied by host and port).
    pub target: Option<Target>,
    /// One line for the response body.
    pub detail: &'static str,
}

impl HeadError {
    fn new(reason: BlockReason, detail: &'static str) -> Self {
        Self {
            reason,
            target: None,
            detail,
        }
    }

    fn bad(detail: &'static str) -> Self {
        Self::new(BlockReason::BadRequest, detail)
    }
}

/// Reads one request head from `stream` and parses it. Returns the target and the bytes that came after the head
/// (a client may send its ClientHello without waiting for the `200`).
///
/// # Errors
/// [`HeadError`] with `limit` for a head over [`MAX_HEAD`] or slower than [`HEAD_TIME`] (or cut short), and the
/// parse's errors.
pub async fn read<S: AsyncRead + Unpin>(stream: &mut S) -> Result<(Target, Vec<u8>), HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let read = async {
        let mut chunk = [0_u8; 1024];
        loop {
            if let Some(end) = find_end(&buf) {
                return Ok(end);
            }
            if buf.len() >= MAX_HEAD {
                return Err(HeadError::new(BlockReason::Limit, "the request head is over 8 KiB"));
            }
            // Never read past the limit: at most what the head may still take.
            let want = chunk.len().min(MAX_HEAD + 4 - buf.len());
            match stream.read(&mut chunk[..want]).await {
                Ok(0) | Err(_) => return Err(HeadError::new(BlockReason::Limit, "the request head was cut short")),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    let end = tokio::time::timeout(HEAD_TIME, read)
        .await
        .map_err(|_| HeadError::new(BlockReason::Limit, "the request head took over 10 seconds"))??;
    if end > MAX_HEAD {
        return Err(HeadError::new(BlockReason::Limit, "the request head is over 8 KiB"));
    }
    let rest = buf.split_off(end);
    parse(&buf).map(|target| (target, rest))
}

/// The length of the head (through the empty line), once it has all arrived.
fn find_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|at| at + 4)
}

/// Parses a complete head (ending in the empty line).
///
/// # Errors
/// [`HeadError`]: `bad_request` for anything but a strict CONNECT, `not_tls` for a plain-HTTP proxy request.
pub fn parse(head: &[u8]) -> Result<Target, HeadError> {
    if !head.ends_with(b"\r\n\r\n") {
        return Err(HeadError::bad("the request head does not end in an empty line"));
    }
    // Without the final LF CR LF, every line (the last one too) ends in CR, split at the LFs.
    let head = &head[..head.len() - 3];
    let mut lines = head.split(|b| *b == b'\n');
    let request_line = lines.next().unwrap_or_default();
    let request_line = strip_cr(request_line)?;
    let target = request_line_target(request_line)?;
    let mut hosts = 0;
    for line in lines {
        let line = strip_cr(line)?;
        if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
            return Err(with_target(HeadError::bad("a folded header line (obs-fold)"), &target));
        }
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            return Err(with_target(HeadError::bad("a header line without a colon"), &target));
        };
        let name = &line[..colon];
        if name.is_empty() || !name.iter().copied().all(is_tchar) {
            return Err(with_target(
                HeadError::bad("a header name that is not a token"),
                &target,
            ));
        }
        if line[colon + 1..].iter().any(|b| *b == b'\r' || *b == 0) {
            return Err(with_target(HeadError::bad("a header value with a CR or NUL"), &target));
        }
        if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
        }
    }
    match hosts {
        0 | 1 => Ok(target),
        _ => Err(with_target(
            HeadError::bad("the request has more than one Host header"),
            &target,
        )),
    }
}

fn with_target(mut error: HeadError, target: &Target) -> HeadError {
    error.target = Some(target.clone());
    error
}

/// The line without its CR; a bare LF is refused (RFC 9112 allows a recipient to, and a strict parse does).
fn strip_cr(line: &[u8]) -> Result<&[u8], HeadError> {
    line.strip_suffix(b"\r")
        .filter(|line| !line.contains(&b'\r'))
        .ok_or_else(|| HeadError::bad("a line that does not end in CRLF"))
}

fn request_line_target(line: &[u8]) -> Result<Target, HeadError> {
    let mut parts = line.split(|b| *b == b' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::bad("the request line is not `METHOD target HTTP/1.1`"));
    };
    if method != b"CONNECT" {
        let plain = target.len() > 7 && target[..7].eq_ignore_ascii_case(b"http://");
        return Err(if plain && method.iter().copied().all(is_tchar) {
            HeadError::new(
                BlockReason::NotTls,
                "plain HTTP is not proxied; only CONNECT to a TLS host",
            )
        } else {
            HeadError::bad("only CONNECT is accepted")
        });
    }
    let target = authority(target)?;
    if version != b"HTTP/1.1" && version != b"HTTP/1.0" {
        return Err(with_target(
            HeadError::bad("only HTTP/1.1 and HTTP/1.0 are accepted"),
            &target,
        ));
    }
    Ok(target)
}

/// An authority-form target: `host:port`, the host a reg-name (UTF-8 accepted, so that IDNA can judge it) or a
/// bracketed IPv6 literal, the port 1 to 65535.
fn authority(target: &[u8]) -> Result<Target, HeadError> {
    let target = std::str::from_utf8(target).map_err(|_| HeadError::bad("the target is not UTF-8"))?;
    let (host, port) = if target.starts_with('[') {
        let close = target
            .find(']')
            .ok_or_else(|| HeadError::bad("an unclosed `[` in the target"))?;
        let (host, rest) = target.split_at(close + 1);
        (
            host,
            rest.strip_prefix(':')
                .ok_or_else(|| HeadError::bad("the target has no port"))?,
        )
    } else {
        target
            .rsplit_once(':')
            .ok_or_else(|| HeadError::bad("the target has no port"))?
    };
    if host.is_empty() {
        return Err(HeadError::bad("the target has no host"));
    }
    if host.contains(['/', '?', '#', '@', '\\']) || host.chars().any(char::is_control) {
        return Err(HeadError::bad("the target is not authority-form `host:port`"));
    }
    let port = match port.parse::<u16>() {
        // Digits only, in their plain spelling: no sign, no leading zero.
        Ok(number) if number != 0 && number.to_string() == port => number,
        _ => return Err(HeadError::bad("the target's port is not a number from 1 to 65535")),
    };
    Ok(Target {
        host: host.to_owned(),
        port,
    })
}

/// RFC 9110's `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(head: &str) -> BlockReason {
        parse(head.as_bytes()).unwrap_err().reason
    }

    #[test]
    fn a_strict_connect_parses() {
        let target =
            parse(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: x\r\n\r\n").unwrap();
        assert_eq!(
            target,
            Target {
                host: "example.com".into(),
                port: 443
            }
        );
        let target = parse(b"CONNECT [::1]:8443 HTTP/1.1\r\nhost: [::1]:8443\r\n\r\n").unwrap();
        assert_eq!(
            target,
            Target {
                host: "[::1]".into(),
                port: 8443
            }
        );
        let target = parse("CONNECT bücher.example:443 HTTP/1.1\r\nHost: x\r\n\r\n".as_bytes()).unwrap();
        assert_eq!(target.host, "bücher.example");
        // Python's http.client up to 3.11: HTTP/1.0 and no Host field.
        let target = parse(b"CONNECT files.example:443 HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!((target.host.as_str(), target.port), ("files.example", 443));
    }

    #[test]
    fn everything_else_is_refused() {
        use BlockReason::{BadRequest, NotTls};
        for (head, expected) in [
            ("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", NotTls),
            ("POST http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n", NotTls),
            ("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", BadRequest),
            (
                "CONNECT https://example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            ("CONNECT example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", BadRequest),
            ("CONNECT example.com: HTTP/1.1\r\nHost: example.com\r\n\r\n", BadRequest),
            (
                "CONNECT example.com:0 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            (
                "CONNECT example.com:65536 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            (
                "CONNECT example.com:+443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            (
                "CONNECT example.com:0443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            (
                "CONNECT user@example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            (
                "CONNECT example.com:443 HTTP/2.0\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            ("CONNECT example.com:443 HTTP/1.1x\r\n\r\n", BadRequest),
            (
                "CONNECT  example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            (
                "connect example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
                BadRequest,
            ),
            (
                "CONNECT example.com:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                BadRequest,
            ),
            (
                "CONNECT example.com:443 HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n",
                BadRequest,
            ),
            ("CONNECT example.com:443 HTTP/1.1\r\nHost : a\r\n\r\n", BadRequest),
            ("CONNECT example.com:443 HTTP/1.1\nHost: a\r\n\r\n", BadRequest),
            ("CONNECT example.com:443 HTTP/1.1\r\nHost: a\rb\r\n\r\n", BadRequest),
            ("CONNECT [::1 HTTP/1.1\r\nHost: a\r\n\r\n", BadRequest),
            ("CONNECT [::1]443 HTTP/1.1\r\nHost: a\r\n\r\n", BadRequest),
        ] {
            assert_eq!(reason(head), expected, "{head:?}");
        }
        // A refusal after the request line names the target, for the tally.
        let error = parse(b"CONNECT example.com:443 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n").unwrap_err();
        assert_eq!(error.target.unwrap().host, "example.com");
    }

    #[tokio::test]
    async fn the_head_is_bounded_and_what_follows_is_kept() {
        let mut input: &[u8] = b"CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n\x16\x03\x01";
        let (target, rest) = read(&mut input).await.unwrap();
        assert_eq!(target.port, 443);
        assert_eq!(rest, b"\x16\x03\x01");

        let mut big = b"CONNECT a.example:443 HTTP/1.1\r\nHost: a\r\nX: ".to_vec();
        big.extend(std::iter::repeat_n(b'a', 9 * 1024));
        big.extend_from_slice(b"\r\n\r\n");
        assert_eq!(read(&mut &big[..]).await.unwrap_err().reason, BlockReason::Limit);

        let mut cut: &[u8] = b"CONNECT a.example:443 HTTP/1.1\r\n";
        assert_eq!(read(&mut cut).await.unwrap_err().reason, BlockReason::Limit);
    }
}
