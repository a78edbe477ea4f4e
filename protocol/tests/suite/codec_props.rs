//! Property tests of the frame codec: valid frames cut at random byte boundaries are reassembled exactly, and random
//! garbage never makes the decoder panic (it only returns errors or waits for more), for the tokio-util
//! [`FrameCodec`] and the blocking [`FrameReader`] alike.

// Tests may unwrap (team rule); clippy.toml allows it only inside #[test] functions, not their helpers.
#![allow(clippy::unwrap_used)]

use std::io::Read;

use bytes::BytesMut;
use efr_protocol::codec::{FrameCodec, FrameError, FrameReader, HEADER_LEN, encode_into};
use proptest::prelude::*;
use serde_json::{Map, Value};
use tokio_util::codec::Decoder;

/// JSON values without floats (whose text form need not round-trip exactly), nested a few levels.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,40}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,12}", inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(".{0,12}", json_value(), 0..8).prop_map(|m| m.into_iter().collect())
}

/// Splits `bytes` at the given cut points (taken modulo the length, sorted, deduplicated).
fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.push(0);
    cuts.push(bytes.len());
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2).map(|w| bytes[w[0]..w[1]].to_vec()).collect()
}

/// What the async decoder made of a byte stream fed piece by piece.
#[derive(Debug, Default)]
struct Decoded {
    frames: Vec<Map<String, Value>>,
    soft_errors: usize,
    fatal: Option<String>,
}

fn feed_codec(codec: &mut FrameCodec, pieces: &[Vec<u8>]) -> Decoded {
    let mut out = Decoded::default();
    let mut buffer = BytesMut::new();
    for piece in pieces {
        buffer.extend_from_slice(piece);
        loop {
            match codec.decode(&mut buffer) {
                Ok(Some(frame)) => out.frames.push(frame),
                Ok(None) => break,
                Err(error) if error.is_fatal() => {
                    out.fatal = Some(error.to_string());
                    return out;
                }
                Err(_) => out.soft_errors += 1,
            }
        }
    }
    loop {
        match codec.decode_eof(&mut buffer) {
            Ok(Some(frame)) => out.frames.push(frame),
            Ok(None) => return out,
            Err(error) if error.is_fatal() => {
                out.fatal = Some(error.to_string());
                return out;
            }
            Err(_) => out.soft_errors += 1,
        }
    }
}

/// A reader that hands out its bytes in the given pieces, one `read` each at most.
struct Chunked {
    pieces: std::collections::VecDeque<Vec<u8>>,
}

impl Read for Chunked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(mut piece) = self.pieces.pop_front() else {
            return Ok(0);
        };
        let n = piece.len().min(buf.len());
        buf[..n].copy_from_slice(&piece[..n]);
        if n < piece.len() {
            self.pieces.push_front(piece.split_off(n));
        }
        Ok(n)
    }
}

fn feed_reader(max: usize, pieces: Vec<Vec<u8>>) -> Decoded {
    let mut reader = FrameReader::with_max(
        Chunked {
            pieces: pieces.into_iter().filter(|p| !p.is_empty()).collect(),
        },
        max,
    );
    let mut out = Decoded::default();
    loop {
        match reader.read_frame() {
            Ok(Some(frame)) => out.frames.push(frame),
            Ok(None) => return out,
            Err(error) if error.is_fatal() => {
                out.fatal = Some(error.to_string());
                return out;
            }
            Err(_) => out.soft_errors += 1,
        }
    }
}

fn encode_all(frames: &[Map<String, Value>]) -> Vec<u8> {
    let mut bytes = BytesMut::new();
    for frame in frames {
        encode_into(frame, usize::MAX, &mut bytes).unwrap();
    }
    bytes.to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn valid_frames_cut_anywhere_are_reassembled_exactly(
        frames in prop::collection::vec(json_object(), 0..6),
        cuts in prop::collection::vec(any::<usize>(), 0..24),
    ) {
        let bytes = encode_all(&frames);
        let pieces = pieces(&bytes, &cuts);
        let decoded = feed_codec(&mut FrameCodec::default(), &pieces);
        prop_assert_eq!(decoded.fatal, None);
        prop_assert_eq!(decoded.soft_errors, 0);
        prop_assert_eq!(&decoded.frames, &frames);

        let read = feed_reader(efr_protocol::codec::DEFAULT_MAX_FRAME, pieces);
        prop_assert_eq!(read.fatal, None);
        prop_assert_eq!(&read.frames, &frames);
    }

    #[test]
    fn a_stream_cut_short_is_truncated_never_a_frame(
        frames in prop::collection::vec(json_object(), 1..4),
        cut in any::<usize>(),
    ) {
        let bytes = encode_all(&frames);
        let keep = cut % bytes.len();
        // The ends of whole frames: a cut there is a clean end of the stream.
        let mut boundaries = vec![0];
        for frame in &frames {
            boundaries.push(boundaries[boundaries.len() - 1] + encode_all(std::slice::from_ref(frame)).len());
        }
        for decoded in [
            feed_codec(&mut FrameCodec::default(), &[bytes[..keep].to_vec()]),
            feed_reader(efr_protocol::codec::DEFAULT_MAX_FRAME, vec![bytes[..keep].to_vec()]),
        ] {
            if let Some(whole) = boundaries.iter().position(|&b| b == keep) {
                prop_assert_eq!(decoded.fatal, None);
                prop_assert_eq!(&decoded.frames[..], &frames[..whole]);
            } else {
                let fatal = decoded.fatal.unwrap_or_default();
                prop_assert!(fatal.contains("ended inside a frame"), "{}", fatal);
                prop_assert!(decoded.frames.len() < frames.len());
                prop_assert_eq!(&decoded.frames[..], &frames[..decoded.frames.len()]);
            }
        }
    }

    #[test]
    fn random_garbage_never_panics(
        garbage in prop::collection::vec(any::<u8>(), 0..2048),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
        max in prop_oneof![Just(64_usize), Just(1024), Just(efr_protocol::codec::DEFAULT_MAX_FRAME)],
    ) {
        let pieces = pieces(&garbage, &cuts);
        // Whatever happens, it is frames, errors or a wait for more; a panic fails the property.
        let decoded = feed_codec(&mut FrameCodec::new(max), &pieces);
        let read = feed_reader(max, pieces);
        // Both decoders agree on what the bytes hold.
        prop_assert_eq!(decoded.frames, read.frames);
        prop_assert_eq!(decoded.fatal.is_some(), read.fatal.is_some());
    }

    #[test]
    fn framed_garbage_stays_in_step(
        bodies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 0..8),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        // Correct lengths around random bodies: each body is a frame, a body that is not a JSON object is a soft
        // error, and the next frame still reads.
        let mut bytes = Vec::new();
        for body in &bodies {
            bytes.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
            bytes.extend_from_slice(body);
        }
        let pieces = pieces(&bytes, &cuts);
        let decoded = feed_codec(&mut FrameCodec::default(), &pieces);
        prop_assert_eq!(decoded.fatal, None);
        prop_assert_eq!(decoded.frames.len() + decoded.soft_errors, bodies.len());
        let read = feed_reader(efr_protocol::codec::DEFAULT_MAX_FRAME, pieces);
        prop_assert_eq!(read.fatal, None);
        prop_assert_eq!(read.frames.len() + read.soft_errors, bodies.len());
    }

    #[test]
    fn a_header_over_the_limit_is_refused_before_the_body(
        len in (1025_u32..=u32::MAX),
        tail in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        let mut bytes = len.to_be_bytes().to_vec();
        bytes.extend_from_slice(&tail);
        let mut buffer = BytesMut::from(&bytes[..]);
        let capacity = buffer.capacity();
        let error = FrameCodec::new(1024).decode(&mut buffer).unwrap_err();
        let refused = matches!(error, FrameError::TooLarge { len: l, max: 1024 } if l == u64::from(len));
        prop_assert!(refused, "{:?}", error);
        prop_assert_eq!(buffer.capacity(), capacity);
        prop_assert_eq!(buffer.len(), HEADER_LEN + tail.len());
    }
}
