//! The byte framing: a 4-byte big-endian length, then that many bytes of one JSON object.
//!
//! The limit is [`DEFAULT_MAX_FRAME`] (16 MiB) unless a transport sets its own (the tailnet WebSocket reads client
//! messages of at most 1 MiB). A length over the limit is refused from the header alone: the body is neither read nor
//! allocated, and the connection must be closed, because the stream can no longer be trusted to be in step.
//!
//! [`FrameCodec`] is a tokio-util [`Decoder`]/[`Encoder`] for async transports; [`FrameReader`] and [`FrameWriter`]
//! do the same over blocking [`std::io::Read`]/[`std::io::Write`] for tests and tools.
//!
//! Decoding errors are distinct so that a server can answer precisely:
//! - [`FrameError::TooLarge`]: the header said more than the limit (fatal to the connection);
//! - [`FrameError::Truncated`]: the peer closed in the middle of a frame (fatal);
//! - [`FrameError::NotJson`]: the body is not JSON (the framing is intact, but no id can be read);
//! - [`FrameError::NotObject`]: the body is JSON but not an object (likewise);
//! - [`FrameError::Io`]: the transport failed.

use std::io::{Read, Write};

use bytes::{Buf, BufMut, BytesMut};
use serde::Serialize;
use serde_json::{Map, Value};
use tokio_util::codec::{Decoder, Encoder};

/// The default limit of one frame's body: 16 MiB (docs/protocol.md, "Summary").
pub const DEFAULT_MAX_FRAME: usize = 16 * 1024 * 1024;

/// The limit of one client message on the tailnet WebSocket: 1 MiB (docs/protocol.md, "The contract": "Remote
/// devices").
pub const REMOTE_CLIENT_MAX_FRAME: usize = 1024 * 1024;

/// The length of the header in bytes.
pub const HEADER_LEN: usize = 4;

/// Why a frame could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The frame's length is over the limit. Nothing of the body was read or allocated.
    #[error("frame of {len} bytes is over the limit of {max} bytes")]
    TooLarge {
        /// The length the header gave (or, when writing, the body's length).
        len: u64,
        /// The limit in force.
        max: usize,
    },
    /// The stream ended inside a frame.
    #[error("the stream ended inside a frame ({have} of {need} bytes)")]
    Truncated {
        /// Bytes of the frame (header included) that arrived.
        have: usize,
        /// Bytes the frame needed (header included), when the header was complete.
        need: usize,
    },
    /// The body is not valid JSON.
    #[error("the frame is not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// The body is JSON but not an object.
    #[error("the frame is JSON but not an object (it is {0})")]
    NotObject(&'static str),
    /// A value could not be serialized.
    #[error("the frame could not be serialized: {0}")]
    Serialize(#[source] serde_json::Error),
    /// The transport failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl FrameError {
    /// Whether the connection must be closed after this error: true for every error except a body that is not a
    /// JSON object, after which the next frame can still be read.
    #[must_use]
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Self::NotJson(_) | Self::NotObject(_))
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses one frame body into a JSON object.
///
/// # Errors
/// [`FrameError::NotJson`] or [`FrameError::NotObject`].
pub fn parse_body(body: &[u8]) -> Result<Map<String, Value>, FrameError> {
    match serde_json::from_slice::<Value>(body).map_err(FrameError::NotJson)? {
        Value::Object(map) => Ok(map),
        other => Err(FrameError::NotObject(json_kind(&other))),
    }
}

/// Serializes `value` as one frame (header and body) at the end of `dst`.
///
/// # Errors
/// [`FrameError::Serialize`], or [`FrameError::TooLarge`] when the body is over `max` (then `dst` is left as it was).
pub fn encode_into<T: Serialize + ?Sized>(value: &T, max: usize, dst: &mut BytesMut) -> Result<(), FrameError> {
    let start = dst.len();
    dst.put_u32(0);
    let mut writer = dst.writer();
    let result = serde_json::to_writer(&mut writer, value);
    let dst = writer.into_inner();
    if let Err(error) = result {
        dst.truncate(start);
        return Err(FrameError::Serialize(error));
    }
    let len = dst.len() - start - HEADER_LEN;
    match u32::try_from(len) {
        Ok(len32) if len <= max => {
            dst[start..start + HEADER_LEN].copy_from_slice(&len32.to_be_bytes());
            Ok(())
        }
        _ => {
            dst.truncate(start);
            Err(FrameError::TooLarge { len: len as u64, max })
        }
    }
}

/// The async codec: decodes JSON objects, encodes any serializable value.
#[derive(Debug, Clone)]
pub struct FrameCodec {
    max: usize,
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME)
    }
}

impl FrameCodec {
    /// A codec whose frames are at most `max` bytes (body, not counting the header), in both directions.
    #[must_use]
    pub const fn new(max: usize) -> Self {
        Self { max }
    }

    /// The limit in force.
    #[must_use]
    pub const fn max(&self) -> usize {
        self.max
    }
}

impl Decoder for FrameCodec {
    type Item = Map<String, Value>;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        if src.len() < HEADER_LEN {
            return Ok(None);
        }
        let len = u32::from_be_bytes([src[0], src[1], src[2], src[3]]) as usize;
        if len > self.max {
            return Err(FrameError::TooLarge {
                len: len as u64,
                max: self.max,
            });
        }
        if src.len() < HEADER_LEN + len {
            // Reserve only what this frame still needs: the header was checked against the limit above.
            src.reserve(HEADER_LEN + len - src.len());
            return Ok(None);
        }
        src.advance(HEADER_LEN);
        let body = src.split_to(len);
        parse_body(&body).map(Some)
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<Self::Item>, Self::Error> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => {
                let need = if src.len() >= HEADER_LEN {
                    HEADER_LEN + u32::from_be_bytes([src[0], src[1], src[2], src[3]]) as usize
                } else {
                    HEADER_LEN
                };
                let have = src.len();
                src.clear();
                Err(FrameError::Truncated { have, need })
            }
        }
    }
}

impl<T: Serialize> Encoder<T> for FrameCodec {
    type Error = FrameError;

    fn encode(&mut self, item: T, dst: &mut BytesMut) -> Result<(), Self::Error> {
        encode_into(&item, self.max, dst)
    }
}

/// Reads frames from a blocking reader.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    max: usize,
}

impl<R: Read> FrameReader<R> {
    /// A reader with the default limit.
    pub fn new(inner: R) -> Self {
        Self::with_max(inner, DEFAULT_MAX_FRAME)
    }

    /// A reader whose frames are at most `max` bytes.
    pub fn with_max(inner: R, max: usize) -> Self {
        Self { inner, max }
    }

    /// Reads the next frame; `Ok(None)` at a clean end of the stream (between frames).
    ///
    /// # Errors
    /// Every [`FrameError`] but `Serialize`. After `TooLarge` nothing of the body has been read.
    pub fn read_frame(&mut self) -> Result<Option<Map<String, Value>>, FrameError> {
        let mut header = [0_u8; HEADER_LEN];
        let got = read_full(&mut self.inner, &mut header)?;
        if got == 0 {
            return Ok(None);
        }
        if got < HEADER_LEN {
            return Err(FrameError::Truncated {
                have: got,
                need: HEADER_LEN,
            });
        }
        let len = u32::from_be_bytes(header) as usize;
        if len > self.max {
            return Err(FrameError::TooLarge {
                len: len as u64,
                max: self.max,
            });
        }
        let mut body = vec![0_u8; len];
        let got = read_full(&mut self.inner, &mut body)?;
        if got < len {
            return Err(FrameError::Truncated {
                have: HEADER_LEN + got,
                need: HEADER_LEN + len,
            });
        }
        parse_body(&body).map(Some)
    }

    /// The inner reader.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

/// Reads until `buf` is full or the stream ends; returns how many bytes were read.
fn read_full<R: Read>(reader: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Writes frames to a blocking writer.
#[derive(Debug)]
pub struct FrameWriter<W> {
    inner: W,
    max: usize,
    buf: BytesMut,
}

impl<W: Write> FrameWriter<W> {
    /// A writer with the default limit.
    pub fn new(inner: W) -> Self {
        Self::with_max(inner, DEFAULT_MAX_FRAME)
    }

    /// A writer whose frames are at most `max` bytes.
    pub fn with_max(inner: W, max: usize) -> Self {
        Self {
            inner,
            max,
            buf: BytesMut::new(),
        }
    }

    /// Writes one frame and flushes.
    ///
    /// # Errors
    /// [`FrameError::Serialize`], [`FrameError::TooLarge`] (nothing written) or [`FrameError::Io`].
    pub fn write_frame<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), FrameError> {
        self.buf.clear();
        encode_into(value, self.max, &mut self.buf)?;
        self.inner.write_all(&self.buf)?;
        self.inner.flush()?;
        Ok(())
    }

    /// Writes raw bytes as they are (for tests that send broken frames on purpose).
    ///
    /// # Errors
    /// [`FrameError::Io`].
    pub fn write_raw(&mut self, bytes: &[u8]) -> Result<(), FrameError> {
        self.inner.write_all(bytes)?;
        self.inner.flush()?;
        Ok(())
    }

    /// The inner writer.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut out = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
        out.extend_from_slice(body);
        out
    }

    #[test]
    fn decodes_one_object_per_frame() {
        let mut codec = FrameCodec::default();
        let mut src = BytesMut::from(&frame(br#"{"id":1,"method":"hello"}"#)[..]);
        src.extend_from_slice(&frame(br#"{"cancel":1}"#));
        assert_eq!(
            Value::Object(codec.decode(&mut src).unwrap().unwrap()),
            json!({"id":1,"method":"hello"})
        );
        assert_eq!(
            Value::Object(codec.decode(&mut src).unwrap().unwrap()),
            json!({"cancel":1})
        );
        assert!(codec.decode(&mut src).unwrap().is_none());
        assert!(codec.decode_eof(&mut src).unwrap().is_none());
    }

    #[test]
    fn a_4_gib_header_is_refused_without_allocating() {
        let mut codec = FrameCodec::default();
        let mut src = BytesMut::from(&[0xff_u8, 0xff, 0xff, 0xff][..]);
        let before = src.capacity();
        match codec.decode(&mut src) {
            Err(FrameError::TooLarge { len, max }) => {
                assert_eq!(len, u64::from(u32::MAX));
                assert_eq!(max, DEFAULT_MAX_FRAME);
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
        assert_eq!(
            src.capacity(),
            before,
            "the decoder reserved memory for a refused frame"
        );

        let mut reader = FrameReader::new(&[0xff_u8, 0xff, 0xff, 0xff, b'{'][..]);
        assert!(matches!(reader.read_frame(), Err(FrameError::TooLarge { .. })));
        // The body was not read: the byte after the header is still there.
        let mut rest = Vec::new();
        reader.into_inner().read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"{");
    }

    #[test]
    fn the_limit_is_per_codec() {
        let mut codec = FrameCodec::new(REMOTE_CLIENT_MAX_FRAME);
        let body = format!("{{\"t\":\"{}\"}}", "x".repeat(REMOTE_CLIENT_MAX_FRAME));
        let mut src = BytesMut::from(&frame(body.as_bytes())[..]);
        assert!(matches!(codec.decode(&mut src), Err(FrameError::TooLarge { .. })));
        let mut dst = BytesMut::new();
        assert!(matches!(
            codec.encode(json!({"t": "x".repeat(REMOTE_CLIENT_MAX_FRAME)}), &mut dst),
            Err(FrameError::TooLarge { .. })
        ));
        assert!(dst.is_empty(), "a refused frame must leave nothing behind");
    }

    #[test]
    fn distinct_errors_for_truncated_not_json_and_not_object() {
        let mut codec = FrameCodec::default();
        let mut src = BytesMut::from(&frame(b"{\"a\":1}")[..5]);
        assert!(matches!(
            codec.decode_eof(&mut src),
            Err(FrameError::Truncated { have: 5, need: 11 })
        ));
        let mut src = BytesMut::from(&[0_u8, 0][..]);
        assert!(matches!(
            codec.decode_eof(&mut src),
            Err(FrameError::Truncated { have: 2, need: 4 })
        ));

        let mut src = BytesMut::from(&frame(b"{nope")[..]);
        let err = codec.decode(&mut src).unwrap_err();
        assert!(matches!(err, FrameError::NotJson(_)) && !err.is_fatal());
        let mut src = BytesMut::from(&frame(b"[1,2]")[..]);
        let err = codec.decode(&mut src).unwrap_err();
        assert!(matches!(err, FrameError::NotObject("an array")) && !err.is_fatal());
        // The framing stays in step after a bad body.
        src.extend_from_slice(&frame(b"{}"));
        assert_eq!(codec.decode(&mut src).unwrap().unwrap(), Map::new());
    }

    #[test]
    fn blocking_reader_and_writer_round_trip() {
        let mut writer = FrameWriter::new(Vec::new());
        writer.write_frame(&json!({"id": 1, "item": "größe 🙂"})).unwrap();
        writer.write_frame(&json!({"ack": 2})).unwrap();
        let bytes = writer.into_inner();
        let mut reader = FrameReader::new(&bytes[..]);
        assert_eq!(
            Value::Object(reader.read_frame().unwrap().unwrap()),
            json!({"id": 1, "item": "größe 🙂"})
        );
        assert_eq!(Value::Object(reader.read_frame().unwrap().unwrap()), json!({"ack": 2}));
        assert!(reader.read_frame().unwrap().is_none());
        let mut reader = FrameReader::new(&bytes[..bytes.len() - 1]);
        reader.read_frame().unwrap();
        assert!(matches!(reader.read_frame(), Err(FrameError::Truncated { .. })));
    }
}
