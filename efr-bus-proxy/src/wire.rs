//! The framing of a D-Bus connection: bytes and passed descriptors in, whole messages out.
//!
//! Only the framing is done here (the 16-byte fixed header gives the length of a message, D-Bus specification,
//! "Message Format"); the header is read and checked by [`crate::header`], and zbus's message types parse the whole
//! message only when the filter needs more than its header ([`Incoming::parsed`]). A message longer than the connection's limit is an error before any of it is buffered past the
//! header, so memory stays bounded by the limit.

use std::collections::VecDeque;
use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};
use tokio::io::Interest;
use tokio::net::UnixStream;
use zbus::message::{Message, Type};
use zbus::zvariant::{Endian, serialized};

use crate::header::Layout;

/// The fixed part of a message's header: endianness, type, flags, version, body length, serial, fields length.
const FIXED_HEADER: usize = 16;

/// Bytes read from the socket at a time, into a buffer of each connection's side kept for its life (allocating and
/// zeroing it at each read cost more than the rest of a small message's relay).
const READ_CHUNK: usize = 16 * 1024;

/// The most descriptors one message may carry (dbus-daemon's default is 16 too).
pub const MAX_FDS: usize = 16;

/// Why a connection's stream of messages ended badly.
#[derive(Debug)]
pub enum WireError {
    /// The socket failed.
    Io(std::io::Error),
    /// The peer closed in the middle of a message (or of the authentication).
    ClosedMidMessage,
    /// A message announced more than the limit.
    TooLarge {
        /// The announced length in bytes.
        len: u64,
        /// The limit in bytes.
        max: usize,
    },
    /// Bytes that are not a D-Bus message.
    Malformed(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(error) => write!(f, "{error}"),
            Self::ClosedMidMessage => f.write_str("closed in the middle of a message"),
            Self::TooLarge { len, max } => write!(f, "a message of {len} bytes is over the limit of {max}"),
            Self::Malformed(why) => write!(f, "not a D-Bus message: {why}"),
        }
    }
}

impl From<std::io::Error> for WireError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

/// A message read: its bytes, its header as [`Layout`] read it, and zbus's parse of the whole message, made when first
/// asked for (the body of a call to the bus driver, an answer the proxy makes); most messages pass without it.
#[derive(Debug)]
pub struct Incoming {
    bytes: Vec<u8>,
    layout: Layout,
    parsed: std::sync::OnceLock<Option<Message>>,
}

impl Incoming {
    /// Reads the header of a whole message.
    ///
    /// # Errors
    /// [`WireError::Malformed`]: a header against the rules [`Layout::of`] checks.
    pub fn new(bytes: Vec<u8>) -> Result<Self, WireError> {
        let layout = Layout::of(&bytes).map_err(WireError::Malformed)?;
        Ok(Self {
            bytes,
            layout,
            parsed: std::sync::OnceLock::new(),
        })
    }

    /// The whole message, as it came.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its header.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Its type.
    #[must_use]
    pub fn message_type(&self) -> Type {
        self.layout.kind()
    }

    /// The serial of the call it answers.
    #[must_use]
    pub fn reply_serial(&self) -> Option<std::num::NonZeroU32> {
        self.layout.reply_serial()
    }

    /// Its object path.
    #[must_use]
    pub fn path(&self) -> Option<&str> {
        self.layout.path(&self.bytes)
    }

    /// Its interface.
    #[must_use]
    pub fn interface(&self) -> Option<&str> {
        self.layout.interface(&self.bytes)
    }

    /// Its member.
    #[must_use]
    pub fn member(&self) -> Option<&str> {
        self.layout.member(&self.bytes)
    }

    /// Its destination.
    #[must_use]
    pub fn destination(&self) -> Option<&str> {
        self.layout.destination(&self.bytes)
    }

    /// Its sender.
    #[must_use]
    pub fn sender(&self) -> Option<&str> {
        self.layout.sender(&self.bytes)
    }

    /// zbus's parse of the whole message, made at the first call; `None` when zbus refuses the bytes (the caller
    /// treats the message as malformed).
    pub fn parsed(&self) -> Option<&Message> {
        self.parsed
            .get_or_init(|| {
                let endian = if self.bytes[0] == b'B' {
                    Endian::Big
                } else {
                    Endian::Little
                };
                let data = serialized::Data::new(self.bytes.clone(), serialized::Context::new_dbus(endian, 0));
                // SAFETY: zbus parses and checks the header from the bytes; the body is only read through zbus's
                // checked deserializers. No descriptors are attached to the data, so no index in it can name a wrong
                // descriptor.
                unsafe { Message::from_bytes(data) }.ok()
            })
            .as_ref()
    }
}

/// A message on its way out of the proxy.
#[derive(Debug)]
pub enum Outgoing {
    /// A message read from one side, as the bytes it came as (renumbered in place), with its descriptors.
    Forwarded {
        /// The whole message.
        bytes: Vec<u8>,
        /// The descriptors that came with it, in order.
        fds: Vec<OwnedFd>,
    },
    /// A message the proxy wrote (an answer of its own, or one written anew), with its descriptors in it.
    Made(Message),
}

impl From<Message> for Outgoing {
    fn from(message: Message) -> Self {
        Self::Made(message)
    }
}

/// One side of a proxied connection: the socket, the bytes read but not yet taken, and the descriptors that came
/// with them.
#[derive(Debug)]
pub struct Conn {
    stream: UnixStream,
    buf: Vec<u8>,
    chunk: Box<[u8]>,
    fds: VecDeque<OwnedFd>,
    max_message: usize,
    closed: bool,
}

impl Conn {
    /// Wraps a connected socket; `max_message` bounds one message in bytes.
    #[must_use]
    pub fn new(stream: UnixStream, max_message: usize) -> Self {
        Self {
            stream,
            buf: Vec::new(),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            fds: VecDeque::new(),
            max_message,
            closed: false,
        }
    }

    /// The socket.
    #[must_use]
    pub fn stream(&self) -> &UnixStream {
        &self.stream
    }

    /// The bytes read and not taken yet (the authentication reads lines from here).
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Whether the peer has closed its end (and every byte before it has been read).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Reads once more from the socket into the buffer. Cancel-safe: what is read is stored before returning.
    ///
    /// # Errors
    /// The socket's error; more descriptors waiting than a message may carry.
    pub async fn read_more(&mut self) -> Result<usize, WireError> {
        let fd = self.stream.as_raw_fd();
        let chunk = &mut self.chunk;
        let (len, fds) = self
            .stream
            .async_io(Interest::READABLE, || recv(fd, &mut chunk[..]))
            .await?;
        self.buf.extend_from_slice(&self.chunk[..len]);
        self.fds.extend(fds);
        if len == 0 {
            self.closed = true;
        }
        if self.fds.len() > MAX_FDS * 4 {
            return Err(WireError::Malformed("too many descriptors passed".to_owned()));
        }
        Ok(len)
    }

    /// Reads the next whole message; `None` when the peer closed between messages.
    ///
    /// Cancel-safe: the bytes read stay in the buffer for the next call.
    ///
    /// # Errors
    /// [`WireError`]: the socket, a close in the middle of a message, a message over the limit or not parsable.
    pub async fn read_message(&mut self) -> Result<Option<(Incoming, Vec<OwnedFd>)>, WireError> {
        loop {
            if let Some(len) = frame_len(&self.buf, self.max_message)?
                && self.buf.len() >= len
            {
                return self.take_message(len).map(Some);
            }
            if self.closed {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(WireError::ClosedMidMessage)
                };
            }
            self.read_more().await?;
        }
    }

    fn take_message(&mut self, len: usize) -> Result<(Incoming, Vec<OwnedFd>), WireError> {
        let bytes: Vec<u8> = if self.buf.len() == len {
            std::mem::take(&mut self.buf)
        } else {
            self.buf.drain(..len).collect()
        };
        let message = Incoming::new(bytes)?;
        let wanted = message.layout().unix_fds() as usize;
        if wanted > MAX_FDS || wanted > self.fds.len() {
            return Err(WireError::Malformed(format!(
                "the message names {wanted} descriptors, {} came with it",
                self.fds.len()
            )));
        }
        let fds = self.fds.drain(..wanted).collect();
        Ok((message, fds))
    }

    /// Writes raw bytes (the authentication's lines).
    ///
    /// # Errors
    /// The socket's error.
    pub async fn write_raw(&self, bytes: &[u8]) -> std::io::Result<()> {
        self.send_bytes(bytes, &[]).await
    }

    /// Writes a message and the descriptors that go with it.
    ///
    /// # Errors
    /// The socket's error.
    pub async fn send(&self, message: &Message) -> std::io::Result<()> {
        let fds: Vec<RawFd> = message.data().fds().iter().map(AsRawFd::as_raw_fd).collect();
        self.send_bytes(message.data().bytes(), &fds).await
    }

    /// Writes an outgoing message: its bytes and its descriptors.
    ///
    /// # Errors
    /// The socket's error.
    pub async fn send_out(&self, out: &Outgoing) -> std::io::Result<()> {
        match out {
            Outgoing::Forwarded { bytes, fds } => {
                let fds: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
                self.send_bytes(bytes, &fds).await
            }
            Outgoing::Made(message) => self.send(message).await,
        }
    }

    async fn send_bytes(&self, bytes: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
        let fd = self.stream.as_raw_fd();
        let mut sent = 0;
        while sent < bytes.len() {
            // Descriptors go with the first byte of the message.
            let with = if sent == 0 { fds } else { &[] };
            sent += self
                .stream
                .async_io(Interest::WRITABLE, || send(fd, &bytes[sent..], with))
                .await?;
        }
        Ok(())
    }
}

/// The length of the message at the start of `buf`, once its fixed header is there.
///
/// # Errors
/// A bad endianness mark or version, or a length over `max`.
pub fn frame_len(buf: &[u8], max: usize) -> Result<Option<usize>, WireError> {
    if buf.len() < FIXED_HEADER {
        return Ok(None);
    }
    let read_u32 = |at: usize| {
        let bytes = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
        match buf[0] {
            b'l' => Ok(u32::from_le_bytes(bytes)),
            b'B' => Ok(u32::from_be_bytes(bytes)),
            other => Err(WireError::Malformed(format!("endianness mark {other:#04x}"))),
        }
    };
    if buf[3] != 1 {
        return Err(WireError::Malformed(format!("protocol version {}", buf[3])));
    }
    let body = u64::from(read_u32(4)?);
    let fields = u64::from(read_u32(12)?);
    let header = (FIXED_HEADER as u64 + fields).next_multiple_of(8);
    let len = header + body;
    if len > max as u64 {
        return Err(WireError::TooLarge { len, max });
    }
    // Within `max`, which is a usize.
    Ok(Some(usize::try_from(len).unwrap_or(usize::MAX)))
}

fn recv(fd: RawFd, chunk: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = [IoSliceMut::new(chunk)];
    let mut space = nix::cmsg_space!([RawFd; MAX_FDS]);
    let message =
        recvmsg::<()>(fd, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC).map_err(std::io::Error::from)?;
    let mut fds = Vec::new();
    for cmsg in message.cmsgs().map_err(std::io::Error::from)? {
        if let ControlMessageOwned::ScmRights(raw) = cmsg {
            // SAFETY: the kernel just installed these descriptors in this process; nothing else owns them.
            fds.extend(raw.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }));
        }
    }
    Ok((message.bytes, fds))
}

fn send(fd: RawFd, bytes: &[u8], fds: &[RawFd]) -> std::io::Result<usize> {
    let iov = [IoSlice::new(bytes)];
    let rights = [ControlMessage::ScmRights(fds)];
    let cmsgs: &[ControlMessage<'_>] = if fds.is_empty() { &[] } else { &rights };
    sendmsg::<()>(fd, &iov, cmsgs, MsgFlags::MSG_NOSIGNAL, None).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_length_comes_from_the_fixed_header() {
        // A little-endian call: body 4 bytes, fields 13 bytes: header 16 + 13 = 29, padded to 32, plus 4.
        let mut header = vec![b'l', 1, 0, 1, 4, 0, 0, 0, 1, 0, 0, 0, 13, 0, 0, 0];
        assert_eq!(frame_len(&header, 1024).ok().flatten(), Some(36));
        assert!(frame_len(&header[..15], 1024).ok().flatten().is_none());
        assert!(matches!(
            frame_len(&header, 35),
            Err(WireError::TooLarge { len: 36, max: 35 })
        ));
        header[0] = b'x';
        assert!(matches!(frame_len(&header, 1024), Err(WireError::Malformed(_))));
    }
}
