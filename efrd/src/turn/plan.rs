//! The plan of a turn's model call: the instructions, the history, the settings, the tools and the provider.

use efr_protocol::ErrorBody;
use efr_protocol::ids::TurnId;
use efr_protocol::wire::TurnSettings;

use super::TurnPlan;
use super::tools::ToolEnv;
use crate::model::registry::Models;
use crate::model::{HistoryItem, ModelRequest};

/// The instructions every turn starts with.
pub const INSTRUCTIONS: &str = "You are efr, a coding agent in the user's terminal on Linux. Answer briefly and \
precisely. The user's working directory and recent commands come with their prompt when known.";

/// The model call of a turn: the active provider, the history, the settings, and the tools when `tools` is `Some`.
///
/// # Errors
/// `unauthorized` when the provider needs a key and none is stored or set in the environment.
pub fn plan(
    models: &Models,
    turn_id: TurnId,
    settings: &TurnSettings,
    history: &[HistoryItem],
    tools: Option<ToolEnv>,
) -> Result<TurnPlan, ErrorBody> {
    let provider = models.provider_for_turn()?;
    let mut request = ModelRequest::new(settings.model.clone());
    request.instructions = INSTRUCTIONS.to_owned();
    request.history = history.to_vec();
    request.effort = settings.effort.clone();
    if tools.is_some() {
        request.tools = crate::tools::spec::model_tools();
    }
    Ok(TurnPlan {
        turn_id,
        request,
        provider,
        context_window: models.context_window(&settings.model),
        tools,
    })
}
