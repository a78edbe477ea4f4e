//! The provider-neutral request of one model call: instructions, the history so far, the tools, the settings.
//!
//! Each provider module turns a [`ModelRequest`] into its own wire body (`openai::request_body`,
//! `anthropic::request_body`, `compat::request_body`). The history keeps what a provider needs to continue where it
//! left off: the opaque carry-over of reasoning ([`ReasoningCarry`]) goes back to the provider that made it and is
//! dropped for any other.

use serde::{Deserialize, Serialize};

/// One model call's input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The model id, as listed by the catalog (`gpt-5`, `claude-sonnet-4-5`, a local model's name).
    pub model: String,
    /// The system instructions; empty for none.
    pub instructions: String,
    /// The conversation so far, oldest first.
    pub history: Vec<HistoryItem>,
    /// The tools the model may call; empty for none.
    pub tools: Vec<Tool>,
    /// The reasoning effort (`low`, `medium`, `high`, ...), one of the model's efforts in the catalog; `None` for the
    /// model's default. Anthropic maps it to a thinking budget (`anthropic::thinking_budget`).
    pub effort: Option<String>,
    /// The most output tokens the call may produce; `None` for the provider module's default.
    pub max_output: Option<u32>,
    /// A stable key for the provider's prompt cache, such as the conversation id (Responses `prompt_cache_key`).
    pub cache_key: Option<String>,
}

impl ModelRequest {
    /// A request for `model` with no instructions, history or tools.
    #[must_use]
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            instructions: String::new(),
            history: Vec::new(),
            tools: Vec::new(),
            effort: None,
            max_output: None,
            cache_key: None,
        }
    }

    /// Whether the tool named `name` is a freeform tool of this request.
    #[must_use]
    pub fn is_freeform(&self, name: &str) -> bool {
        self.tools
            .iter()
            .any(|tool| matches!(tool, Tool::Freeform { name: n, .. } if n == name))
    }

    /// The names of this request's freeform tools (parsers need them for providers that have no freeform tools).
    #[must_use]
    pub fn freeform_names(&self) -> Vec<String> {
        self.tools
            .iter()
            .filter_map(|tool| match tool {
                Tool::Freeform { name, .. } => Some(name.clone()),
                Tool::Function { .. } => None,
            })
            .collect()
    }
}

/// The most bytes of one tool call's input that the history keeps (64 KiB). The call itself ran with its whole input
/// and the log keeps it; a larger input (a patch that adds a 10 MB file) would be sent again with every later
/// request of the conversation, for a model that wrote it and needs only to know it did.
pub const MAX_HISTORY_INPUT: usize = 64 << 10;

/// What the history keeps of a call's input before the note that says what was cut.
const KEPT_INPUT: usize = 8 << 10;

impl HistoryItem {
    /// A tool call for the history, its input cut to [`MAX_HISTORY_INPUT`] with a note that says what was cut. A
    /// freeform input keeps its first lines; a JSON input becomes a JSON object (`{"efr_cut": note, "head": text}`),
    /// so that a provider that parses it still can.
    #[must_use]
    pub fn tool_call(call_id: String, tool: String, freeform: bool, input: String) -> Self {
        let input = if input.len() <= MAX_HISTORY_INPUT {
            input
        } else {
            let mut cut = KEPT_INPUT;
            while !input.is_char_boundary(cut) {
                cut -= 1;
            }
            let head = input[..cut].rfind('\n').map_or(&input[..cut], |end| &input[..=end]);
            let note = format!(
                "efr cut this input for the history: {} bytes and {} lines in all, of which the first {} bytes are \
                 kept; the call ran with the whole input",
                input.len(),
                input.lines().count(),
                head.len()
            );
            if freeform {
                format!("{head}\n[{note}]")
            } else {
                serde_json::json!({"efr_cut": note, "head": head}).to_string()
            }
        };
        Self::ToolCall {
            call_id,
            tool,
            freeform,
            input,
        }
    }
}

/// One item of the conversation history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HistoryItem {
    /// Text the user sent.
    UserText {
        /// The text.
        text: String,
    },
    /// Text the model answered.
    AssistantText {
        /// The text.
        text: String,
    },
    /// The model's reasoning, as [`super::ModelEvent::ReasoningDone`] gave it.
    Reasoning {
        /// The reasoning text (summary or thinking).
        text: String,
        /// What the provider needs back; `None` when it gave nothing.
        carry: Option<ReasoningCarry>,
    },
    /// A tool call the model made.
    ToolCall {
        /// The provider's call id.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// True for a freeform tool (plain-text input).
        freeform: bool,
        /// The input as the model wrote it: JSON text for a function tool, plain text for a freeform tool.
        input: String,
    },
    /// The output of a tool call, sent back to the model.
    ToolOutput {
        /// The call this answers; a [`HistoryItem::ToolCall`] with this id comes before it.
        call_id: String,
        /// The output text (already bounded by the caller).
        output: String,
        /// True when the call failed (Anthropic `is_error`).
        is_error: bool,
    },
}

/// The opaque carry-over of a reasoning block, sent back only to the provider that made it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "provider", rename_all = "snake_case")]
pub enum ReasoningCarry {
    /// A Responses `reasoning` item (with `store: false`, its encrypted content carries the reasoning).
    OpenAi {
        /// The item's id (`rs_...`); kept for the record, not sent back (the items are not stored server-side).
        id: Option<String>,
        /// The summary parts, in order.
        summary: Vec<String>,
        /// `encrypted_content`, asked for with `include: ["reasoning.encrypted_content"]`.
        encrypted_content: Option<String>,
    },
    /// An Anthropic `thinking` block: its text is the item's `text`, its signature proves it.
    Anthropic {
        /// The block's signature (from `signature_delta`).
        signature: String,
    },
    /// An Anthropic `redacted_thinking` block.
    AnthropicRedacted {
        /// The encrypted data of the block.
        data: String,
    },
}

impl std::fmt::Debug for ReasoningCarry {
    // The carry-over is long opaque base64; a Debug print shows its kind and size only.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OpenAi {
                id,
                summary,
                encrypted_content,
            } => f
                .debug_struct("OpenAi")
                .field("id", id)
                .field("summary_parts", &summary.len())
                .field("encrypted_bytes", &encrypted_content.as_ref().map(String::len))
                .finish(),
            Self::Anthropic { signature } => f
                .debug_struct("Anthropic")
                .field("signature_bytes", &signature.len())
                .finish(),
            Self::AnthropicRedacted { data } => f
                .debug_struct("AnthropicRedacted")
                .field("data_bytes", &data.len())
                .finish(),
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Tool {
    /// A tool whose input is a JSON object.
    Function {
        /// The tool's name (`shell`).
        name: String,
        /// What the tool does, for the model.
        description: String,
        /// The JSON Schema of the input object.
        parameters: serde_json::Value,
    },
    /// A tool whose input is plain text, such as `apply_patch`. Responses sends it as a `custom` tool; providers
    /// without freeform tools get a function tool with one string member `input` (docs/architecture.md, "Tools": the
    /// JSON-string fallback), and the parser gives back the string.
    Freeform {
        /// The tool's name.
        name: String,
        /// What the tool does and the format of its input, for the model.
        description: String,
    },
}

impl Tool {
    /// The tool's name.
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Self::Function { name, .. } | Self::Freeform { name, .. } => name,
        }
    }
}

/// The JSON Schema of the fallback for a freeform tool: an object with one string member, `input`.
#[must_use]
pub(crate) fn freeform_fallback_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The tool's input, as plain text."}},
        "required": ["input"],
        "additionalProperties": false
    })
}

/// The plain text of a freeform tool's fallback input (`{"input": "..."}`); the raw text when it is not that shape.
#[must_use]
pub(crate) fn unwrap_freeform_input(json: &str) -> String {
    #[derive(Deserialize)]
    struct Fallback {
        input: String,
    }
    match serde_json::from_str::<Fallback>(json) {
        Ok(fallback) => fallback.input,
        Err(_) => json.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input_of(item: &HistoryItem) -> &str {
        match item {
            HistoryItem::ToolCall { input, .. } => input,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_large_input_is_cut_for_the_history_with_a_note() {
        let patch: String = (0..20_000).map(|i| format!("+line {i}\n")).collect();
        let item = HistoryItem::tool_call("c".into(), "apply_patch".into(), true, patch.clone());
        let kept = input_of(&item);
        assert!(kept.len() < KEPT_INPUT + 300, "{}", kept.len());
        assert!(kept.starts_with("+line 0\n+line 1\n"));
        assert!(
            kept.ends_with(&format!(
                "[efr cut this input for the history: {} bytes and 20000 lines in all, of which the first {} bytes \
                 are kept; the call ran with the whole input]",
                patch.len(),
                kept.find("\n\n[").unwrap() + 1
            )),
            "{}",
            &kept[kept.len() - 200..]
        );

        // A JSON input stays JSON.
        let json = serde_json::json!({"command": "x".repeat(100_000)}).to_string();
        let item = HistoryItem::tool_call("c".into(), "shell".into(), false, json);
        let value: serde_json::Value = serde_json::from_str(input_of(&item)).unwrap();
        assert!(value["efr_cut"].as_str().unwrap().contains("100014 bytes"), "{value}");
        assert!(value["head"].as_str().unwrap().starts_with("{\"command\":\"xxx"));

        // A small input is kept whole, and a cut never splits a character.
        let small = "é".repeat(100);
        assert_eq!(
            input_of(&HistoryItem::tool_call("c".into(), "t".into(), true, small.clone())),
            small
        );
        let wide = "é".repeat(MAX_HISTORY_INPUT);
        let item = HistoryItem::tool_call("c".into(), "t".into(), true, wide);
        assert!(input_of(&item).starts_with("éé"));
    }
}
