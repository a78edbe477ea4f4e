//! What a [`Commit`] must hold before it is queued: the checks the writer cannot make cheaply.

use super::error::{Result, StoreError};
use super::rows::Commit;

impl Commit {
    /// Checks what the writer cannot check cheaply, before the commit is queued: not empty, each body a JSON object,
    /// each kind named, each seq in 1..=i64::MAX, a command result that is JSON.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the field.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.conversation.is_none() && self.events.is_empty() && self.command.is_none() {
            return Err(StoreError::invalid(
                "an empty commit (no summary, no events, no command)",
            ));
        }
        if let Some(summary) = &self.conversation {
            check_count(summary.turn_count, "conversation.turn_count")?;
        }
        for (i, event) in self.events.iter().enumerate() {
            if event.seq == 0 {
                return Err(StoreError::invalid(format!("events[{i}].seq is 0; seqs count from 1")));
            }
            check_count(event.seq, &format!("events[{i}].seq"))?;
            if event.kind.is_empty() {
                return Err(StoreError::invalid(format!("events[{i}].kind is empty")));
            }
            if !is_json_object(&event.body) {
                return Err(StoreError::invalid(format!("events[{i}].body is not a JSON object")));
            }
        }
        if let Some(command) = &self.command
            && serde_json::from_str::<serde::de::IgnoredAny>(&command.result).is_err()
        {
            return Err(StoreError::invalid("command.result is not JSON"));
        }
        Ok(())
    }
}

/// A count or seq must fit SQLite's signed 64-bit integer.
fn check_count(value: u64, field: &str) -> Result<()> {
    if i64::try_from(value).is_err() {
        return Err(StoreError::invalid(format!("{field} is over i64::MAX")));
    }
    Ok(())
}

/// Whether `text` is one JSON object (leading and trailing whitespace allowed).
fn is_json_object(text: &str) -> bool {
    text.trim_start().starts_with('{') && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_object_check() {
        assert!(is_json_object(r#" {"a": 1} "#));
        assert!(!is_json_object("[1]"));
        assert!(!is_json_object(r#"{"a": 1"#));
        assert!(!is_json_object(r#"{"a": 1} x"#));
        assert!(!is_json_object(""));
    }
}
