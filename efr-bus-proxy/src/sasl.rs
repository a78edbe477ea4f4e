//! The authentication (D-Bus specification, "Authentication Protocol"), both sides, by hand: it is a few lines of
//! text, and the client side must take pipelined commands (AUTH, NEGOTIATE_UNIX_FD, BEGIN and the first message in
//! one write, as zbus and sd-bus send them), which is what older proxies got wrong.
//!
//! - Facing the call's client, the proxy is the server: it takes AUTH EXTERNAL (with the uid in the command or in a
//!   DATA line), agrees to pass descriptors, and hands over to messages at BEGIN. Any bytes after BEGIN stay in the
//!   buffer as the first message.
//! - Facing the real bus, the proxy is a client and authenticates as the user it runs as.

use crate::wire::{Conn, WireError};

/// The longest authentication line the proxy reads.
const MAX_LINE: usize = 16 * 1024;

/// The most lines a client may send before BEGIN.
const MAX_LINES: usize = 64;

/// What the client side agreed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreed {
    /// Whether descriptors may pass (NEGOTIATE_UNIX_FD was agreed).
    pub unix_fds: bool,
}

/// Serves the server side of the authentication to the call's client, answering with `guid`.
///
/// The uid the client claims is not checked against anything: the client gets the rights of its policy, never
/// those of the uid it names, and the socket is reachable only from the call's sandbox.
///
/// # Errors
/// A sentence: the client closed, sent a line too long, too many lines, or did not start with the nul byte.
pub async fn accept(conn: &mut Conn, guid: &str) -> Result<Agreed, String> {
    // The nul byte that starts the conversation (it carries credentials on some systems).
    let first = next_bytes(conn, 1).await?;
    if first[0] != 0 {
        return Err("the client did not start with a nul byte".to_owned());
    }
    let mut authenticated = false;
    let mut waiting_data = false;
    let mut unix_fds = false;
    for _ in 0..MAX_LINES {
        let line = next_line(conn).await?;
        let (command, argument) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        let reply = match command {
            "AUTH" if authenticated => "ERROR \"already authenticated\"\r\n".to_owned(),
            "AUTH" => match argument.split_once(' ').unwrap_or((argument, "")) {
                ("EXTERNAL", "") => {
                    waiting_data = true;
                    "DATA\r\n".to_owned()
                }
                ("EXTERNAL", hex) if uid_of(hex).is_some() => {
                    authenticated = true;
                    format!("OK {guid}\r\n")
                }
                _ => "REJECTED EXTERNAL\r\n".to_owned(),
            },
            "DATA" if waiting_data => {
                waiting_data = false;
                if argument.is_empty() || uid_of(argument).is_some() {
                    authenticated = true;
                    format!("OK {guid}\r\n")
                } else {
                    "REJECTED EXTERNAL\r\n".to_owned()
                }
            }
            "CANCEL" | "ERROR" if !authenticated => {
                waiting_data = false;
                "REJECTED EXTERNAL\r\n".to_owned()
            }
            "NEGOTIATE_UNIX_FD" if authenticated => {
                unix_fds = true;
                "AGREE_UNIX_FD\r\n".to_owned()
            }
            "BEGIN" if authenticated => return Ok(Agreed { unix_fds }),
            _ => "ERROR \"unexpected command\"\r\n".to_owned(),
        };
        conn.write_raw(reply.as_bytes())
            .await
            .map_err(|e| format!("writing to the client: {e}"))?;
    }
    Err(format!("the client sent {MAX_LINES} lines without BEGIN"))
}

/// Authenticates to the real bus as `uid` (AUTH EXTERNAL), asking to pass descriptors; returns the server's guid
/// and what was agreed. The commands go in one write, as the specification allows.
///
/// # Errors
/// A sentence: the bus rejected the uid, answered something unexpected, or closed.
pub async fn login(conn: &mut Conn, uid: u32) -> Result<(String, Agreed), String> {
    let hex: String = uid.to_string().bytes().map(|b| format!("{b:02x}")).collect();
    let hello = format!("\0AUTH EXTERNAL {hex}\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n");
    conn.write_raw(hello.as_bytes())
        .await
        .map_err(|e| format!("writing to the bus: {e}"))?;
    let line = next_line(conn).await?;
    let guid = match line.split_once(' ') {
        Some(("OK", guid)) => guid.to_owned(),
        _ => return Err(format!("the bus refused the login as uid {uid}: {line}")),
    };
    let line = next_line(conn).await?;
    let unix_fds = match line.split_once(' ').map_or(line.as_str(), |(command, _)| command) {
        "AGREE_UNIX_FD" => true,
        "ERROR" => false,
        _ => return Err(format!("the bus answered NEGOTIATE_UNIX_FD with {line}")),
    };
    Ok((guid, Agreed { unix_fds }))
}

/// The uid in an EXTERNAL initial response: the decimal digits, hex-encoded.
fn uid_of(hex: &str) -> Option<u32> {
    if !hex.len().is_multiple_of(2) || hex.len() > 20 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()?.parse().ok()
}

async fn next_bytes(conn: &mut Conn, n: usize) -> Result<Vec<u8>, String> {
    while conn.buffer().len() < n {
        if conn.is_closed() {
            return Err("closed during the authentication".to_owned());
        }
        conn.read_more().await.map_err(|e: WireError| e.to_string())?;
    }
    Ok(conn.buffer().drain(..n).collect())
}

async fn next_line(conn: &mut Conn) -> Result<String, String> {
    loop {
        if let Some(end) = conn.buffer().windows(2).position(|w| w == b"\r\n") {
            let line: Vec<u8> = conn.buffer().drain(..end + 2).take(end).collect();
            return String::from_utf8(line).map_err(|_| "an authentication line that is not text".to_owned());
        }
        if conn.buffer().len() > MAX_LINE {
            return Err(format!("an authentication line over {MAX_LINE} bytes"));
        }
        if conn.is_closed() {
            return Err("closed during the authentication".to_owned());
        }
        conn.read_more().await.map_err(|e| e.to_string())?;
    }
}

#[cfg(test)]
mod tests {
    use super::uid_of;

    #[test]
    fn the_uid_is_hex_encoded_decimal() {
        assert_eq!(uid_of("31303030"), Some(1000));
        assert_eq!(uid_of("30"), Some(0));
        assert_eq!(uid_of("3"), None);
        assert_eq!(uid_of("zz"), None);
        assert_eq!(uid_of("41"), None);
    }
}
