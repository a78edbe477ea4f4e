//! A network namespace of the test's own, with public addresses on its loopback and names in its hosts file.
//!
//! The namespace has only its loopback, so nothing in it reaches off the machine: a "public" address such as
//! `11.0.0.1` put on that loopback is this test's server, and the proxy's refusal of non-public addresses stays on.
//! `ip netns exec` bind-mounts `/etc/netns/<name>/hosts` and `resolv.conf` over `/etc`, so a program started with
//! [`NetNs::command`] resolves the test's names. The resolver named there has no route, so every other name fails at
//! once. The namespace and its files are removed on drop.

use std::ffi::OsStr;
use std::fs::File;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{Context as _, Result, bail};
use nix::sched::{CloneFlags, setns};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A test's network namespace (`efr-px-<pid>-<n>`).
#[derive(Debug)]
pub struct NetNs {
    name: String,
    etc: PathBuf,
}

fn ip(args: &[&str]) -> Result<()> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run `ip` (iproute2 is needed for the network namespace tests)")?;
    if !output.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

impl NetNs {
    /// Creates the namespace with its loopback up, `addresses` on it, and `hosts` (name, address) in its hosts file
    /// (after `localhost`).
    ///
    /// # Errors
    /// `ip` is missing or failed (the tests run as root), or the files could not be written.
    pub fn new(addresses: &[IpAddr], hosts: &[(&str, IpAddr)]) -> Result<Self> {
        let name = format!("efr-px-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let etc = PathBuf::from("/etc/netns").join(&name);
        ip(&["netns", "add", &name])?;
        let netns = Self { name, etc };
        ip(&["-n", &netns.name, "link", "set", "lo", "up"])?;
        for address in addresses {
            let address = match address {
                IpAddr::V4(v4) => format!("{v4}/32"),
                IpAddr::V6(v6) => format!("{v6}/128"),
            };
            let mut args = vec!["-n", &netns.name, "addr", "add", &address, "dev", "lo"];
            if address.contains(':') {
                args.push("nodad");
            }
            ip(&args)?;
        }
        std::fs::create_dir_all(&netns.etc).with_context(|| format!("cannot create {}", netns.etc.display()))?;
        let mut file = String::from("127.0.0.1 localhost\n::1 localhost\n");
        for (host, address) in hosts {
            file.push_str(&format!("{address} {host}\n"));
        }
        std::fs::write(netns.etc.join("hosts"), file)?;
        // TEST-NET-1 has no route in the namespace: a name not in the hosts file fails at once.
        std::fs::write(
            netns.etc.join("resolv.conf"),
            "nameserver 192.0.2.53\noptions timeout:1 attempts:1\n",
        )?;
        Ok(netns)
    }

    /// The namespace's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip netns exec <name> <program>`: the program runs in the namespace with its hosts file and resolv.conf.
    #[must_use]
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name]).arg(program);
        command
    }

    /// Moves the calling thread into the namespace: sockets it makes from now on live there. Use it in a thread of
    /// its own (a server's), not in the test's thread.
    ///
    /// # Errors
    /// The namespace file could not be opened or `setns` failed.
    pub fn enter(&self) -> Result<()> {
        let file = File::open(PathBuf::from("/run/netns").join(&self.name))
            .with_context(|| format!("cannot open the namespace {}", self.name))?;
        setns(file, CloneFlags::CLONE_NEWNET).with_context(|| format!("setns into {}", self.name))?;
        Ok(())
    }

    /// Runs `f` on a new thread inside the namespace and returns its result.
    ///
    /// # Errors
    /// Entering the namespace failed.
    ///
    /// # Panics
    /// When `f` panics.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    self.enter()?;
                    Ok(f())
                })
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

impl NetNs {
    /// Links this namespace and `other` with a veth pair (`tn0` on both sides), puts `here` on this side and `there`
    /// on the other, each as a /32 or /128 with a route to it from the other side: two machines on one wire, as
    /// tailnet peers are, and nothing routes off the machine.
    ///
    /// # Errors
    /// `ip` is missing or failed.
    pub fn link(&self, other: &NetNs, here: &[IpAddr], there: &[IpAddr]) -> Result<()> {
        ip(&[
            "link",
            "add",
            "tn0",
            "netns",
            &self.name,
            "type",
            "veth",
            "peer",
            "name",
            "tn0",
            "netns",
            &other.name,
        ])?;
        for side in [self, other] {
            ip(&["-n", &side.name, "link", "set", "tn0", "up"])?;
        }
        for (side, addresses, far) in [(self, here, other), (other, there, self)] {
            for address in addresses {
                let host = match address {
                    IpAddr::V4(v4) => format!("{v4}/32"),
                    IpAddr::V6(v6) => format!("{v6}/128"),
                };
                let mut args = vec!["-n", &side.name, "addr", "add", &host, "dev", "tn0"];
                if address.is_ipv6() {
                    args.push("nodad");
                }
                ip(&args)?;
                ip(&["-n", &far.name, "route", "add", &host, "dev", "tn0"])?;
            }
        }
        Ok(())
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
        let _ = std::fs::remove_dir_all(&self.etc);
    }
}
