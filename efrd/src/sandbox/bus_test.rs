//! The probe's bus self-test (the sandbox status's `bus_proxy` and `bus_proxy_off`): efrd starts `efr-bus-proxy`
//! when none runs (the probe is a need), opens a bus plan on the user's session bus with the default policy, and
//! speaks D-Bus on the plan's socket itself, as a contained call would:
//!
//! - AUTH EXTERNAL with its uid, BEGIN and `Hello`, which the filter answers (a method return);
//! - a `Peer.Ping` to [`HIDDEN`], a name the policy does not show, which the filter refuses with an error; the
//!   plan's close must count it in `bus_refused`.
//!
//! The messages are written by hand (two method calls with no body): efrd needs no D-Bus library for this. Every
//! step has a time limit, so a stuck proxy or bus fails the test rather than the probe.
//!
//! `bus_proxy_off` is `config` when `[bus] enabled` is false, `no_program` when the program is not installed, and
//! `self_test` when the test failed (why is logged). Without a session bus there is nothing to filter: neither is
//! set, and contained calls get no bus.

use std::path::Path;
use std::time::Duration;

use efr_protocol::internal::bus_policy::{SESSION_DEFAULT_FDS, SESSION_DEFAULT_TALK};
use efr_protocol::internal::bus_proxy::OpenBusPlan;
use efr_protocol::wire::{Bus, BusProxyOff};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::probe::{Probe, ProbeOptions};
use crate::bus::{BusSupervisor, session_bus};

/// The name the test's refused call goes to: no policy shows it.
pub const HIDDEN: &str = "org.efr.SelfTest.Hidden";

/// The longest any one step may take.
const STEP: Duration = Duration::from_secs(5);

/// The D-Bus message types the test reads.
const METHOD_RETURN: u8 = 2;
const ERROR: u8 = 3;

/// Runs the self-test and records it: `status.bus_proxy`, `status.bus_proxy_off` and `paths.bus_proxy` (the
/// program, when installed).
pub async fn add_bus_test(found: &mut Probe, options: &ProbeOptions, bus: &BusSupervisor) {
    if bus.installed() {
        found.paths.bus_proxy = Some(bus.program().to_path_buf());
    }
    let off = if options.bus_off {
        Some(BusProxyOff::Config)
    } else if !bus.installed() {
        Some(BusProxyOff::NoProgram)
    } else if let Some(address) = session_bus() {
        match self_test(bus, &address).await {
            Ok(()) => None,
            Err(why) => {
                tracing::warn!(%why, "the bus proxy's self-test failed; contained calls get no bus");
                Some(BusProxyOff::SelfTest)
            }
        }
    } else {
        tracing::info!("the user's session has no bus: contained calls get none");
        found.status.bus_proxy = false;
        found.status.bus_proxy_off = None;
        return;
    };
    found.status.bus_proxy = off.is_none();
    found.status.bus_proxy_off = off;
}

/// The test itself against the session bus at `address`.
///
/// # Errors
/// What failed, one sentence.
pub async fn self_test(bus: &BusSupervisor, address: &str) -> Result<(), String> {
    let open = OpenBusPlan {
        call: "bus-self-test".into(),
        bus: Bus::Session,
        upstream: address.to_owned(),
        see: Vec::new(),
        talk: SESSION_DEFAULT_TALK.iter().map(|n| (*n).to_owned()).collect(),
        own: Vec::new(),
        call_rules: Vec::new(),
        broadcast_rules: Vec::new(),
        fds: SESSION_DEFAULT_FDS.iter().map(|n| (*n).to_owned()).collect(),
    };
    let plan = bus.open(&open).await.map_err(|e| e.to_string())?;
    let talked = tokio::time::timeout(STEP * 4, talk(&plan.socket)).await;
    let closed = bus.close(&plan).await.map_err(|e| e.to_string())?;
    talked.map_err(|_| "the filtered bus did not answer in time".to_owned())??;
    if closed.bus_refused.iter().any(|r| r.name == HIDDEN) {
        Ok(())
    } else {
        Err(format!(
            "the bus proxy refused the call to {HIDDEN} but did not report it"
        ))
    }
}

/// Authenticates on the plan's socket, says Hello (answered), then calls [`HIDDEN`] (refused).
async fn talk(socket: &Path) -> Result<(), String> {
    let mut stream = UnixStream::connect(socket)
        .await
        .map_err(|e| format!("cannot connect to the filtered socket: {e}"))?;
    let uid = nix::unistd::getuid().as_raw().to_string();
    let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
    write(&mut stream, format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes()).await?;
    let answer = read_line(&mut stream).await?;
    if !answer.starts_with("OK ") {
        return Err(format!("the filter refused AUTH EXTERNAL: {answer:?}"));
    }
    let mut begin = b"BEGIN\r\n".to_vec();
    begin.extend(method_call(
        1,
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "Hello",
    ));
    write(&mut stream, &begin).await?;
    if read_reply(&mut stream).await? != METHOD_RETURN {
        return Err("the filter did not answer Hello".to_owned());
    }
    write(
        &mut stream,
        &method_call(2, HIDDEN, "/", "org.freedesktop.DBus.Peer", "Ping"),
    )
    .await?;
    if read_reply(&mut stream).await? != ERROR {
        return Err(format!("the filter let a call to {HIDDEN} through"));
    }
    Ok(())
}

async fn write(stream: &mut UnixStream, bytes: &[u8]) -> Result<(), String> {
    tokio::time::timeout(STEP, stream.write_all(bytes))
        .await
        .map_err(|_| "the filtered socket took no bytes in time".to_owned())?
        .map_err(|e| format!("cannot write to the filtered socket: {e}"))
}

/// One line of the authentication, without its `\r\n` (at most 512 bytes).
async fn read_line(stream: &mut UnixStream) -> Result<String, String> {
    let mut line = Vec::new();
    while !line.ends_with(b"\r\n") {
        if line.len() > 512 {
            return Err("the filter's authentication line is too long".to_owned());
        }
        let byte = tokio::time::timeout(STEP, stream.read_u8())
            .await
            .map_err(|_| "the filter did not answer AUTH in time".to_owned())?
            .map_err(|e| format!("the filter closed during AUTH: {e}"))?;
        line.push(byte);
    }
    line.truncate(line.len() - 2);
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// The type of the next method return or error, skipping signals (at most 16 messages of at most 1 MiB).
async fn read_reply(stream: &mut UnixStream) -> Result<u8, String> {
    for _ in 0..16 {
        let mut fixed = [0u8; 16];
        tokio::time::timeout(STEP, stream.read_exact(&mut fixed))
            .await
            .map_err(|_| "the filter did not answer in time".to_owned())?
            .map_err(|e| format!("the filter closed the connection: {e}"))?;
        let number = |at: usize| {
            let bytes = [fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]];
            if fixed[0] == b'B' {
                u32::from_be_bytes(bytes)
            } else {
                u32::from_le_bytes(bytes)
            }
        };
        let rest = (number(12) as usize).next_multiple_of(8) + number(4) as usize;
        if rest > 1 << 20 {
            return Err("the filter sent a message over 1 MiB".to_owned());
        }
        let mut skip = vec![0u8; rest];
        tokio::time::timeout(STEP, stream.read_exact(&mut skip))
            .await
            .map_err(|_| "the filter's message was cut".to_owned())?
            .map_err(|e| format!("the filter closed the connection: {e}"))?;
        if fixed[1] == METHOD_RETURN || fixed[1] == ERROR {
            return Ok(fixed[1]);
        }
    }
    Err("the filter sent 16 messages and no answer".to_owned())
}

/// A little-endian method call with no body (D-Bus specification, "Message Format"): the fixed header, then the
/// header fields PATH (1), INTERFACE (2), MEMBER (3) and DESTINATION (6), each 8-aligned, then padding to 8.
fn method_call(serial: u32, destination: &str, path: &str, interface: &str, member: &str) -> Vec<u8> {
    let mut fields: Vec<u8> = Vec::new();
    for (code, signature, value) in [
        (1u8, b'o', path),
        (2, b's', interface),
        (3, b's', member),
        (6, b's', destination),
    ] {
        while !(16 + fields.len()).is_multiple_of(8) {
            fields.push(0);
        }
        // The code, then the variant's signature (length 1, the type, its NUL): the string after it is 4-aligned.
        fields.extend([code, 1, signature, 0]);
        fields.extend(u32::try_from(value.len()).unwrap_or(u32::MAX).to_le_bytes());
        fields.extend(value.as_bytes());
        fields.push(0);
    }
    let mut message = vec![b'l', 1, 0, 1];
    message.extend(0u32.to_le_bytes());
    message.extend(serial.to_le_bytes());
    message.extend(u32::try_from(fields.len()).unwrap_or(u32::MAX).to_le_bytes());
    message.extend(fields);
    while !message.len().is_multiple_of(8) {
        message.push(0);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_is_the_bytes_the_specification_gives() {
        let hello = method_call(
            1,
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            "Hello",
        );
        // The fixed header: little-endian, a method call, no flags, version 1, no body, serial 1, 109 bytes of
        // fields (the four fields with their padding, the last one not padded).
        assert_eq!(&hello[..16], &[b'l', 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 109, 0, 0, 0]);
        assert_eq!(hello.len() % 8, 0);
        assert_eq!(&hello[16..20], &[1, 1, b'o', 0]);
        assert_eq!(&hello[20..24], &21u32.to_le_bytes());
        assert_eq!(&hello[24..45], b"/org/freedesktop/DBus");
    }
}
