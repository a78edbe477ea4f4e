//! A reader that watches the frame headers of a client's WebSocket stream and fails at the first fragment.
//!
//! tungstenite joins fragmented messages itself and never tells, but the spec closes a connection that sends one
//! (docs/protocol.md, "Remote devices": a fragmented message closes the connection). The client's bytes pass through
//! unchanged; this reader only parses each frame's header (RFC 6455, section 5.2) to learn FIN and the opcode, and
//! skips the payload by its length.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Where the parser stands in the client's byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Collecting a header: the bytes so far, and how many it needs (2 at first, then all).
    Header { got: usize, need: usize },
    /// Skipping this many payload bytes.
    Payload(u64),
}

/// An I/O stream whose reads fail with `InvalidData` from the first byte after a fragmented data frame's header.
#[derive(Debug)]
pub struct NoFragments<S> {
    inner: S,
    state: State,
    header: [u8; 14],
    failed: bool,
}

impl<S> NoFragments<S> {
    /// Wraps the stream right after the handshake: its next byte starts a frame.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            state: State::Header { got: 0, need: 2 },
            header: [0; 14],
            failed: false,
        }
    }

    /// Feeds bytes the client sent; false at a fragment.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            match self.state {
                State::Payload(left) => {
                    let take = usize::try_from(left).unwrap_or(usize::MAX).min(bytes.len());
                    bytes = &bytes[take..];
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        State::Header { got: 0, need: 2 }
                    } else {
                        State::Payload(left)
                    };
                }
                State::Header { got, need } => {
                    let take = (need - got).min(bytes.len());
                    self.header[got..got + take].copy_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    let got = got + take;
                    if got < need {
                        self.state = State::Header { got, need };
                        continue;
                    }
                    let fin = self.header[0] & 0x80 != 0;
                    let opcode = self.header[0] & 0x0f;
                    // A continuation frame, or a data frame without FIN: a fragmented message.
                    if opcode == 0 || (!fin && opcode < 8) {
                        return false;
                    }
                    let masked = self.header[1] & 0x80 != 0;
                    let mask = if masked { 4 } else { 0 };
                    let (extended, full) = match self.header[1] & 0x7f {
                        126 => (2, 2 + 2 + mask),
                        127 => (8, 2 + 8 + mask),
                        _ => (0, 2 + mask),
                    };
                    if need < full {
                        self.state = State::Header { got, need: full };
                        continue;
                    }
                    let len = match extended {
                        2 => u64::from(u16::from_be_bytes([self.header[2], self.header[3]])),
                        8 => {
                            let mut be = [0_u8; 8];
                            be.copy_from_slice(&self.header[2..10]);
                            u64::from_be_bytes(be)
                        }
                        _ => u64::from(self.header[1] & 0x7f),
                    };
                    self.state = if len == 0 {
                        State::Header { got: 0, need: 2 }
                    } else {
                        State::Payload(len)
                    };
                }
            }
        }
        true
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for NoFragments<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.failed {
            return Poll::Ready(Err(fragmented()));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if this.feed(&buf.filled()[before..]) {
                    Poll::Ready(Ok(()))
                } else {
                    this.failed = true;
                    // Nothing of the fragment reaches tungstenite.
                    buf.set_filled(before);
                    Poll::Ready(Err(fragmented()))
                }
            }
            other => other,
        }
    }
}

fn fragmented() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "a fragmented message")
}

impl<S: AsyncWrite + Unpin> AsyncWrite for NoFragments<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A masked client frame with FIN as given.
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::from(fin) << 7 | opcode];
        match payload.len() {
            n if n < 126 => out.push(0x80 | u8::try_from(n).unwrap()),
            n if n < 65_536 => {
                out.push(0x80 | 126);
                out.extend_from_slice(&u16::try_from(n).unwrap().to_be_bytes());
            }
            n => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(&[1, 2, 3, 4]);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ [1, 2, 3, 4][i % 4]));
        out
    }

    #[test]
    fn whole_messages_of_every_length_pass_even_byte_by_byte() {
        let mut stream = Vec::new();
        for len in [0, 5, 125, 126, 300, 65_535, 65_536, 70_000] {
            stream.extend(frame(true, 1, &vec![b'x'; len]));
            stream.extend(frame(true, 9, b"ping"));
        }
        let mut whole = NoFragments::new(());
        assert!(whole.feed(&stream));
        let mut bytewise = NoFragments::new(());
        assert!(stream.chunks(1).all(|byte| bytewise.feed(byte)));
        assert_eq!(bytewise.state, State::Header { got: 0, need: 2 });
    }

    #[test]
    fn a_first_fragment_or_a_continuation_fails() {
        let mut sniffer = NoFragments::new(());
        let mut stream = frame(true, 1, b"{}");
        stream.extend(frame(false, 1, b"{\"id\":"));
        assert!(!sniffer.feed(&stream));
        assert!(!NoFragments::new(()).feed(&frame(true, 0, b"1}")));
    }
}
