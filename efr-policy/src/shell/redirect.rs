//! Redirections, heredocs included: from tree-sitter-bash's nodes to [`Redirect`]s, with the words and statements
//! tree-sitter puts inside a redirection node that belong elsewhere.

use tree_sitter::Node;

use super::parse::Conv;
use super::{Heredoc, Redirect, RedirectOp, Stmt, Word};

/// What a redirection node held: its redirections, words that belong to the command (tree-sitter's quirk), and
/// statements joined to a heredoc's command line (`cat <<EOF | grep x`).
#[derive(Default)]
pub(super) struct RedirectParts {
    pub(super) redirects: Vec<Redirect>,
    pub(super) words: Vec<Word>,
    pub(super) stmts: Vec<Stmt>,
}

impl Conv<'_> {
    /// The redirection nodes of one command, in order.
    pub(super) fn redirects<'t>(&mut self, nodes: impl IntoIterator<Item = Node<'t>>, depth: usize) -> RedirectParts {
        let mut parts = RedirectParts::default();
        for node in nodes {
            self.redirect(node, depth, &mut parts);
        }
        parts
    }

    /// One redirection node into `parts`.
    pub(super) fn redirect(&mut self, node: Node<'_>, depth: usize, parts: &mut RedirectParts) {
        if self.deep(depth) {
            parts.stmts.push(Stmt::Unknown {
                construct: "nesting too deep".to_owned(),
                inner: Vec::new(),
            });
            return;
        }
        let descriptor = node.child_by_field_name("descriptor").map(|d| self.text(d));
        if descriptor.as_deref().is_some_and(|d| d.parse::<u32>().is_err()) {
            // `{name}>file` stores the new descriptor's number in `name`, which stays set in the hidden shell.
            parts.stmts.push(Stmt::Unknown {
                construct: "a `{name}` redirection, which sets a shell variable".to_owned(),
                inner: Vec::new(),
            });
        }
        let fd = descriptor.and_then(|d| d.parse::<u32>().ok());
        match node.kind() {
            "heredoc_redirect" => self.heredoc(node, depth, fd, parts),
            "herestring_redirect" => {
                let target = node
                    .named_children(&mut node.walk())
                    .find(|c| c.kind() != "file_descriptor");
                let target = target.map(|t| self.word(t, depth + 1));
                parts.redirects.push(Redirect {
                    fd,
                    op: RedirectOp::Herestring,
                    target,
                    heredoc: None,
                });
            }
            _ => {
                let op = (0..node.child_count())
                    .filter_map(|i| node.child(i))
                    .find(|c| !c.is_named())
                    .map_or(RedirectOp::Write, |c| redirect_op(c.kind()));
                let mut cursor = node.walk();
                let destinations: Vec<Node<'_>> = node.children_by_field_name("destination", &mut cursor).collect();
                let mut words = destinations.into_iter().map(|d| self.word(d, depth + 1));
                let target = if op == RedirectOp::Close { None } else { words.next() };
                parts.redirects.push(Redirect {
                    fd,
                    op,
                    target,
                    heredoc: None,
                });
                // tree-sitter-bash puts the words after the target into the redirection; bash gives them to the
                // command (`find > /dev/null . -delete` runs `find . -delete`).
                parts.words.extend(words);
            }
        }
    }

    fn heredoc(&mut self, node: Node<'_>, depth: usize, fd: Option<u32>, parts: &mut RedirectParts) {
        let mut quoted = false;
        let mut substitutions = Vec::new();
        let mut body = None;
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            match child.kind() {
                "heredoc_start" => {
                    let start = self.text(child);
                    // bash takes `<<$X` literally as the delimiter and still expands the body; tree-sitter may not
                    // see that body at all.
                    // A delimiter quoted in part (`E"O"F`) ends at `EOF` for bash, elsewhere for tree-sitter.
                    let whole = |q: char| {
                        start.len() >= 2 && start.starts_with(q) && start.ends_with(q) && start.matches(q).count() == 2
                    };
                    let quotes = start.contains(['\'', '"']);
                    let partly = (quotes && !whole('\'') && !whole('"'))
                        || start.char_indices().any(|(i, c)| c == '\\' && i > 0);
                    if start.contains(['$', '`']) || partly {
                        parts.stmts.push(Stmt::Unknown {
                            construct: "a heredoc whose delimiter is quoted in part or holds `$` or a backquote"
                                .to_owned(),
                            inner: Vec::new(),
                        });
                    }
                    quoted = start.contains(['\'', '"', '\\']);
                }
                "heredoc_body" => body = Some(child),
                "heredoc_end" | "file_descriptor" => {}
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => self.redirect(child, depth + 1, parts),
                _ => parts.stmts.extend(self.stmt(child, depth + 1)),
            }
        }
        if let Some(body) = body
            && !quoted
        {
            substitutions = self.substitutions_in(body, depth + 1);
            // bash joins a backslash-newline in an unquoted body before it looks for the delimiter (`EO\` + `F` ends
            // the body), tree-sitter does not: the lines after it would run unseen.
            let continued = self.text(body).lines().any(|line| {
                let trailing = line.len() - line.trim_end_matches('\\').len();
                trailing % 2 == 1
            });
            if continued {
                parts.stmts.push(Stmt::Unknown {
                    construct: "a line continuation in a heredoc".to_owned(),
                    inner: Vec::new(),
                });
            }
            // tree-sitter keeps some backquoted commands in a body as text, where bash runs them.
            if self.text(body).contains('`') {
                parts.stmts.push(Stmt::Unknown {
                    construct: "a backquoted command in a heredoc".to_owned(),
                    inner: Vec::new(),
                });
            }
            if let Some(what) = self.unsafe_expansion(body, depth + 1) {
                parts.stmts.push(Stmt::Unknown {
                    construct: what.to_owned(),
                    inner: Vec::new(),
                });
            }
        }
        parts.redirects.push(Redirect {
            fd,
            op: RedirectOp::Heredoc,
            target: None,
            heredoc: Some(Heredoc { quoted, substitutions }),
        });
    }
}

fn redirect_op(token: &str) -> RedirectOp {
    match token {
        "<" => RedirectOp::Read,
        ">>" => RedirectOp::Append,
        ">|" => RedirectOp::Clobber,
        "&>" => RedirectOp::WriteBoth,
        "&>>" => RedirectOp::AppendBoth,
        "<>" => RedirectOp::ReadWrite,
        ">&" => RedirectOp::DupOut,
        "<&" => RedirectOp::DupIn,
        ">&-" | "<&-" => RedirectOp::Close,
        // `>` and any operator this grammar version adds: read as a write, the careful side.
        _ => RedirectOp::Write,
    }
}
