//! From the text of `config.toml` to a checked [`Config`], or a [`ConfigError`] that says where.
//!
//! Three kinds of failure, all reported with a 1-based line and column (counted in characters, as editors do) and
//! the dotted key when one is known (docs/architecture.md, "Configuration and roots"):
//!
//! - TOML syntax: toml's error gives a byte span; the key is the table header in effect plus the key that starts
//!   the line, found in the text (best effort: a line inside a multi-line string may yield no key).
//! - A value of the wrong type or an unknown variant: `serde_path_to_error` gives the key path, toml the span.
//! - A value that is well-typed but not allowed ([`super::validate`]): the key path is known, and its span is
//!   looked up in toml's spanned document.
//!
//! Unknown keys are not errors: `serde_ignored` reports each, and they become warnings, so an older efrd reads a
//! file written for a newer one.

use super::error::{ConfigError, exact_span_of, key_at, span_of};
use super::key_path::{KeyPath, Seg};
use super::schema::Config;
use super::validate;

/// A parsed, checked config and what it ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The config, with defaults for every key that is absent.
    pub config: Config,
    /// Dotted keys that this efrd does not know, sorted; each becomes a warning.
    pub unknown_keys: Vec<String>,
}

/// Parses and checks the text of `config.toml`.
///
/// # Errors
/// A [`ConfigError`] with line, column and key for a syntax error, a wrong type or an unknown variant, and a
/// value that [`validate::check`] refuses.
pub fn parse(text: &str) -> Result<Parsed, ConfigError> {
    let de = toml::Deserializer::parse(text).map_err(|e| syntax_error(text, &e))?;
    let mut unknown = Vec::new();
    let mut note_unknown = |path: serde_ignored::Path<'_>| unknown.push(ignored_path(&path).to_string());
    let config: Config = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(de, &mut note_unknown))
        .map_err(|e| type_error(text, &e))?;
    unknown.sort();
    unknown.dedup();
    if let Err(invalid) = validate::check(&config) {
        let span = span_of(text, &invalid.key);
        return Err(ConfigError::at(text, span, Some(&invalid.key), invalid.message));
    }
    Ok(Parsed {
        config,
        unknown_keys: unknown,
    })
}

fn syntax_error(text: &str, error: &toml::de::Error) -> ConfigError {
    let span = error.span();
    let key = span.as_ref().and_then(|s| key_at(text, s.start));
    ConfigError::at(text, span, key.as_ref(), first_sentence(error.message()))
}

fn type_error(text: &str, error: &serde_path_to_error::Error<toml::de::Error>) -> ConfigError {
    let mut key = KeyPath::default();
    for segment in error.path() {
        match segment {
            serde_path_to_error::Segment::Map { key: k } => key.0.push(Seg::Key(k.clone())),
            serde_path_to_error::Segment::Seq { index } => key.0.push(Seg::Index(*index)),
            serde_path_to_error::Segment::Enum { .. } | serde_path_to_error::Segment::Unknown => {}
        }
    }
    let inner = error.inner();
    let message = first_sentence(inner.message());
    // serde says "missing field `id`" at the table; the key that is missing is the more useful name.
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|m| m.strip_suffix('`'))
    {
        key.0.push(Seg::Key(field.to_owned()));
    }
    // toml's span of a custom error (a host pattern that does not parse) is the whole array; the element's own
    // span, when the key leads to it, is the better place.
    let span = exact_span_of(text, &key)
        .filter(|_| matches!(key.0.last(), Some(Seg::Index(_))))
        .or_else(|| inner.span())
        .or_else(|| span_of(text, &key));
    ConfigError::at(text, span, Some(&key), message)
}

/// toml's message may hold several lines of context; the error's message is one sentence.
fn first_sentence(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn ignored_path(path: &serde_ignored::Path<'_>) -> KeyPath {
    use serde_ignored::Path;
    match path {
        Path::Root => KeyPath::default(),
        Path::Seq { parent, index } => ignored_path(parent).index(*index),
        Path::Map { parent, key } => ignored_path(parent).key(key),
        Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => {
            ignored_path(parent)
        }
    }
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
