//! Identifiers and times on the wire.
//!
//! Ids are UUIDs in lowercase hyphenated form; times are RFC 3339 UTC with milliseconds (`2026-11-30T14:33:11.042Z`).
//! Source: docs/protocol.md, "Ids, times and text offsets". Each id has its own type so that a turn id cannot be passed
//! where a conversation id is meant.

use std::fmt;

use chrono::{DateTime, SecondsFormat, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A new random (v4) id.
            #[must_use]
            pub fn new() -> Self {
                Self(Uuid::new_v4())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Lowercase hyphenated, as the wire has it.
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

uuid_id!(
    /// A conversation.
    ConversationId
);
uuid_id!(
    /// A turn: one prompt and everything the agent did for it.
    TurnId
);
uuid_id!(
    /// A write's client-generated id; a repeat with the same id returns the stored outcome and changes nothing.
    CommandId
);
uuid_id!(
    /// The daemon's identity, stable across restarts (a phone checks it after hello).
    DaemonId
);
uuid_id!(
    /// A compaction of a conversation's context (conversation_compacted).
    CompactionId
);
uuid_id!(
    /// A paired device.
    DeviceId
);
uuid_id!(
    /// An open pairing of device.pair_start.
    PairingId
);

/// A tool call's id, as the model provider gave it (such as `call_8Hq2`): an opaque string, not a UUID.
///
/// Events link a call's steps by it (tool_call_started, approval_requested, shell_command_detached, ...).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct CallId(pub String);

impl CallId {
    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for CallId {
    fn from(id: &str) -> Self {
        Self(id.to_owned())
    }
}

/// An id numbered per conversation: a letter and a number from 1 without leading zeros (`s1`, `j2`). Any other
/// string is refused when read.
macro_rules! numbered_id {
    ($(#[$doc:meta])* $name:ident, $letter:literal, $what:literal, $pattern:literal, $description:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// The `n`th of its conversation (from 1).
            #[must_use]
            pub fn nth(n: u64) -> Self {
                Self(format!("{}{n}", $letter))
            }

            /// Its number (the `3` of the third).
            #[must_use]
            pub fn number(&self) -> u64 {
                self.0[1..].parse().unwrap_or(0)
            }

            /// The id as text.
            #[must_use]
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            /// Reads the letter and a number from 1 without leading zeros.
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                let digits = text.strip_prefix($letter).unwrap_or("");
                let valid = !digits.is_empty()
                    && !digits.starts_with('0')
                    && digits.len() <= 19
                    && digits.bytes().all(|b| b.is_ascii_digit());
                if valid {
                    Ok(Self(text.to_owned()))
                } else {
                    Err(format!("`{text}` is not {} ({}1, {}2, ...)", $what, $letter, $letter))
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "pattern": $pattern,
                    "description": $description
                })
            }
        }
    };
}

numbered_id!(
    /// A surface question's id: `s1`, `s2`, ... numbered per conversation (docs/protocol.md, "The contract": the type
    /// question_id of "the wire types of the auto sandbox (phase 1)").
    QuestionId,
    's',
    "a question id",
    "^s[1-9][0-9]*$",
    "A surface question's id: s1, s2, ... per conversation."
);

numbered_id!(
    /// A background job's id: `j1`, `j2`, ... numbered per conversation (docs/protocol.md, "The contract": job_id of
    /// "background jobs (phase C)").
    JobId,
    'j',
    "a job id",
    "^j[1-9][0-9]*$",
    "A background job's id: j1, j2, ... per conversation."
);

/// A point in time: RFC 3339 UTC with milliseconds on the wire, such as `2026-11-30T14:33:11.042Z`.
///
/// Any RFC 3339 time reads; the output is always UTC with exactly three fraction digits, so fixtures are stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp(pub DateTime<Utc>);

impl Timestamp {
    /// Now, truncated to milliseconds (what the wire can carry).
    #[must_use]
    pub fn now() -> Self {
        let now = Utc::now();
        Self::from_millis(now.timestamp_millis()).unwrap_or(Self(now))
    }

    /// The time `millis` milliseconds after the Unix epoch; `None` when out of range.
    #[must_use]
    pub fn from_millis(millis: i64) -> Option<Self> {
        DateTime::from_timestamp_millis(millis).map(Self)
    }

    /// Milliseconds since the Unix epoch.
    #[must_use]
    pub fn as_millis(&self) -> i64 {
        self.0.timestamp_millis()
    }

    /// Reads an RFC 3339 time.
    ///
    /// # Errors
    /// chrono's parse error for text that is not RFC 3339.
    pub fn parse(text: &str) -> Result<Self, chrono::ParseError> {
        DateTime::parse_from_rfc3339(text).map(|t| Self(t.with_timezone(&Utc)))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "RFC 3339 UTC with milliseconds, such as 2026-11-30T14:33:11.042Z."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_lowercase_hyphenated() {
        let id: ConversationId = "0F8FAD5B-D9CB-469F-A165-70867728950E".parse().unwrap();
        assert_eq!(
            serde_json::to_string(&id).unwrap(),
            "\"0f8fad5b-d9cb-469f-a165-70867728950e\""
        );
        assert_eq!(id.to_string(), "0f8fad5b-d9cb-469f-a165-70867728950e");
    }

    #[test]
    fn question_ids_are_s_and_a_number_and_nothing_else() {
        let id: QuestionId = serde_json::from_str("\"s12\"").unwrap();
        assert_eq!(id.number(), 12);
        assert_eq!(id, QuestionId::nth(12));
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"s12\"");
        for bad in [
            "\"s0\"",
            "\"s01\"",
            "\"s\"",
            "\"q1\"",
            "\"S1\"",
            "\"s1x\"",
            "\"\"",
            "1",
            "\"s99999999999999999999\"",
        ] {
            assert!(serde_json::from_str::<QuestionId>(bad).is_err(), "{bad} was read");
        }
    }

    #[test]
    fn timestamps_are_utc_with_milliseconds() {
        let t = Timestamp::parse("2026-11-30T15:33:11.042123+01:00").unwrap();
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"2026-11-30T14:33:11.042Z\"");
        let t = Timestamp::parse("2026-11-30T14:33:11Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-30T14:33:11.000Z");
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
    }
}
