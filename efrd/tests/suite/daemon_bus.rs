//! The D-Bus of auto's contained calls through the real efrd, `efr-launcher`, bubblewrap and `efr-bus-proxy`
//! (docs/bus.md), against a real `dbus-daemon` that the test starts as the user's session bus, with a real service
//! (Python's dbus module) owning `org.freedesktop.Notifications` and a name the default policy hides: real clients
//! (dbus-send, busctl, gdbus) inside a call reach the first and are refused the second, the refusal is in the call's
//! summary and the model's line, the probe's self-test passes, a killed proxy fails the call that used it and the
//! next gets a restarted one, a bus restarted mid-call closes the call's connection (the client sees `Disconnected`) and
//! a new one reaches the new bus, and a missing program leaves calls without a bus with the status saying why.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use efr_test_support::binaries::sibling;
use efr_test_support::daemon::TestDaemon;
use efr_test_support::dbus::DbusDaemon;
use efr_test_support::scripted::ScriptedModel;
use serde_json::json;
use tempfile::TempDir;

use common::auto::{bounded, daemon_with, tempdir};
use common::tools::{event_of, shell_call, start, text, tool_output};
use common::{events_until, model};

/// The hidden name: the default policy does not show it.
const HIDDEN: &str = "org.example.Hidden";

/// The test service: owns the names it is given and answers `GetServerInformation` on the notification daemon's
/// path. Python's dbus module (Debian's python3-dbus) is a real, independent D-Bus implementation.
const SERVICE: &str = r#"
import sys
import dbus, dbus.service, dbus.mainloop.glib
from gi.repository import GLib
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.bus.BusConnection(sys.argv[1])
class Notifications(dbus.service.Object):
    @dbus.service.method("org.freedesktop.Notifications", out_signature="ssss")
    def GetServerInformation(self):
        return ("efr-test", "efr", "1", "1.2")
names = [dbus.service.BusName(name, bus) for name in sys.argv[2:]]
Notifications(bus, "/org/freedesktop/Notifications")
print("ready", flush=True)
GLib.MainLoop().run()
"#;

/// A real session bus in a folder under `/tmp` (which a contained call never sees: its `/tmp` is private, so only
/// the filtered socket can reach it), with the test service on it; both ended when dropped.
struct SessionBus {
    _dir: TempDir,
    daemon: DbusDaemon,
    service: Child,
}

impl SessionBus {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let daemon = DbusDaemon::start("session", &dir.path().join("bus"), false).unwrap();
        let mut service = Command::new("/usr/bin/python3")
            .arg("-c")
            .arg(SERVICE)
            .arg(daemon.address())
            .arg("org.freedesktop.Notifications")
            .arg(HIDDEN)
            .stdout(Stdio::piped())
            .spawn()
            .expect("/usr/bin/python3 is missing");
        let mut ready = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(service.stdout.take().unwrap()), &mut ready).unwrap();
        assert_eq!(
            ready.trim(),
            "ready",
            "the test service did not start: install python3-dbus and python3-gi"
        );
        Self {
            _dir: dir,
            daemon,
            service,
        }
    }

    fn address(&self) -> String {
        self.daemon.address()
    }

    /// Stops the bus and starts a new one on the same socket (the session's bus restarting).
    fn restart(&mut self) {
        self.daemon.stop();
        self.daemon = DbusDaemon::start("session", &self._dir.path().join("bus"), false).unwrap();
    }
}

impl Drop for SessionBus {
    fn drop(&mut self) {
        let _ = self.service.kill();
        let _ = self.service.wait();
        self.daemon.stop();
    }
}

/// `efr-bus-proxy` next to efrd, where efrd looks for it; built when it is not there yet.
fn bus_proxy() -> &'static Path {
    static BUS_PROXY: OnceLock<PathBuf> = OnceLock::new();
    BUS_PROXY.get_or_init(|| sibling(common::efrd_binary(), "efr-bus-proxy", "efr-bus-proxy"))
}

/// The pids of efrd's children that run `efr-bus-proxy`.
fn bus_proxies(efrd: &TestDaemon) -> Vec<i32> {
    let parent = efrd.pid().unwrap().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid ...`: the name is in parentheses, the parent after the state.
            let Some((name, rest)) = stat.split_once(") ") else {
                return false;
            };
            name.ends_with("(efr-bus-proxy") && rest.split(' ').nth(1) == Some(parent.as_str())
        })
        .collect()
}

/// efrd in `home` whose session bus is at `address` and whose runtime folder is `runtime`.
fn daemon_on(home: &Path, server: &ScriptedModel, address: &str, runtime: &Path) -> TestDaemon {
    daemon_with(
        home,
        server,
        &[
            ("DBUS_SESSION_BUS_ADDRESS", address),
            ("XDG_RUNTIME_DIR", runtime.to_str().unwrap()),
        ],
    )
}

/// Waits (at most 30 s) until `path` exists.
async fn wait_for(path: &Path) {
    for _ in 0..600 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The calls the clients make: the notification daemon through each client, then the hidden name.
fn clients_line() -> String {
    let path = "/org/freedesktop/Notifications";
    let method = "org.freedesktop.Notifications.GetServerInformation";
    [
        format!("dbus-send --session --print-reply --dest=org.freedesktop.Notifications {path} {method}"),
        format!(
            "busctl --user call org.freedesktop.Notifications {path} org.freedesktop.Notifications GetServerInformation"
        ),
        format!("gdbus call --session --dest org.freedesktop.Notifications --object-path {path} --method {method}"),
        format!("dbus-send --session --print-reply --dest={HIDDEN} {path} {method} 2>&1"),
        "echo \"address=$DBUS_SESSION_BUS_ADDRESS\"".to_owned(),
        "echo \"runtime=$(ls \"$(dirname \"${DBUS_SESSION_BUS_ADDRESS#unix:path=}\")\")\"".to_owned(),
    ]
    .join("; ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_calls_get_the_filtered_session_bus_and_a_killed_proxy_restarts() {
    bus_proxy();
    let bus = SessionBus::start();
    let home = tempdir();
    let project = tempdir();
    let server = model(vec![
        shell_call("call_bus", &clients_line()),
        shell_call("call_hold", "touch \"$SCRATCH/holding\"; sleep 6; echo held"),
        shell_call(
            "call_after",
            &format!("dbus-send --session --print-reply --dest={HIDDEN} / org.example.Hidden.Get 2>&1; true"),
        ),
        text("done"),
    ])
    .await;
    let address = bus.address();
    // The user's runtime folder, which the sandbox masks and where the call finds its bus.
    let runtime = home.path().join("run-user");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::write(runtime.join("secret"), "do not show").unwrap();
    let efrd = daemon_on(home.path(), &server, &address, &runtime);
    let mut client = efrd.client().await.unwrap();

    // The probe's self-test passes with the real proxy and bus.
    let check = client.ok("admin.sandbox_check", json!(null)).await.unwrap();
    assert_eq!(check["sandbox"]["bus_proxy"], true, "{check:#}");
    assert!(check["sandbox"].get("bus_proxy_off").is_none(), "{check:#}");
    assert_eq!(
        check["sandbox_paths"]["bus_proxy"].as_str(),
        Some(bus_proxy().to_str().unwrap()),
        "{check:#}"
    );

    let (_, conversation, id) = start(&mut client, project.path(), "auto", "use the bus").await;
    let holding = home.path().join("state/scratch").join(&conversation).join("holding");
    // Kill the proxy while call_hold runs (its plan is open by then: the marker comes from the command itself).
    wait_for(&holding).await;
    if !holding.exists() {
        let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;
        panic!("call_hold never ran: {events:#?}\n{}", efrd.log());
    }
    let running = bus_proxies(&efrd);
    assert_eq!(running.len(), 1, "one efr-bus-proxy runs: {running:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(running[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;

    // The call has the session bus_filter grant; the clients reach the notification daemon, and the hidden name is
    // refused with the synthetic error, counted in the summary and told to the model.
    let started = event_of(&events, "tool_call_started", "call_bus");
    assert_eq!(
        started["launch"],
        json!({"kind": "contained", "grants": [{"kind": "bus_filter", "bus": "session"}]}),
        "{started}"
    );
    let done = event_of(&events, "tool_call_completed", "call_bus");
    let output = done["output"].as_str().unwrap();
    assert_eq!(
        output.matches("efr-test").count(),
        3,
        "each client got the answer: {output}"
    );
    assert!(output.contains("org.freedesktop.DBus.Error.ServiceUnknown"), "{output}");
    assert!(
        output.contains(&format!("address=unix:path={}/bus", runtime.display())),
        "{output}"
    );
    assert!(
        output.contains("runtime=bus\n"),
        "the rest of the runtime folder stays masked: {output}"
    );
    let refused = done["sandbox"]["bus_refused"].as_array().unwrap();
    assert!(
        refused.iter().any(|r| r["name"] == HIDDEN && r["bus"] == "session"),
        "{done}"
    );
    let seen = tool_output(&server, "call_bus");
    assert!(
        seen.contains(&format!("[bus: refused {HIDDEN} GetServerInformation")),
        "{seen}"
    );

    // The call whose proxy died fails and says why; the next call gets a restarted proxy.
    let done = event_of(&events, "tool_call_completed", "call_hold");
    assert_eq!(done["status"], "failed", "{done}");
    let seen = tool_output(&server, "call_hold");
    assert!(seen.contains("efr-bus-proxy stopped while this call ran"), "{seen}");
    let done = event_of(&events, "tool_call_completed", "call_after");
    assert_eq!(done["status"], "ok", "{done}");
    assert_eq!(done["sandbox"]["bus_refused"][0]["name"], HIDDEN, "{done}");
    let now = bus_proxies(&efrd);
    assert!(
        now.len() == 1 && now[0] != running[0],
        "a new efr-bus-proxy runs: {now:?} (killed {running:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_bus_proxy_program_auto_calls_have_no_bus_and_the_status_says_why() {
    let bus = SessionBus::start();
    let home = tempdir();
    let project = tempdir();
    let server = model(vec![
        shell_call("call_bus", "echo \"address=${DBUS_SESSION_BUS_ADDRESS:-none}\""),
        text("done"),
    ])
    .await;
    let address = bus.address();
    let efrd = daemon_with(
        home.path(),
        &server,
        &[
            ("DBUS_SESSION_BUS_ADDRESS", &address),
            ("EFR_BUS_PROXY", "/nonexistent/efr-bus-proxy"),
        ],
    );
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "auto", "use the bus").await;
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;

    let started = event_of(&events, "tool_call_started", "call_bus");
    assert_eq!(
        started["launch"],
        json!({"kind": "contained"}),
        "no bus grant: {started}"
    );
    let done = event_of(&events, "tool_call_completed", "call_bus");
    assert_eq!(done["status"], "ok", "{done}");
    assert!(
        done["output"].as_str().unwrap().contains("address=none"),
        "the host's bus address is not passed in: {done}"
    );

    let check = client.ok("admin.sandbox_check", json!(null)).await.unwrap();
    assert!(check["sandbox"].get("bus_proxy").is_none(), "{check:#}");
    assert_eq!(check["sandbox"]["bus_proxy_off"], "no_program", "{check:#}");
    assert!(check["sandbox_paths"].get("bus_proxy").is_none(), "{check:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bus_switched_off_in_the_config_gives_no_bus_and_says_config() {
    bus_proxy();
    let bus = SessionBus::start();
    let home = tempdir();
    let server = model(vec![text("done")]).await;
    let address = bus.address();
    let mut config = efr_test_support::daemon::config_for(&server.base_url());
    config.push_str("\n[bus]\nenabled = false\n");
    common::auto::launcher();
    let efrd = TestDaemon::start(
        common::efrd_binary(),
        home.path(),
        Some(&config),
        &[
            ("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2"),
            ("DBUS_SESSION_BUS_ADDRESS", &address),
        ],
    )
    .expect("efrd starts");
    let mut client = efrd.client().await.unwrap();
    let check = client.ok("admin.sandbox_check", json!(null)).await.unwrap();
    assert_eq!(check["sandbox"]["bus_proxy_off"], "config", "{check:#}");
    assert!(bus_proxies(&efrd).is_empty(), "no bus proxy was started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_bus_rule_is_a_config_error_with_line_column_and_key() {
    let home = tempdir();
    let server = model(vec![text("done")]).await;
    let efrd = daemon_with(home.path(), &server, &[]);
    let mut client = efrd.client().await.unwrap();
    let config = home.path().join("config/config.toml");
    let good = std::fs::read_to_string(&config).unwrap();
    let line = good.lines().count() + 4;
    std::fs::write(
        &config,
        format!("{good}\n[bus]\ntalk = [\"org.gnome.Shell\",\n  \"org..bad\"]\n"),
    )
    .unwrap();
    let reload = client.ok("admin.config_reload", json!(null)).await.unwrap();
    assert_eq!(reload["applied"], false, "{reload}");
    let error = &reload["error"];
    assert_eq!(error["key"], "bus.talk[1]", "{reload}");
    assert_eq!(error["line"], line, "{reload}");
    assert_eq!(error["column"], 3, "{reload}");
    assert!(error["message"].as_str().unwrap().contains("org..bad"), "{reload}");
}

/// Inside the call: a client that holds its connection and asks the bus for its id every 100 ms until the
/// connection closes, then (once the test has restarted the bus) a new client.
const HOLDER: &str = r#"
import sys, time, dbus
bus = dbus.SessionBus()
open(sys.argv[1], "w").close()
for _ in range(300):
    try:
        bus.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId", "", ())
    except dbus.exceptions.DBusException as error:
        print("closed:", error.get_dbus_name(), flush=True)
        break
    time.sleep(0.1)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bus_restarted_mid_call_closes_the_calls_connection_and_a_new_one_works() {
    bus_proxy();
    let mut bus = SessionBus::start();
    let home = tempdir();
    let project = tempdir();
    let runtime = home.path().join("run-user");
    std::fs::create_dir(&runtime).unwrap();
    let holding = project.path().join("holding");
    let restarted = project.path().join("restarted");
    let line = format!(
        "/usr/bin/python3 -c '{HOLDER}' {holding}; \
         for i in $(seq 300); do [ -e {restarted} ] && break; sleep 0.1; done; \
         dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
         org.freedesktop.DBus.GetId >/dev/null && echo again=ok",
        holding = holding.display(),
        restarted = restarted.display(),
    );
    let server = model(vec![shell_call("call_restart", &line), text("done")]).await;
    let address = bus.address();
    let efrd = daemon_on(home.path(), &server, &address, &runtime);
    let mut client = efrd.client().await.unwrap();
    let (_, _, id) = start(&mut client, project.path(), "auto", "hold the bus").await;
    wait_for(&holding).await;
    assert!(holding.exists(), "the holder never connected");
    bus.restart();
    // The new bus answers before the call tries it.
    let answers = (0..50).any(|_| {
        let direct = Command::new("dbus-send")
            .arg(format!("--bus={address}"))
            .args(["--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus"])
            .arg("org.freedesktop.DBus.GetId")
            .output()
            .is_ok_and(|o| o.status.success());
        if !direct {
            std::thread::sleep(Duration::from_millis(100));
        }
        direct
    });
    assert!(answers, "the restarted bus does not answer");
    std::fs::write(&restarted, "").unwrap();
    let events = bounded("the auto turn", events_until(&mut client, id, "turn_completed")).await;
    let done = event_of(&events, "tool_call_completed", "call_restart");
    let output = done["output"].as_str().unwrap();
    assert!(
        output.contains("closed: org.freedesktop.DBus.Error"),
        "the held connection closed: {output}"
    );
    assert!(
        output.contains("again=ok"),
        "a new connection reaches the restarted bus: {output}"
    );
    assert_eq!(done["status"], "ok", "{done}");
    // The bus's end is in the call's report: the held connection's Disconnected.
    let refused = &done["sandbox"]["bus_refused"];
    assert!(
        refused.as_array().is_some_and(|all| all
            .iter()
            .any(|r| r["member"] == "Disconnected" && r["name"] == "org.freedesktop.DBus")),
        "{done}"
    );
}
