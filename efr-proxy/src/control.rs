//! The control socket: efrd's requests (`proxy.open`, `proxy.close`) over the inherited socket pair, in the
//! public protocol's framing (docs/network.md, "The proxy process"; ADR 0010).
//!
//! Bad input never ends the proxy: an unknown method or bad params get an `invalid` error for that request; a body
//! that is not a JSON object gets an error without id; a frame over [`MAX_CONTROL_FRAME`] gets `too_large` and its
//! body is read and dropped, so the stream stays in step. The end of the stream (efrd closed its end, or ended)
//! closes every plan and ends the proxy.

use bytes::BytesMut;
use efr_protocol::codec::{self, FrameError, HEADER_LEN};
use efr_protocol::error::{ErrorBody, ErrorCode};
use efr_protocol::frame::{ClientFrame, Request, ServerFrame};
use efr_protocol::internal::proxy::{CLOSE, ClosePlan, OPEN, OpenPlan};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::plans::Plans;

/// The largest control frame's body: 1 MiB (a plan's lists are far smaller).
pub const MAX_CONTROL_FRAME: usize = 1024 * 1024;

/// Serves requests until the stream ends, then closes every plan.
///
/// # Errors
/// The transport's error (reading or writing the control stream).
pub async fn serve<R, W>(mut reader: R, mut writer: W, plans: &mut Plans) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let result = loop {
        let frame = match read_frame(&mut reader).await {
            Ok(Some(frame)) => frame,
            Ok(None) => break Ok(()),
            Err(FrameError::Io(error)) => break Err(error),
            Err(error) => {
                let code = match error {
                    FrameError::TooLarge { .. } => ErrorCode::TooLarge,
                    _ => ErrorCode::Invalid,
                };
                let reply = ServerFrame::Error {
                    id: None,
                    error: ErrorBody::new(code, error.to_string()),
                };
                if let Err(error) = write(&mut writer, &[reply]).await {
                    break Err(error);
                }
                continue;
            }
        };
        let replies = match ClientFrame::from_object(frame) {
            Ok(ClientFrame::Request(request)) => answer(request, plans).await,
            // Every request is answered before the next is read: there is nothing in flight to cancel.
            Ok(ClientFrame::Cancel(_)) => Vec::new(),
            Err(error) => vec![ServerFrame::Error {
                id: error.id,
                error: error.to_error_body(),
            }],
        };
        if let Err(error) = write(&mut writer, &replies).await {
            break Err(error);
        }
    };
    plans.close_all().await;
    result
}

async fn answer(request: Request, plans: &mut Plans) -> Vec<ServerFrame> {
    let id = request.id;
    let result = match request.method.as_str() {
        OPEN => match params::<OpenPlan>(OPEN, request.params) {
            Ok(plan) => plans
                .open(&plan)
                .map_err(|e| ErrorBody::new(ErrorCode::Unavailable, e))
                .and_then(to_value),
            Err(error) => Err(error),
        },
        CLOSE => match params::<ClosePlan>(CLOSE, request.params) {
            Ok(close) => match plans.close(close.plan).await {
                Ok(closed) => to_value(closed),
                Err(error) => Err(ErrorBody::new(ErrorCode::NotFound, error)),
            },
            Err(error) => Err(error),
        },
        other => Err(ErrorBody::new(
            ErrorCode::Invalid,
            format!("unknown method {other:?}; efr-proxy serves {OPEN} and {CLOSE}"),
        )),
    };
    match result {
        Ok(item) => vec![ServerFrame::Item { id, item }, ServerFrame::End { id }],
        Err(error) => vec![ServerFrame::Error { id: Some(id), error }],
    }
}

fn params<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, ErrorBody> {
    let params = params.ok_or_else(|| ErrorBody::new(ErrorCode::Invalid, format!("{method} needs params")))?;
    serde_json::from_value(params)
        .map_err(|e| ErrorBody::new(ErrorCode::Invalid, format!("bad params for {method}: {e}")))
}

fn to_value<T: serde::Serialize>(value: T) -> Result<Value, ErrorBody> {
    serde_json::to_value(value).map_err(|e| ErrorBody::new(ErrorCode::Internal, e.to_string()))
}

/// Reads one frame; `None` at the end of the stream between frames. A body over the limit is read and dropped.
/// efr-bus-proxy's control socket reads with it too.
///
/// # Errors
/// The transport's error, a body over [`MAX_CONTROL_FRAME`] (`TooLarge`), or a body that is not a JSON object.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<Option<serde_json::Map<String, Value>>, FrameError> {
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

/// Writes frames in the public protocol's framing, in one write.
///
/// # Errors
/// The transport's error.
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
