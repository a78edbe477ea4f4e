//! From tree-sitter-bash's concrete syntax tree to [`ParsedLine`].
//!
//! The node kinds are those of tree-sitter-bash 0.25 (`src/node-types.json` of the crate). Every kind that is not
//! converted on purpose becomes [`Stmt::Unknown`]; the conversion never drops a statement silently.

use tree_sitter::{Node, Parser};

use super::lexical::{misread, plain_name, unquoted};

use super::{
    AndOr, Assignment, Command, MAX_DEPTH, MAX_LINE_BYTES, ParseProblem, ParsedLine, Stmt, Substitution,
    SubstitutionKind, Word,
};

/// Parses one shell line (which may hold several lines, heredocs included).
///
/// Never fails: a line that does not parse has [`ParsedLine::error`] set and holds what tree-sitter recovered, which is
/// never read-only but still shows the floors the commands it could read.
#[must_use]
pub fn parse(line: &str) -> ParsedLine {
    if line.len() > MAX_LINE_BYTES {
        return ParsedLine {
            body: Vec::new(),
            error: Some(ParseProblem::TooLong),
        };
    }
    let mut parser = Parser::new();
    if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
        return ParsedLine {
            body: Vec::new(),
            error: Some(ParseProblem::Parser),
        };
    }
    let Some(tree) = parser.parse(line, None) else {
        return ParsedLine {
            body: Vec::new(),
            error: Some(ParseProblem::Parser),
        };
    };
    let root = tree.root_node();
    let mut conv = Conv {
        src: line.as_bytes(),
        too_deep: false,
    };
    let body = conv.stmts_of(root, 0);
    let error = if root.has_error() {
        Some(ParseProblem::Syntax { at: first_error(root) })
    } else if conv.too_deep {
        Some(ParseProblem::TooDeep)
    } else {
        misread(root, line.as_bytes()).map(|at| ParseProblem::Syntax { at })
    };
    ParsedLine { body, error }
}

/// The byte offset of the first error or missing node, found without recursion (the tree may be deep).
fn first_error(root: Node<'_>) -> usize {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.is_error() || node.is_missing() {
            return node.start_byte();
        }
        // Descend only into subtrees that hold an error.
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return root.start_byte();
            }
        }
    }
}

/// Node kinds that are statements of their own.
fn is_statement(kind: &str) -> bool {
    matches!(
        kind,
        "command"
            | "pipeline"
            | "list"
            | "redirected_statement"
            | "subshell"
            | "compound_statement"
            | "negated_command"
            | "test_command"
            | "variable_assignment"
            | "variable_assignments"
            | "declaration_command"
            | "unset_command"
            | "if_statement"
            | "while_statement"
            | "for_statement"
            | "c_style_for_statement"
            | "case_statement"
            | "function_definition"
    )
}

pub(super) struct Conv<'s> {
    pub(super) src: &'s [u8],
    pub(super) too_deep: bool,
}

impl Conv<'_> {
    pub(super) fn text(&self, node: Node<'_>) -> String {
        String::from_utf8_lossy(self.src.get(node.byte_range()).unwrap_or_default()).into_owned()
    }

    /// Whether `depth` is past [`MAX_DEPTH`]; records it so the script reports [`ParseProblem::TooDeep`].
    pub(super) fn deep(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            self.too_deep = true;
        }
        self.too_deep
    }

    fn stmts_of(&mut self, node: Node<'_>, depth: usize) -> Vec<Stmt> {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        children
            .into_iter()
            .filter_map(|child| self.stmt(child, depth + 1))
            .collect()
    }

    fn unknown(&mut self, construct: &str, node: Node<'_>, depth: usize) -> Stmt {
        let inner = if self.deep(depth) {
            Vec::new()
        } else {
            self.inner(node, depth + 1)
        };
        Stmt::Unknown {
            construct: construct.to_owned(),
            inner,
        }
    }

    /// The statements (and substitution bodies) anywhere below `node`, for [`Stmt::Unknown`].
    fn inner(&mut self, node: Node<'_>, depth: usize) -> Vec<Stmt> {
        if self.deep(depth) {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for child in children {
            if is_statement(child.kind()) {
                out.extend(self.stmt(child, depth + 1));
            } else if matches!(child.kind(), "command_substitution" | "process_substitution") {
                out.extend(self.substitution(child, depth + 1).body);
            } else {
                out.extend(self.inner(child, depth + 1));
            }
        }
        out
    }

    pub(super) fn stmt(&mut self, node: Node<'_>, depth: usize) -> Option<Stmt> {
        if self.deep(depth) {
            return Some(Stmt::Unknown {
                construct: "nesting too deep".to_owned(),
                inner: Vec::new(),
            });
        }
        let stmt = match node.kind() {
            "comment" | "heredoc_body" | "heredoc_end" => return None,
            "command" => {
                let (command, extra) = self.command(node, depth);
                with_extra(Stmt::Command(command), extra)
            }
            "pipeline" => pipeline(self.stmts_of(node, depth)),
            "list" => self.list(node, depth),
            "redirected_statement" => self.redirected(node, depth),
            "subshell" => Stmt::Subshell(self.stmts_of(node, depth)),
            "compound_statement" => {
                if node.child(0).is_some_and(|c| c.kind() == "((") {
                    self.unknown("an arithmetic command (( ))", node, depth)
                } else {
                    Stmt::Group(self.stmts_of(node, depth))
                }
            }
            "negated_command" => {
                let mut inner = self.stmts_of(node, depth);
                match inner.len() {
                    1 => Stmt::Not(Box::new(inner.remove(0))),
                    _ => Stmt::Unknown {
                        construct: "a negated command".to_owned(),
                        inner,
                    },
                }
            }
            "test_command" => self.test(node, depth),
            "variable_assignment" => Stmt::Command(Command {
                assignments: vec![self.assignment(node, depth)],
                ..Command::default()
            }),
            "variable_assignments" => {
                let mut cursor = node.walk();
                let nodes: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                let assignments = nodes
                    .into_iter()
                    .filter(|n| n.kind() == "variable_assignment")
                    .map(|n| self.assignment(n, depth + 1))
                    .collect();
                Stmt::Command(Command {
                    assignments,
                    ..Command::default()
                })
            }
            "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                // A redirection with no command, such as `> file` or the `$(< file)` substitution.
                let parts = self.redirects([node], depth);
                let command = Command {
                    redirects: parts.redirects,
                    words: parts.words,
                    ..Command::default()
                };
                with_extra(Stmt::Command(command), parts.stmts)
            }
            "declaration_command" => {
                let keyword = node.child(0).map(|c| self.text(c)).unwrap_or_default();
                self.unknown(&format!("`{keyword}`"), node, depth)
            }
            "unset_command" => self.unknown("`unset`", node, depth),
            "if_statement" => self.unknown("an if statement", node, depth),
            "while_statement" => self.unknown("a while loop", node, depth),
            "for_statement" | "c_style_for_statement" => self.unknown("a for loop", node, depth),
            "case_statement" => self.unknown("a case statement", node, depth),
            "function_definition" => self.unknown("a function definition", node, depth),
            "ERROR" => self.unknown("text efr cannot parse", node, depth),
            other => self.unknown(&format!("`{other}`"), node, depth),
        };
        Some(stmt)
    }

    fn list(&mut self, node: Node<'_>, depth: usize) -> Stmt {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let mut left: Option<Stmt> = None;
        let mut op = AndOr::And;
        for child in children {
            match child.kind() {
                "&&" => op = AndOr::And,
                "||" => op = AndOr::Or,
                _ if child.is_named() => {
                    let Some(stmt) = self.stmt(child, depth + 1) else {
                        continue;
                    };
                    left = Some(match left.take() {
                        None => stmt,
                        Some(l) => Stmt::AndOr {
                            left: Box::new(l),
                            op,
                            right: Box::new(stmt),
                        },
                    });
                }
                _ => {}
            }
        }
        left.unwrap_or(Stmt::Sequence(Vec::new()))
    }

    fn redirected(&mut self, node: Node<'_>, depth: usize) -> Stmt {
        let mut cursor = node.walk();
        let redirects: Vec<Node<'_>> = node.children_by_field_name("redirect", &mut cursor).collect();
        let parts = self.redirects(redirects, depth + 1);
        let body = node.child_by_field_name("body");
        let main = match body {
            Some(b) if b.kind() == "command" => {
                let (mut command, extra) = self.command(b, depth + 1);
                command.redirects.extend(parts.redirects);
                command.words.extend(parts.words);
                with_extra(Stmt::Command(command), extra)
            }
            Some(b) => {
                let Some(inner) = self.stmt(b, depth + 1) else {
                    return Stmt::Sequence(parts.stmts);
                };
                if parts.words.is_empty() {
                    Stmt::Redirected {
                        body: Box::new(inner),
                        redirects: parts.redirects,
                    }
                } else {
                    Stmt::Unknown {
                        construct: "words after a redirection".to_owned(),
                        inner: vec![inner],
                    }
                }
            }
            None => Stmt::Command(Command {
                words: parts.words,
                redirects: parts.redirects,
                ..Command::default()
            }),
        };
        with_extra(main, parts.stmts)
    }

    /// A simple command and the statements its heredocs joined to it.
    fn command(&mut self, node: Node<'_>, depth: usize) -> (Command, Vec<Stmt>) {
        let mut command = Command::default();
        // The redirections' parts ([`super::redirect`]), read in order with the words.
        let mut parts = Default::default();
        let mut cursor = node.walk();
        if cursor.goto_first_child() {
            loop {
                let child = cursor.node();
                let field = cursor.field_name();
                match child.kind() {
                    "variable_assignment" => command.assignments.push(self.assignment(child, depth + 1)),
                    "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                        self.redirect(child, depth + 1, &mut parts);
                    }
                    "comment" => {}
                    "command_name" => {
                        let word = child.named_child(0).unwrap_or(child);
                        command.words.insert(0, self.word(word, depth + 1));
                    }
                    _ if child.is_named() || field == Some("argument") => {
                        command.words.push(self.word(child, depth + 1));
                    }
                    _ => {}
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        command.redirects.extend(parts.redirects);
        command.words.extend(parts.words);
        (command, parts.stmts)
    }

    fn assignment(&mut self, node: Node<'_>, depth: usize) -> Assignment {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n))
            .unwrap_or_default();
        let value = match node.child_by_field_name("value") {
            Some(v) => self.word(v, depth + 1),
            None => Word::literal(""),
        };
        Assignment { name, value }
    }

    fn test(&mut self, node: Node<'_>, depth: usize) -> Stmt {
        let single = node.child(0).is_some_and(|c| c.kind() == "[");
        if single && self.has_angle_operator(node, depth) {
            return self.unknown("a `>` or `<` inside `[ ]` (a redirection to bash)", node, depth);
        }
        if let Some(what) = self.unsafe_expansion(node, depth + 1) {
            return self.unknown(what, node, depth);
        }
        // `-v 'a[…]'` and `-eq` evaluate an array subscript, which runs a `$(…)` even inside single quotes; the
        // operands of `-eq` and friends are evaluated as arithmetic, which can also assign (`PATH=0`).
        let mut cursor = node.walk();
        let operands: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        if operands.iter().any(|operand| {
            let text = unquoted(&self.text(*operand));
            text.contains('[') && super::hides_substitution(&text)
        }) || !self.plain_test(node, depth, single)
        {
            return self.unknown("arithmetic in a test (bash evaluates it)", node, depth);
        }
        Stmt::Test(self.substitutions_in(node, depth + 1))
    }

    /// Whether every arithmetic comparison below `node` compares plain arithmetic ([`super::arith::plain`]) and every
    /// `-v` names a plain variable.
    /// `single` is `[ ]`, whose `-eq` compares integers without arithmetic (bash's `test`), so only `-v` counts.
    fn plain_test(&mut self, node: Node<'_>, depth: usize, single: bool) -> bool {
        if self.deep(depth) {
            return false;
        }
        let operator = |n: Node<'_>| {
            n.child_by_field_name("operator")
                .or_else(|| n.child(0))
                .map(|o| self.text(o))
                .unwrap_or_default()
        };
        match node.kind() {
            "binary_expression"
                if !single && matches!(operator(node).as_str(), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge") =>
            {
                let sides = [node.child_by_field_name("left"), node.child_by_field_name("right")];
                if !sides
                    .into_iter()
                    .all(|side| side.is_some_and(|s| super::arith::plain(&unquoted(&self.text(s)))))
                {
                    return false;
                }
            }
            "unary_expression" if operator(node) == "-v" => {
                let name = node.named_child(1).map(|n| unquoted(&self.text(n))).unwrap_or_default();
                if !plain_name(&name) {
                    return false;
                }
            }
            "command_substitution" | "process_substitution" => return true,
            _ => {}
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        children.into_iter().all(|c| self.plain_test(c, depth + 1, single))
    }

    /// Whether an anonymous `>`/`<` token sits below `node` (outside substitutions).
    fn has_angle_operator(&mut self, node: Node<'_>, depth: usize) -> bool {
        if self.deep(depth) {
            return true;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        children.into_iter().any(|c| {
            if !c.is_named() {
                return matches!(c.kind(), ">" | "<" | ">>");
            }
            !matches!(c.kind(), "command_substitution" | "process_substitution")
                && self.has_angle_operator(c, depth + 1)
        })
    }

    pub(super) fn substitutions_in(&mut self, node: Node<'_>, depth: usize) -> Vec<Substitution> {
        if self.deep(depth) {
            return vec![Substitution {
                kind: SubstitutionKind::Command,
                body: vec![Stmt::Unknown {
                    construct: "nesting too deep".to_owned(),
                    inner: Vec::new(),
                }],
            }];
        }
        if matches!(node.kind(), "command_substitution" | "process_substitution") {
            return vec![self.substitution(node, depth)];
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        children
            .into_iter()
            .flat_map(|c| self.substitutions_in(c, depth + 1))
            .collect()
    }

    fn substitution(&mut self, node: Node<'_>, depth: usize) -> Substitution {
        let opener = node.child(0).map(|c| c.kind().to_owned()).unwrap_or_default();
        let kind = match opener.as_str() {
            "<(" => SubstitutionKind::ProcessIn,
            ">(" => SubstitutionKind::ProcessOut,
            _ => SubstitutionKind::Command,
        };
        let text = self.text(node);
        let body = if opener == "`"
            && text
                .get(1..text.len().saturating_sub(1))
                .is_some_and(|t| t.contains("\\`"))
        {
            // Bash runs an escaped backquote inside backquotes as a nested substitution; tree-sitter reads text.
            vec![Stmt::Unknown {
                construct: "nested backquotes".to_owned(),
                inner: Vec::new(),
            }]
        } else {
            self.stmts_of(node, depth)
        };
        Substitution { kind, body }
    }
}

/// A pipeline of `parts`, with tree-sitter-bash 0.25's misreading of `a | b | c && d` undone: it nests the
/// `&&`/`||` list inside the pipeline (`a | (b | c && d)`), where bash binds `|` tighter (`(a | b | c) && d`).
/// The first statement of the list joins the pipeline; the rest of the list follows it.
fn pipeline(mut parts: Vec<Stmt>) -> Stmt {
    fn attach(mut prefix: Vec<Stmt>, stmt: Stmt) -> Stmt {
        match stmt {
            Stmt::AndOr { left, op, right } => Stmt::AndOr {
                left: Box::new(attach(prefix, *left)),
                op,
                right,
            },
            Stmt::Pipeline(inner) => {
                prefix.extend(inner);
                Stmt::Pipeline(prefix)
            }
            other => {
                prefix.push(other);
                Stmt::Pipeline(prefix)
            }
        }
    }
    match parts.pop() {
        Some(last @ Stmt::AndOr { .. }) => attach(parts, last),
        Some(last) => {
            parts.push(last);
            Stmt::Pipeline(parts)
        }
        None => Stmt::Pipeline(parts),
    }
}

/// A statement followed by the statements a heredoc joined to it.
fn with_extra(main: Stmt, extra: Vec<Stmt>) -> Stmt {
    if extra.is_empty() {
        return main;
    }
    let mut all = Vec::with_capacity(extra.len() + 1);
    all.push(main);
    all.extend(extra);
    Stmt::Sequence(all)
}
