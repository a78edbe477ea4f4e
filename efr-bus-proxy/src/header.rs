//! A message's header read in one walk of its bytes: the values the filter judges, and where the serials are, so
//! that the filter forwards a message as the bytes it came as, renumbered in place, instead of writing it anew.
//!
//! A D-Bus header (D-Bus specification, "Message Format") is 16 fixed bytes (the serial at byte 8, in the message's
//! endianness), then an array of `(BYTE code, VARIANT value)` fields, each starting on an 8-byte boundary, then
//! padding to 8. [`Layout::of`] checks what zbus's parser checks (the endianness mark, a known type, known flags, a
//! serial that is not zero, each field's value a valid name, path or signature, with zbus's own validators) and what
//! a byte-for-byte forward relies on besides: every field of the nine the specification defines appears at most once,
//! with the type the specification gives it, every padding byte is nul, and the array ends exactly where its length
//! says; a field of another code is refused, as zbus's parser refuses it. Anything wrong ends the connection
//! ([`crate::wire`]). No field may appear twice: zbus keeps the last of two and dbus-daemon refuses the message, so
//! forwarding such bytes would let the filter judge one destination and the bus see another.

use std::num::NonZeroU32;

use zbus::message::Type;
use zbus::names::{BusName, ErrorName, InterfaceName, MemberName, UniqueName};
use zbus::zvariant::{ObjectPath, Signature};

/// The fixed part of the header, in bytes.
const FIXED: usize = 16;
/// Where the serial is.
const SERIAL_AT: usize = 8;
/// The field codes (D-Bus specification, "Header Fields").
const PATH: u8 = 1;
const INTERFACE: u8 = 2;
const MEMBER: u8 = 3;
const ERROR_NAME: u8 = 4;
const REPLY_SERIAL: u8 = 5;
const DESTINATION: u8 = 6;
const SENDER: u8 = 7;
const SIGNATURE: u8 = 8;
const UNIX_FDS: u8 = 9;
/// The flags the specification defines: NO_REPLY_EXPECTED, NO_AUTO_START, ALLOW_INTERACTIVE_AUTHORIZATION.
const KNOWN_FLAGS: u8 = 0x1 | 0x2 | 0x4;
/// NO_REPLY_EXPECTED.
const NO_REPLY_EXPECTED: u8 = 0x1;

/// A message's header, read: the fixed part's values, the fields' values as byte ranges of the message, and where
/// the serials are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    big_endian: bool,
    kind: Type,
    flags: u8,
    serial: NonZeroU32,
    reply_serial: Option<NonZeroU32>,
    /// The offset of the reply serial's value, when the message has one.
    reply_serial_at: Option<usize>,
    unix_fds: Option<u32>,
    /// The text fields' values (path, interface, member, error name, destination, sender, signature), by code, as
    /// byte ranges of the message, each checked to be valid UTF-8 and of its kind.
    text: [Option<(usize, usize)>; 9],
}

impl Layout {
    /// Walks the header of the whole message `bytes` (framed: at least the header, whose fixed part says the
    /// lengths).
    ///
    /// # Errors
    /// Why the header breaks the rules above, in a few words.
    pub fn of(bytes: &[u8]) -> Result<Self, String> {
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
        let kind = match bytes.get(1) {
            Some(1) => Type::MethodCall,
            Some(2) => Type::MethodReturn,
            Some(3) => Type::Error,
            Some(4) => Type::Signal,
            other => return Err(format!("message type {other:?}")),
        };
        let flags = bytes.get(2).copied().unwrap_or(0);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(format!("flags {flags:#04x}"));
        }
        let serial = NonZeroU32::new(walk.u32_at(SERIAL_AT)?).ok_or_else(|| malformed("serial 0"))?;
        let fields_len = walk.u32_at(12)? as usize;
        let end = FIXED
            .checked_add(fields_len)
            .ok_or_else(|| malformed("a header too long"))?;
        if end > bytes.len() {
            return Err(malformed("the header's fields run past the message"));
        }
        let mut layout = Self {
            big_endian,
            kind,
            flags,
            serial,
            reply_serial: None,
            reply_serial_at: None,
            unix_fds: None,
            text: [None; 9],
        };
        let mut seen = 0_u16;
        while walk.at < end {
            walk.pad_to(8, end)?;
            let code = walk.byte(end)?;
            let signature = walk.signature(end)?;
            let expected: &[u8] = match code {
                PATH => b"o",
                INTERFACE | MEMBER | ERROR_NAME | DESTINATION | SENDER => b"s",
                REPLY_SERIAL | UNIX_FDS => b"u",
                SIGNATURE => b"g",
                other => return Err(format!("header field of unknown code {other}")),
            };
            if signature != expected {
                return Err(format!(
                    "header field {code} is not of type {}",
                    char::from(expected[0])
                ));
            }
            if seen & (1 << code) != 0 {
                return Err(format!("header field {code} twice"));
            }
            seen |= 1 << code;
            layout.field(&mut walk, code, end)?;
        }
        if walk.at != end {
            return Err(malformed("the header's fields overrun their array"));
        }
        let body = end.next_multiple_of(8);
        if body > bytes.len() {
            return Err(malformed("the header's padding runs past the message"));
        }
        walk.pad_to(8, body)?;
        Ok(layout)
    }

    /// Reads one field's value (its code and type checked) and keeps it.
    fn field(&mut self, walk: &mut Walk<'_>, code: u8, end: usize) -> Result<(), String> {
        match code {
            REPLY_SERIAL | UNIX_FDS => {
                walk.pad_to(4, end)?;
                let at = walk.at;
                walk.skip(4, end)?;
                let value = walk.u32_at(at)?;
                if code == UNIX_FDS {
                    self.unix_fds = Some(value);
                } else {
                    self.reply_serial = Some(NonZeroU32::new(value).ok_or_else(|| malformed("reply serial 0"))?);
                    self.reply_serial_at = Some(at);
                }
                return Ok(());
            }
            SIGNATURE => {
                let start = walk.at + 1;
                let text = walk.signature(end)?;
                let text = std::str::from_utf8(text).map_err(|_| malformed("a signature that is not UTF-8"))?;
                Signature::try_from(text).map_err(|e| format!("signature {text:?}: {e}"))?;
                self.text[usize::from(code) - 1] = Some((start, start + text.len()));
                return Ok(());
            }
            _ => {}
        }
        walk.pad_to(4, end)?;
        let len = walk.u32_at(walk.at)? as usize;
        walk.skip(4, end)?;
        let start = walk.at;
        walk.skip(len, end)?;
        walk.nul(end)?;
        let text = std::str::from_utf8(&walk.bytes[start..start + len])
            .map_err(|_| format!("header field {code} is not UTF-8"))?;
        let valid = match code {
            PATH => ObjectPath::try_from(text).map(drop).map_err(|e| e.to_string()),
            INTERFACE => InterfaceName::try_from(text).map(drop).map_err(|e| e.to_string()),
            MEMBER => MemberName::try_from(text).map(drop).map_err(|e| e.to_string()),
            ERROR_NAME => ErrorName::try_from(text).map(drop).map_err(|e| e.to_string()),
            DESTINATION => BusName::try_from(text).map(drop).map_err(|e| e.to_string()),
            _ => UniqueName::try_from(text).map(drop).map_err(|e| e.to_string()),
        };
        valid.map_err(|e| format!("header field {code} {text:?}: {e}"))?;
        self.text[usize::from(code) - 1] = Some((start, start + len));
        Ok(())
    }

    /// The message's type.
    #[must_use]
    pub fn kind(&self) -> Type {
        self.kind
    }

    /// Whether the message is a method call that expects no reply (NO_REPLY_EXPECTED), or no call at all.
    #[must_use]
    pub fn no_reply(&self) -> bool {
        self.kind != Type::MethodCall || self.flags & NO_REPLY_EXPECTED != 0
    }

    /// The serial the sender gave the message.
    #[must_use]
    pub fn serial(&self) -> NonZeroU32 {
        self.serial
    }

    /// The serial of the call a reply answers.
    #[must_use]
    pub fn reply_serial(&self) -> Option<NonZeroU32> {
        self.reply_serial
    }

    /// How many descriptors the message carries, as its header says.
    #[must_use]
    pub fn unix_fds(&self) -> u32 {
        self.unix_fds.unwrap_or(0)
    }

    /// The value of a text field (1 path, 2 interface, 3 member, 4 error name, 6 destination, 7 sender, 8
    /// signature) in `bytes`, the message this layout was read from.
    fn text<'b>(&self, bytes: &'b [u8], code: u8) -> Option<&'b str> {
        let (start, end) = self.text[usize::from(code) - 1]?;
        std::str::from_utf8(bytes.get(start..end)?).ok()
    }

    /// The object path.
    #[must_use]
    pub fn path<'b>(&self, bytes: &'b [u8]) -> Option<&'b str> {
        self.text(bytes, PATH)
    }

    /// The interface.
    #[must_use]
    pub fn interface<'b>(&self, bytes: &'b [u8]) -> Option<&'b str> {
        self.text(bytes, INTERFACE)
    }

    /// The member.
    #[must_use]
    pub fn member<'b>(&self, bytes: &'b [u8]) -> Option<&'b str> {
        self.text(bytes, MEMBER)
    }

    /// The destination.
    #[must_use]
    pub fn destination<'b>(&self, bytes: &'b [u8]) -> Option<&'b str> {
        self.text(bytes, DESTINATION)
    }

    /// The sender.
    #[must_use]
    pub fn sender<'b>(&self, bytes: &'b [u8]) -> Option<&'b str> {
        self.text(bytes, SENDER)
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

fn malformed(why: &str) -> String {
    why.to_owned()
}

/// A cursor over a header's bytes; every step is bounded by the end it is given.
struct Walk<'a> {
    bytes: &'a [u8],
    at: usize,
    big_endian: bool,
}

impl Walk<'_> {
    fn byte(&mut self, end: usize) -> Result<u8, String> {
        if self.at >= end {
            return Err(malformed("a header field cut short"));
        }
        self.at += 1;
        Ok(self.bytes[self.at - 1])
    }

    fn skip(&mut self, len: usize, end: usize) -> Result<(), String> {
        match self.at.checked_add(len) {
            Some(to) if to <= end => {
                self.at = to;
                Ok(())
            }
            _ => Err(malformed("a header field cut short")),
        }
    }

    fn nul(&mut self, end: usize) -> Result<(), String> {
        if self.byte(end)? == 0 {
            Ok(())
        } else {
            Err(malformed("a string of the header without its nul"))
        }
    }

    /// Skips to the next multiple of `align`; the bytes skipped must be nul.
    fn pad_to(&mut self, align: usize, end: usize) -> Result<(), String> {
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
    fn signature(&mut self, end: usize) -> Result<&[u8], String> {
        let len = usize::from(self.byte(end)?);
        let start = self.at;
        self.skip(len, end)?;
        self.nul(end)?;
        Ok(&self.bytes[start..start + len])
    }

    fn u32_at(&self, at: usize) -> Result<u32, String> {
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
