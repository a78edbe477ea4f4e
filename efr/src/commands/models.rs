//! `efr models`: models.list, one model a line.
//!
//! ```text
//! gpt-5.1-codex  default  efforts low, medium*, high  context 272k
//! qwen3-coder             (from config)
//! ```
//!
//! `*` marks the model's default effort.

use std::fmt::Write as _;
use std::process::ExitCode;

use efr_protocol::wire::{ModelSource, ModelsListResult};
use serde_json::json;

use super::{read, run_unary};

/// Runs `efr models`.
pub async fn run(json: bool) -> ExitCode {
    run_unary("models.list", json!({}), json, None, |value| {
        let models: ModelsListResult = read("models.list", value)?;
        crate::out::print(&render(&models));
        Ok(())
    })
    .await
}

/// The readable form of a model list.
#[must_use]
pub fn render(list: &ModelsListResult) -> String {
    if list.models.is_empty() {
        return "no models known yet (log in, or name one in config.toml's [model])\n".to_owned();
    }
    let width = list.models.iter().map(|m| m.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for model in &list.models {
        let mut line = format!(
            "{:<width$}  {:<7}",
            model.id,
            if model.default { "default" } else { "" }
        );
        if !model.efforts.is_empty() {
            let efforts: Vec<String> = model
                .efforts
                .iter()
                .map(|e| {
                    if model.default_effort.as_deref() == Some(e.as_str()) {
                        format!("{e}*")
                    } else {
                        e.clone()
                    }
                })
                .collect();
            let _ = write!(line, "  efforts {}", efforts.join(", "));
        }
        if let Some(window) = model.context_window {
            let _ = write!(line, "  context {}k", window / 1000);
        }
        if model.source == ModelSource::Config {
            line.push_str("  (from config)");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_renders_one_line_per_model() {
        let path = format!(
            "{}/../protocol/fixtures/v1/models_list_result.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let list: ModelsListResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let out = render(&list);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2, "{out}");
        assert!(
            lines[0].starts_with("gpt-5.1-codex  default  efforts low, medium*, high  context 272k"),
            "{out}"
        );
        assert!(
            lines[1].starts_with("qwen3-coder") && lines[1].ends_with("(from config)"),
            "{out}"
        );
    }

    #[test]
    fn an_empty_list_says_how_to_get_models() {
        let out = render(&ModelsListResult {
            models: vec![],
            catalog: None,
        });
        assert!(out.contains("log in"), "{out}");
    }
}
