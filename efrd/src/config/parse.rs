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

use std::fmt;
use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::key_path::{KeyPath, Seg};
use super::schema::Config;
use super::validate;

/// A config file that cannot be used, in the form of the `admin.config_reload` error (the contract: "an optional
/// error (message, optional line, column and dotted key)").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// What is wrong, one sentence, without the position.
    pub message: String,
    /// 1-based line, when the error has a place in the file.
    pub line: Option<u32>,
    /// 1-based column in characters, when the error has a place in the file.
    pub column: Option<u32>,
    /// The dotted key, such as `providers.openai-compat.base_url` or `model.extra_models[1].id`.
    pub key: Option<String>,
}

impl ConfigError {
    /// An error without a place in the file (it cannot be read, it is not UTF-8, ...).
    #[must_use]
    pub fn whole_file(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            line: None,
            column: None,
            key: None,
        }
    }

    fn at(text: &str, span: Option<Range<usize>>, key: Option<&KeyPath>, message: impl Into<String>) -> Self {
        let (line, column) = span.map(|s| line_column(text, s.start)).unzip();
        let key = key.filter(|k| !k.0.is_empty()).map(ToString::to_string);
        Self {
            message: message.into(),
            line,
            column,
            key,
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(line), Some(column)) = (self.line, self.column) {
            write!(f, "line {line}, column {column}: ")?;
        }
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

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

/// An error at the value of `key` in `text` (or the nearest table above it): for checks made after the parse, such
/// as [`super::auto::check_listed`].
pub(super) fn error_at_key(text: &str, key: &KeyPath, message: impl Into<String>) -> ConfigError {
    ConfigError::at(text, span_of(text, key), Some(key), message)
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

/// 1-based line and column (in characters) of a byte offset.
#[must_use]
pub fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (saturating_u32(line), saturating_u32(column))
}

fn saturating_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The span of the value at `key` in the document, only when every step of `key` exists.
fn exact_span_of(text: &str, key: &KeyPath) -> Option<Range<usize>> {
    let (span, found) = deepest_span(text, key)?;
    (found == key.0.len()).then_some(span)
}

/// The span of the value at `key` in the document, or of the nearest table above it that exists.
fn span_of(text: &str, key: &KeyPath) -> Option<Range<usize>> {
    deepest_span(text, key).map(|(span, _)| span)
}

/// The span of the deepest value on the way to `key` and how many of its steps led there.
fn deepest_span(text: &str, key: &KeyPath) -> Option<(Range<usize>, usize)> {
    let root = DeTable::parse(text).ok()?;
    let mut best = None;
    let mut value: Option<&DeValue<'_>> = None;
    let mut table = Some(root.get_ref());
    for (depth, seg) in key.0.iter().enumerate() {
        let next = match (seg, table, value) {
            (Seg::Key(k), Some(t), _) => t.iter().find(|(name, _)| name.get_ref() == k).map(|(_, v)| v),
            (Seg::Index(i), _, Some(DeValue::Array(items))) => items.get(*i),
            _ => None,
        };
        let Some(next) = next else { break };
        best = Some((next.span(), depth + 1));
        value = Some(next.get_ref());
        table = match next.get_ref() {
            DeValue::Table(t) => Some(t),
            _ => None,
        };
    }
    best
}

/// The dotted key of the line that holds `offset`: the table header in effect (with `[[...]]` counted to an
/// index) plus the key before `=` on that line. Best effort, for syntax errors, where no document exists.
fn key_at(text: &str, offset: usize) -> Option<KeyPath> {
    let (line_no, _) = line_column(text, offset);
    let mut header = KeyPath::default();
    let mut seen_arrays: Vec<(String, usize)> = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let is_error_line = i + 1 == line_no as usize;
        if let Some((array, keys)) = header_of(line) {
            header = KeyPath(keys.iter().map(|k| Seg::Key(k.clone())).collect());
            if array {
                let name = header.to_string();
                let count = match seen_arrays.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, count)) => {
                        *count += 1;
                        *count
                    }
                    None => {
                        seen_arrays.push((name, 0));
                        0
                    }
                };
                header = header.index(count);
            }
            if is_error_line {
                return Some(header);
            }
        } else if is_error_line {
            let lead = line.split_once('=').map(|(k, _)| k)?;
            let keys = split_key(lead)?;
            let mut key = header;
            for k in keys {
                key = key.key(&k);
            }
            return Some(key);
        }
    }
    None
}

/// `[a.b]` → `(false, [a, b])`, `[[a.b]]` → `(true, [a, b])`; anything else → `None`.
fn header_of(line: &str) -> Option<(bool, Vec<String>)> {
    let line = line.split_once('#').map_or(line, |(l, _)| l).trim();
    let (array, inner) = if let Some(inner) = line.strip_prefix("[[").and_then(|l| l.strip_suffix("]]")) {
        (true, inner)
    } else {
        (false, line.strip_prefix('[').and_then(|l| l.strip_suffix(']'))?)
    };
    Some((array, split_key(inner)?))
}

/// Splits a simple dotted key (`a . "b-c".d`) into its keys; `None` when it does not look like a key.
fn split_key(text: &str) -> Option<Vec<String>> {
    let keys: Vec<String> = text
        .split('.')
        .map(|k| k.trim().trim_matches(|c| c == '"' || c == '\'').to_owned())
        .collect();
    let ok = keys
        .iter()
        .all(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'));
    ok.then_some(keys)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
