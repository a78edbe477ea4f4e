//! The tools given to the model, and the reading of a call the model made.
//!
//! Two tools (docs/architecture.md, "Tools"):
//! - `shell`: a function tool with `{"command": string, "timeout": integer?}`. The timeout is in seconds, 120 when
//!   absent, at most [`MAX_TIMEOUT_SECS`]; past it the call answers with what it has and the command goes on
//!   running (`left_running`).
//!   With `background: true` the command starts a background job instead (docs/jobs.md): the call answers at once
//!   with the job's id, and the job runs past the turn, with an optional `watch` pattern, `max_wakes` and
//!   `max_minutes`.
//! - `apply_patch`: a freeform tool whose input is the `*** Begin Patch` text. Providers without freeform tools get a
//!   function tool with one string member `input` (the model layer's fallback), and the call's input is that string.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use efr_model::Tool;

/// The shell tool's name.
pub const SHELL: &str = "shell";
/// The patch tool's name.
pub const APPLY_PATCH: &str = "apply_patch";
/// The timeout of a shell call when the model gives none: 120 s.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// The longest timeout a shell call may ask for: 1 hour.
pub const MAX_TIMEOUT_SECS: u64 = 3600;
/// A background job's limit in minutes when the model gives none.
pub const DEFAULT_MAX_MINUTES: u32 = 60;
/// The longest limit a job may ask for: a day.
pub const MAX_MINUTES: u32 = 24 * 60;
/// How many times a job's watch may wake the model when the model gives no `max_wakes`.
pub const DEFAULT_MAX_WAKES: u32 = 3;
/// The most wakes a watch may ask for.
pub const MAX_WAKES: u32 = 20;

/// The tools of every turn, with `patch_description` as `apply_patch`'s description (the texts are the prompt
/// module's, `efrd/src/prompt/text/`, one per variant).
#[must_use]
pub fn model_tools_with(patch_description: &str) -> Vec<Tool> {
    vec![
        Tool::Function {
            name: SHELL.to_owned(),
            description: "Run a command line in the user's shell (bash or zsh) in a terminal. The working directory \
                          and exported variables carry over from one call to the next, as in a terminal, except \
                          for a call that runs in efr's sandbox (auto mode): it starts in the shell's directory, \
                          and its own cd and export end with it; chain such commands with &&. Returns the \
                          output (long output is cut in the middle) and the exit status. A command that runs past \
                          its timeout keeps running; the shell then takes no other command until it ends. For a \
                          server, a watcher or a long build, set `background`: the command starts as a background \
                          job (in the same sandbox as any call) and the call answers at once with its id and the \
                          file of its output; the job runs past this turn until it ends, `max_minutes` runs out or \
                          the user stops it. With `watch`, each output line that matches the pattern tells you \
                          (and may wake you) at most `max_wakes` times; its end tells you too. Read its output \
                          with `tail` on that file. Only the user stops a job early (`efr jobs stop`)."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line."},
                    "timeout": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_TIMEOUT_SECS,
                        "description": "Seconds to wait before answering with what the command printed so far (default 120)."
                    },
                    "background": {
                        "type": "boolean",
                        "description": "Start the command as a background job that outlives this turn (servers, watchers, long builds)."
                    },
                    "watch": {
                        "type": "string",
                        "description": "For a job: a regular expression; an output line that matches it tells you (for example `ready|error`)."
                    },
                    "max_wakes": {
                        "type": "integer",
                        "minimum": 0,
                        "maximum": MAX_WAKES,
                        "description": "For a job with a watch: how many matches may wake you (default 3; 0: none wakes you, you hear of them at the next prompt)."
                    },
                    "max_minutes": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_MINUTES,
                        "description": "For a job: stop it after this many minutes (default 60)."
                    }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        },
        Tool::Freeform {
            name: APPLY_PATCH.to_owned(),
            description: patch_description.to_owned(),
        },
    ]
}

/// A tool call, read from what the model wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolCall {
    /// A shell call.
    Shell {
        /// The command line.
        command: String,
        /// How long to wait before answering.
        timeout: Duration,
        /// Start it as a background job with these limits.
        job: Option<JobRequest>,
    },
    /// A patch call with its text.
    Patch {
        /// The patch text as the model wrote it.
        text: String,
    },
    /// A call that cannot run: an unknown tool or an input that does not parse. The message goes back to the model.
    Invalid {
        /// Why, for the model.
        message: String,
    },
}

/// What a shell call asks of its background job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRequest {
    /// The watch pattern, if any.
    pub watch: Option<String>,
    /// How many matches may wake the model.
    pub max_wakes: u32,
    /// The job's limit.
    pub max_minutes: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellInput {
    command: String,
    timeout: Option<u64>,
    #[serde(default)]
    background: bool,
    watch: Option<String>,
    max_wakes: Option<u32>,
    max_minutes: Option<u32>,
}

#[derive(Deserialize)]
struct FallbackInput {
    input: String,
}

/// Reads a call of `tool` whose input is `input` (JSON for a function tool, plain text for a freeform one).
#[must_use]
pub fn read_call(tool: &str, freeform: bool, input: &str) -> ToolCall {
    match tool {
        SHELL => match serde_json::from_str::<ShellInput>(input) {
            Ok(ShellInput { command, .. }) if command.trim().is_empty() => ToolCall::Invalid {
                message: "`command` is empty".to_owned(),
            },
            Ok(ShellInput {
                background: false,
                watch: Some(_),
                ..
            }) => ToolCall::Invalid {
                message: "`watch` is for a background job: set `background: true`".to_owned(),
            },
            Ok(input) => {
                let secs = input.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS).clamp(1, MAX_TIMEOUT_SECS);
                let job = input.background.then(|| JobRequest {
                    watch: input.watch.filter(|w| !w.is_empty()),
                    max_wakes: input.max_wakes.unwrap_or(DEFAULT_MAX_WAKES).min(MAX_WAKES),
                    max_minutes: input.max_minutes.unwrap_or(DEFAULT_MAX_MINUTES).clamp(1, MAX_MINUTES),
                });
                ToolCall::Shell {
                    command: input.command,
                    timeout: Duration::from_secs(secs),
                    job,
                }
            }
            Err(error) => ToolCall::Invalid {
                message: format!("the shell input is not valid: {error}"),
            },
        },
        APPLY_PATCH if freeform => ToolCall::Patch { text: input.to_owned() },
        APPLY_PATCH => match serde_json::from_str::<FallbackInput>(input) {
            Ok(FallbackInput { input }) => ToolCall::Patch { text: input },
            // Some models send the patch itself where the fallback wants `{"input": ...}`.
            Err(_) if input.trim_start().starts_with("*** Begin Patch") => ToolCall::Patch { text: input.to_owned() },
            Err(error) => ToolCall::Invalid {
                message: format!("the apply_patch input is not valid: {error}"),
            },
        },
        other => ToolCall::Invalid {
            message: format!("there is no tool `{other}`; the tools are shell and apply_patch"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_calls_read_with_a_bounded_timeout() {
        assert_eq!(
            read_call(SHELL, false, r#"{"command":"ls -la"}"#),
            ToolCall::Shell {
                command: "ls -la".into(),
                timeout: Duration::from_secs(120),
                job: None,
            }
        );
        assert_eq!(
            read_call(SHELL, false, r#"{"command":"sleep 1","timeout":99999}"#),
            ToolCall::Shell {
                command: "sleep 1".into(),
                timeout: Duration::from_secs(MAX_TIMEOUT_SECS),
                job: None,
            }
        );
        assert_eq!(
            read_call(
                SHELL,
                false,
                r#"{"command":"npm run dev","background":true,"watch":"ready","max_minutes":99999}"#
            ),
            ToolCall::Shell {
                command: "npm run dev".into(),
                timeout: Duration::from_secs(120),
                job: Some(JobRequest {
                    watch: Some("ready".into()),
                    max_wakes: DEFAULT_MAX_WAKES,
                    max_minutes: MAX_MINUTES,
                }),
            }
        );
        assert!(matches!(
            read_call(SHELL, false, r#"{"command":"make","watch":"done"}"#),
            ToolCall::Invalid { .. }
        ));
        assert!(matches!(
            read_call(SHELL, false, r#"{"cmd":"ls"}"#),
            ToolCall::Invalid { .. }
        ));
        assert!(matches!(
            read_call(SHELL, false, r#"{"command":"  "}"#),
            ToolCall::Invalid { .. }
        ));
        assert!(matches!(
            read_call(SHELL, false, "{\"command\": \"ls"),
            ToolCall::Invalid { .. }
        ));
    }

    #[test]
    fn patches_read_as_freeform_text_or_the_json_fallback() {
        let text = "*** Begin Patch\n*** End Patch\n";
        assert_eq!(
            read_call(APPLY_PATCH, true, text),
            ToolCall::Patch { text: text.into() }
        );
        let json = serde_json::json!({ "input": text }).to_string();
        assert_eq!(
            read_call(APPLY_PATCH, false, &json),
            ToolCall::Patch { text: text.into() }
        );
        assert_eq!(
            read_call(APPLY_PATCH, false, text),
            ToolCall::Patch { text: text.into() }
        );
        let ToolCall::Invalid { message } = read_call("rm", false, "{}") else {
            panic!()
        };
        assert!(message.contains("no tool `rm`"));
    }

    #[test]
    fn the_tools_are_shell_and_apply_patch() {
        let names: Vec<String> = model_tools_with("patch").iter().map(|t| t.name().to_owned()).collect();
        assert_eq!(names, [SHELL, APPLY_PATCH]);
    }
}
