//! Shell words: their static value after quote removal, their globs, the home folder they start with, and the
//! expansions that do more than read a variable.

use tree_sitter::Node;

use super::Word;
use super::parse::Conv;

impl Conv<'_> {
    pub(super) fn word(&mut self, node: Node<'_>, depth: usize) -> Word {
        let (value, glob, leading_glob) = self.value_of(node);
        Word {
            source: self.text(node),
            value,
            glob,
            leading_glob,
            home_relative: self.home_relative(node),
            unsafe_expansion: self.unsafe_expansion(node, depth),
            substitutions: self.substitutions_in(node, depth + 1),
        }
    }

    /// The static value of a word, whether it holds an unquoted glob, and whether it starts with one.
    fn value_of(&self, node: Node<'_>) -> (Option<String>, bool, bool) {
        let text = self.text(node);
        match node.kind() {
            "word" => {
                let (value, glob, leading) = unescape_word(&text);
                (Some(value), glob, leading)
            }
            "number" => (Some(text), false, false),
            "raw_string" => (Some(strip_quotes(&text, '\'')), false, false),
            "string" => {
                let mut cursor = node.walk();
                let static_text = node
                    .children(&mut cursor)
                    .all(|c| c.kind() == "\"" || c.kind() == "string_content");
                if static_text {
                    (Some(unescape_double(&strip_quotes(&text, '"'))), false, false)
                } else {
                    (None, false, false)
                }
            }
            "concatenation" => {
                let mut cursor = node.walk();
                let mut value = Some(String::new());
                let (mut glob, mut leading) = (false, false);
                for (i, part) in node.named_children(&mut cursor).enumerate() {
                    let (v, g, l) = self.value_of(part);
                    glob |= g;
                    if i == 0 {
                        leading = l;
                    }
                    value = match (value, v) {
                        (Some(mut acc), Some(v)) => {
                            acc.push_str(&v);
                            Some(acc)
                        }
                        _ => None,
                    };
                }
                (value, glob, leading)
            }
            _ => (None, false, false),
        }
    }

    /// `~`, `~/x`, `$HOME`, `${HOME}/x`, `"$HOME/x"`: the static rest after the home folder.
    fn home_relative(&self, node: Node<'_>) -> Option<String> {
        let text = self.text(node);
        match node.kind() {
            "word" => {
                let rest = text.strip_prefix('~')?;
                (rest.is_empty() || rest.starts_with('/')).then(|| unescape_word(rest).0)
            }
            "simple_expansion" => (text == "$HOME").then(String::new),
            "expansion" => (text == "${HOME}").then(String::new),
            "concatenation" | "string" => {
                let mut cursor = node.walk();
                let parts: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                let (first, rest) = parts.split_first()?;
                let mut out = self.home_relative(*first)?;
                for part in rest {
                    let value = match part.kind() {
                        "string_content" => Some(unescape_double(&self.text(*part))),
                        _ => self.value_of(*part).0,
                    };
                    out.push_str(&value?);
                }
                (out.is_empty() || out.starts_with('/')).then_some(out)
            }
            _ => None,
        }
    }

    /// The first expansion below `node` (outside substitutions) that assigns or expands a prompt.
    pub(super) fn unsafe_expansion(&mut self, node: Node<'_>, depth: usize) -> Option<&'static str> {
        if self.deep(depth) || matches!(node.kind(), "command_substitution" | "process_substitution") {
            return None;
        }
        if starts_a_word(node) && super::arith::unbraced_subscript(&self.text(node)) {
            return Some("a subscript after `$name` (zsh evaluates it, and it can run a command)");
        }
        if node.kind() == "expansion" {
            let mut cursor = node.walk();
            let tokens: Vec<String> = node
                .children(&mut cursor)
                .filter(|c| !c.is_named())
                .map(|c| c.kind().to_owned())
                .collect();
            if tokens.iter().any(|t| t == "=" || t == ":=") {
                return Some("an expansion that assigns a variable (${x:=v})");
            }
            if tokens.windows(2).any(|w| w[0] == "@" && w[1] == "P") {
                return Some("a prompt expansion (${x@P})");
            }
        }
        if matches!(node.kind(), "expansion" | "arithmetic_expansion") {
            let text = self.text(node);
            // tree-sitter keeps a backquoted command inside `${…}` as text, where bash runs it.
            if text.contains('`') {
                return Some("a backquoted command inside `${…}`");
            }
            let arithmetic = text
                .strip_prefix("$((")
                .and_then(|t| t.strip_suffix("))"))
                .or_else(|| text.strip_prefix("$[").and_then(|t| t.strip_suffix(']')));
            let plain = match arithmetic {
                Some(inner) => super::arith::plain(inner),
                None if node.kind() == "arithmetic_expansion" => false,
                None => super::arith::plain_expansion(&text),
            };
            if !plain {
                return Some("arithmetic that can run a command or set a variable (bash evaluates it)");
            }
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        children.into_iter().find_map(|c| self.unsafe_expansion(c, depth + 1))
    }
}

/// Whether `node` is where a word, a string or a heredoc body starts (its parent is not a word part), so that a
/// text check runs once per word and not again for each part.
fn starts_a_word(node: Node<'_>) -> bool {
    node.parent()
        .is_none_or(|p| !matches!(p.kind(), "concatenation" | "string" | "heredoc_body" | "expansion"))
}

fn strip_quotes(text: &str, quote: char) -> String {
    let inner = text.strip_prefix(quote).unwrap_or(text);
    inner.strip_suffix(quote).unwrap_or(inner).to_owned()
}

/// Quote removal of an unquoted word: `\x` is `x` and a backslash-newline vanishes. Also reports an unescaped glob
/// or brace character, and whether the word starts with one.
fn unescape_word(text: &str) -> (String, bool, bool) {
    let mut out = String::with_capacity(text.len());
    let (mut glob, mut leading) = (false, false);
    let mut chars = text.chars();
    let mut first = true;
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            if matches!(c, '*' | '?' | '[' | '{') {
                glob = true;
                leading |= first;
            }
            out.push(c);
        }
        first = false;
    }
    (out, glob, leading)
}

/// Quote removal inside double quotes: only `\$`, `` \` ``, `\"`, `\\` and backslash-newline are escapes.
fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(next) = chars.next() {
                        out.push(next);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}
