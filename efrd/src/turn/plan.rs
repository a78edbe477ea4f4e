//! The plan of a turn's model call: the instructions, the history, the settings, the tools and the provider.

use efr_protocol::ErrorBody;
use efr_protocol::ids::TurnId;
use efr_protocol::wire::TurnSettings;

use super::TurnPlan;
use super::compaction::TurnContext;
use super::env::ToolEnv;
use crate::compact::{Limits, ModelHistory};
use crate::config::Config;
use crate::models::Models;
use efr_model::ModelRequest;

/// The model call of a turn: the active provider, the history, the settings, the instructions and tools of
/// `prompt` (crate::prompt: pinned per conversation), and the tools only when `tools` is `Some` (an auto turn's
/// tools get the turn's exit judges).
///
/// # Errors
/// `unauthorized` when the provider needs a key and none is stored or set in the environment.
pub fn plan(
    config: &Config,
    models: &Models,
    turn_id: TurnId,
    settings: &TurnSettings,
    history: &ModelHistory,
    prompt: &crate::prompt::TurnPrompt,
    mut tools: Option<ToolEnv>,
) -> Result<TurnPlan, ErrorBody> {
    let provider = models.provider_for_turn()?;
    // Auto's exits are judged by the classifier and the turn's own model (docs/auto.md, "The judges").
    if let Some(env) = tools.as_mut()
        && efr_policy::effective_mode(env.mode, env.origin) == efr_protocol::wire::Mode::Auto
    {
        env.exits.judges = crate::exits::judge::Judges::for_turn(&config.auto, models, &provider, &settings.model);
    }
    let mut request = ModelRequest::new(settings.model.clone());
    request.instructions.clone_from(&prompt.instructions);
    request.history = history.items().to_vec();
    request.effort = settings.effort.clone();
    if tools.is_some() {
        request.tools.clone_from(&prompt.tools);
    }
    let sizes = &prompt.sizes;
    let context = TurnContext {
        limits: Limits::of(&config.context, models.context_window(&settings.model)),
        prefix_tokens: crate::prompt::context::tokens(sizes.tools + sizes.base + sizes.mode + sizes.project),
        fresh: prompt.environment.clone(),
    };
    Ok(TurnPlan {
        turn_id,
        request,
        provider,
        history: history.clone(),
        context,
        tools,
    })
}
