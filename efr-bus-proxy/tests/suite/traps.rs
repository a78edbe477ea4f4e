//! The traps from the history of D-Bus filters (xdg-dbus-proxy's among them), each a test.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use efr_bus_proxy::policy::{Level, Policy};
use efr_bus_proxy::serve::MAX_MESSAGE;
use efr_protocol::wire::Bus;
use efr_test_support::proc::rss_kib;
use tokio::io::AsyncWriteExt;
use zbus::message::{Message, Type};

use super::forwarding::{Value, hand_made};
use super::harness::{Filtered, Raw, RealBus, call, call_with, count, error_name, long_path, name, service};

const NOTIFICATIONS: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
const DRIVER: &str = "org.freedesktop.DBus";
const DRIVER_PATH: &str = "/org/freedesktop/DBus";

fn info(serial: u32) -> Message {
    call(NOTIFICATIONS, PATH, NOTIFICATIONS, "GetServerInformation", serial)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_authentication_and_hello_in_one_write() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let filtered = Filtered::default_on(&bus);
    // Raw::pipelined writes AUTH, NEGOTIATE_UNIX_FD, BEGIN and Hello at once and checks OK, AGREE_UNIX_FD, the reply.
    let (mut raw, unique) = Raw::pipelined(&filtered.socket).await;
    assert!(unique.starts_with(":1."), "{unique}");
    raw.send(&info(2)).await;
    let reply = raw.message().await.expect("a reply");
    assert_eq!(error_name(&reply), None);
    assert_eq!(reply.header().reply_serial(), NonZeroU32::new(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_match_rule_with_eavesdrop_true_is_refused() {
    let bus = RealBus::start(Bus::Session);
    let filtered = Filtered::default_on(&bus);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    for (serial, rule) in [
        (2, "type='method_call',eavesdrop=true"),
        (3, "eavesdrop='true',type='signal'"),
    ] {
        raw.send(&call_with(DRIVER, DRIVER_PATH, DRIVER, "AddMatch", serial, &(rule,)))
            .await;
        let reply = raw.message().await.expect("a reply");
        assert_eq!(
            error_name(&reply).as_deref(),
            Some("org.freedesktop.DBus.Error.AccessDenied"),
            "{rule}"
        );
    }
    raw.send(&call_with(
        DRIVER,
        DRIVER_PATH,
        DRIVER,
        "AddMatch",
        4,
        &("type='signal'",),
    ))
    .await;
    assert_eq!(
        error_name(&raw.message().await.expect("a reply")),
        None,
        "a plain match rule passes"
    );
    raw.send(&call_with(
        "org.freedesktop.DBus",
        DRIVER_PATH,
        "org.freedesktop.DBus.Monitoring",
        "BecomeMonitor",
        5,
        &(Vec::<String>::new(), 0_u32),
    ))
    .await;
    assert_eq!(
        error_name(&raw.message().await.expect("a reply")).as_deref(),
        Some("org.freedesktop.DBus.Error.AccessDenied")
    );
    let (refused, _) = filtered.refused();
    assert_eq!(count(&refused, DRIVER, Some("AddMatch")), 2, "{refused:?}");
    assert_eq!(count(&refused, DRIVER, Some("BecomeMonitor")), 1, "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serials_that_go_back_and_repeat_are_answered_each() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let filtered = Filtered::default_on(&bus);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    for serial in [10, 5, 10, 4_000_000_000] {
        raw.send(&info(serial)).await;
    }
    let mut serials = Vec::new();
    for _ in 0..4 {
        let reply = raw.message().await.expect("a reply");
        assert_eq!(error_name(&reply), None);
        serials.push(reply.header().reply_serial().map_or(0, NonZeroU32::get));
    }
    serials.sort_unstable();
    assert_eq!(serials, [5, 10, 10, 4_000_000_000]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_over_255_bytes_is_filtered_like_any() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let _hidden = service(&bus, "org.example.Hidden").await;
    let filtered = Filtered::default_on(&bus);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    let path = long_path();
    assert!(path.len() > 255);
    raw.send(&call(NOTIFICATIONS, &path, NOTIFICATIONS, "Path", 2)).await;
    let reply = raw.message().await.expect("a reply");
    assert_eq!(reply.body().deserialize::<String>().expect("the path"), path);
    raw.send(&call("org.example.Hidden", &path, NOTIFICATIONS, "Path", 3))
        .await;
    let reply = raw.message().await.expect("a reply");
    assert_eq!(
        error_name(&reply).as_deref(),
        Some("org.freedesktop.DBus.Error.ServiceUnknown")
    );
    let (refused, _) = filtered.refused();
    assert_eq!(refused.first().and_then(|r| r.path.clone()), Some(path));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_reply_to_another_peers_call_never_reaches_it() {
    let bus = RealBus::start(Bus::Session);
    let service = service(&bus, NOTIFICATIONS).await;
    let filtered = Filtered::default_on(&bus);
    // A peer on the real bus calls the service; the answer takes two seconds.
    let (mut peer, peer_name) = Raw::pipelined(&bus.socket).await;
    peer.send(&call(NOTIFICATIONS, PATH, NOTIFICATIONS, "Slow", 77)).await;
    // The contained client forges the answer, addressed to the peer, with the peer's serial.
    let (mut client, _) = Raw::pipelined(&filtered.socket).await;
    let forged_call = Message::method_call(PATH, "Slow")
        .and_then(|b| b.sender(peer_name.as_str()))
        .map(|b| b.serial(NonZeroU32::new(77).unwrap()))
        .and_then(|b| b.build(&()))
        .unwrap();
    let forged = Message::method_return(&forged_call.header())
        .map(|b| {
            b.endian(zbus::zvariant::Endian::Little)
                .serial(NonZeroU32::new(2).unwrap())
        })
        .and_then(|b| b.build(&(666_u32,)))
        .unwrap();
    client.send(&forged).await;
    let reply = peer.message().await.expect("the real reply");
    assert_eq!(reply.header().reply_serial(), NonZeroU32::new(77));
    assert_eq!(
        reply.header().sender().map(ToString::to_string),
        service.unique_name().map(ToString::to_string)
    );
    assert_eq!(reply.body().deserialize::<u32>().unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_twice_is_an_error() {
    let bus = RealBus::start(Bus::Session);
    let filtered = Filtered::default_on(&bus);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    raw.send(&call(DRIVER, DRIVER_PATH, DRIVER, "Hello", 2)).await;
    let reply = raw.message().await.expect("a reply");
    assert_eq!(error_name(&reply).as_deref(), Some("org.freedesktop.DBus.Error.Failed"));
    // A message before Hello ends the connection, as with dbus-daemon.
    let mut early = Raw::connect(&filtered.socket).await;
    early
        .stream
        .write_all(b"\0AUTH EXTERNAL 30\r\nBEGIN\r\n")
        .await
        .unwrap();
    assert!(early.line().await.starts_with("OK "));
    early.send(&info(1)).await;
    assert!(early.message().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_name_outside_own_is_refused() {
    let bus = RealBus::start(Bus::Session);
    let mut policy = Policy::session_default();
    policy.names.push((name("org.example.Mine.*"), Level::Own));
    let filtered = Filtered::start(&bus, policy, MAX_MESSAGE);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    raw.send(&call_with(
        DRIVER,
        DRIVER_PATH,
        DRIVER,
        "RequestName",
        2,
        &("org.example.Other", 0_u32),
    ))
    .await;
    assert_eq!(
        error_name(&raw.message().await.unwrap()).as_deref(),
        Some("org.freedesktop.DBus.Error.AccessDenied")
    );
    raw.send(&call_with(
        DRIVER,
        DRIVER_PATH,
        DRIVER,
        "RequestName",
        3,
        &(NOTIFICATIONS, 0_u32),
    ))
    .await;
    assert_eq!(
        error_name(&raw.message().await.unwrap()).as_deref(),
        Some("org.freedesktop.DBus.Error.AccessDenied"),
        "TALK is not OWN"
    );
    raw.send(&call_with(
        DRIVER,
        DRIVER_PATH,
        DRIVER,
        "RequestName",
        4,
        &("org.example.Mine.App", 0_u32),
    ))
    .await;
    let reply = raw.message().await.unwrap();
    assert_eq!(error_name(&reply), None);
    assert_eq!(reply.body().deserialize::<u32>().unwrap(), 1, "the primary owner");
    let (refused, _) = filtered.refused();
    assert_eq!(
        count(&refused, "org.example.Other", Some("RequestName")),
        1,
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_size_limit_ends_only_its_connection() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let filtered = Filtered::start(&bus, Policy::session_default(), 64 * 1024);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    let big = call_with(
        NOTIFICATIONS,
        PATH,
        NOTIFICATIONS,
        "Path",
        2,
        &("x".repeat(100 * 1024),),
    );
    raw.send(&big).await;
    assert!(raw.message().await.is_none(), "the connection is closed");
    let (mut other, _) = Raw::pipelined(&filtered.socket).await;
    other.send(&info(2)).await;
    assert_eq!(error_name(&other.message().await.expect("a reply")), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_closes_mid_message_harms_no_other() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let filtered = Filtered::default_on(&bus);
    for cut in [1, 15, 40] {
        let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
        raw.stream.write_all(&info(2).data().bytes()[..cut]).await.unwrap();
        drop(raw);
    }
    let mut half = Raw::connect(&filtered.socket).await;
    half.stream.write_all(b"\0AUTH EXTERN").await.unwrap();
    drop(half);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    raw.send(&info(2)).await;
    assert_eq!(error_name(&raw.message().await.expect("a reply")), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_10000_messages_keeps_memory_bounded() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let _hidden = service(&bus, "org.example.Hidden").await;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("filtered");
    let proxy = std::process::Command::new(env!("CARGO_BIN_EXE_efr-bus-proxy"))
        .args([
            "--listen",
            socket.to_str().unwrap(),
            "--upstream",
            &bus.address(),
            "--default",
        ])
        .spawn()
        .unwrap();
    let proxy = Kill(proxy);
    super::harness::wait_for(&socket);
    let (raw, _) = Raw::pipelined(&socket).await;
    let (mut reader, mut writer) = raw.split();
    const N: u32 = 10_000;
    let write = tokio::spawn(async move {
        let mut batch = Vec::new();
        for serial in 2..N + 2 {
            // Half to a name it may talk to, half refused.
            let destination = if serial % 2 == 0 {
                NOTIFICATIONS
            } else {
                "org.example.Hidden"
            };
            batch.extend_from_slice(
                call(destination, PATH, NOTIFICATIONS, "GetServerInformation", serial)
                    .data()
                    .bytes(),
            );
            if batch.len() > 64 * 1024 {
                writer.write_all(&batch).await.unwrap();
                batch.clear();
            }
        }
        writer.write_all(&batch).await.unwrap();
        writer
    });
    let start = Instant::now();
    let (mut replies, mut errors) = (0, 0);
    let mut peak_rss = 0;
    let mut names = std::collections::HashMap::<String, u32>::new();
    while replies + errors < N {
        let message = reader.message().await.expect("a reply");
        match error_name(&message) {
            None => replies += 1,
            Some(name) => {
                *names.entry(name).or_insert(0) += 1;
                errors += 1;
            }
        }
        if (replies + errors) % 1000 == 0 {
            peak_rss = peak_rss.max(rss_kib(proxy.0.id()).unwrap());
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the flood took over 2 minutes"
        );
    }
    let _writer = write.await.unwrap();
    // Every refused call got its error; of the allowed ones, those over the bound of calls in flight got
    // LimitsExceeded rather than a place in an ever-growing table.
    assert_eq!(
        names.get("org.freedesktop.DBus.Error.ServiceUnknown"),
        Some(&(N / 2)),
        "{names:?}"
    );
    let limited = names
        .get("org.freedesktop.DBus.Error.LimitsExceeded")
        .copied()
        .unwrap_or(0);
    assert_eq!(replies + limited, N / 2, "{names:?}");
    assert!(
        replies as usize >= efr_bus_proxy::filter::MAX_PENDING,
        "{replies} replies, {names:?}"
    );
    assert!(
        peak_rss > 0 && peak_rss < 64 * 1024,
        "the proxy's RSS peaked at {peak_rss} KiB"
    );
}

/// A child process killed when the test ends, passed or not.
struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_field_twice_ends_the_connection() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let _hidden = service(&bus, "org.example.Hidden").await;
    let filtered = Filtered::default_on(&bus);
    let (mut raw, _) = Raw::pipelined(&filtered.socket).await;
    // zbus's parser keeps the last destination (one the filter lets pass); dbus-daemon refuses a field twice. Were the
    // bytes forwarded, the bus would end the proxy's connection; the filter ends the client's before.
    let twice = hand_made(
        false,
        Type::MethodCall,
        2,
        &[
            (1, Value::Str(b'o', PATH)),
            (2, Value::Str(b's', NOTIFICATIONS)),
            (3, Value::Str(b's', "GetServerInformation")),
            (6, Value::Str(b's', "org.example.Hidden")),
            (6, Value::Str(b's', NOTIFICATIONS)),
        ],
    );
    raw.stream.write_all(&twice).await.unwrap();
    assert!(raw.message().await.is_none(), "the filter ends the connection");
    let (refused, _) = filtered.refused();
    assert_eq!(
        count(&refused, DRIVER, Some("Disconnected")),
        0,
        "the client's connection ended, not the bus's: {refused:?}"
    );
    // The plan serves the next connection.
    let (mut other, _) = Raw::pipelined(&filtered.socket).await;
    other.send(&info(2)).await;
    assert_eq!(error_name(&other.message().await.expect("a reply")), None);
}
