//! What each provider is sent of the history: reasoning carry-overs and thinking budgets.

use super::*;

#[test]
fn reasoning_goes_back_only_to_the_provider_that_made_it() {
    use efr_model::anthropic::{self, AnthropicOptions};
    use efr_model::{compat, openai};
    let mut req = request();
    req.history.push(HistoryItem::Reasoning {
        text: "thinking".into(),
        carry: Some(ReasoningCarry::Anthropic {
            signature: "sig".into(),
        }),
    });
    req.history.push(HistoryItem::Reasoning {
        text: "summary".into(),
        carry: Some(ReasoningCarry::OpenAi {
            id: Some("rs_1".into()),
            summary: vec!["summary".into()],
            encrypted_content: Some("enc".into()),
        }),
    });
    req.history.push(HistoryItem::ToolCall {
        call_id: "t1".into(),
        tool: "shell".into(),
        freeform: false,
        input: "{\"command\":\"ls\"}".into(),
    });
    req.history.push(HistoryItem::ToolOutput {
        call_id: "t1".into(),
        output: "a.txt".into(),
        is_error: true,
    });

    let body = anthropic::request_body(&req, AnthropicOptions::default());
    let assistant = &body["messages"][1]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": "thinking", "signature": "sig"})
    );
    assert_eq!(
        assistant[1],
        json!({"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": "ls"}})
    );
    assert_eq!(
        assistant.as_array().map(Vec::len),
        Some(2),
        "OpenAI's reasoning is not sent to Anthropic"
    );
    assert_eq!(body["messages"][2]["content"][0]["is_error"], json!(true));

    let body = openai::request_body(&req);
    let input = body["input"].as_array().expect("input");
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "summary"}], "encrypted_content": "enc"})
    );
    assert_eq!(input[2]["type"], json!("function_call"));
    assert_eq!(input[3]["type"], json!("function_call_output"));
    assert_eq!(input.len(), 4, "Anthropic's thinking is not sent to OpenAI");

    let body = compat::request_body(&req);
    assert_eq!(
        body["messages"].as_array().map(Vec::len),
        Some(4),
        "system, user, assistant with the call, tool"
    );
}

#[test]
fn anthropic_thinking_budget_fits_under_max_tokens() {
    use efr_model::anthropic::{self, AnthropicOptions};
    let mut req = request();
    req.effort = Some("high".into());
    let body = anthropic::request_body(&req, AnthropicOptions::default());
    assert_eq!(body["max_tokens"], json!(anthropic::DEFAULT_MAX_TOKENS));
    assert_eq!(
        body["thinking"]["budget_tokens"],
        json!(anthropic::DEFAULT_MAX_TOKENS - 1)
    );
    req.effort = Some("low".into());
    assert_eq!(
        anthropic::request_body(&req, AnthropicOptions::default())["thinking"]["budget_tokens"],
        json!(4_000)
    );
    // Too small an output limit leaves no room for thinking; so does an effort that means none.
    req.max_output = Some(1_000);
    assert!(
        anthropic::request_body(&req, AnthropicOptions::default())
            .get("thinking")
            .is_none()
    );
    req.max_output = Some(0);
    assert!(
        anthropic::request_body(&req, AnthropicOptions::default())
            .get("thinking")
            .is_none()
    );
    req.max_output = None;
    req.effort = Some("minimal".into());
    assert!(
        anthropic::request_body(&req, AnthropicOptions::default())
            .get("thinking")
            .is_none()
    );
    // One-hour caching covers the system prompt; the newest turn stays at five minutes.
    let body = anthropic::request_body(&req, AnthropicOptions { cache_1h: true });
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}
