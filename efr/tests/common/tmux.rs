//! A private tmux server for the tests of `efr` in a real terminal.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A private tmux server (its own socket name), killed when dropped.
pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn run(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs (install the Debian package tmux)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Starts a 120×40 session running `bash` without rc files, in `cwd`, with `EFR_HOME` set.
    pub fn start(cwd: &Path, home: &Path) -> Self {
        let tmux = Self {
            socket: format!("efr-pty-{}-{}", std::process::id(), uuid_like()),
        };
        let status = Command::new("tmux")
            .args([
                "-L",
                &tmux.socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
            ])
            .arg("-c")
            .arg(cwd)
            .args(["env", "-u", "EFR_RUNTIME_DIR"])
            .arg(format!("EFR_HOME={}", home.display()))
            .args(["PS1=$ ", "TERM=xterm-256color", "bash", "--norc", "--noprofile"])
            .status()
            .expect("tmux runs (install the Debian package tmux)");
        assert!(status.success(), "tmux new-session failed");
        tmux
    }

    pub fn pane(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-J", "-S", "-200"]).stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    pub fn literal(&self, text: &str) {
        self.run(&["send-keys", "-t", "0", "-l", text]);
    }

    /// Waits until the pane holds `needle`, at most `secs` seconds; fails with the pane's text.
    pub async fn wait_for(&self, needle: &str, secs: u64) -> String {
        self.wait_until(needle, secs, |pane| pane.contains(needle)).await
    }

    /// Waits until the shell printed `EXIT=<digit>` (not the `EXIT=$?` of the typed line).
    pub async fn wait_for_exit(&self, secs: u64) -> String {
        self.wait_until("EXIT=<code>", secs, |pane| {
            pane.match_indices("EXIT=")
                .any(|(at, _)| pane[at + 5..].starts_with(|c: char| c.is_ascii_digit()))
        })
        .await
    }

    pub async fn wait_until(&self, needle: &str, secs: u64, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let pane = self.pane();
            if done(&pane) {
                return pane;
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} on the pane within {secs} s:\n{pane}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
}
