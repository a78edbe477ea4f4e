//! A contained call with a `bus_filter` grant: the real launcher and bubblewrap bind the call's filtered socket into
//! the masked runtime folder, and real clients inside talk to the notification daemon and are refused elsewhere.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::Path;
use std::time::Duration;

use efr_protocol::internal::launch::{BusSocket, LaunchCommand, LaunchPlan, Mask, MaskSource};
use efr_protocol::wire::{Bus, Grant};

use super::harness::{Filtered, RealBus, count, service};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contained_call_talks_to_notifications_through_its_filter_only() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, "org.freedesktop.Notifications").await;
    let _hidden = service(&bus, "org.example.Hidden").await;
    let filtered = Filtered::default_on(&bus);
    let launcher = efr_test_support::binaries::sibling(
        Path::new(env!("CARGO_BIN_EXE_efr-bus-proxy")),
        "efr-launcher",
        "efr-launcher",
    );

    // The runtime folder of the test's user: masked, with a secret beside where the bus goes.
    let dir = tempfile::tempdir().unwrap();
    let run_user = dir.path().join("run-user");
    std::fs::create_dir(&run_user).unwrap();
    std::fs::write(run_user.join("secret"), "do not show").unwrap();
    let inside = run_user.join("bus");
    let send = |destination: &str| {
        format!(
            "dbus-send --session --print-reply --dest={destination} /org/freedesktop/Notifications \
             org.freedesktop.Notifications.GetServerInformation"
        )
    };
    let line = format!(
        "{}; {} 2>&1; ls {}",
        send("org.freedesktop.Notifications"),
        send("org.example.Hidden"),
        run_user.display()
    );
    let mut plan = LaunchPlan::new("/usr/bin/bwrap", Vec::new(), dir.path());
    plan.command = LaunchCommand::Shell {
        shell: "/bin/sh".into(),
        line,
    };
    plan.env.insert("PATH".into(), "/usr/bin:/bin".into());
    plan.env.insert(
        "DBUS_SESSION_BUS_ADDRESS".into(),
        format!("unix:path={}", inside.display()),
    );
    plan.masks.push(Mask {
        path: run_user.clone(),
        source: MaskSource::RunUser,
    });
    plan.grants.push(Grant::BusFilter { bus: Bus::Session });
    plan.bus_sockets.push(BusSocket {
        bus: Bus::Session,
        socket: filtered.socket.clone(),
        path: inside.clone(),
    });
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, serde_json::to_vec(&plan).unwrap()).unwrap();

    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(&launcher)
            .arg("--plan-file")
            .arg(&plan_path)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the call ends within 60 s")
    .expect("efr-launcher runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let said = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("efr-test"), "the allowed call: {said}");
    assert!(
        stdout.contains("org.freedesktop.DBus.Error.ServiceUnknown"),
        "the refused call: {said}"
    );
    let listing: Vec<&str> = stdout.lines().filter(|l| *l == "bus" || *l == "secret").collect();
    assert_eq!(listing, ["bus"], "the rest of the runtime folder stays masked: {said}");
    let (refused, _) = filtered.refused();
    assert_eq!(
        count(&refused, "org.example.Hidden", Some("GetServerInformation")),
        1,
        "{refused:?}"
    );
}
