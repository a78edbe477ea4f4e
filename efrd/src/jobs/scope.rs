//! Transient scopes of the systemd user manager, asked for over the user's session bus with zbus (ADR 0021):
//! `StartTransientUnit` with the job's first pid, as `systemd-run --user --scope` does, and `KillUnit` for a stop
//! where the scope's `cgroup.kill` is not at hand.
//!
//! The manager is `org.freedesktop.systemd1` on the session bus (`$XDG_RUNTIME_DIR/bus`, which systemd's
//! `dbus.socket` user unit opens). Not its private socket: there the manager speaks peer to peer and sends signals
//! with a well-known sender, which zbus's peer-to-peer reader does not take (ADR 0021 has the measurement).
//!
//! One connection per bus, made on first use and kept: a job's start costs one method call, not a connection. A call
//! that fails on a kept connection is tried once more on a new one (the bus may have restarted since).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use zbus::zvariant::Value;

/// How long a call to the manager may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(3);

const MANAGER: &str = "org.freedesktop.systemd1";
const MANAGER_PATH: &str = "/org/freedesktop/systemd1";
const MANAGER_INTERFACE: &str = "org.freedesktop.systemd1.Manager";

/// The kept connections, by the bus socket's path.
fn connections() -> &'static Mutex<HashMap<PathBuf, zbus::Connection>> {
    static CONNECTIONS: OnceLock<Mutex<HashMap<PathBuf, zbus::Connection>>> = OnceLock::new();
    CONNECTIONS.get_or_init(Mutex::default)
}

async fn connect(bus: &Path) -> Result<zbus::Connection, String> {
    let kept = connections()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(bus)
        .cloned();
    if let Some(connection) = kept {
        return Ok(connection);
    }
    let address = format!("unix:path={}", bus.display());
    let connection = tokio::time::timeout(CALL_TIMEOUT, async {
        zbus::connection::Builder::address(address.as_str())?.build().await
    })
    .await
    .map_err(|_| format!("the session bus {} did not answer in time", bus.display()))?
    .map_err(|e| format!("cannot connect to the session bus {}: {e}", bus.display()))?;
    connections()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(bus.to_owned(), connection.clone());
    Ok(connection)
}

fn forget(bus: &Path) {
    connections().lock().unwrap_or_else(PoisonError::into_inner).remove(bus);
}

/// Calls `method` of the manager with `body`, on the kept connection and once more on a new one if that fails.
async fn call<B>(bus: &Path, method: &str, body: &B) -> Result<(), String>
where
    B: serde::Serialize + zbus::zvariant::DynamicType,
{
    let mut last = String::new();
    for _ in 0..2 {
        let connection = connect(bus).await?;
        let reply = tokio::time::timeout(
            CALL_TIMEOUT,
            connection.call_method(Some(MANAGER), MANAGER_PATH, Some(MANAGER_INTERFACE), method, body),
        )
        .await;
        match reply {
            Ok(Ok(_)) => return Ok(()),
            // The manager said no: a new connection would hear the same.
            Ok(Err(zbus::Error::MethodError(name, text, _))) => {
                return Err(format!("{name}: {}", text.unwrap_or_default()));
            }
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "the user manager did not answer in time".to_owned(),
        }
        forget(bus);
    }
    Err(last)
}

/// Asks the user manager for the transient scope `unit` holding `pid` (a process that waits at its gate), collected
/// when it ends even if it failed. The manager moves the pid before the job it queued runs; the caller waits until
/// `/proc/<pid>/cgroup` shows it.
///
/// # Errors
/// The manager's refusal (a unit of that name exists, no such pid) or why the bus could not be reached.
pub async fn start(bus: &Path, unit: &str, pid: u32) -> Result<(), String> {
    let properties: Vec<(&str, Value<'_>)> = vec![
        ("Description", Value::from("efr background job")),
        ("PIDs", Value::from(vec![pid])),
        ("CollectMode", Value::from("inactive-or-failed")),
    ];
    let auxiliary: Vec<(&str, Vec<(&str, Value<'_>)>)> = Vec::new();
    call(bus, "StartTransientUnit", &(unit, "fail", properties, auxiliary)).await
}

/// Sends SIGKILL to every process of `unit`.
///
/// # Errors
/// The manager's refusal (no such unit) or why the bus could not be reached.
pub async fn kill(bus: &Path, unit: &str) -> Result<(), String> {
    call(bus, "KillUnit", &(unit, "all", libc::SIGKILL)).await
}
