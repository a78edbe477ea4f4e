//! The supervised proxy: the real binary, hardened, driven over its control socket as efrd drives it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::Child;

use efr_helper::spawn::HelperCommand;
use efr_protocol::wire::Bus;
use serde_json::{Value, json};

use super::harness::{RealBus, service};

const NOTIFICATIONS: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

struct Supervised {
    control: UnixStream,
    child: Child,
    _sockets: tempfile::TempDir,
    next: u64,
}

impl Supervised {
    fn start() -> Self {
        let sockets = tempfile::tempdir().unwrap();
        let (child, ours) = HelperCommand::new(env!("CARGO_BIN_EXE_efr-bus-proxy"), sockets.path())
            .spawn()
            .expect("start efr-bus-proxy");
        ours.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        Self {
            control: ours,
            child,
            _sockets: sockets,
            next: 1,
        }
    }

    /// One request; its item, or its error.
    fn call(&mut self, method: &str, params: &Value) -> Result<Value, Value> {
        let id = self.next;
        self.next += 1;
        let body = serde_json::to_vec(&json!({"id": id, "method": method, "params": params})).unwrap();
        let mut frame = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        frame.extend(body);
        self.control.write_all(&frame).unwrap();
        let first = self.read();
        if let Some(error) = first.get("error") {
            return Err(error.clone());
        }
        let end = self.read();
        assert!(end.get("end").is_some(), "{end}");
        Ok(first["item"].clone())
    }

    fn read(&mut self) -> Value {
        let mut header = [0_u8; 4];
        self.control.read_exact(&mut header).expect("the proxy answers");
        let mut body = vec![0_u8; u32::from_be_bytes(header) as usize];
        self.control.read_exact(&mut body).unwrap();
        serde_json::from_slice(&body).unwrap()
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_opened_over_the_control_socket_filters_and_reports() {
    let bus = RealBus::start(Bus::Session);
    let _service = service(&bus, NOTIFICATIONS).await;
    let _hidden = service(&bus, "org.example.Hidden").await;
    let mut proxy = Supervised::start();
    let opened = proxy
        .call(
            "bus.open",
            &json!({"call": "c1", "bus": "session", "upstream": bus.address(),
                   "talk": [NOTIFICATIONS, "org.freedesktop.portal.*"]}),
        )
        .expect("bus.open");
    let socket = opened["socket"].as_str().unwrap().to_owned();
    let mode = std::fs::metadata(&socket).map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777);
    assert_eq!(mode.ok(), Some(0o600));

    let client = zbus::connection::Builder::address(format!("unix:path={socket}").as_str())
        .unwrap()
        .build()
        .await
        .expect("a client through the hardened proxy");
    client
        .call_method(
            Some(NOTIFICATIONS),
            PATH,
            Some(NOTIFICATIONS),
            "GetServerInformation",
            &(),
        )
        .await
        .expect("an allowed call");
    for _ in 0..3 {
        let refused = client
            .call_method(
                Some("org.example.Hidden"),
                PATH,
                Some(NOTIFICATIONS),
                "GetServerInformation",
                &(),
            )
            .await;
        assert!(format!("{refused:?}").contains("ServiceUnknown"), "{refused:?}");
    }
    let closed = proxy
        .call("bus.close", &json!({"plan": opened["plan"]}))
        .expect("bus.close");
    assert_eq!(
        closed["bus_refused"],
        json!([{"bus": "session", "name": "org.example.Hidden", "member": "GetServerInformation", "path": PATH, "count": 3}])
    );
    assert_eq!(closed["bus_refused_more"], 0);
    assert_eq!(closed["connections"], 1);
    assert!(!std::path::Path::new(&socket).exists(), "the socket is removed");
    // The plan's connections are cut with it.
    let after = client
        .call_method(
            Some(NOTIFICATIONS),
            PATH,
            Some(NOTIFICATIONS),
            "GetServerInformation",
            &(),
        )
        .await;
    assert!(after.is_err(), "{after:?}");
}

#[test]
fn a_bad_rule_is_refused_with_its_field_and_place() {
    let mut proxy = Supervised::start();
    let error = proxy
        .call(
            "bus.open",
            &json!({"call": "c1", "bus": "session", "upstream": "unix:path=/nonexistent",
                   "call_rules": ["org.foo=org.foo.Iface.Get@/ok", "org.foo=Iface"]}),
        )
        .expect_err("a bad rule");
    assert_eq!(error["code"], "invalid", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("call_rules[1]") && message.contains("at byte 8"),
        "{message}"
    );
    // The proxy goes on serving.
    let error = proxy.call("bus.close", &json!({"plan": 42})).expect_err("no such plan");
    assert_eq!(error["code"], "not_found", "{error}");
}
