//! Reading a Rust file well enough to see which modules it names: its tokens without comments and literals, its
//! `mod` declarations, and the paths of its `use` trees and of its code that start at `crate`, `super` or `self`.
//!
//! No full parser: paths, use trees, attributes, braces and `mod` items are all the checks need, and a tokenizer that
//! knows comments, strings, raw strings, chars and lifetimes keeps a `crate::x` in a comment or a string from
//! counting.

/// A token, with the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// An identifier or keyword (`r#name` without its `r#`).
    Ident(String),
    /// A string literal's text, escapes left as written (a `#[path]` needs no more).
    Str(String),
    /// `::`.
    Sep,
    /// Any other character of punctuation.
    Punct(char),
}

/// The tokens of `text` with their line numbers (from 1), comments and literals other than strings dropped.
pub fn tokenize(text: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            let start = line;
            let (text, next) = string(&chars, i + 1, None, &mut line);
            tokens.push((Token::Str(text), start));
            i = next;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}') or a lifetime ('a), which goes on as an identifier.
            if at(i + 1) == '\\' {
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let raw_string = matches!(word.as_str(), "r" | "br" | "cr") && {
                let mut j = i;
                while at(j) == '#' {
                    j += 1;
                }
                at(j) == '"'
            };
            if raw_string {
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                let start = line;
                let (text, next) = string(&chars, i + 1, Some(hashes), &mut line);
                tokens.push((Token::Str(text), start));
                i = next;
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                let start = line;
                let (text, next) = string(&chars, i + 1, None, &mut line);
                tokens.push((Token::Str(text), start));
                i = next;
            } else if word == "b" && at(i) == '\'' {
                i += if at(i + 1) == '\\' { 4 } else { 3 };
                while i < chars.len() && chars[i - 1] != '\'' {
                    i += 1;
                }
            } else if word == "r" && at(i) == '#' {
                i += 1;
            } else {
                tokens.push((Token::Ident(word), line));
            }
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push((Token::Sep, line));
            i += 2;
        } else {
            tokens.push((Token::Punct(c), line));
            i += 1;
        }
    }
    tokens
}

/// The text of a string literal whose opening quote is just before `start`, and the index after its end; `raw` is the
/// number of `#` of a raw string (whose backslashes escape nothing), `line` counts the newlines passed.
fn string(chars: &[char], start: usize, raw: Option<usize>, line: &mut usize) -> (String, usize) {
    let hashes = raw.unwrap_or(0);
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' if raw.is_none() => {
                *line += usize::from(chars.get(i + 1) == Some(&'\n'));
                i += 2;
            }
            '"' if (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) => {
                return (chars[start..i].iter().collect(), i + 1 + hashes);
            }
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    (chars[start..].iter().collect(), chars.len())
}

/// A `mod name;` declaration: a module whose code is in another file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModDecl {
    /// The inline modules (`mod a { … }`) the declaration sits in, outermost first.
    pub inline: Vec<String>,
    /// The module's name.
    pub name: String,
    /// Its `#[path = "…"]`, when it has one.
    pub path: Option<String>,
    /// Whether it is compiled for tests only (`#[cfg(test)]` on it or on what encloses it).
    pub test: bool,
    /// The line of `mod`.
    pub line: usize,
}

/// A path the code names, from a `use` tree or from an expression or type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRef {
    /// The inline modules the path sits in, outermost first.
    pub inline: Vec<String>,
    /// Its segments as written, `crate`, `super` or `self` first when it starts with one; a glob's path ends before
    /// the `*`, and `a::{self}` is `a`.
    pub segments: Vec<String>,
    /// The name a `use` leaf binds (its last segment or its `as` name); `None` for a glob and outside `use`.
    pub binding: Option<String>,
    /// Whether it is in a `use` item.
    pub used: bool,
    /// Whether it is compiled for tests only.
    pub test: bool,
    /// The line of its last segment.
    pub line: usize,
}

/// What one file declares and names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Its `mod name;` declarations.
    pub mods: Vec<ModDecl>,
    /// Its inline modules (`mod a { … }`), each as the path of inline names to it, with whether it is for tests only.
    pub inline_mods: Vec<(Vec<String>, bool)>,
    /// The paths it names.
    pub paths: Vec<PathRef>,
    /// Whether the whole file is for tests only (`#![cfg(test)]`).
    pub test: bool,
}

/// The inline module being read: its name, the nesting depth its `{` opened at, whether it is for tests only.
struct Inline {
    name: String,
    depth: usize,
    test: bool,
}

/// Reads the declarations and paths of a file's code.
pub fn scan(text: &str) -> Scan {
    let tokens = tokenize(text);
    let ident = |i: usize| match tokens.get(i) {
        Some((Token::Ident(word), _)) => Some(word.as_str()),
        _ => None,
    };
    let is = |i: usize, token: &Token| tokens.get(i).is_some_and(|(t, _)| t == token);
    let mut out = Scan::default();
    let mut inline: Vec<Inline> = Vec::new();
    // The nesting of (), [] and {} together; an item with `#[cfg(test)]` ends at a `;`, `,` or `}` back at its depth.
    let mut depth = 0usize;
    let mut test_item: Option<usize> = None;
    let mut pending_test = false;
    let mut pending_path: Option<String> = None;
    let mut i = 0;
    let names = |inline: &[Inline]| inline.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
    while i < tokens.len() {
        if is(i, &Token::Punct('#')) {
            let inner = is(i + 1, &Token::Punct('!'));
            let open = if inner { i + 2 } else { i + 1 };
            if is(open, &Token::Punct('[')) {
                let mut end = open;
                let mut brackets = 0;
                while end < tokens.len() {
                    match tokens[end].0 {
                        Token::Punct('[') => brackets += 1,
                        Token::Punct(']') => brackets -= 1,
                        _ => {}
                    }
                    if brackets == 0 {
                        break;
                    }
                    end += 1;
                }
                let attribute = &tokens[open + 1..end.min(tokens.len())];
                let word = |t: &(Token, usize), w: &str| matches!(&t.0, Token::Ident(x) if x == w);
                let cfg_test = attribute.first().is_some_and(|t| word(t, "cfg"))
                    && attribute.iter().any(|t| word(t, "test"))
                    && !attribute.iter().any(|t| word(t, "not"));
                if inner && cfg_test && inline.is_empty() {
                    out.test = true;
                } else if cfg_test {
                    pending_test = true;
                }
                if let [first, (Token::Punct('='), _), (Token::Str(path), _)] = attribute
                    && word(first, "path")
                {
                    pending_path = Some(path.clone());
                }
                i = end + 1;
                continue;
            }
        }
        if pending_test && ident(i) != Some("mod") {
            test_item = test_item.or(Some(depth));
            pending_test = false;
        }
        let in_test = out.test || test_item.is_some() || inline.iter().any(|m| m.test);
        match (&tokens[i].0, ident(i + 1)) {
            (Token::Ident(word), Some(name)) if word == "mod" => {
                let test = in_test || pending_test;
                if is(i + 2, &Token::Punct(';')) {
                    out.mods.push(ModDecl {
                        inline: names(&inline),
                        name: name.to_owned(),
                        path: pending_path.take(),
                        test,
                        line: tokens[i].1,
                    });
                    pending_test = false;
                    i += 2;
                    continue;
                } else if is(i + 2, &Token::Punct('{')) {
                    inline.push(Inline {
                        name: name.to_owned(),
                        depth,
                        test,
                    });
                    out.inline_mods.push((names(&inline), test));
                    depth += 1;
                    i += 3;
                    pending_test = false;
                    pending_path = None;
                    continue;
                }
                pending_test = false;
                pending_path = None;
            }
            _ if ident(i) == Some("use") => {
                let mut leaves = Vec::new();
                i = use_tree(&tokens, i + 1, Vec::new(), &mut leaves);
                for (segments, binding, line) in leaves {
                    out.paths.push(PathRef {
                        inline: names(&inline),
                        segments,
                        binding,
                        used: true,
                        test: in_test,
                        line,
                    });
                }
                continue;
            }
            _ if matches!(ident(i), Some("crate" | "super" | "self"))
                && is(i + 1, &Token::Sep)
                && !(i > 0 && is(i - 1, &Token::Sep)) =>
            {
                let mut leaves = Vec::new();
                i = use_tree(&tokens, i, Vec::new(), &mut leaves);
                for (segments, _, line) in leaves {
                    out.paths.push(PathRef {
                        inline: names(&inline),
                        segments,
                        binding: None,
                        used: false,
                        test: in_test,
                        line,
                    });
                }
                continue;
            }
            (Token::Punct('{' | '(' | '['), _) => depth += 1,
            (Token::Punct(close @ ('}' | ')' | ']')), _) => {
                depth = depth.saturating_sub(1);
                if *close == '}' && inline.last().is_some_and(|m| m.depth == depth) {
                    inline.pop();
                }
                // A block item ends at its `}`; a field or variant of a type, when the type's body closes.
                if test_item.is_some_and(|start| depth < start || (*close == '}' && depth == start)) {
                    test_item = None;
                }
            }
            (Token::Punct(separator @ (';' | ',')), _) => {
                // An item ends at its `;`, a field, variant or match arm at its `,`.
                if test_item == Some(depth) {
                    test_item = None;
                }
                if *separator == ';' {
                    pending_path = None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Reads a use tree (or a path) from token `i` under `prefix`, adding each leaf (segments, bound name, line) to
/// `leaves`; returns the index after it.
fn use_tree(
    tokens: &[(Token, usize)],
    mut i: usize,
    mut segments: Vec<String>,
    leaves: &mut Vec<(Vec<String>, Option<String>, usize)>,
) -> usize {
    let mut line = tokens.get(i).map_or(0, |t| t.1);
    let leaf = |mut segments: Vec<String>, glob: bool, line: usize| {
        if segments.len() > 1 && segments.last().is_some_and(|s| s == "self") {
            segments.pop();
        }
        let binding = if glob { None } else { segments.last().cloned() };
        (segments, binding, line)
    };
    loop {
        match tokens.get(i) {
            Some((Token::Sep, _)) => i += 1,
            Some((Token::Ident(name), at)) => {
                segments.push(name.clone());
                line = *at;
                i += 1;
                match tokens.get(i) {
                    Some((Token::Sep, _)) => i += 1,
                    Some((Token::Ident(word), _)) if word == "as" => {
                        let (segments, _, line) = leaf(segments, false, line);
                        let binding = match tokens.get(i + 1) {
                            Some((Token::Ident(alias), _)) if alias != "_" => Some(alias.clone()),
                            _ => None,
                        };
                        leaves.push((segments, binding, line));
                        return i + 2;
                    }
                    _ => {
                        leaves.push(leaf(segments, false, line));
                        return i;
                    }
                }
            }
            Some((Token::Punct('*'), at)) => {
                leaves.push(leaf(segments, true, *at));
                return i + 1;
            }
            Some((Token::Punct('{'), _)) => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        None => return i,
                        Some((Token::Punct('}'), _)) => return i + 1,
                        Some((Token::Punct(','), _)) => i += 1,
                        Some(_) => {
                            let next = use_tree(tokens, i, segments.clone(), leaves);
                            // A token a use tree cannot hold: step over it rather than loop on it.
                            i = if next == i { i + 1 } else { next };
                        }
                    }
                }
            }
            _ => {
                if !segments.is_empty() {
                    leaves.push(leaf(segments, false, line));
                }
                return i;
            }
        }
    }
}
