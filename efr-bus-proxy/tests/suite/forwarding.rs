//! Forwarding as the bytes came: messages made by hand (fields in an order no library writes, big-endian) pass the
//! filter byte for byte but for their serials, a refused one is still refused, and headers against the
//! specification's rules are caught by the walk the forward relies on. The filter and the walk do no I/O, so these
//! drive them directly; the trap of a field sent twice through the running filter is in `traps.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::num::NonZeroU32;
use std::sync::Arc;

use efr_bus_proxy::filter::{Action, Filter};
use efr_bus_proxy::header::Layout;
use efr_bus_proxy::policy::Policy;
use efr_bus_proxy::report::Refusals;
use efr_bus_proxy::wire::{Incoming, Outgoing};
use efr_protocol::wire::Bus;
use zbus::message::{Message, Type};
use zbus::zvariant::{Endian, serialized};

use super::harness::{call, count, error_name};

const NOTIFICATIONS: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
const UNIQUE: &str = ":1.42";

/// A header field's value, as it goes on the wire.
pub enum Value<'a> {
    /// A string (`s`) or an object path (`o`): the type and the text.
    Str(u8, &'a str),
    /// A `u`.
    U32(u32),
    /// A signature (`g`): one length byte, the text, a nul.
    Sig(&'a str),
}

/// A message with no body, its header fields in the order given, written by hand (D-Bus specification, "Message
/// Format").
pub fn hand_made(big_endian: bool, kind: Type, serial: u32, fields: &[(u8, Value<'_>)]) -> Vec<u8> {
    let word = |v: u32| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let kind = match kind {
        Type::MethodCall => 1,
        Type::MethodReturn => 2,
        Type::Error => 3,
        Type::Signal => 4,
    };
    let mut bytes = vec![if big_endian { b'B' } else { b'l' }, kind, 0, 1];
    bytes.extend(word(0));
    bytes.extend(word(serial));
    bytes.extend(word(0));
    for (code, value) in fields {
        bytes.resize(bytes.len().next_multiple_of(8), 0);
        bytes.push(*code);
        match value {
            Value::Str(kind, text) => {
                bytes.extend([1, *kind, 0]);
                bytes.resize(bytes.len().next_multiple_of(4), 0);
                bytes.extend(word(u32::try_from(text.len()).unwrap()));
                bytes.extend(text.as_bytes());
                bytes.push(0);
            }
            Value::U32(value) => {
                bytes.extend([1, b'u', 0]);
                bytes.resize(bytes.len().next_multiple_of(4), 0);
                bytes.extend(word(*value));
            }
            Value::Sig(text) => {
                bytes.extend([1, b'g', 0, u8::try_from(text.len()).unwrap()]);
                bytes.extend(text.as_bytes());
                bytes.push(0);
            }
        }
    }
    let fields_len = word(u32::try_from(bytes.len() - 16).unwrap());
    bytes[12..16].copy_from_slice(&fields_len);
    bytes.resize(bytes.len().next_multiple_of(8), 0);
    bytes
}

/// A call to `destination` with its fields backwards from the order zbus and libdbus write them.
pub fn call_backwards(destination: &str, serial: u32) -> Vec<u8> {
    hand_made(
        false,
        Type::MethodCall,
        serial,
        &[
            (6, Value::Str(b's', destination)),
            (3, Value::Str(b's', "GetServerInformation")),
            (2, Value::Str(b's', NOTIFICATIONS)),
            (1, Value::Str(b'o', PATH)),
        ],
    )
}

fn parse(bytes: Vec<u8>) -> Message {
    let endian = if bytes[0] == b'B' { Endian::Big } else { Endian::Little };
    let data = serialized::Data::new(bytes, serialized::Context::new_dbus(endian, 0));
    // SAFETY: the bytes are checked by zbus's parser; no descriptors.
    unsafe { Message::from_bytes(data) }.expect("zbus reads the hand-made message")
}

fn incoming(bytes: Vec<u8>) -> Incoming {
    Incoming::new(bytes).expect("the walk reads the hand-made message")
}

fn word_at(bytes: &[u8], at: usize) -> u32 {
    let word = [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]];
    if bytes[0] == b'B' {
        u32::from_be_bytes(word)
    } else {
        u32::from_le_bytes(word)
    }
}

/// A filter with the default session policy whose client has said Hello.
fn filter() -> (Filter, Arc<Refusals>) {
    let refusals = Arc::new(Refusals::new(Bus::Session));
    let mut filter = Filter::new(
        Arc::new(Policy::session_default()),
        Arc::clone(&refusals),
        UNIQUE.to_owned(),
        true,
    );
    let hello = call(
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "Hello",
        1,
    );
    let hello = incoming(hello.data().bytes().to_vec());
    assert_eq!(
        filter.from_client(&hello, Vec::new()).len(),
        2,
        "the Hello reply and NameAcquired"
    );
    (filter, refusals)
}

/// The offsets where `a` and `b` differ.
fn differences(a: &[u8], b: &[u8]) -> Vec<usize> {
    assert_eq!(a.len(), b.len());
    (0..a.len()).filter(|&i| a[i] != b[i]).collect()
}

#[test]
fn a_call_and_its_reply_pass_as_the_bytes_they_came_as_but_for_the_serials() {
    let (mut filter, refusals) = filter();
    let sent = call_backwards(NOTIFICATIONS, 0x0102_0304);
    let actions = filter.from_client(&incoming(sent.clone()), Vec::new());
    let [Action::ToBus(Outgoing::Forwarded { bytes: to_bus, .. })] = actions.as_slice() else {
        panic!("one message to the bus, forwarded as it came: {actions:?}");
    };
    // Only the serial changed (the client's serial differs in every byte from the proxy's).
    assert_eq!(differences(&sent, to_bus), vec![8, 9, 10, 11]);
    let bus_serial = word_at(to_bus, 8);

    // The reply, big-endian, the reply serial first and the sender after the destination.
    let reply = hand_made(
        true,
        Type::MethodReturn,
        0x00AA_BBCC,
        &[
            (5, Value::U32(bus_serial)),
            (6, Value::Str(b's', UNIQUE)),
            (7, Value::Str(b's', ":1.7")),
        ],
    );
    let actions = filter.from_bus(&incoming(reply.clone()), Vec::new());
    let [Action::ToClient(Outgoing::Forwarded { bytes: to_client, .. })] = actions.as_slice() else {
        panic!("one message to the client, forwarded as it came: {actions:?}");
    };
    let changed = differences(&reply, to_client);
    assert!(
        changed
            .iter()
            .all(|&at| (8..12).contains(&at) || (20..24).contains(&at)),
        "only the serial and the reply serial change: {changed:?}"
    );
    let received = parse(to_client.clone());
    assert_eq!(received.header().reply_serial(), NonZeroU32::new(0x0102_0304));
    assert_eq!(
        received.header().sender().map(ToString::to_string),
        Some(":1.7".to_owned())
    );
    assert_eq!(received.message_type(), Type::MethodReturn);
    assert!(refusals.snapshot().0.is_empty());
}

#[test]
fn a_hand_made_call_to_a_hidden_name_is_still_refused() {
    let (mut filter, refusals) = filter();
    let actions = filter.from_client(&incoming(call_backwards("org.example.Hidden", 9)), Vec::new());
    let [Action::ToClient(Outgoing::Made(error))] = actions.as_slice() else {
        panic!("only an error to the client, nothing to the bus: {actions:?}");
    };
    assert_eq!(
        error_name(error).as_deref(),
        Some("org.freedesktop.DBus.Error.ServiceUnknown")
    );
    assert_eq!(error.header().reply_serial(), NonZeroU32::new(9));
    assert_eq!(
        count(
            &refusals.snapshot().0,
            "org.example.Hidden",
            Some("GetServerInformation")
        ),
        1
    );
}

#[test]
fn the_walk_finds_the_serials_in_either_endianness_and_any_field_order() {
    for big_endian in [false, true] {
        let fields = [
            (8, Value::Sig("")),
            (7, Value::Str(b's', ":1.9")),
            (5, Value::U32(3)),
            (1, Value::Str(b'o', "/a/long/path/of/some/length")),
            (4, Value::Str(b's', "org.example.Error.Odd")),
        ];
        let mut bytes = hand_made(big_endian, Type::Error, 1, &fields);
        // The walk reads what zbus's parser reads.
        let read = incoming(bytes.clone());
        let zbus = parse(bytes.clone());
        assert_eq!(read.sender(), Some(":1.9"));
        assert_eq!(
            read.sender(),
            zbus.header().sender().map(zbus::names::UniqueName::as_str)
        );
        assert_eq!(
            read.path(),
            zbus.header().path().map(zbus::zvariant::ObjectPath::as_str)
        );
        assert_eq!(read.reply_serial(), zbus.header().reply_serial());
        assert_eq!(
            (read.interface(), read.member(), read.destination()),
            (None, None, None)
        );
        assert_eq!(read.message_type(), Type::Error);
        let layout = Layout::of(&bytes).expect("a good header");
        assert!(layout.has_reply_serial());
        let before = bytes.clone();
        layout.renumber(&mut bytes, NonZeroU32::new(70_000).unwrap(), NonZeroU32::new(80_000));
        let message = parse(bytes.clone());
        assert_eq!(message.primary_header().serial_num().get(), 70_000);
        assert_eq!(message.header().reply_serial(), NonZeroU32::new(80_000));
        assert_eq!(
            message.header().path().map(ToString::to_string).as_deref(),
            Some("/a/long/path/of/some/length")
        );
        assert!(differences(&before, &bytes).len() <= 8);
        // Without a reply serial to write, only the serial changes.
        let mut again = before.clone();
        layout.renumber(&mut again, NonZeroU32::new(5).unwrap(), None);
        assert!(differences(&before, &again).iter().all(|at| (8..12).contains(at)));
    }
}

#[test]
fn headers_against_the_rules_are_refused() {
    let good = [
        (1, Value::Str(b'o', PATH)),
        (3, Value::Str(b's', "Notify")),
        (6, Value::Str(b's', NOTIFICATIONS)),
    ];
    assert!(Layout::of(&hand_made(false, Type::MethodCall, 1, &good)).is_ok());
    // The destination twice: zbus keeps the last, dbus-daemon refuses the message.
    let twice = hand_made(
        false,
        Type::MethodCall,
        1,
        &[
            (1, Value::Str(b'o', PATH)),
            (3, Value::Str(b's', "Notify")),
            (6, Value::Str(b's', "org.example.Hidden")),
            (6, Value::Str(b's', NOTIFICATIONS)),
        ],
    );
    assert!(Layout::of(&twice).unwrap_err().contains("twice"));
    // A reply serial that is a string.
    let wrong = hand_made(false, Type::MethodReturn, 1, &[(5, Value::Str(b's', "7"))]);
    assert!(Layout::of(&wrong).unwrap_err().contains("type u"));
    // A code the specification does not define.
    let unknown = hand_made(
        false,
        Type::MethodCall,
        1,
        &[(1, Value::Str(b'o', PATH)), (10, Value::U32(1))],
    );
    assert!(Layout::of(&unknown).unwrap_err().contains("unknown code 10"));
    // A padding byte that is not nul: between two fields, and after the last.
    let mut padded = hand_made(false, Type::MethodCall, 1, &good);
    let first_end = 16 + 4 + 4 + PATH.len() + 1;
    assert_ne!(first_end % 8, 0, "the path leaves padding before the next field");
    padded[first_end] = 1;
    assert!(Layout::of(&padded).unwrap_err().contains("padding"));
    let mut tail = hand_made(false, Type::MethodCall, 1, &good);
    let fields_end = 16 + word_at(&tail, 12) as usize;
    assert_ne!(fields_end % 8, 0, "the header leaves padding before the body");
    tail[fields_end] = 1;
    assert!(Layout::of(&tail).unwrap_err().contains("padding"));
    // A fields array longer than the message, and a string that runs past the array.
    let mut long = hand_made(false, Type::MethodCall, 1, &good);
    long[12] = 0xff;
    assert!(Layout::of(&long).is_err());
    // What zbus's parser refuses: flags the specification does not define, serial 0, a name that is not one.
    let mut flags = hand_made(false, Type::MethodCall, 1, &good);
    flags[2] = 0x10;
    assert!(Layout::of(&flags).unwrap_err().contains("flags"));
    let zero = hand_made(false, Type::MethodCall, 0, &good);
    assert!(Layout::of(&zero).unwrap_err().contains("serial 0"));
    let bad_name = hand_made(
        false,
        Type::MethodCall,
        1,
        &[
            (1, Value::Str(b'o', PATH)),
            (3, Value::Str(b's', "Notify")),
            (6, Value::Str(b's', "org..bad")),
        ],
    );
    assert!(Layout::of(&bad_name).unwrap_err().contains("org..bad"));
    let bad_path = hand_made(
        false,
        Type::MethodCall,
        1,
        &[(1, Value::Str(b'o', "/a//b")), (3, Value::Str(b's', "M"))],
    );
    assert!(Layout::of(&bad_path).is_err());
    let mut overrun = hand_made(false, Type::MethodCall, 1, &good);
    let fields_len = word_at(&overrun, 12);
    overrun[12..16].copy_from_slice(&(fields_len - 3).to_le_bytes());
    assert!(Layout::of(&overrun).is_err());
}
