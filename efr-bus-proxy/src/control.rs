//! The control socket: efrd's requests (`bus.open`, `bus.close`) over the inherited socket pair (docs/bus.md, "The
//! process"; ADR 0013), served by [`efr_helper::control`]'s loop.
//!
//! An open with a plan that does not make a policy is `invalid`, a close of a plan that is not open `not_found`;
//! bad input gets the loop's errors and never ends the proxy. The end of the stream (efrd closed its end, or ended)
//! closes every plan.

use efr_helper::control::{Handler, params, to_value, unknown_method};
use efr_protocol::error::{ErrorBody, ErrorCode};
use efr_protocol::internal::bus_proxy::{CLOSE, OPEN, OpenBusPlan};
use efr_protocol::internal::proxy::ClosePlan;
use serde_json::Value;

use crate::plans::Plans;

impl Handler for Plans {
    async fn answer(&mut self, method: &str, request: Option<Value>) -> Result<Value, ErrorBody> {
        match method {
            OPEN => {
                let plan = params::<OpenBusPlan>(OPEN, request)?;
                self.open(&plan)
                    .map_err(|e| ErrorBody::new(ErrorCode::Invalid, e))
                    .and_then(to_value)
            }
            CLOSE => {
                let close = params::<ClosePlan>(CLOSE, request)?;
                self.close(close.plan)
                    .map_err(|e| ErrorBody::new(ErrorCode::NotFound, e))
                    .and_then(to_value)
            }
            other => Err(unknown_method("efr-bus-proxy", other, &[OPEN, CLOSE])),
        }
    }

    async fn end(&mut self) {
        self.close_all();
    }
}
