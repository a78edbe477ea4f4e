//! The control socket: efrd's requests (`bus.open`, `bus.close`) over the inherited socket pair, in efr-proxy's
//! framing and with its frame reader and writer (docs/bus.md, "The process"; ADR 0013).
//!
//! Bad input never ends the proxy: an unknown method or bad params get an `invalid` error for that request. The end
//! of the stream (efrd closed its end, or ended) closes every plan and ends the proxy.

use efr_protocol::codec::FrameError;
use efr_protocol::error::{ErrorBody, ErrorCode};
use efr_protocol::frame::{ClientFrame, Request, ServerFrame};
use efr_protocol::internal::bus_proxy::{CLOSE, OPEN, OpenBusPlan};
use efr_protocol::internal::proxy::ClosePlan;
use efr_proxy::control::{read_frame, write};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::plans::Plans;

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
            Ok(ClientFrame::Request(request)) => answer(request, plans),
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
    plans.close_all();
    result
}

fn answer(request: Request, plans: &mut Plans) -> Vec<ServerFrame> {
    let id = request.id;
    let result = match request.method.as_str() {
        OPEN => params::<OpenBusPlan>(OPEN, request.params).and_then(|plan| {
            plans
                .open(&plan)
                .map_err(|e| ErrorBody::new(ErrorCode::Invalid, e))
                .and_then(to_value)
        }),
        CLOSE => params::<ClosePlan>(CLOSE, request.params).and_then(|close| {
            plans
                .close(close.plan)
                .map_err(|e| ErrorBody::new(ErrorCode::NotFound, e))
                .and_then(to_value)
        }),
        other => Err(ErrorBody::new(
            ErrorCode::Invalid,
            format!("unknown method {other:?}; efr-bus-proxy serves {OPEN} and {CLOSE}"),
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
