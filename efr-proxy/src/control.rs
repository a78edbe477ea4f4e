//! The control socket: efrd's requests (`proxy.open`, `proxy.close`) over the inherited socket pair
//! (docs/network.md, "The proxy process"; ADR 0010), served by [`efr_helper::control`]'s loop.
//!
//! An open that fails is `unavailable`, a close of a plan that is not open `not_found`; bad input gets the loop's
//! errors and never ends the proxy. The end of the stream (efrd closed its end, or ended) closes every plan.

use efr_helper::control::{Handler, params, to_value, unknown_method};
use efr_protocol::error::{ErrorBody, ErrorCode};
use efr_protocol::internal::proxy::{CLOSE, ClosePlan, OPEN, OpenPlan};
use serde_json::Value;

use crate::plans::Plans;

impl Handler for Plans {
    async fn answer(&mut self, method: &str, request: Option<Value>) -> Result<Value, ErrorBody> {
        match method {
            OPEN => {
                let plan = params::<OpenPlan>(OPEN, request)?;
                self.open(&plan)
                    .map_err(|e| ErrorBody::new(ErrorCode::Unavailable, e))
                    .and_then(to_value)
            }
            CLOSE => {
                let close = params::<ClosePlan>(CLOSE, request)?;
                match self.close(close.plan).await {
                    Ok(closed) => to_value(closed),
                    Err(error) => Err(ErrorBody::new(ErrorCode::NotFound, error)),
                }
            }
            other => Err(unknown_method("efr-proxy", other, &[OPEN, CLOSE])),
        }
    }

    async fn end(&mut self) {
        self.close_all().await;
    }
}
