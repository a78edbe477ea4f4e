//! The control socket's request loop: efrd's requests to a helper over the inherited socket pair, in the public
//! protocol's framing (a 4-byte big-endian length, then a JSON object).
//!
//! Each helper answers its own methods through a [`Handler`]; the loop owns everything else. Bad input never ends
//! the helper: an unknown method or bad params get an error for that request (the handler's); a body that is not a
//! JSON object gets an `invalid` error without id; a frame over [`MAX_CONTROL_FRAME`] gets `too_large` and its body
//! is read and dropped, so the stream stays in step. Every request is answered before the next is read, so a
//! `cancel` has nothing in flight to cancel and is ignored. The end of the stream (efrd closed its end, or ended)
//! calls [`Handler::end`] and ends the loop.

use std::os::fd::OwnedFd;

use bytes::BytesMut;
use efr_protocol::codec::{self, FrameError, HEADER_LEN};
use efr_protocol::error::{ErrorBody, ErrorCode};
use efr_protocol::frame::{ClientFrame, ServerFrame};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest control frame's body: 1 MiB (a plan's lists are far smaller).
pub const MAX_CONTROL_FRAME: usize = 1024 * 1024;

/// A helper's answers to efrd's requests. The loop calls it from one task, one request at a time.
pub trait Handler {
    /// Answers one request, `method` with its `params` (`None` when the request had none): the item of a
    /// successful answer, or the error that answers it instead. [`params`], [`to_value`] and [`unknown_method`]
    /// make the usual errors.
    fn answer(&mut self, method: &str, params: Option<Value>) -> impl Future<Output = Result<Value, ErrorBody>>;

    /// The stream ended: closes everything the helper serves (its plans go with efrd's end of the socket).
    fn end(&mut self) -> impl Future<Output = ()>;
}

/// Serves the control socket `control` (a Unix stream socket, such as [`crate::start::Handover::control`]) with
/// `handler` until it ends. Must run inside a tokio runtime with IO enabled.
///
/// # Errors
/// A sentence naming the control socket: it could not be registered with the runtime, or reading or writing it
/// failed.
pub async fn serve_socket<H: Handler>(control: OwnedFd, handler: &mut H) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("the control socket: {e}");
    let control = std::os::unix::net::UnixStream::from(control);
    control.set_nonblocking(true).map_err(fail)?;
    let control = tokio::net::UnixStream::from_std(control).map_err(fail)?;
    let (reader, writer) = control.into_split();
    serve(reader, writer, handler).await.map_err(fail)
}

/// Serves requests read from `reader`, answers written to `writer`, until the stream ends; then calls
/// [`Handler::end`], also when the transport failed.
///
/// # Errors
/// The transport's error (reading or writing the control stream).
pub async fn serve<R, W, H>(mut reader: R, mut writer: W, handler: &mut H) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    H: Handler,
{
    let result = loop {
        let replies = match read_frame(&mut reader).await {
            Ok(Some(frame)) => answer(frame, handler).await,
            Ok(None) => break Ok(()),
            Err(FrameError::Io(error)) => break Err(error),
            Err(error) => {
                let code = match error {
                    FrameError::TooLarge { .. } => ErrorCode::TooLarge,
                    _ => ErrorCode::Invalid,
                };
                vec![ServerFrame::Error {
                    id: None,
                    error: ErrorBody::new(code, error.to_string()),
                }]
            }
        };
        if let Err(error) = write(&mut writer, &replies).await {
            break Err(error);
        }
    };
    handler.end().await;
    result
}

/// The frames that answer one frame read: an item and its end, or an error.
async fn answer<H: Handler>(frame: Map<String, Value>, handler: &mut H) -> Vec<ServerFrame> {
    match ClientFrame::from_object(frame) {
        Ok(ClientFrame::Request(request)) => {
            let id = request.id;
            match handler.answer(&request.method, request.params).await {
                Ok(item) => vec![ServerFrame::Item { id, item }, ServerFrame::End { id }],
                Err(error) => vec![ServerFrame::Error { id: Some(id), error }],
            }
        }
        Ok(ClientFrame::Cancel(_)) => Vec::new(),
        Err(error) => vec![ServerFrame::Error {
            id: error.id,
            error: error.to_error_body(),
        }],
    }
}

/// Decodes `params` of `method` into `T`.
///
/// # Errors
/// `invalid` when the params are missing or do not decode, in words naming `method`.
pub fn params<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, ErrorBody> {
    let params = params.ok_or_else(|| ErrorBody::new(ErrorCode::Invalid, format!("{method} needs params")))?;
    serde_json::from_value(params)
        .map_err(|e| ErrorBody::new(ErrorCode::Invalid, format!("bad params for {method}: {e}")))
}

/// Encodes an answer's item.
///
/// # Errors
/// `internal` when `value` does not serialize to JSON.
pub fn to_value<T: Serialize>(value: T) -> Result<Value, ErrorBody> {
    serde_json::to_value(value).map_err(|e| ErrorBody::new(ErrorCode::Internal, e.to_string()))
}

/// The `invalid` error that answers a method `helper` (its program name) does not serve; `served` lists those it
/// does.
#[must_use]
pub fn unknown_method(helper: &str, method: &str, served: &[&str]) -> ErrorBody {
    ErrorBody::new(
        ErrorCode::Invalid,
        format!("unknown method {method:?}; {helper} serves {}", served.join(" and ")),
    )
}

/// Reads one frame; `None` at the end of the stream between frames (or inside one: efrd went away). A body over
/// [`MAX_CONTROL_FRAME`] is read and dropped.
///
/// # Errors
/// The transport's error, a body over the limit (`TooLarge`), or a body that is not a JSON object.
pub async fn read_frame<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Option<Map<String, Value>>, FrameError> {
    let mut header = [0_u8; HEADER_LEN];
    match reader.read_exact(&mut header).await {
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(error) => return Err(error.into()),
    }
    let len = u32::from_be_bytes(header) as usize;
    if len > MAX_CONTROL_FRAME {
        let skipped = tokio::io::copy(&mut reader.take(len as u64), &mut tokio::io::sink()).await?;
        if skipped < len as u64 {
            return Ok(None);
        }
        return Err(FrameError::TooLarge {
            len: len as u64,
            max: MAX_CONTROL_FRAME,
        });
    }
    let mut body = vec![0_u8; len];
    match reader.read_exact(&mut body).await {
        Ok(_) => codec::parse_body(&body).map(Some),
        Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Writes `frames` in the public protocol's framing, in one write; nothing when there are none.
///
/// # Errors
/// The transport's error, or a frame that does not encode.
pub async fn write<W: AsyncWrite + Unpin>(writer: &mut W, frames: &[ServerFrame]) -> std::io::Result<()> {
    if frames.is_empty() {
        return Ok(());
    }
    let mut buf = BytesMut::new();
    for frame in frames {
        codec::encode_into(frame, codec::DEFAULT_MAX_FRAME, &mut buf).map_err(std::io::Error::other)?;
    }
    writer.write_all(&buf).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests;
