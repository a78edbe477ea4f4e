//! The frames of a connection and the request lifecycle.
//!
//! A client sends [`ClientFrame`]s, the daemon sends [`ServerFrame`]s; each travels as one JSON object (see
//! [`crate::codec`] for the byte framing).
//!
//! # Lifecycle (docs/protocol.md, "Frames and the request lifecycle")
//!
//! - The client sends `{"id": N, "method": "m", "params": {...}}`. `N` is an unsigned integer chosen by the client,
//!   unique among that connection's requests in flight. `params` may be absent when the method takes none. A stream
//!   request may set `"ack": true`.
//! - Every request gets zero or more `{"id": N, "item": ...}` and then exactly one terminal frame: `{"id": N, "end":
//!   {}}` or `{"id": N, "error": {...}}`. A unary method sends exactly one item, then `end`.
//! - `{"ack": N}` is sent once for a stream request that asked for it, as soon as the stream is registered (a
//!   subscription is live) and before its first item, so that a client can send a write knowing it will see its
//!   events.
//! - `{"cancel": N}` ends request N: the daemon sends `end` (or `error` with `cancelled`) and releases what it holds.
//! - `hello` must be the first request.
//! - A frame whose id cannot be read (a body that is not JSON, not an object, or is over the size limit) gets an error
//!   frame without `id`, and the daemon closes the connection: this is the only server frame without an id.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{ErrorBody, ErrorCode};

/// The id of a request: chosen by the client, unique among that connection's requests in flight.
pub type RequestId = u64;

/// A request: `{"id", "method", "params"?, "ack"?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The client's id of the request.
    pub id: RequestId,
    /// The method name, such as `prompt.send` (see [`crate::methods`]).
    pub method: String,
    /// The params object; `None` when the frame had none (or `null`).
    pub params: Option<Value>,
    /// Whether the client asked for `{"ack": id}` once the stream is registered (false when absent).
    pub ack: bool,
}

/// A frame from a client.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientFrame {
    /// Start a request.
    Request(Request),
    /// `{"cancel": id}`: end request `id`.
    Cancel(RequestId),
}

/// Why a JSON object is not a valid client frame.
///
/// `id` is the request id when the frame had a readable one, so that the daemon can answer with an error frame for
/// that request; when it is `None`, the daemon answers without an id and closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FrameParseError {
    /// The request id, when one could be read.
    pub id: Option<RequestId>,
    /// A sentence that names the member at fault.
    pub message: String,
}

impl FrameParseError {
    fn new(id: Option<RequestId>, message: impl Into<String>) -> Self {
        Self {
            id,
            message: message.into(),
        }
    }

    /// The error body the daemon sends for this frame (`invalid`).
    #[must_use]
    pub fn to_error_body(&self) -> ErrorBody {
        ErrorBody::new(ErrorCode::Invalid, self.message.clone())
    }
}

fn read_id(value: &Value, member: &str) -> Result<RequestId, String> {
    value
        .as_u64()
        .ok_or_else(|| format!("`{member}` must be an unsigned integer"))
}

impl ClientFrame {
    /// Reads a client frame from a decoded JSON object.
    ///
    /// # Errors
    /// [`FrameParseError`] naming the member at fault: an id that is not an unsigned integer, a method that is not a
    /// string, params that are not an object, an ack that is not a boolean, an unknown member, or neither `method`
    /// nor `cancel`.
    pub fn from_object(mut object: Map<String, Value>) -> Result<Self, FrameParseError> {
        if let Some(cancel) = object.remove("cancel") {
            let id = read_id(&cancel, "cancel").map_err(|m| FrameParseError::new(None, m))?;
            if let Some(extra) = object.keys().next() {
                return Err(FrameParseError::new(
                    None,
                    format!("a cancel frame has no member `{extra}`"),
                ));
            }
            return Ok(Self::Cancel(id));
        }
        let id = match object.remove("id") {
            Some(id) => read_id(&id, "id").map_err(|m| FrameParseError::new(None, m))?,
            None => {
                return Err(FrameParseError::new(
                    None,
                    "a request needs `id` (or the frame `cancel`)",
                ));
            }
        };
        let method = match object.remove("method") {
            Some(Value::String(method)) => method,
            Some(_) => return Err(FrameParseError::new(Some(id), "`method` must be a string")),
            None => return Err(FrameParseError::new(Some(id), "a request needs `method`")),
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => None,
            Some(params @ Value::Object(_)) => Some(params),
            Some(_) => return Err(FrameParseError::new(Some(id), "`params` must be an object")),
        };
        let ack = match object.remove("ack") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(ack)) => ack,
            Some(_) => return Err(FrameParseError::new(Some(id), "`ack` must be a boolean")),
        };
        if let Some(extra) = object.keys().next() {
            return Err(FrameParseError::new(
                Some(id),
                format!("a request has no member `{extra}`"),
            ));
        }
        Ok(Self::Request(Request {
            id,
            method,
            params,
            ack,
        }))
    }
}

impl Serialize for ClientFrame {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Request(request) => {
                let mut map = serializer.serialize_map(None)?;
                map.serialize_entry("id", &request.id)?;
                map.serialize_entry("method", &request.method)?;
                if let Some(params) = &request.params {
                    map.serialize_entry("params", params)?;
                }
                if request.ack {
                    map.serialize_entry("ack", &true)?;
                }
                map.end()
            }
            Self::Cancel(id) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("cancel", id)?;
                map.end()
            }
        }
    }
}

/// A frame from the daemon.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerFrame {
    /// `{"id", "item"}`: one item of a request's answer.
    Item {
        /// The request.
        id: RequestId,
        /// The item: a method's result, or one element of a stream.
        item: Value,
    },
    /// `{"id", "end": {}}`: the request ended normally; no more frames for this id.
    End {
        /// The request.
        id: RequestId,
    },
    /// `{"id"?, "error"}`: the request failed; no more frames for this id. `id` is absent only when the frame that
    /// caused it had no readable id, and the daemon closes the connection after it.
    Error {
        /// The request, when known.
        id: Option<RequestId>,
        /// What went wrong.
        error: ErrorBody,
    },
    /// `{"ack": id}`: the stream of request `id` is registered.
    Ack(RequestId),
}

impl Serialize for ServerFrame {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        match self {
            Self::Item { id, item } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("item", item)?;
            }
            Self::End { id } => {
                map.serialize_entry("id", id)?;
                map.serialize_entry("end", &Map::new())?;
            }
            Self::Error { id, error } => {
                if let Some(id) = id {
                    map.serialize_entry("id", id)?;
                }
                map.serialize_entry("error", error)?;
            }
            Self::Ack(id) => map.serialize_entry("ack", id)?,
        }
        map.end()
    }
}

impl ServerFrame {
    /// Reads a server frame from a decoded JSON object (the client side of the connection).
    ///
    /// # Errors
    /// A message naming the member at fault when the object is none of the four server frames.
    pub fn from_object(mut object: Map<String, Value>) -> Result<Self, FrameParseError> {
        if let Some(ack) = object.remove("ack") {
            let id = read_id(&ack, "ack").map_err(|m| FrameParseError::new(None, m))?;
            return Ok(Self::Ack(id));
        }
        let id = match object.remove("id") {
            Some(id) => Some(read_id(&id, "id").map_err(|m| FrameParseError::new(None, m))?),
            None => None,
        };
        if let Some(error) = object.remove("error") {
            let error: ErrorBody = serde_json::from_value(error)
                .map_err(|e| FrameParseError::new(id, format!("`error` is not an error body: {e}")))?;
            return Ok(Self::Error { id, error });
        }
        let Some(id) = id else {
            return Err(FrameParseError::new(
                None,
                "a server frame needs `id`, `ack` or `error`",
            ));
        };
        if let Some(item) = object.remove("item") {
            return Ok(Self::Item { id, item });
        }
        if object.remove("end").is_some() {
            return Ok(Self::End { id });
        }
        Err(FrameParseError::new(
            Some(id),
            "a server frame needs `item`, `end` or `error`",
        ))
    }

    /// The request this frame belongs to (`None` for an error without id).
    #[must_use]
    pub fn request_id(&self) -> Option<RequestId> {
        match self {
            Self::Item { id, .. } | Self::End { id } | Self::Ack(id) => Some(*id),
            Self::Error { id, .. } => *id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn request_round_trips() {
        let frame =
            ClientFrame::from_object(object(json!({"id": 7, "method": "hello", "params": {"protocol": 1}}))).unwrap();
        assert_eq!(
            frame,
            ClientFrame::Request(Request {
                id: 7,
                method: "hello".into(),
                params: Some(json!({"protocol": 1})),
                ack: false
            })
        );
        assert_eq!(
            serde_json::to_value(&frame).unwrap(),
            json!({"id": 7, "method": "hello", "params": {"protocol": 1}})
        );
    }

    #[test]
    fn cancel_and_ack_read() {
        assert_eq!(
            ClientFrame::from_object(object(json!({"cancel": 3}))).unwrap(),
            ClientFrame::Cancel(3)
        );
        let frame = ClientFrame::from_object(object(
            json!({"id": 1, "method": "conversation.subscribe", "ack": true}),
        ))
        .unwrap();
        let ClientFrame::Request(request) = frame else {
            panic!("not a request")
        };
        assert!(request.ack);
        assert_eq!(request.params, None);
    }

    #[test]
    fn bad_members_name_the_member_and_keep_the_id() {
        let err = ClientFrame::from_object(object(json!({"id": 4, "method": 5}))).unwrap_err();
        assert_eq!(err.id, Some(4));
        assert!(err.message.contains("method"), "{}", err.message);
        let err = ClientFrame::from_object(object(json!({"id": 4, "method": "x", "params": [1]}))).unwrap_err();
        assert!(err.message.contains("params"));
        let err = ClientFrame::from_object(object(json!({"id": -1, "method": "x"}))).unwrap_err();
        assert_eq!(err.id, None);
        let err = ClientFrame::from_object(object(json!({"id": 2, "method": "x", "extra": 1}))).unwrap_err();
        assert!(err.message.contains("extra"));
        let err = ClientFrame::from_object(object(json!({"method": "x"}))).unwrap_err();
        assert_eq!(err.id, None);
    }

    #[test]
    fn server_frames_serialize_as_the_spec_lists_them() {
        let cases = [
            (
                ServerFrame::Item {
                    id: 1,
                    item: json!({"a": 1}),
                },
                json!({"id": 1, "item": {"a": 1}}),
            ),
            (ServerFrame::End { id: 1 }, json!({"id": 1, "end": {}})),
            (ServerFrame::Ack(2), json!({"ack": 2})),
            (
                ServerFrame::Error {
                    id: Some(3),
                    error: ErrorBody::new(ErrorCode::Busy, "b"),
                },
                json!({"id": 3, "error": {"code": "busy", "message": "b"}}),
            ),
            (
                ServerFrame::Error {
                    id: None,
                    error: ErrorBody::new(ErrorCode::TooLarge, "t"),
                },
                json!({"error": {"code": "too_large", "message": "t"}}),
            ),
        ];
        for (frame, wire) in cases {
            assert_eq!(serde_json::to_value(&frame).unwrap(), wire);
            assert_eq!(ServerFrame::from_object(object(wire)).unwrap(), frame);
        }
    }
}
