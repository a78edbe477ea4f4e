//! Real clients through the filter: allowed calls work, refused ones get the synthetic error and are reported.

use efr_bus_proxy::policy::{Level, Policy};
use efr_bus_proxy::serve::MAX_MESSAGE;
use efr_protocol::wire::Bus;

use super::harness::{Filtered, RealBus, count, name, rule, run, service};

const NOTIFICATIONS: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

const JEEPNEY: &str = r"
import sys
from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
address = DBusAddress(sys.argv[2], bus_name=sys.argv[1], interface='org.freedesktop.Notifications')
with open_dbus_connection(bus='SESSION') as connection:
    reply = connection.send_and_get_reply(new_method_call(address, 'GetServerInformation'), timeout=10)
    print(reply.header.message_type.name, reply.body)
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_calls_the_notification_daemon_through_the_filter() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let filtered = Filtered::default_on(&bus);
    let address = filtered.address();
    let method = "org.freedesktop.Notifications.GetServerInformation";

    let (ok, out, err) = run(
        "dbus-send",
        &[
            "--session",
            "--print-reply",
            &format!("--dest={NOTIFICATIONS}"),
            PATH,
            method,
        ],
        Bus::Session,
        &address,
    )
    .await;
    assert!(ok && out.contains("efr-test"), "dbus-send: {out}{err}");

    let (ok, out, err) = run(
        "busctl",
        &[
            "--user",
            "call",
            NOTIFICATIONS,
            PATH,
            NOTIFICATIONS,
            "GetServerInformation",
        ],
        Bus::Session,
        &address,
    )
    .await;
    assert!(ok && out.contains("efr-test"), "busctl: {out}{err}");

    let (ok, out, err) = run(
        "gdbus",
        &[
            "call",
            "--session",
            "--dest",
            NOTIFICATIONS,
            "--object-path",
            PATH,
            "--method",
            method,
        ],
        Bus::Session,
        &address,
    )
    .await;
    assert!(ok && out.contains("efr-test"), "gdbus: {out}{err}");

    let (ok, out, err) = run(
        "/usr/bin/python3",
        &["-c", JEEPNEY, NOTIFICATIONS, PATH],
        Bus::Session,
        &address,
    )
    .await;
    assert!(
        ok && out.contains("method_return") && out.contains("efr-test"),
        "jeepney: {out}{err}"
    );

    // zbus sends AUTH, NEGOTIATE_UNIX_FD, BEGIN and Hello in one write.
    let client = filtered.zbus().await;
    let reply = client
        .call_method(
            Some(NOTIFICATIONS),
            PATH,
            Some(NOTIFICATIONS),
            "GetServerInformation",
            &(),
        )
        .await
        .expect("an allowed call");
    let (server, ..): (String, String, String, String) = reply.body().deserialize().expect("four strings");
    assert_eq!(server, "efr-test");
    let hints = std::collections::HashMap::<String, zbus::zvariant::Value<'_>>::new();
    let reply = client
        .call_method(
            Some(NOTIFICATIONS),
            PATH,
            Some(NOTIFICATIONS),
            "Notify",
            &(
                "efr",
                0_u32,
                "",
                "done",
                "the build passed",
                Vec::<String>::new(),
                hints,
                5000_i32,
            ),
        )
        .await
        .expect("Notify");
    assert_eq!(reply.body().deserialize::<u32>().expect("an id"), 7);
    assert_eq!(filtered.refused(), (Vec::new(), 0), "nothing was refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_calls_get_the_synthetic_error_and_are_reported() {
    let bus = RealBus::start(Bus::Session);
    let _hidden = service(&bus, "org.example.Hidden").await;
    let _seen = service(&bus, "org.example.Seen").await;
    let filtered = Filtered::default_on(&bus);
    let address = filtered.address();

    let (ok, out, err) = run(
        "dbus-send",
        &[
            "--session",
            "--print-reply",
            "--dest=org.example.Hidden",
            PATH,
            "org.freedesktop.Notifications.GetServerInformation",
        ],
        Bus::Session,
        &address,
    )
    .await;
    assert!(
        !ok && err.contains("org.freedesktop.DBus.Error.ServiceUnknown"),
        "dbus-send: {out}{err}"
    );

    let (ok, out, err) = run(
        "gdbus",
        &[
            "call",
            "--session",
            "--dest",
            "org.example.Seen",
            "--object-path",
            PATH,
            "--method",
            "org.freedesktop.Notifications.GetServerInformation",
        ],
        Bus::Session,
        &address,
    )
    .await;
    assert!(!ok && err.contains("AccessDenied"), "gdbus: {out}{err}");

    let (ok, out, err) = run(
        "busctl",
        &[
            "--user",
            "call",
            "org.example.Hidden",
            PATH,
            NOTIFICATIONS,
            "GetServerInformation",
        ],
        Bus::Session,
        &address,
    )
    .await;
    assert!(!ok, "busctl: {out}{err}");

    let (refused, more) = filtered.refused();
    assert_eq!(more, 0);
    assert_eq!(
        count(&refused, "org.example.Hidden", Some("GetServerInformation")),
        2,
        "{refused:?}"
    );
    assert_eq!(
        count(&refused, "org.example.Seen", Some("GetServerInformation")),
        1,
        "{refused:?}"
    );
    let entry = refused.iter().find(|r| r.name == "org.example.Seen").expect("an entry");
    assert_eq!(entry.path.as_deref(), Some(PATH));
    assert_eq!(entry.bus, Bus::Session);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_sees_only_the_names_and_peers_it_may_see() {
    let bus = RealBus::start(Bus::Session);
    let notifications = service(&bus, NOTIFICATIONS).await;
    let hidden = service(&bus, "org.example.Hidden").await;
    let filtered = Filtered::default_on(&bus);
    let client = filtered.zbus().await;
    let driver = zbus::fdo::DBusProxy::new(&client).await.expect("the driver's proxy");

    let names: Vec<String> = driver
        .list_names()
        .await
        .expect("ListNames")
        .into_iter()
        .map(|n| n.to_string())
        .collect();
    assert!(names.iter().any(|n| n == NOTIFICATIONS), "{names:?}");
    assert!(!names.iter().any(|n| n == "org.example.Hidden"), "{names:?}");
    let hidden_unique = hidden.unique_name().expect("a unique name").to_string();
    assert!(!names.contains(&hidden_unique), "{names:?}");

    let owner = driver
        .get_name_owner("org.example.Hidden".try_into().expect("a name"))
        .await;
    assert!(matches!(owner, Err(zbus::fdo::Error::NameHasNoOwner(_))), "{owner:?}");
    assert!(
        !driver
            .name_has_owner("org.example.Hidden".try_into().expect("a name"))
            .await
            .expect("NameHasOwner")
    );

    // Calling the hidden peer by its unique name is no way round the filter.
    let by_unique = client
        .call_method(
            Some(hidden_unique.as_str()),
            PATH,
            Some(NOTIFICATIONS),
            "GetServerInformation",
            &(),
        )
        .await;
    assert!(format!("{by_unique:?}").contains("NameHasNoOwner"), "{by_unique:?}");

    // The owner of a name it may talk to is visible, and may be called by its unique name.
    let owner = driver
        .get_name_owner(NOTIFICATIONS.try_into().expect("a name"))
        .await
        .expect("GetNameOwner");
    assert_eq!(
        owner.to_string(),
        notifications.unique_name().expect("a unique name").to_string()
    );
    client
        .call_method(
            Some(owner.as_str()),
            PATH,
            Some(NOTIFICATIONS),
            "GetServerInformation",
            &(),
        )
        .await
        .expect("a call by unique name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_rules_open_one_method_of_a_name() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, "org.example.Partial").await;
    let mut policy = Policy::default();
    policy.calls.push(rule(
        "org.example.Partial=org.freedesktop.Notifications.GetServerInformation@/org/freedesktop/*",
    ));
    let filtered = Filtered::start(&bus, policy, MAX_MESSAGE);
    let client = filtered.zbus().await;
    client
        .call_method(
            Some("org.example.Partial"),
            PATH,
            Some(NOTIFICATIONS),
            "GetServerInformation",
            &(),
        )
        .await
        .expect("the method the rule names");
    let other = client
        .call_method(Some("org.example.Partial"), PATH, Some(NOTIFICATIONS), "Path", &())
        .await;
    assert!(format!("{other:?}").contains("AccessDenied"), "{other:?}");
    let elsewhere = client
        .call_method(
            Some("org.example.Partial"),
            "/org/example",
            Some(NOTIFICATIONS),
            "GetServerInformation",
            &(),
        )
        .await;
    assert!(format!("{elsewhere:?}").contains("AccessDenied"), "{elsewhere:?}");
    let (refused, _) = filtered.refused();
    assert_eq!(count(&refused, "org.example.Partial", Some("Path")), 1, "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_pass_only_where_a_rule_allows_them() {
    let bus = RealBus::start(Bus::Session);
    let _notifications = service(&bus, NOTIFICATIONS).await;
    let _portal = service(&bus, "org.freedesktop.portal.Test").await;
    let filtered = Filtered::default_on(&bus);
    let client = filtered.zbus().await;
    let dir = tempfile::tempdir().expect("a folder");
    let file = dir.path().join("f");
    std::fs::write(&file, b"twelve bytes").expect("write");
    let open = || std::fs::File::open(&file).expect("open");

    let portal = client
        .call_method(
            Some("org.freedesktop.portal.Test"),
            PATH,
            Some(NOTIFICATIONS),
            "SizeOf",
            &(zbus::zvariant::Fd::from(&open()),),
        )
        .await
        .expect("descriptors pass to the portals");
    assert_eq!(portal.body().deserialize::<u64>().expect("a size"), 12);
    let refused = client
        .call_method(
            Some(NOTIFICATIONS),
            PATH,
            Some(NOTIFICATIONS),
            "SizeOf",
            &(zbus::zvariant::Fd::from(&open()),),
        )
        .await;
    assert!(format!("{refused:?}").contains("AccessDenied"), "{refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_with_descriptors_the_call_may_not_receive_is_an_error_at_once_and_counted() {
    let bus = RealBus::start(Bus::Session);
    let _notifications = service(&bus, NOTIFICATIONS).await;
    let _portal = service(&bus, "org.freedesktop.portal.Test").await;
    let filtered = Filtered::default_on(&bus);
    let client = filtered.zbus().await;
    // The portals may pass descriptors both ways.
    let allowed = client
        .call_method(
            Some("org.freedesktop.portal.Test"),
            PATH,
            Some(NOTIFICATIONS),
            "OpenNull",
            &(),
        )
        .await
        .expect("a portal's descriptor passes");
    let _fd: zbus::zvariant::OwnedFd = allowed.body().deserialize().expect("a descriptor");
    // Notifications may be talked to but may not pass descriptors: its reply is refused, not left to time out.
    let started = std::time::Instant::now();
    let refused = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.call_method(Some(NOTIFICATIONS), PATH, Some(NOTIFICATIONS), "OpenNull", &()),
    )
    .await
    .expect("the call ends before its timeout");
    assert!(format!("{refused:?}").contains("AccessDenied"), "{refused:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (refusals, _) = filtered.refused();
    assert_eq!(count(&refusals, NOTIFICATIONS, Some("OpenNull")), 1, "{refusals:?}");
    // The connection still serves.
    client
        .call_method(
            Some(NOTIFICATIONS),
            PATH,
            Some(NOTIFICATIONS),
            "GetServerInformation",
            &(),
        )
        .await
        .expect("the next call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_like_bus_is_filtered_the_same_way() {
    let bus = RealBus::start(Bus::System);
    let _service = service(&bus, "org.freedesktop.login1").await;
    let _hidden = service(&bus, "org.example.Hidden").await;
    let mut policy = Policy::default();
    policy.names.push((name("org.freedesktop.login1"), Level::Talk));
    let filtered = Filtered::start(&bus, policy, MAX_MESSAGE);
    let address = filtered.address();
    let (ok, out, err) = run(
        "busctl",
        &[
            "--system",
            "call",
            "org.freedesktop.login1",
            PATH,
            NOTIFICATIONS,
            "GetServerInformation",
        ],
        Bus::System,
        &address,
    )
    .await;
    assert!(ok && out.contains("efr-test"), "busctl: {out}{err}");
    let (ok, out, err) = run(
        "dbus-send",
        &[
            "--system",
            "--print-reply",
            "--dest=org.example.Hidden",
            PATH,
            "org.freedesktop.Notifications.GetServerInformation",
        ],
        Bus::System,
        &address,
    )
    .await;
    assert!(!ok && err.contains("ServiceUnknown"), "dbus-send: {out}{err}");
    let (refused, _) = filtered.refused();
    assert_eq!(refused.first().map(|r| r.bus), Some(Bus::System), "{refused:?}");
}
