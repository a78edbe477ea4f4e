//! A real `dbus-daemon` on a socket of the caller's, for the tests and benches of the bus filter (efr-bus-proxy's
//! and efrd's): a session bus, or one of the system bus's type, whose policy lets the test's user own, send and
//! receive everything (the filter under test is what restricts).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running dbus-daemon, ended (and its socket removed) when dropped or stopped.
#[derive(Debug)]
pub struct DbusDaemon {
    /// The listening socket.
    pub socket: PathBuf,
    daemon: Child,
    /// Stopped already: a later stop (the drop) must not remove the socket of a bus started since on the same path.
    stopped: bool,
}

impl DbusDaemon {
    /// Starts a bus of type `kind` (`session` or `system`) listening on `socket`, its config written beside it
    /// (`<socket>.conf`); `eavesdrop` also allows eavesdropping (for the tests that check the filter refuses it).
    /// Waits (at most 10 s) until it listens.
    ///
    /// # Errors
    /// dbus-daemon is missing (the Debian package dbus), or its socket did not appear.
    pub fn start(kind: &str, socket: &Path, eavesdrop: bool) -> Result<Self, String> {
        let config = socket.with_extension("conf");
        let eavesdrop = if eavesdrop { r#" eavesdrop="true""# } else { "" };
        // The session bus's own limit on the calls awaiting replies of one connection (Debian's session.conf); the
        // built-in default is far lower, and a test that floods would meet it rather than the limit it tests.
        let limits = if kind == "session" {
            r#"<limit name="max_replies_per_connection">50000</limit>"#
        } else {
            ""
        };
        std::fs::write(
            &config,
            format!(
                r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{kind}</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"{eavesdrop}/>
    <allow receive_sender="*"{eavesdrop}/>
  </policy>
  {limits}
</busconfig>
"#,
                socket.display()
            ),
        )
        .map_err(|e| format!("cannot write the bus's config: {e}"))?;
        let mut daemon = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .arg("--nofork")
            // It prints its address once it listens: the socket file alone appears at bind(), before listen(), and a
            // connect in between is refused.
            .arg("--print-address")
            .stdout(Stdio::piped())
            // It says it cannot raise its descriptor limit, which does not matter here.
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("dbus-daemon is missing (install the Debian package dbus): {e}"))?;
        let stdout = daemon
            .stdout
            .take()
            .ok_or_else(|| "dbus-daemon's stdout is not piped".to_owned())?;
        let mut running = Self {
            socket: socket.to_owned(),
            daemon,
            stopped: false,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line);
            let _ = tx.send(read.map(|_| line));
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Ok(line)) if line.starts_with("unix:") => Ok(running),
            outcome => {
                running.stop();
                Err(format!(
                    "dbus-daemon on {} did not say it listens within 10 s: {outcome:?}",
                    socket.display()
                ))
            }
        }
    }

    /// The bus's address, `unix:path=...`.
    #[must_use]
    pub fn address(&self) -> String {
        format!("unix:path={}", self.socket.display())
    }

    /// Ends the daemon (a bus that goes away, as when the session's bus restarts). Once: a second call does nothing.
    pub fn stop(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl Drop for DbusDaemon {
    fn drop(&mut self) {
        self.stop();
    }
}
