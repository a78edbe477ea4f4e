//! A config error and its place in the text: [`ConfigError`] (message, 1-based line and column in characters, the
//! dotted key) and how a key's place is found in the text of `config.toml`. A leaf: `parse`, `validate`'s callers
//! and `auto` all make errors with it.

use std::fmt;
use std::ops::Range;

use toml::de::{DeTable, DeValue};

use super::key_path::{KeyPath, Seg};

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

    pub(super) fn at(
        text: &str,
        span: Option<Range<usize>>,
        key: Option<&KeyPath>,
        message: impl Into<String>,
    ) -> Self {
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

/// An error at the value of `key` in `text` (or the nearest table above it): for checks made after the parse, such
/// as [`super::auto::check_listed`].
pub(super) fn error_at_key(text: &str, key: &KeyPath, message: impl Into<String>) -> ConfigError {
    ConfigError::at(text, span_of(text, key), Some(key), message)
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
pub(super) fn exact_span_of(text: &str, key: &KeyPath) -> Option<Range<usize>> {
    let (span, found) = deepest_span(text, key)?;
    (found == key.0.len()).then_some(span)
}

/// The span of the value at `key` in the document, or of the nearest table above it that exists.
pub(super) fn span_of(text: &str, key: &KeyPath) -> Option<Range<usize>> {
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
pub(super) fn key_at(text: &str, offset: usize) -> Option<KeyPath> {
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
