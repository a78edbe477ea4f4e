//! A model judge's answer, read strictly: exactly one JSON object `{"verdict": "approve"|"deny"|"abstain",
//! "reason": "..."}`, optionally in one ```` ```json ```` fence, with whitespace around it and nothing else.
//!
//! Anything else is [`Answer::Unreadable`], which the chain treats as a deny (it fails closed): a judge that wrote
//! prose, two objects, an unknown verdict or an extra member did not answer the question it was asked. A readable
//! answer whose reason says nothing (empty, shorter than [`MIN_REASON_CHARS`], or a placeholder such as `n/a`) is
//! [`Answer::NoReason`]: the chain asks once more.

use efr_protocol::wire::Verdict;
use serde::Deserialize;

/// The fewest characters of a real reason (after trimming): "too risky" is 9 and says nothing of the exit.
pub const MIN_REASON_CHARS: usize = 10;

/// The most characters of a reason kept; a longer one is cut (the reason is one line for the log and the model).
pub const MAX_REASON_CHARS: usize = 500;

/// Reasons that are not reasons, compared lowercase with trailing dots removed.
const PLACEHOLDERS: &[&str] = &[
    "",
    "n/a",
    "na",
    "none",
    "ok",
    "okay",
    "reason",
    "...",
    "…",
    "approved",
    "denied",
    "approve",
    "deny",
    "abstain",
    "-",
    "--",
    "null",
    "no reason",
    "because",
    "safe",
    "unsafe",
    "fine",
    "yes",
    "no",
];

/// What a judge's answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A verdict with a real reason, trimmed to one line.
    Verdict {
        /// The verdict.
        verdict: Verdict,
        /// Why.
        reason: String,
    },
    /// A verdict without a real reason: ask once more.
    NoReason {
        /// The verdict it gave.
        verdict: Verdict,
    },
    /// Not the answer asked for; `why` says what is wrong, for the log and the deny's reason.
    Unreadable {
        /// What is wrong, such as `not one JSON object`.
        why: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    verdict: Verdict,
    reason: String,
}

/// Reads a judge's whole answer text.
#[must_use]
pub fn parse(text: &str) -> Answer {
    let body = unfence(text.trim());
    if !(body.starts_with('{') && body.ends_with('}')) {
        return unreadable("the answer is not one JSON object");
    }
    // `from_str` refuses trailing characters, so `{..} {..}` is not read as its first object.
    let wire: Wire = match serde_json::from_str(body) {
        Ok(wire) => wire,
        Err(error) => return unreadable(&format!("the answer is not the object asked for ({error})")),
    };
    let reason = one_line(&wire.reason);
    if is_placeholder(&reason) {
        return Answer::NoReason { verdict: wire.verdict };
    }
    Answer::Verdict {
        verdict: wire.verdict,
        reason,
    }
}

fn unreadable(why: &str) -> Answer {
    Answer::Unreadable { why: why.to_owned() }
}

/// The inside of one ```` ```json ```` (or ```` ``` ````) fence around the whole text, trimmed; the text itself
/// when it has none.
fn unfence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(inner) = rest.strip_suffix("```") else {
        return text;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    // The language tag must end its line: "```jsonx" or "```{...}```" on one line is not a fence.
    match inner.strip_prefix('\n').or_else(|| inner.strip_prefix("\r\n")) {
        Some(inner) => inner.trim(),
        None => text,
    }
}

/// The reason on one line, whitespace collapsed, at most [`MAX_REASON_CHARS`] characters.
fn one_line(reason: &str) -> String {
    let joined = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MAX_REASON_CHARS {
        return joined;
    }
    let mut cut: String = joined.chars().take(MAX_REASON_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// A reason that says nothing: a placeholder, or too short.
fn is_placeholder(reason: &str) -> bool {
    let lower = reason.to_lowercase();
    let bare = lower.trim_end_matches(['.', '!']).trim();
    PLACEHOLDERS.contains(&bare) || bare.chars().count() < MIN_REASON_CHARS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(text: &str) -> (Verdict, String) {
        match parse(text) {
            Answer::Verdict { verdict, reason } => (verdict, reason),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn a_plain_object_a_fenced_one_and_whitespace_are_read() {
        let reason = "the user asked to install this crate";
        for text in [
            format!(r#"{{"verdict":"approve","reason":"{reason}"}}"#),
            format!("\n  {{\"verdict\": \"approve\", \"reason\": \"{reason}\"}}  \n"),
            format!("```json\n{{\"verdict\":\"approve\",\"reason\":\"{reason}\"}}\n```"),
            format!("  ```\n{{\"reason\":\"{reason}\",\"verdict\":\"approve\"}}\n```\n"),
        ] {
            assert_eq!(verdict(&text), (Verdict::Approve, reason.to_owned()), "{text}");
        }
        assert_eq!(
            verdict(r#"{"verdict":"deny","reason":"uploads the project to a host that is not its remote"}"#).0,
            Verdict::Deny
        );
        assert_eq!(
            verdict(r#"{"verdict":"abstain","reason":"cannot tell whether the user wants a push"}"#).0,
            Verdict::Abstain
        );
    }

    #[test]
    fn anything_else_is_unreadable() {
        let good = r#"{"verdict":"approve","reason":"the user asked to install this crate"}"#;
        for text in [
            String::new(),
            "approve".to_owned(),
            format!("Sure! {good}"),
            format!("{good}\nI approved it because it is fine."),
            format!("{good}{good}"),
            format!("{good} {good}"),
            format!("```json\n{good}\n```\nthanks"),
            format!("```json {good}```"),
            format!("```jsonx\n{good}\n```"),
            format!("```json\n{good}"),
            r#"{"verdict":"maybe","reason":"the user asked to install this crate"}"#.to_owned(),
            r#"{"verdict":"APPROVE","reason":"the user asked to install this crate"}"#.to_owned(),
            r#"{"verdict":"approve"}"#.to_owned(),
            r#"{"reason":"the user asked to install this crate"}"#.to_owned(),
            r#"{"verdict":"approve","reason":"the user asked for it","confidence":0.9}"#.to_owned(),
            r#"{"verdict":"approve","reason":42}"#.to_owned(),
            r#"{"verdict":"approve","verdict":"deny","reason":"the user asked to install this crate"}"#.to_owned(),
            r#"[{"verdict":"approve","reason":"the user asked to install this crate"}]"#.to_owned(),
            r#"{"verdict":"approve","reason":"the user asked to install this crate""#.to_owned(),
        ] {
            assert!(
                matches!(parse(&text), Answer::Unreadable { .. }),
                "{text:?}: {:?}",
                parse(&text)
            );
        }
    }

    #[test]
    fn placeholders_and_short_reasons_ask_again() {
        for reason in [
            "",
            "  ",
            "n/a",
            "N/A",
            "none",
            "ok",
            "OK.",
            "reason",
            "…",
            "...",
            "approved",
            "Denied.",
            "-",
            "too risky",
            "seems ok",
        ] {
            let text = format!(r#"{{"verdict":"deny","reason":"{reason}"}}"#);
            assert_eq!(parse(&text), Answer::NoReason { verdict: Verdict::Deny }, "{reason:?}");
        }
        // Exactly ten characters is a reason.
        assert_eq!(
            verdict(r#"{"verdict":"approve","reason":"user asked"}"#).1,
            "user asked"
        );
    }

    #[test]
    fn a_reason_becomes_one_bounded_line() {
        let (_, reason) =
            verdict("{\"verdict\":\"deny\",\"reason\":\"  the host\\n is not\\tthe project's remote  \"}");
        assert_eq!(reason, "the host is not the project's remote");
        let long = "x".repeat(2000);
        let (_, reason) = verdict(&format!(r#"{{"verdict":"deny","reason":"{long}"}}"#));
        assert_eq!(reason.chars().count(), MAX_REASON_CHARS);
        assert!(reason.ends_with('…'));
    }
}
