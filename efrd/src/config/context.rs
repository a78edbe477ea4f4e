//! `[context]`: when efrd compacts a conversation's context (docs/context.md, "Compaction").
//!
//! ```toml
//! [context]
//! auto = true            # compact by itself when the context reaches trigger_percent of the window
//! trigger_percent = 80   # of the model's context window, 10 to 95
//! keep_turns = 2         # the newest whole turns a compaction keeps beside its summary, 0 to 20
//! ```

use serde::{Deserialize, Serialize};

/// The default of `trigger_percent`. A request must leave room for the model's answer (the provider modules ask for
/// up to 32k output tokens, 16% of a 200k window) and for the error of efrd's estimate of the part it has not counted
/// yet (4 bytes a token; code and non-Latin text run denser): 80% keeps both inside the window.
pub const DEFAULT_TRIGGER_PERCENT: u8 = 80;
/// The newest whole turns a compaction keeps by default: the work in hand stays verbatim, the rest is summarised.
pub const DEFAULT_KEEP_TURNS: u32 = 2;

/// `[context]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextSection {
    /// Compact automatically at the trigger; false: only by hand (`efr compact`) or when the provider says the
    /// request overflowed. Default true.
    pub auto: bool,
    /// The trigger, in percent of the model's context window; default [`DEFAULT_TRIGGER_PERCENT`].
    pub trigger_percent: u8,
    /// The newest whole turns a compaction keeps after its summary; default [`DEFAULT_KEEP_TURNS`]. Fewer are kept
    /// when they alone would fill half the trigger.
    pub keep_turns: u32,
}

impl Default for ContextSection {
    fn default() -> Self {
        Self {
            auto: true,
            trigger_percent: DEFAULT_TRIGGER_PERCENT,
            keep_turns: DEFAULT_KEEP_TURNS,
        }
    }
}

impl ContextSection {
    /// The trigger of a window of `window` tokens, in tokens.
    #[must_use]
    pub fn trigger(&self, window: u64) -> u64 {
        window / 100 * u64::from(self.trigger_percent) + window % 100 * u64::from(self.trigger_percent) / 100
    }
}

/// The rules of `[context]`: `trigger_percent` from 10 to 95, `keep_turns` at most 20. `Err`: the key and the
/// message.
///
/// # Errors
/// The key (`trigger_percent` or `keep_turns`) and why.
pub fn check(section: &ContextSection) -> Result<(), (&'static str, String)> {
    if !(10..=95).contains(&section.trigger_percent) {
        return Err((
            "trigger_percent",
            format!("trigger_percent must be from 10 to 95, not {}", section.trigger_percent),
        ));
    }
    if section.keep_turns > 20 {
        return Err((
            "keep_turns",
            format!("keep_turns must be at most 20, not {}", section.keep_turns),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_the_trigger_and_the_bounds() {
        let section: ContextSection = toml::from_str("").unwrap();
        assert_eq!(section, ContextSection::default());
        assert_eq!(section.trigger(200_000), 160_000);
        assert_eq!(section.trigger(1_000), 800);
        assert_eq!(section.trigger(u64::MAX), u64::MAX / 100 * 80 + 15 * 80 / 100);
        let low: ContextSection = toml::from_str("trigger_percent = 5").unwrap();
        assert_eq!(check(&low).unwrap_err().0, "trigger_percent");
        let many: ContextSection = toml::from_str("keep_turns = 21").unwrap();
        assert_eq!(check(&many).unwrap_err().0, "keep_turns");
        assert!(check(&ContextSection::default()).is_ok());
    }
}
