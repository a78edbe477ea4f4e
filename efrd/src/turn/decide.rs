//! One place decides a tool call: it reads the call, builds the policy's context, plans a patch, runs cautious's git
//! check, and asks the policy. What comes out is the [`DecidedCall`]: the policy's [`Decision`] together with what
//! the call needs to run once allowed (the shell line, or the planned patch with the paths it really touches).
//!
//! Recording, the question and running are [`super::tools`]'s; the rules themselves are [`efr_policy`]'s.

use std::path::Path;
use std::time::Duration;

use efr_protocol::wire::Mode;

use super::env::ToolEnv;
use super::git_check;
use super::patch_paths::{resolved_change, resolved_dirs, resolved_roots};
use crate::tools::spec::ToolCall;
use efr_patch::{self as patch, Plan};
use efr_policy::{self as policy, Call, Decision, LineAnalysis, PatchCall, PatchChange, PolicyContext, ShellCall};

/// What a decided call runs once allowed.
#[derive(Debug)]
pub enum CallWork {
    /// A shell line.
    Shell {
        /// The command line as the model wrote it.
        command: String,
        /// When the call answers the model and leaves the command running.
        timeout: Duration,
        /// The policy's analysis of the line (auto's exits read it: the turn parses a line once).
        analysis: Box<LineAnalysis>,
        /// Start it as a background job ([`super::job_call`]).
        job: Option<crate::tools::spec::JobRequest>,
    },
    /// A planned patch.
    Patch {
        /// The patch, planned against the files as they are (nothing written yet).
        plan: Plan,
        /// Its changes with resolved paths: what the policy judged.
        changes: Vec<PatchChange>,
        /// The patch as the model sent it (a floor edit's exit shows its payload).
        text: String,
    },
}

/// A call with the policy's decision and its work.
#[derive(Debug)]
pub struct DecidedCall {
    /// Run, ask or refuse.
    pub decision: Decision,
    /// What runs once allowed.
    pub work: CallWork,
}

/// Decides `call` in the turn's `env`.
///
/// # Errors
/// The message for the model when the call cannot run at all: an unknown tool, an input that does not parse, or a
/// patch that cannot apply to the files as they are (nothing was written).
pub async fn decide_call(env: &ToolEnv, call: ToolCall) -> Result<DecidedCall, String> {
    // The policy compares paths lexically: the roots and a patch's paths are resolved through links first.
    let mut ctx = PolicyContext::new(resolved_roots(&env.roots), env.origin);
    ctx.home.clone_from(&env.home);
    ctx.efr_dirs = resolved_dirs(&env.efr_dirs);
    // As written and resolved: a line may name the mask either way.
    ctx.extra_masks = env.layout.config_masks.clone();
    for resolved in resolved_roots(&env.layout.config_masks) {
        if !ctx.extra_masks.contains(&resolved) {
            ctx.extra_masks.push(resolved);
        }
    }
    match call {
        ToolCall::Shell { command, timeout, job } => {
            let shell = ShellCall {
                command,
                cwd: env.cwd.clone(),
            };
            let analysis = policy::analyse_call(&shell, &ctx);
            if policy::effective_mode(env.mode, env.origin) == Mode::Cautious {
                // Cautious's reads run in the read-only sandbox whenever it can run (docs/adr/0009-cautious-reads-contained.md): git's own
                // config is neutralised there, so the repositories need no check.
                let probe = env.sandbox.current().await;
                // bubblewrap's read-only sandbox, or where it cannot start, Landlock and seccomp alone
                // (docs/adr/0020-landlock-only-reads.md); with neither, every read asks.
                let contained = probe.status.available || probe.landlock_only;
                ctx.sandbox = contained && visible_read_only(env);
                ctx.uncontained = !contained;
                if !ctx.sandbox {
                    // Without it, a read-only git command runs only in a repository checked to run nothing of its own.
                    ctx.git = git_check::inspect_unless_sandboxed(&analysis.git).await;
                }
            }
            let mut decision = policy::decide_shell(&shell, &analysis, env.mode, &ctx);
            // A kill of efrd, its ancestors, a session leader or an efr program: a floor in every mode.
            if !matches!(decision, Decision::Refuse { .. })
                && let Some(refusal) = super::kill_check::refusal(&analysis.commands)
            {
                decision = Decision::Refuse { refusal };
            }
            Ok(DecidedCall {
                decision,
                work: CallWork::Shell {
                    command: shell.command,
                    timeout,
                    analysis: Box::new(analysis),
                    job,
                },
            })
        }
        // A patch is planned before the decision: the policy judges the paths it really touches.
        ToolCall::Patch { text } => {
            let (plan, changes) = plan_patch(&text, &env.cwd)?;
            let call = Call::Patch(PatchCall {
                changes: changes.clone(),
            });
            let decision = policy::decide(&call, env.mode, &ctx);
            Ok(DecidedCall {
                decision,
                work: CallWork::Patch { plan, changes, text },
            })
        }
        ToolCall::Invalid { message } => Err(message),
    }
}

/// Whether the read-only sandbox can show the call's folders: a project or start folder under `/tmp` is shown
/// read-only over its private `/tmp` (`LaunchPlan::read_only_roots`), but `/tmp` itself cannot be, so a call there
/// runs direct, with the check of credential stores (docs/adr/0009-cautious-reads-contained.md).
fn visible_read_only(env: &ToolEnv) -> bool {
    let tmp = |path: &Path| efr_policy::paths::normalize(path) == Path::new("/tmp");
    !tmp(&env.cwd) && !env.roots.iter().any(|root| tmp(root))
}

/// Parses and plans a patch against the files under `cwd`, with its changes' paths resolved through links.
fn plan_patch(text: &str, cwd: &Path) -> Result<(Plan, Vec<PatchChange>), String> {
    let parsed = patch::parse(text).map_err(|e| e.to_string())?;
    let plan = Plan::new(&parsed, cwd).map_err(|e| format!("the patch cannot apply, and no file changed: {e}"))?;
    let changes = plan
        .files()
        .iter()
        .map(resolved_change)
        .collect::<Result<Vec<_>, _>>()?;
    Ok((plan, changes))
}
