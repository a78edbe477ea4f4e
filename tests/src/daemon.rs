//! Starting the real `efrd` binary for a test: a temporary `EFR_HOME`, a `config.toml` that points the providers at
//! the scripted model server, and a wait for the socket.
//!
//! The process is killed when the [`TestDaemon`] drops; [`TestDaemon::stop`] sends SIGTERM and waits, for tests of
//! the graceful stop, and [`TestDaemon::kill`] sends SIGKILL, for crash tests.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::client::Client;

/// How long a test waits for efrd to accept connections.
pub const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Who a test's efrd runs as.
///
/// Tests run as root here and in CI, and efrd refuses full mode as root unless the config says
/// `allow_full_as_root` (docs/adr/0029-full-mode.md), which [`config_for`] does. A test of full mode's refusal
/// `root` runs efrd as root with a config that says false; a test of full mode's own rules may run efrd as an
/// unprivileged user ([`RunAs::User`]), as a user's efrd runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAs {
    /// The test's own user.
    Caller,
    /// `uid` and `gid` through `setpriv --reuid --regid --clear-groups` (util-linux), with the home and the given
    /// paths chowned to them first; a test that does not run as root runs efrd as itself.
    User {
        /// The user id.
        uid: u32,
        /// The group id.
        gid: u32,
    },
}

/// `nobody` and `nogroup` on Debian: the unprivileged user of [`RunAs::User`].
pub const NOBODY: RunAs = RunAs::User { uid: 65534, gid: 65534 };

/// A running efrd in its own `EFR_HOME`.
#[derive(Debug)]
pub struct TestDaemon {
    child: Option<Child>,
    home: PathBuf,
    binary: PathBuf,
    envs: Vec<(String, String)>,
    run_as: RunAs,
}

impl TestDaemon {
    /// Writes `config` as `$EFR_HOME/config/config.toml` (when given) and starts `binary` (the efrd executable)
    /// with `EFR_HOME=home` and the extra variables, then waits until its socket accepts.
    ///
    /// # Errors
    /// When efrd does not start or exits before it accepts.
    pub fn start(binary: &Path, home: &Path, config: Option<&str>, envs: &[(&str, &str)]) -> Result<Self> {
        Self::start_as(binary, (home, config), envs, RunAs::Caller, &[])
    }

    /// [`Self::start`] as `run_as`; for [`RunAs::User`], `home` and each of `also` (a project, say) are chowned
    /// to that user first, whole, so that efrd can write them.
    ///
    /// # Errors
    /// When a chown fails, or efrd does not start or exits before it accepts.
    pub fn start_as(
        binary: &Path,
        (home, config): (&Path, Option<&str>),
        envs: &[(&str, &str)],
        run_as: RunAs,
        also: &[&Path],
    ) -> Result<Self> {
        if let Some(config) = config {
            let dir = home.join("config");
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join("config.toml"), config)?;
        }
        if let RunAs::User { uid, gid } = run_as
            && nix::unistd::geteuid().is_root()
        {
            for path in std::iter::once(home).chain(also.iter().copied()) {
                chown_all(path, uid, gid)?;
            }
        }
        let mut daemon = Self {
            child: None,
            home: home.to_owned(),
            binary: binary.to_owned(),
            envs: envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            run_as,
        };
        daemon.restart()?;
        Ok(daemon)
    }

    /// Starts efrd again in the same home (after [`Self::kill`] or [`Self::stop`]).
    ///
    /// # Errors
    /// When efrd does not start or exits before it accepts.
    pub fn restart(&mut self) -> Result<()> {
        let mut command = match self.run_as {
            RunAs::User { uid, gid } if nix::unistd::geteuid().is_root() => {
                let mut setpriv = Command::new("setpriv");
                setpriv
                    .arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--clear-groups")
                    .arg(&self.binary);
                setpriv
            }
            _ => Command::new(&self.binary),
        };
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("EFR_HOME", &self.home)
            .envs(self.envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.home.join("efrd.log"))?,
            ));
        // A test run's own EFR_LOG reaches efrd; otherwise the config's `[daemon] log_level` decides.
        if let Ok(filter) = std::env::var("EFR_LOG") {
            command.env("EFR_LOG", filter);
        }
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", self.binary.display()))?;
        self.child = Some(child);
        self.wait_ready()
    }

    /// Waits until the socket accepts for this efrd: the listener's pid (`SO_PEERCRED`) is its own, not that of a
    /// killed efrd whose listener a child forked at the kill (between its fork and its exec) still holds open.
    fn wait_ready(&mut self) -> Result<()> {
        let socket = self.socket();
        let deadline = Instant::now() + START_TIMEOUT;
        let pid = self.pid().and_then(|pid| i32::try_from(pid).ok());
        loop {
            if let Ok(stream) = std::os::unix::net::UnixStream::connect(&socket)
                && nix::sys::socket::getsockopt(&stream, nix::sys::socket::sockopt::PeerCredentials)
                    .is_ok_and(|peer| Some(peer.pid()) == pid)
            {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                bail!("efrd exited before it accepted ({status}); its log:\n{}", self.log());
            }
            if Instant::now() > deadline {
                bail!("efrd did not accept within {START_TIMEOUT:?}; its log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The socket path (`$EFR_HOME/run/daemon.sock`).
    #[must_use]
    pub fn socket(&self) -> PathBuf {
        self.home.join("run").join("daemon.sock")
    }

    /// The home folder.
    #[must_use]
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The daemon's pid, while it runs.
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// What efrd wrote to stderr so far (all its runs in this home).
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.home.join("efrd.log")).unwrap_or_default()
    }

    /// A connection that said hello.
    ///
    /// # Errors
    /// When the socket does not accept or hello fails.
    pub async fn client(&self) -> Result<Client> {
        match self.run_as {
            RunAs::User { uid, gid } if nix::unistd::geteuid().is_root() => {
                let stream = connect_as(&self.socket(), uid, gid)?;
                stream.set_nonblocking(true)?;
                Client::hello_on(tokio::net::UnixStream::from_std(stream)?).await
            }
            _ => Client::connect(&self.socket()).await,
        }
    }

    /// SIGKILL, then reap, then wait (at most [`START_TIMEOUT`]) until efrd's single-instance lock is free.
    ///
    /// The wait is what systemd gives a crashed service by killing its whole cgroup: a child efrd was starting at
    /// the kill, between its fork and its exec, still holds efrd's descriptors (the lock, the listener) until it
    /// runs its program, and an efrd started at once would find the lock held.
    ///
    /// # Errors
    /// When the signal cannot be sent, or the lock stays held.
    pub fn kill(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
            self.wait_lock_free()?;
        }
        Ok(())
    }

    /// Waits until nothing holds `$EFR_HOME/run/efrd.lock` (a lock taken here is dropped at once).
    fn wait_lock_free(&self) -> Result<()> {
        let path = self.home.join("run").join("efrd.lock");
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let Ok(file) = std::fs::File::open(&path) else {
                return Ok(());
            };
            if nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "{} is still held {START_TIMEOUT:?} after efrd was killed",
                    path.display()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The exit status when efrd has exited by itself, without waiting; `None` while it runs.
    ///
    /// # Errors
    /// When efrd was not started or was already reaped, or the status cannot be read.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        let Some(child) = self.child.as_mut() else {
            bail!("efrd is not running")
        };
        Ok(child.try_wait()?)
    }

    /// Waits at most `timeout` for efrd to exit by itself (no signal sent), and reaps it.
    ///
    /// # Errors
    /// When efrd does not exit in time (it is then killed) or was not running.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<ExitStatus> {
        self.reap(timeout, "did not exit by itself")
    }

    /// Waits at most `timeout` for the child to exit; past it, kills it and fails saying efrd `what`, with its log.
    fn reap(&mut self, timeout: Duration, what: &str) -> Result<ExitStatus> {
        let Some(mut child) = self.child.take() else {
            bail!("efrd is not running")
        };
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("efrd {what} within {timeout:?}; its log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then wait at most `timeout` for the exit.
    ///
    /// # Errors
    /// When efrd does not exit in time (it is then killed).
    pub fn stop(&mut self, timeout: Duration) -> Result<ExitStatus> {
        let Some(child) = &self.child else {
            bail!("efrd is not running")
        };
        let pid = i32::try_from(child.id())?;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM)?;
        self.reap(timeout, "did not stop after SIGTERM")
    }
}

/// A connection to `socket` made by `uid:gid`: efrd serves only its own user (`SO_PEERCRED`, taken at connect), so a
/// test run as root has a helper connect as that user (`setpriv` and Debian's `/usr/bin/python3`: a python of the root user's own, such as pyenv's, is out of its reach) and hand it the connected socket over
/// `SCM_RIGHTS`.
fn connect_as(socket: &Path, uid: u32, gid: u32) -> Result<std::os::unix::net::UnixStream> {
    use std::io::IoSliceMut;
    use std::os::fd::{FromRawFd, OwnedFd};

    const SEND: &str = "import socket, sys\n\
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
        s.connect(sys.argv[1])\n\
        socket.send_fds(socket.socket(fileno=0), [b'x'], [s.fileno()])\n";
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
    let out = Command::new("setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={gid}"))
        .arg("--clear-groups")
        .args(["/usr/bin/python3", "-c", SEND])
        .arg(socket)
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .output()
        .context("cannot run setpriv python3 (util-linux, python3)")?;
    if !out.status.success() {
        bail!(
            "connecting as {uid}:{gid} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut byte = [0u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!(std::os::fd::RawFd);
    let message = nix::sys::socket::recvmsg::<()>(
        std::os::fd::AsRawFd::as_raw_fd(&ours),
        &mut iov,
        Some(&mut space),
        nix::sys::socket::MsgFlags::empty(),
    )?;
    for cmsg in message.cmsgs()? {
        if let nix::sys::socket::ControlMessageOwned::ScmRights(fds) = cmsg
            && let Some(&fd) = fds.first()
        {
            // SAFETY: the kernel just gave this process the descriptor, and nothing else owns it.
            return Ok(unsafe { std::os::unix::net::UnixStream::from_raw_fd(fd) });
        }
    }
    bail!("the helper sent no socket")
}

/// Gives `path` and everything below it to `uid:gid` (`chown -R`, not following links).
fn chown_all(path: &Path, uid: u32, gid: u32) -> Result<()> {
    let status = Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{gid}"))
        .arg(path)
        .status()
        .context("cannot run chown")?;
    if !status.success() {
        bail!("chown -R {uid}:{gid} {} failed ({status})", path.display());
    }
    Ok(())
}

/// The most lines of efrd's log that a failing test prints.
const LOG_TAIL: usize = 200;

impl Drop for TestDaemon {
    /// Stops efrd; when the test is failing (dropped while it panics), prints the end of efrd's log, which the test
    /// harness shows with the failure: a timeout alone does not say what efrd was doing.
    fn drop(&mut self) {
        let _ = self.kill();
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL)..];
            eprintln!(
                "efrd's log ({} of {} lines):\n{}",
                tail.len(),
                lines.len(),
                tail.join("\n")
            );
        }
    }
}

/// A `config.toml` whose providers all point at `base_url` (the scripted model server), and which allows full mode,
/// also as root (the tests run as root; docs/adr/0029-full-mode.md). It ends with its `[permissions]` table, so a
/// test adds keys of that table by appending them (`config_for(url) + "question_limit_secs = 1\n"`); another
/// `[permissions]` header would be a second table, which TOML refuses.
#[must_use]
pub fn config_for(base_url: &str) -> String {
    format!(
        "[model]\nprovider = \"openai-api\"\nmodel = \"gpt-5\"\n\n\
         [providers.openai-api]\nbase_url = \"{base_url}\"\nretry = {{ max_attempts = 2 }}\n\n\
         [providers.anthropic-api]\nbase_url = \"{base_url}\"\n\n\
         [providers.openai-compat]\nbase_url = \"{base_url}\"\n\n\
         [permissions]\nallow_full = true\nallow_full_as_root = true\n"
    )
}
