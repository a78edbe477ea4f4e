//! Where a message's serials are in its bytes, so that the filter forwards a message as the bytes it came as,
//! renumbered in place, instead of writing it anew.
//!
//! A D-Bus header (D-Bus specification, "Message Format") is 16 fixed bytes (the serial at byte 8, in the message's
//! endianness), then an array of `(BYTE code, VARIANT value)` fields, each starting on an 8-byte boundary, then
//! padding to 8. [`Layout::of`] walks that array once and checks what a byte-for-byte forward relies on: every field
//! of the nine the specification defines appears at most once, with the signature the specification gives it, every
//! padding byte is nul, and the array ends exactly where its length says. A field of another code returns
//! [`Odd::Unknown`] (the caller writes such a message anew, which leaves the field out); anything else wrong is
//! [`Odd::Malformed`], and the caller ends the connection. The values themselves are read by zbus's parser, which the
//! bytes have passed already; this walk agrees with it because a field cannot appear twice.

use std::num::NonZeroU32;

/// The fixed part of the header, in bytes.
const FIXED: usize = 16;
/// Where the serial is.
const SERIAL_AT: usize = 8;
/// The field code of the reply serial.
const REPLY_SERIAL: u8 = 5;

/// Why a header cannot be forwarded as it came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Odd {
    /// A field of a code the specification does not define (the message is written anew without it).
    Unknown(u8),
    /// Bytes that break the header's rules: a field twice, a wrong signature, a padding byte not nul, a field past
    /// the array's end.
    Malformed(String),
}

/// What the filter needs to renumber a message in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    big_endian: bool,
    /// The offset of the reply serial's value, when the message has one.
    reply_serial_at: Option<usize>,
}

impl Layout {
    /// Walks the header of the whole message `bytes` (framed: at least the header, whose fixed part says the
    /// lengths).
    ///
    /// # Errors
    /// [`Odd`]: a field the walk does not know, or a header against the specification's rules.
    pub fn of(bytes: &[u8]) -> Result<Self, Odd> {
        let big_endian = match bytes.first() {
            Some(b'l') => false,
            Some(b'B') => true,
            _ => return Err(malformed("no endianness mark")),
        };
        let mut walk = Walk {
            bytes,
            at: FIXED,
            big_endian,
        };
        let fields_len = walk.u32_at(12)? as usize;
        let end = FIXED.checked_add(fields_len).ok_or_else(|| malformed("a header too long"))?;
        if end > bytes.len() {
            return Err(malformed("the header's fields run past the message"));
        }
        let mut seen = 0_u16;
        let mut reply_serial_at = None;
        while walk.at < end {
            walk.pad_to(8, end)?;
            let code = walk.byte(end)?;
            let signature = walk.signature(end)?;
            let expected: &[u8] = match code {
                1 => b"o",
                2 | 3 | 4 | 6 | 7 => b"s",
                5 | 9 => b"u",
                8 => b"g",
                other => return Err(Odd::Unknown(other)),
            };
            if signature != expected {
                return Err(malformed(&format!("header field {code} is not of type {}", char::from(expected[0]))));
            }
            if seen & (1 << code) != 0 {
                return Err(malformed(&format!("header field {code} twice")));
            }
            seen |= 1 << code;
            match expected {
                b"u" => {
                    walk.pad_to(4, end)?;
                    if code == REPLY_SERIAL {
                        reply_serial_at = Some(walk.at);
                    }
                    walk.skip(4, end)?;
                }
                b"g" => {
                    walk.signature(end)?;
                }
                _ => {
                    walk.pad_to(4, end)?;
                    let len = walk.u32_at(walk.at)? as usize;
                    walk.skip(4, end)?;
                    walk.skip(len, end)?;
                    walk.nul(end)?;
                }
            }
        }
        if walk.at != end {
            return Err(malformed("the header's fields overrun their array"));
        }
        let body = end.next_multiple_of(8);
        if body > bytes.len() {
            return Err(malformed("the header's padding runs past the message"));
        }
        walk.pad_to(8, body)?;
        Ok(Self {
            big_endian,
            reply_serial_at,
        })
    }

    /// Whether the message has a reply serial.
    #[must_use]
    pub fn has_reply_serial(&self) -> bool {
        self.reply_serial_at.is_some()
    }

    /// Writes `serial` as the message's serial and, when given, `reply_serial` as its reply serial (which the
    /// message must have: see [`Layout::has_reply_serial`]; `bytes` are the ones this layout was read from).
    pub fn renumber(&self, bytes: &mut [u8], serial: NonZeroU32, reply_serial: Option<NonZeroU32>) {
        self.put(bytes, SERIAL_AT, serial.get());
        if let (Some(at), Some(reply_serial)) = (self.reply_serial_at, reply_serial) {
            self.put(bytes, at, reply_serial.get());
        }
    }

    fn put(&self, bytes: &mut [u8], at: usize, value: u32) {
        let value = if self.big_endian {
            value.to_be_bytes()
        } else {
            value.to_le_bytes()
        };
        bytes[at..at + 4].copy_from_slice(&value);
    }
}

fn malformed(why: &str) -> Odd {
    Odd::Malformed(why.to_owned())
}

/// A cursor over a header's bytes; every step is bounded by the end it is given.
struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
    big_endian: bool,
}

impl Walk<'_> {
    fn byte(&mut self, end: usize) -> Result<u8, Odd> {
        if self.at >= end {
            return Err(malformed("a header field cut short"));
        }
        self.at += 1;
        Ok(self.bytes[self.at - 1])
    }

    fn skip(&mut self, len: usize, end: usize) -> Result<(), Odd> {
        match self.at.checked_add(len) {
            Some(to) if to <= end => {
                self.at = to;
                Ok(())
            }
            _ => Err(malformed("a header field cut short")),
        }
    }

    fn nul(&mut self, end: usize) -> Result<(), Odd> {
        if self.byte(end)? == 0 {
            Ok(())
        } else {
            Err(malformed("a string of the header without its nul"))
        }
    }

    /// Skips to the next multiple of `align`; the bytes skipped must be nul.
    fn pad_to(&mut self, align: usize, end: usize) -> Result<(), Odd> {
        let to = self.at.next_multiple_of(align);
        if to > end {
            return Err(malformed("a header field cut short"));
        }
        if self.bytes[self.at..to].iter().any(|&b| b != 0) {
            return Err(malformed("a padding byte of the header is not nul"));
        }
        self.at = to;
        Ok(())
    }

    /// A signature: its length byte, its characters, a nul. Returns the characters.
    fn signature(&mut self, end: usize) -> Result<&[u8], Odd> {
        let len = usize::from(self.byte(end)?);
        let start = self.at;
        self.skip(len, end)?;
        self.nul(end)?;
        Ok(&self.bytes[start..start + len])
    }

    fn u32_at(&self, at: usize) -> Result<u32, Odd> {
        let bytes: [u8; 4] = self
            .bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| malformed("a header cut short"))?;
        Ok(if self.big_endian {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        })
    }
}
