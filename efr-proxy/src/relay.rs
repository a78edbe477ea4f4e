//! A tunnel's bytes, both ways, once its checks are done (ADR 0010, "The order of checks", the last step).
//!
//! The bytes the checks read and held (the ClientHello and whatever came with it or after the request head) are
//! written to the host first, in order. Then each direction runs on its own, zero-copy: socket → pipe → socket with
//! splice(2), driven by tokio's readiness of the two sockets, so no byte passes through the proxy's memory.
//!
//! - **Half-close**: the end of one side's stream shuts down writing on the other side; the other direction goes
//!   on until its own end. The relay ends when both directions have ended, or at the first error of either
//!   (`EPIPE`, `ECONNRESET`): then both sockets are closed by their owner.
//! - **Counts**: exact, of what splice moved, as the byte-copy path counted them: bytes written to the host
//!   ([`Counts::sent`], the replayed bytes included) and bytes read from the host ([`Counts::received`]).
//! - **Pipes**: one per direction, made on the direction's first data and released after [`PIPE_IDLE`] without
//!   any, so an idle tunnel holds none. A pipe costs no memory of the proxy's own, but the kernel charges every
//!   pipe's capacity (16 pages) to its user at creation, against a per-user limit (`fs.pipe-user-pages-soft`, 64 MiB);
//!   past it, every new pipe of that user (their shells' included) gets two pages. Holding pipes only while data
//!   flows keeps a thousand idle tunnels from spending the user's allowance.
//! - **Fallback**: where splice is unavailable (`EINVAL`, `ENOSYS`, `EOPNOTSUPP`; `EPERM` from a seccomp filter
//!   around the proxy), or no pipe can be made (out of descriptors), that direction copies through a buffer of
//!   [`COPY_BUFFER`] bytes instead, with the same half-close, errors and counts. It is logged once per process and
//!   cause. Not a security boundary: both paths carry the same bytes.

use std::future::Future;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, SpliceFFlags, fcntl, splice};
use nix::sys::socket::{MsgFlags, Shutdown, send, shutdown};
use tokio::io::Interest;
use tokio::net::{TcpStream, UnixStream};

/// The size of each direction's copy buffer on the fallback path, in bytes: larger buffers mean fewer system calls
/// per byte (the bench measured 32 KiB at about a third of a direct copy); a buffer's pages are touched only as
/// data passes.
pub const COPY_BUFFER: usize = 64 * 1024;

/// How long a direction keeps its pipe without data before releasing it.
pub const PIPE_IDLE: Duration = Duration::from_secs(1);

/// The flags of every splice: move pages rather than copy them where the kernel can, and never block (the sockets
/// are non-blocking already; this makes the pipe so too).
const FLAGS: SpliceFFlags = SpliceFFlags::SPLICE_F_MOVE.union(SpliceFFlags::SPLICE_F_NONBLOCK);

/// A stream socket of the tunnel, driven by tokio's readiness: the client's Unix socket and the host's TCP socket.
pub trait Socket: AsFd + Sync {
    /// Waits until the socket may be read (tokio's `readable`).
    fn readable(&self) -> impl Future<Output = io::Result<()>> + Send;
    /// Waits until the socket may be written (tokio's `writable`).
    fn writable(&self) -> impl Future<Output = io::Result<()>> + Send;
    /// Runs `f` on the socket; a `WouldBlock` from `f` clears the readiness (tokio's `try_io`).
    ///
    /// # Errors
    /// `f`'s error, or `WouldBlock` when the socket is not ready.
    fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R>;
}

macro_rules! socket {
    ($type:ty) => {
        impl Socket for $type {
            fn readable(&self) -> impl Future<Output = io::Result<()>> + Send {
                <$type>::readable(self)
            }

            fn writable(&self) -> impl Future<Output = io::Result<()>> + Send {
                <$type>::writable(self)
            }

            fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
                <$type>::try_io(self, interest, f)
            }
        }
    };
}

socket!(UnixStream);
socket!(TcpStream);

/// The tunnel's byte counters.
#[derive(Debug, Clone, Copy)]
pub struct Counts<'a> {
    /// Bytes written to the host.
    pub sent: &'a AtomicU64,
    /// Bytes read from the host.
    pub received: &'a AtomicU64,
}

/// How a direction moves its bytes first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// splice(2) through a pipe, falling back to [`Way::Copy`] where it is unavailable.
    Splice,
    /// read(2) into a buffer and write(2) from it: what [`Way::Splice`] falls back to, chosen directly only by the
    /// tests of that path (no socket here refuses splice).
    #[cfg(test)]
    Copy,
}

/// Writes `first` to `host`, then relays both ways until both directions have ended or one fails.
///
/// # Errors
/// The first error of either direction, or of writing `first`.
pub async fn relay<C: Socket, H: Socket>(client: &C, host: &H, first: &[u8], counts: Counts<'_>) -> io::Result<()> {
    relay_by(client, host, first, counts, Way::Splice).await
}

async fn relay_by<C: Socket, H: Socket>(
    client: &C,
    host: &H,
    first: &[u8],
    counts: Counts<'_>,
    way: Way,
) -> io::Result<()> {
    write_all(host, first, Some(counts.sent)).await?;
    let up = Direction {
        from: client,
        to: host,
        read: None,
        written: Some(counts.sent),
    };
    let down = Direction {
        from: host,
        to: client,
        read: Some(counts.received),
        written: None,
    };
    tokio::try_join!(up.run(way), down.run(way))?;
    Ok(())
}

/// One direction of a tunnel and the counters it adds to.
struct Direction<'a, R, W> {
    from: &'a R,
    to: &'a W,
    /// Counts bytes read from `from`.
    read: Option<&'a AtomicU64>,
    /// Counts bytes written to `to`.
    written: Option<&'a AtomicU64>,
}

/// Why a direction left splice for the copy.
#[derive(Debug, Clone, Copy)]
enum Fallback {
    NoPipe(Errno),
    NoSplice(Errno),
}

impl<R: Socket, W: Socket> Direction<'_, R, W> {
    async fn run(&self, way: Way) -> io::Result<()> {
        if way == Way::Splice {
            match self.splice().await? {
                Some(fallback) => log_fallback(fallback),
                None => return Ok(()),
            }
        }
        self.copy().await
    }

    /// Splices until the end of `from` (then `Ok(None)`), an error, or splice turning out unavailable before
    /// anything was moved through the pipe it failed on.
    async fn splice(&self) -> io::Result<Option<Fallback>> {
        let mut pipe: Option<Pipe> = None;
        loop {
            if pipe.is_some() {
                tokio::select! {
                    biased;
                    ready = self.from.readable() => ready?,
                    () = tokio::time::sleep(PIPE_IDLE) => {
                        pipe = None;
                        self.from.readable().await?;
                    }
                }
            } else {
                self.from.readable().await?;
            }
            let pipe = match &mut pipe {
                Some(pipe) => pipe,
                None => match Pipe::new() {
                    Ok(made) => pipe.insert(made),
                    Err(errno) => return Ok(Some(Fallback::NoPipe(errno))),
                },
            };
            let len = pipe.capacity;
            let moved = match self.from.try_io(Interest::READABLE, || {
                splice(self.from, None, &pipe.write, None, len, FLAGS).map_err(io::Error::from)
            }) {
                Ok(0) => return self.end().map(|()| None),
                Ok(moved) => moved,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) => {
                    return unavailable(&error)
                        .map(|errno| Some(Fallback::NoSplice(errno)))
                        .ok_or(error);
                }
            };
            add(self.read, moved);
            if let Some(errno) = self.drain(pipe, moved).await? {
                return Ok(Some(Fallback::NoSplice(errno)));
            }
        }
    }

    /// Splices the `held` bytes of `pipe` to `to`. When splice to `to` is unavailable, the bytes are read out of the
    /// pipe and written instead, and the errno returned.
    async fn drain(&self, pipe: &Pipe, mut held: usize) -> io::Result<Option<Errno>> {
        while held > 0 {
            self.to.writable().await?;
            match self.to.try_io(Interest::WRITABLE, || {
                splice(&pipe.read, None, self.to, None, held, FLAGS).map_err(io::Error::from)
            }) {
                Ok(moved) => {
                    held -= moved;
                    add(self.written, moved);
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => {
                    let errno = unavailable(&error).ok_or(error)?;
                    let mut bytes = vec![0_u8; held];
                    let n = nix::unistd::read(&pipe.read, &mut bytes).map_err(io::Error::from)?;
                    write_all(self.to, &bytes[..n], self.written).await?;
                    return Ok(Some(errno));
                }
            }
        }
        Ok(None)
    }

    /// Copies through a buffer until the end of `from`.
    async fn copy(&self) -> io::Result<()> {
        let mut buffer = vec![0_u8; COPY_BUFFER];
        loop {
            self.from.readable().await?;
            let n = match self.from.try_io(Interest::READABLE, || {
                nix::unistd::read(self.from, &mut buffer).map_err(io::Error::from)
            }) {
                Ok(0) => return self.end(),
                Ok(n) => n,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
                Err(error) => return Err(error),
            };
            add(self.read, n);
            write_all(self.to, &buffer[..n], self.written).await?;
        }
    }

    /// The end of `from`'s stream: no more writing to `to`.
    fn end(&self) -> io::Result<()> {
        shutdown(self.to.as_fd().as_raw_fd(), Shutdown::Write).map_err(io::Error::from)
    }
}

/// Writes all of `bytes` to `to`, counting them.
async fn write_all<W: Socket>(to: &W, mut bytes: &[u8], count: Option<&AtomicU64>) -> io::Result<()> {
    while !bytes.is_empty() {
        to.writable().await?;
        match to.try_io(Interest::WRITABLE, || {
            send(to.as_fd().as_raw_fd(), bytes, MsgFlags::MSG_NOSIGNAL).map_err(io::Error::from)
        }) {
            Ok(n) => {
                add(count, n);
                bytes = &bytes[n..];
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

fn add(count: Option<&AtomicU64>, n: usize) {
    if let Some(count) = count {
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// The errno of a splice that is unavailable for these descriptors, rather than failed.
fn unavailable(error: &io::Error) -> Option<Errno> {
    let errno = Errno::from_raw(error.raw_os_error()?);
    matches!(errno, Errno::EINVAL | Errno::ENOSYS | Errno::EOPNOTSUPP | Errno::EPERM).then_some(errno)
}

/// Logs a direction's fallback to the copy, once per process and cause.
fn log_fallback(fallback: Fallback) {
    static NO_PIPE: AtomicBool = AtomicBool::new(false);
    static NO_SPLICE: AtomicBool = AtomicBool::new(false);
    let (logged, what, errno) = match fallback {
        Fallback::NoPipe(errno) => (&NO_PIPE, "cannot make a pipe", errno),
        Fallback::NoSplice(errno) => (&NO_SPLICE, "splice is unavailable", errno),
    };
    if !logged.swap(true, Ordering::Relaxed) {
        eprintln!("efr-proxy: {what} ({errno}); tunnels copy through a buffer instead (logged once)");
    }
}

/// A pipe between two splices: non-blocking, close-on-exec.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    /// Its capacity in bytes: the most one splice into it moves.
    capacity: usize,
}

impl Pipe {
    fn new() -> Result<Self, Errno> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
        let capacity = fcntl(&write, FcntlArg::F_GETPIPE_SZ)?;
        Ok(Self {
            read,
            write,
            capacity: usize::try_from(capacity).map_err(|_| Errno::EINVAL)?,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

    use std::os::fd::AsFd;

    use tokio::io::unix::AsyncFd;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// The relay between a Unix socket pair's end (the client's side) and a loopback TCP connection's end (the
    /// host's side), run by `way`; the test holds the other ends.
    struct Tunnel {
        client: UnixStream,
        host: TcpStream,
        relay: tokio::task::JoinHandle<(io::Result<()>, u64, u64)>,
    }

    async fn tunnel(first: &'static [u8], way: Way) -> Tunnel {
        let (client, proxy_client) = UnixStream::pair().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (proxy_host, accepted) =
            tokio::join!(TcpStream::connect(listener.local_addr().unwrap()), listener.accept());
        let host = accepted.unwrap().0;
        let proxy_host = proxy_host.unwrap();
        let relay = tokio::spawn(async move {
            let sent = AtomicU64::new(0);
            let received = AtomicU64::new(0);
            let counts = Counts {
                sent: &sent,
                received: &received,
            };
            let result = relay_by(&proxy_client, &proxy_host, first, counts, way).await;
            (result, sent.into_inner(), received.into_inner())
        });
        Tunnel { client, host, relay }
    }

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| u8::try_from(i % 251).unwrap() ^ seed).collect()
    }

    async fn both_ways(way: Way) {
        let Tunnel { client, host, relay } = tunnel(b"first bytes", way).await;
        let up = pattern(5 << 20, 0x5a);
        let down = pattern(3 << 20, 0xa5);
        let (mut client_read, mut client_write) = client.into_split();
        let (mut host_read, mut host_write) = host.into_split();
        let (got_up, got_down, (), ()) = tokio::join!(
            async {
                let mut bytes = Vec::new();
                host_read.read_to_end(&mut bytes).await.unwrap();
                bytes
            },
            async {
                let mut bytes = Vec::new();
                client_read.read_to_end(&mut bytes).await.unwrap();
                bytes
            },
            async {
                client_write.write_all(&up).await.unwrap();
                client_write.shutdown().await.unwrap();
            },
            async {
                host_write.write_all(&down).await.unwrap();
                host_write.shutdown().await.unwrap();
            },
        );
        assert!(got_up.starts_with(b"first bytes"));
        assert!(
            got_up[11..] == up[..],
            "the host got the first bytes, then every byte in order ({way:?})"
        );
        assert!(got_down == down, "the client got every byte in order ({way:?})");
        let (result, sent, received) = relay.await.unwrap();
        result.unwrap();
        assert_eq!(sent, 11 + up.len() as u64);
        assert_eq!(received, down.len() as u64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn splice_carries_megabytes_both_ways_exactly_and_counts_them() {
        both_ways(Way::Splice).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_copy_carries_megabytes_both_ways_exactly_and_counts_them() {
        both_ways(Way::Copy).await;
    }

    async fn half_close(way: Way) {
        let Tunnel {
            mut client,
            mut host,
            relay,
        } = tunnel(b"", way).await;
        client.write_all(b"question").await.unwrap();
        client.shutdown().await.unwrap();
        let mut got = Vec::new();
        host.read_to_end(&mut got).await.unwrap();
        assert_eq!(
            got, b"question",
            "the end of the client's side reaches the host ({way:?})"
        );
        host.write_all(b"answer").await.unwrap();
        host.shutdown().await.unwrap();
        got.clear();
        client.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"answer", "the other direction goes on ({way:?})");
        assert_eq!(relay.await.unwrap().0.unwrap(), ());
    }

    #[tokio::test]
    async fn half_close_ends_one_direction_and_the_other_goes_on() {
        half_close(Way::Splice).await;
        half_close(Way::Copy).await;
    }

    async fn reset(way: Way) {
        let Tunnel {
            mut client,
            host,
            relay,
        } = tunnel(b"", way).await;
        client.write_all(&pattern(64 << 10, 1)).await.unwrap();
        host.set_zero_linger().unwrap();
        drop(host);
        let writes = async {
            loop {
                if client.write_all(&pattern(64 << 10, 2)).await.is_err() {
                    break;
                }
            }
        };
        let (ended, ()) = tokio::join!(relay, writes);
        let error = ended.unwrap().0.unwrap_err();
        assert!(
            matches!(error.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe),
            "{error} ({way:?})"
        );
    }

    #[tokio::test]
    async fn a_reset_ends_the_relay_with_its_error() {
        reset(Way::Splice).await;
        reset(Way::Copy).await;
    }

    #[test]
    fn only_an_unsupported_splice_falls_back() {
        for errno in [Errno::EINVAL, Errno::ENOSYS, Errno::EOPNOTSUPP, Errno::EPERM] {
            assert_eq!(unavailable(&io::Error::from(errno)), Some(errno));
        }
        for errno in [Errno::EPIPE, Errno::ECONNRESET, Errno::EAGAIN, Errno::ENOMEM] {
            assert_eq!(unavailable(&io::Error::from(errno)), None);
        }
        assert_eq!(unavailable(&io::Error::other("not an errno")), None);
    }

    /// An eventfd: a descriptor the kernel refuses to splice from (`EINVAL`), read as a socket would be.
    struct EventFd(AsyncFd<OwnedFd>);

    impl AsFd for EventFd {
        fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
            self.0.as_fd()
        }
    }

    impl Socket for EventFd {
        async fn readable(&self) -> io::Result<()> {
            self.0.readable().await.map(|mut guard| guard.retain_ready())
        }

        async fn writable(&self) -> io::Result<()> {
            self.0.writable().await.map(|mut guard| guard.retain_ready())
        }

        fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
            self.0.try_io(interest, |_| f())
        }
    }

    #[tokio::test]
    async fn a_descriptor_splice_refuses_is_copied_instead() {
        // SAFETY: eventfd returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        assert!(fd >= 0, "{}", io::Error::last_os_error());
        // SAFETY: the descriptor was just made and nothing else owns it.
        let owned = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        // SAFETY: the AsyncFd owns the descriptor, so it stays open and the same while registered.
        let event = EventFd(unsafe { AsyncFd::register(owned) }.map_err(|e| e.to_string()).unwrap());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (proxy_host, accepted) =
            tokio::join!(TcpStream::connect(listener.local_addr().unwrap()), listener.accept());
        let (mut host, proxy_host) = (accepted.unwrap().0, proxy_host.unwrap());
        nix::unistd::write(event.as_fd(), &0x0102_0304_0506_0708_u64.to_ne_bytes()).unwrap();
        let pipe = Pipe::new().unwrap();
        assert_eq!(
            splice(&event, None, &pipe.write, None, 8, FLAGS),
            Err(Errno::EINVAL),
            "the kernel refuses to splice from an eventfd"
        );
        let read = AtomicU64::new(0);
        let direction = Direction {
            from: &event,
            to: &proxy_host,
            read: Some(&read),
            written: None,
        };
        let mut got = [0_u8; 8];
        tokio::select! {
            ended = direction.run(Way::Splice) => panic!("the direction ended: {ended:?}"),
            got = host.read_exact(&mut got) => { got.unwrap(); }
        }
        assert_eq!(
            u64::from_ne_bytes(got),
            0x0102_0304_0506_0708,
            "the copy carried what splice refused"
        );
        assert_eq!(read.load(Ordering::Relaxed), 8);
    }
}
