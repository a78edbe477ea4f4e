//! Where tree-sitter-bash and bash read a line differently, and the small lexical rules the parser shares: a line
//! that tree-sitter reads otherwise than bash is not analysed ([`misread`]), an operand is judged as bash's
//! arithmetic sees it ([`unquoted`]), and `-v` may name only a plain variable ([`plain_name`]).

use tree_sitter::Node;

/// `text` without quotes and backslashes: what bash's arithmetic sees of a test's operand, near enough to judge it.
pub(super) fn unquoted(text: &str) -> String {
    text.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect()
}

/// A variable's name that `-v` may look up: letters, digits and `_`, not `_` alone, no subscript.
pub fn plain_name(name: &str) -> bool {
    name != "_"
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where tree-sitter reads the line otherwise than bash, as a byte offset: a carriage return, vertical tab or form
/// feed (whitespace to tree-sitter, part of a word to bash), or a comment whose `#` does not start a word for bash
/// (after an escaped blank or a line continuation: `echo a\<TAB>#; touch x` runs `touch`).
pub(super) fn misread(root: Node<'_>, src: &[u8]) -> Option<usize> {
    if let Some(at) = src.iter().position(|b| matches!(b, b'\r' | 0x0b | 0x0c)) {
        return Some(at);
    }
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.kind() == "comment" {
            let at = node.start_byte();
            let starts_word = match at.checked_sub(1).and_then(|i| src.get(i)) {
                None => true,
                Some(b' ' | b'\t' | b'\n') => at < 2 || src.get(at - 2) != Some(&b'\\'),
                Some(b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>') => true,
                Some(_) => false,
            };
            if !starts_word {
                return Some(at);
            }
        }
        if cursor.goto_first_child() || cursor.goto_next_sibling() {
            continue;
        }
        loop {
            if !cursor.goto_parent() {
                return None;
            }
            if cursor.goto_next_sibling() {
                break;
            }
        }
    }
}
