//! `[instructions]`: what efr reads into the model's instructions (docs/context.md).
//!
//! ```toml
//! [instructions]
//! max_bytes = 32768   # the most bytes of AGENTS.md text one request carries; the rest is cut, and the cut is said
//! short = false       # openai-compat only: the short base instructions and apply_patch description (small models)
//! ```

use serde::{Deserialize, Serialize};

/// The default of `max_bytes`: 32 KiB, the bound codex uses for its project docs.
pub const DEFAULT_MAX_BYTES: u64 = 32 * 1024;
/// The largest `max_bytes` the config may set: 1 MiB (more would crowd out the conversation itself).
pub const MAX_MAX_BYTES: u64 = 1024 * 1024;

/// `[instructions]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct InstructionsSection {
    /// The most bytes of project instructions (every `AGENTS.md`, `CLAUDE.md` or `GEMINI.md` read, together) that
    /// a request carries; default [`DEFAULT_MAX_BYTES`], from 0 (read none) to [`MAX_MAX_BYTES`]. The files are
    /// taken most general first; where the budget ends a file is cut at a line, and the instructions say so.
    pub max_bytes: u64,
    /// With `openai-compat` (local models), send the short base instructions and the short `apply_patch`
    /// description; the other providers ignore it. Default false.
    pub short: bool,
}

impl Default for InstructionsSection {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_MAX_BYTES,
            short: false,
        }
    }
}

/// The rule of `[instructions]`: `max_bytes` at most [`MAX_MAX_BYTES`]; the message says the bound.
///
/// # Errors
/// The message for `instructions.max_bytes`.
pub fn check(section: &InstructionsSection) -> Result<(), String> {
    if section.max_bytes > MAX_MAX_BYTES {
        return Err(format!(
            "max_bytes must be at most {MAX_MAX_BYTES} (1 MiB), not {}",
            section.max_bytes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_and_the_bound() {
        let section: InstructionsSection = toml::from_str("").unwrap();
        assert_eq!(section, InstructionsSection::default());
        assert_eq!(section.max_bytes, 32768);
        let section: InstructionsSection = toml::from_str("max_bytes = 2000000\nshort = true").unwrap();
        assert!(section.short);
        assert!(check(&section).unwrap_err().contains("at most 1048576"));
        assert!(check(&InstructionsSection::default()).is_ok());
    }
}
