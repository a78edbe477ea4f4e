//! Port forwards of contained jobs (docs/jobs.md, "Port forwards"; spec, "port forwards of contained jobs").
//!
//! A contained job has a network namespace of its own: a dev server it starts on `127.0.0.1:8000` is out of the
//! user's reach. While such a job runs, its [`Forwarder`] looks every [`POLL`] at the TCP ports that the sandbox
//! listens on (the namespace's `/proc/<pid>/net/tcp` and `tcp6`: loopback and wildcard addresses), and for each new
//! one decides, in this order: a port below 1024 is `refused`; a port another job forwards is `in_use` (with
//! `by_job` when that job is of the same conversation); one of efrd's own listeners is `refused`; a job that holds
//! [`MAX_FORWARDS`] forwards gets `limit`; a port that another program holds on the host is `in_use`; else efrd
//! listens on the same address and port on the host and the port is `forwarded`. A forward that the job stops
//! listening on, and every forward at the job's end, is `stopped`. Each outcome is recorded once as
//! job_port_forwarded (a port that goes away and comes back is decided again).
//!
//! Only the listeners that the sandbox's own processes hold count. Finding them means walking `/proc` for the job's
//! processes and their sockets, so a poll does it only when a listening socket is new or the process it reads the
//! namespace through has gone; otherwise a poll reads two small files.
//!
//! Each host connection is carried to the job through a socket made inside the sandbox's namespace by
//! `efr-launcher sockets` (efrd cannot enter the namespace itself: efr-launcher's `sockets` module says why), then
//! connected by efrd and copied both ways.

use std::collections::{HashMap, HashSet};
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use efr_protocol::events::{EventBody, JobPortForwarded};
use efr_protocol::ids::ConversationId;
use efr_protocol::wire::{ForwardOutcome, JobForward, JobId, JobInfo};
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use super::JobSink;

/// The most ports efrd forwards for one job.
pub const MAX_FORWARDS: usize = 8;
/// How often a running contained job's listening ports are read.
pub const POLL: Duration = Duration::from_millis(250);
/// Ports below this are service ports: never forwarded.
const FIRST_USER_PORT: u16 = 1024;

/// The host addresses that jobs forward, across conversations, and the job that holds each.
pub type Held = Arc<Mutex<HashMap<SocketAddr, (ConversationId, JobId)>>>;

/// What a forwarder needs of its job.
pub(super) struct ForwardJob {
    /// `efr-launcher`, which makes the sockets inside the sandbox.
    pub launcher: PathBuf,
    /// The job's first process (the launcher's outer stage); the sandbox is among its descendants.
    pub pid: u32,
    pub conversation_id: ConversationId,
    pub job_id: JobId,
    /// The job's info, whose `forwards` the forwarder keeps.
    pub info: Arc<Mutex<JobInfo>>,
    pub sink: Arc<dyn JobSink>,
    pub held: Held,
}

/// The running forwards of one job.
pub(super) struct Forwarder {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Forwarder {
    /// Starts following the job's listening ports.
    pub(super) fn start(job: ForwardJob) -> Self {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(follow(job, stopped));
        Self { stop, task }
    }

    /// Ends every forward (each recorded `stopped`) and waits until that is done.
    pub(super) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// A forward that runs: its host listener's task (with its connections).
struct Active {
    serving: JoinHandle<()>,
}

async fn follow(job: ForwardJob, mut stopped: oneshot::Receiver<()>) {
    let mut maker: Option<Arc<Maker>> = None;
    let mut active: HashMap<SocketAddr, Active> = HashMap::new();
    let mut told: HashSet<SocketAddr> = HashSet::new();
    let mut seen = Seen::default();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            () = tokio::time::sleep(POLL) => {}
        }
        let Some((sandbox, listening)) = seen.listeners(job.pid) else {
            continue;
        };
        let gone: Vec<SocketAddr> = active.keys().filter(|a| !listening.contains(a)).copied().collect();
        for addr in gone {
            if let Some(forward) = active.remove(&addr) {
                end(&job, addr, forward).await;
            }
        }
        told.retain(|addr| listening.contains(addr));
        for addr in listening {
            if active.contains_key(&addr) || told.contains(&addr) {
                continue;
            }
            let decided = decide(&job, addr, active.len());
            let (outcome, by_job, reason) = match decided {
                Decision::Forward(listener) => match made(&mut maker, &job.launcher, sandbox) {
                    Ok(maker) => {
                        let serving = tokio::spawn(serve(listener, addr, maker));
                        active.insert(addr, Active { serving });
                        super::lock(&job.held).insert(addr, (job.conversation_id, job.job_id.clone()));
                        super::lock(&job.info).forwards.push(forward_of(addr));
                        (ForwardOutcome::Forwarded, None, None)
                    }
                    Err(why) => (ForwardOutcome::Refused, None, Some(why)),
                },
                Decision::Not(outcome, by_job, reason) => (outcome, by_job, reason),
            };
            if outcome != ForwardOutcome::Forwarded {
                told.insert(addr);
            }
            record(&job, addr, outcome, by_job, reason).await;
        }
    }
    for (addr, forward) in active.drain() {
        end(&job, addr, forward).await;
    }
}

/// Ends one forward: its listener and connections, its place in `held` and the job's info; records `stopped`.
async fn end(job: &ForwardJob, addr: SocketAddr, forward: Active) {
    forward.serving.abort();
    let _ = forward.serving.await;
    super::lock(&job.held).remove(&addr);
    super::lock(&job.info).forwards.retain(|f| f != &forward_of(addr));
    record(job, addr, ForwardOutcome::Stopped, None, None).await;
}

async fn record(
    job: &ForwardJob,
    addr: SocketAddr,
    outcome: ForwardOutcome,
    by_job: Option<JobId>,
    reason: Option<String>,
) {
    let body = EventBody::JobPortForwarded(JobPortForwarded {
        job_id: job.job_id.clone(),
        listen: addr.ip().to_string(),
        port: addr.port(),
        outcome,
        by_job,
        reason,
    });
    if let Err(error) = job.sink.record_as(None, vec![body]).await {
        tracing::warn!(error = %error.message, "a port forward's outcome could not be recorded");
    }
}

fn forward_of(addr: SocketAddr) -> JobForward {
    JobForward {
        listen: addr.ip().to_string(),
        port: addr.port(),
    }
}

/// What becomes of a port the sandbox listens on.
enum Decision {
    Forward(tokio::net::TcpListener),
    Not(ForwardOutcome, Option<JobId>, Option<String>),
}

fn decide(job: &ForwardJob, addr: SocketAddr, forwarded: usize) -> Decision {
    if addr.port() < FIRST_USER_PORT {
        return Decision::Not(
            ForwardOutcome::Refused,
            None,
            Some(format!("a service port (below {FIRST_USER_PORT})")),
        );
    }
    // Before efrd's own listeners: a forward's host side is one of them.
    let holder = super::lock(&job.held).get(&addr).cloned();
    if let Some((conversation, holder)) = holder {
        let by_job = (conversation == job.conversation_id).then_some(holder);
        return Decision::Not(ForwardOutcome::InUse, by_job, None);
    }
    if own_listener(addr.port()) {
        return Decision::Not(
            ForwardOutcome::Refused,
            None,
            Some("one of efr's own listeners".to_owned()),
        );
    }
    if forwarded >= MAX_FORWARDS {
        return Decision::Not(
            ForwardOutcome::Limit,
            None,
            Some(format!("efr forwards at most {MAX_FORWARDS} ports of one job")),
        );
    }
    let bound = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(tokio::net::TcpListener::from_std);
    match bound {
        Ok(listener) => Decision::Forward(listener),
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => Decision::Not(ForwardOutcome::InUse, None, None),
        Err(e) => Decision::Not(
            ForwardOutcome::Refused,
            None,
            Some(format!("the host cannot listen on {addr}: {e}")),
        ),
    }
}

/// The job's socket maker, started on first need.
fn made(maker: &mut Option<Arc<Maker>>, launcher: &std::path::Path, sandbox: u32) -> Result<Arc<Maker>, String> {
    if let Some(maker) = maker.as_ref().filter(|m| m.alive()) {
        return Ok(Arc::clone(maker));
    }
    let started = Arc::new(Maker::start(launcher, sandbox)?);
    *maker = Some(Arc::clone(&started));
    Ok(started)
}

/// Accepts host connections on `listener` and carries each to `target` in the sandbox, until aborted (which ends
/// its connections too).
async fn serve(listener: tokio::net::TcpListener, target: SocketAddr, maker: Arc<Maker>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((mut outside, _)) = accepted else {
                    // Out of descriptors, say: wait a little rather than spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let maker = Arc::clone(&maker);
                connections.spawn(async move {
                    match maker.connect(target).await {
                        Ok(mut inside) => {
                            let _ = tokio::io::copy_bidirectional(&mut outside, &mut inside).await;
                        }
                        Err(error) => tracing::debug!(%error, %target, "a forwarded connection could not reach the job"),
                    }
                });
            }
            Some(_) = connections.join_next() => {}
        }
    }
}

/// `efr-launcher sockets` for one sandbox, and efrd's end of its socket pair.
struct Maker {
    child: Mutex<tokio::process::Child>,
    control: Arc<Mutex<UnixStream>>,
}

impl Maker {
    fn start(launcher: &std::path::Path, sandbox: u32) -> Result<Self, String> {
        let (ours, theirs) = UnixStream::pair().map_err(|e| format!("cannot make a socket pair: {e}"))?;
        let child = tokio::process::Command::new(launcher)
            .args(["sockets", "--pid", &sandbox.to_string()])
            .stdin(std::process::Stdio::from(OwnedFd::from(theirs)))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start {} sockets: {e}", launcher.display()))?;
        Ok(Self {
            child: Mutex::new(child),
            control: Arc::new(Mutex::new(ours)),
        })
    }

    fn alive(&self) -> bool {
        matches!(super::lock(&self.child).try_wait(), Ok(None))
    }

    /// A TCP connection to `target` in the sandbox's namespace.
    async fn connect(&self, target: SocketAddr) -> io::Result<tokio::net::TcpStream> {
        let control = Arc::clone(&self.control);
        let family = if target.is_ipv6() { b'6' } else { b'4' };
        let fd = tokio::task::spawn_blocking(move || ask(&super::lock(&control), family))
            .await
            .map_err(io::Error::other)??;
        let socket = std::net::TcpStream::from(fd);
        socket.set_nonblocking(true)?;
        tokio::net::TcpSocket::from_std_stream(socket).connect(target).await
    }
}

/// Sends one request byte and receives the socket that answers it.
fn ask(control: &UnixStream, family: u8) -> io::Result<OwnedFd> {
    nix::sys::socket::send(control.as_raw_fd(), &[family], MsgFlags::empty())?;
    let mut byte = [0_u8; 1];
    let mut iov = [IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 1]);
    let message = recvmsg::<()>(
        control.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    for cmsg in message.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg
            && let Some(&fd) = fds.first()
        {
            // SAFETY: the kernel just gave this process the descriptor; nothing else owns it.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
    }
    Err(io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "the socket maker sent no socket (it ended)",
    ))
}

/// The network namespace of `pid`, as (device, inode).
fn net_ns(pid: &str) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(format!("/proc/{pid}/ns/net")).ok()?;
    Some((meta.dev(), meta.ino()))
}

/// What a job's forwarder knows of its sandbox between polls, so that a poll reads two small files and walks
/// `/proc` only when the sandbox process it reads through has gone or a listener's socket is new.
#[derive(Default)]
struct Seen {
    /// A process inside the sandbox, and the sandbox's network namespace (a pid given again to another process
    /// does not pass for it).
    pid: Option<(u32, (u64, u64))>,
    /// The sockets that the sandbox's processes held at the last walk.
    ours: HashSet<u64>,
    /// Listening sockets that no process inside held at a walk after they appeared: the proxy bridge's, which the
    /// launcher's outer stage holds outside (ADR 0011), is the way out of the sandbox, not a port of the job.
    foreign: HashSet<u64>,
}

impl Seen {
    /// A process inside the sandbox of the job whose first process is `root`, and the loopback addresses (a
    /// wildcard counts as its family's loopback) with a listening TCP socket of the sandbox's own processes; `None`
    /// while the sandbox has no process.
    fn listeners(&mut self, root: u32) -> Option<(u32, HashSet<SocketAddr>)> {
        let own = net_ns("self")?;
        let mut walked = false;
        let pid = match self.pid.filter(|(pid, ns)| net_ns(&pid.to_string()) == Some(*ns)) {
            Some((pid, _)) => pid,
            None => {
                self.walk(root, own)?;
                walked = true;
                self.pid?.0
            }
        };
        let lines = listening_sockets(pid);
        let new = |seen: &Self| {
            lines
                .iter()
                .any(|(_, inode)| !seen.ours.contains(inode) && !seen.foreign.contains(inode))
        };
        if new(self) && !walked {
            self.walk(root, own)?;
        }
        for (_, inode) in &lines {
            if !self.ours.contains(inode) {
                self.foreign.insert(*inode);
            }
        }
        let found = lines
            .into_iter()
            .filter(|(_, inode)| self.ours.contains(inode))
            .map(|(addr, _)| addr)
            .collect();
        Some((pid, found))
    }

    /// Walks `/proc` for the descendants of `root` in another network namespace than `own` (efrd's): the sandbox's
    /// processes, and the sockets they hold. `None` (and nothing kept) while there is none.
    fn walk(&mut self, root: u32, own: (u64, u64)) -> Option<()> {
        let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // The parent is the second field after the command's closing parenthesis.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            if let Some(ppid) = ppid {
                children.entry(ppid).or_default().push(pid);
            }
        }
        let mut inside = Vec::new();
        let mut queue = vec![root];
        while let Some(pid) = queue.pop() {
            if pid != root && net_ns(&pid.to_string()).is_some_and(|ns| ns != own) {
                inside.push(pid);
            }
            queue.extend(children.get(&pid).into_iter().flatten());
        }
        let Some((first, ns)) = inside.first().and_then(|&pid| Some((pid, net_ns(&pid.to_string())?))) else {
            self.pid = None;
            return None;
        };
        self.pid = Some((first, ns));
        self.ours = inside.iter().flat_map(|pid| socket_inodes(&pid.to_string())).collect();
        Some(())
    }
}

/// The inodes of the sockets that process `pid` (or `self`) holds.
fn socket_inodes(pid: &str) -> HashSet<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return HashSet::new();
    };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| link.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok())
        .collect()
}

/// The loopback and wildcard listening TCP sockets in the network namespace of `pid`, with their inodes.
fn listening_sockets(pid: u32) -> Vec<(SocketAddr, u64)> {
    let mut found = Vec::new();
    for (file, v6) in [("tcp", false), ("tcp6", true)] {
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")) {
            found.extend(listening_lines(&text, v6));
        }
    }
    found
}

/// The listening sockets of a `/proc/net/tcp` (or `tcp6`) text on loopback or wildcard addresses (each as its
/// family's loopback), with their inodes.
fn listening_lines(text: &str, v6: bool) -> Vec<(SocketAddr, u64)> {
    all_listening(text, v6)
        .into_iter()
        .filter_map(|(addr, inode)| {
            let ip = match addr.ip() {
                IpAddr::V4(v4) if v4.is_loopback() || v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V6(v6) if v6.is_loopback() || v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
                _ => return None,
            };
            Some((SocketAddr::new(ip, addr.port()), inode))
        })
        .collect()
}

/// Every listening socket of a `/proc/net/tcp` (or `tcp6`) text: its address and inode.
fn all_listening(text: &str, v6: bool) -> Vec<(SocketAddr, u64)> {
    const LISTEN: &str = "0A";
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(3) != Some(&LISTEN) {
                return None;
            }
            let (ip, port) = fields.get(1)?.split_once(':')?;
            let port = u16::from_str_radix(port, 16).ok()?;
            let ip = if v6 { parse_v6(ip)? } else { parse_v4(ip)? };
            let inode = fields.get(9)?.parse().ok()?;
            Some((SocketAddr::new(ip, port), inode))
        })
        .collect()
}

/// An IPv4 address as `/proc/net/tcp` writes it: one 32-bit word in host (little-endian) order.
fn parse_v4(hex: &str) -> Option<IpAddr> {
    let word = u32::from_str_radix(hex, 16).ok()?;
    Some(IpAddr::V4(Ipv4Addr::from(word.swap_bytes())))
}

/// An IPv6 address as `/proc/net/tcp6` writes it: four 32-bit words, each in host order.
fn parse_v6(hex: &str) -> Option<IpAddr> {
    if hex.len() != 32 {
        return None;
    }
    let mut bytes = [0_u8; 16];
    for word in 0..4 {
        let value = u32::from_str_radix(&hex[word * 8..word * 8 + 8], 16).ok()?;
        bytes[word * 4..word * 4 + 4].copy_from_slice(&value.to_le_bytes());
    }
    Some(IpAddr::V6(Ipv6Addr::from(bytes)))
}

/// efrd itself listens on `port` on the host (the tailnet listener, or any other of its sockets).
fn own_listener(port: u16) -> bool {
    let own = socket_inodes("self");
    [("tcp", false), ("tcp6", true)].iter().any(|(file, v6)| {
        std::fs::read_to_string(format!("/proc/self/net/{file}")).is_ok_and(|text| {
            all_listening(&text, *v6)
                .iter()
                .any(|(addr, inode)| addr.port() == port && own.contains(inode))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_net_tcp_lines_give_loopback_and_wildcard_listeners_only() {
        let v4 = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                  0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1\n\
                  1: 00000000:1F41 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 112 1\n\
                  2: 0100007F:1F42 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 113 1\n\
                  3: 0101A8C0:1F43 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 114 1\n";
        let found = listening_lines(v4, false);
        let localhost = IpAddr::V4(Ipv4Addr::LOCALHOST);
        assert_eq!(
            found,
            vec![
                (SocketAddr::new(localhost, 8000), 111),
                (SocketAddr::new(localhost, 8001), 112)
            ],
            "a connected socket and one on 192.168.1.1 are not listeners to forward"
        );
        let v6 = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                  0: 00000000000000000000000001000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 211 1\n\
                  1: 00000000000000000000000000000000:1F41 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 212 1\n";
        let localhost = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert_eq!(
            listening_lines(v6, true),
            vec![
                (SocketAddr::new(localhost, 8000), 211),
                (SocketAddr::new(localhost, 8001), 212)
            ]
        );
    }

    #[derive(Debug)]
    struct NoSink;

    impl JobSink for NoSink {
        fn record_as(
            &self,
            _: Option<efr_protocol::ids::TurnId>,
            _: Vec<EventBody>,
        ) -> super::super::SinkFuture<'_, Result<u64, efr_protocol::ErrorBody>> {
            Box::pin(async { Ok(1) })
        }

        fn notice(&self, _: super::super::Notice) -> super::super::SinkFuture<'_, ()> {
            Box::pin(async {})
        }
    }

    fn job(held: &Held, conversation: ConversationId) -> ForwardJob {
        let info: JobInfo = serde_json::from_value(serde_json::json!({
            "id": "j1", "conversation_id": conversation, "turn_id": efr_protocol::ids::TurnId::new(),
            "call_id": "call", "command": "serve", "launch": {"kind": "direct"}, "state": "running",
            "started_at": "2026-12-06T12:00:00Z", "ends_by": "2026-12-06T13:00:00Z", "output": "/tmp/j1.log",
            "output_bytes": 0, "wakes": 0
        }))
        .unwrap();
        ForwardJob {
            launcher: PathBuf::from("/nonexistent/efr-launcher"),
            pid: std::process::id(),
            conversation_id: conversation,
            job_id: JobId::nth(1),
            info: Arc::new(Mutex::new(info)),
            sink: Arc::new(NoSink),
            held: Arc::clone(held),
        }
    }

    fn outcome_of(decision: Decision) -> (ForwardOutcome, Option<JobId>, Option<String>) {
        match decision {
            Decision::Forward(_) => (ForwardOutcome::Forwarded, None, None),
            Decision::Not(outcome, by_job, reason) => (outcome, by_job, reason),
        }
    }

    #[tokio::test]
    async fn service_ports_own_listeners_held_ports_and_the_limit_are_not_forwarded() {
        let held = Held::default();
        let conversation = ConversationId::new();
        let job = job(&held, conversation);
        let at = |port| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
        let (outcome, _, reason) = outcome_of(decide(&job, at(22), 0));
        assert_eq!(outcome, ForwardOutcome::Refused);
        assert!(reason.unwrap().contains("service port"));

        let own = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let own_port = own.local_addr().unwrap().port();
        let (outcome, _, reason) = outcome_of(decide(&job, at(own_port), 0));
        assert_eq!(outcome, ForwardOutcome::Refused);
        assert!(reason.unwrap().contains("efr's own listeners"));

        let free = free_port();
        let (outcome, _, reason) = outcome_of(decide(&job, at(free), MAX_FORWARDS));
        assert_eq!(outcome, ForwardOutcome::Limit);
        assert!(reason.unwrap().contains(&MAX_FORWARDS.to_string()));

        lock(&held).insert(at(free), (conversation, JobId::nth(7)));
        assert_eq!(
            outcome_of(decide(&job, at(free), 0)),
            (ForwardOutcome::InUse, Some(JobId::nth(7)), None),
            "a job of the same conversation is named"
        );
        lock(&held).insert(at(free), (ConversationId::new(), JobId::nth(7)));
        assert_eq!(
            outcome_of(decide(&job, at(free), 0)),
            (ForwardOutcome::InUse, None, None),
            "another conversation's job is not"
        );
        lock(&held).clear();
        let decision = decide(&job, at(free), 0);
        assert!(matches!(decision, Decision::Forward(_)), "a free port is forwarded");
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap()
    }

    #[tokio::test]
    async fn a_port_efrd_listens_on_is_its_own_and_another_is_not() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        assert!(own_listener(port));
        drop(listener);
        assert!(!own_listener(port));
    }
}
