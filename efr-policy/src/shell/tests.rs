//! Parser tests: the shapes of [`ParsedLine`] for each construct, the quirks, and the error paths.

use std::path::{Path, PathBuf};

use super::*;

fn body(line: &str) -> Vec<Stmt> {
    let script = parse(line);
    assert_eq!(script.error, None, "{line}");
    script.body
}

fn command(stmt: &Stmt) -> &Command {
    match stmt {
        Stmt::Command(c) => c,
        other => panic!("not a command: {other:?}"),
    }
}

fn values(c: &Command) -> Vec<Option<&str>> {
    c.words.iter().map(|w| w.value.as_deref()).collect()
}

#[test]
fn a_command_with_quotes_escapes_and_assignments() {
    let b = body(r#"LC_ALL=C grep -n "a b" 'c d' e\ f $x"#);
    let c = command(&b[0]);
    assert_eq!(c.assignments[0].name, "LC_ALL");
    assert_eq!(c.assignments[0].value.value.as_deref(), Some("C"));
    assert_eq!(
        values(c),
        [Some("grep"), Some("-n"), Some("a b"), Some("c d"), Some("e f"), None]
    );
    assert_eq!(c.name(), Some("grep"));
}

#[test]
fn pipelines_lists_and_sequences() {
    let b = body("a | b && c || d; e &");
    let Stmt::Sequence(items) = &Stmt::Sequence(b) else {
        unreachable!()
    };
    assert_eq!(items.len(), 2);
    let Stmt::AndOr {
        left,
        op: AndOr::Or,
        right,
    } = &items[0]
    else {
        panic!("{:?}", items[0])
    };
    assert_eq!(command(right).name(), Some("d"));
    let Stmt::AndOr {
        left, op: AndOr::And, ..
    } = left.as_ref()
    else {
        panic!()
    };
    assert!(matches!(left.as_ref(), Stmt::Pipeline(parts) if parts.len() == 2));
}

#[test]
fn a_list_after_a_long_pipeline_binds_looser() {
    // tree-sitter-bash nests `c && d` inside the pipeline; bash reads `(a | b | c) && d`.
    let b = body("a | b | c && d");
    let Stmt::AndOr {
        left,
        op: AndOr::And,
        right,
    } = &b[0]
    else {
        panic!("{b:?}")
    };
    assert!(matches!(left.as_ref(), Stmt::Pipeline(parts) if parts.len() == 3));
    assert_eq!(command(right).name(), Some("d"));
    let b = body("a | (b; c) | d || e && f");
    let Stmt::AndOr {
        left, op: AndOr::And, ..
    } = &b[0]
    else {
        panic!("{b:?}")
    };
    let Stmt::AndOr {
        left, op: AndOr::Or, ..
    } = left.as_ref()
    else {
        panic!("{b:?}")
    };
    assert!(matches!(left.as_ref(), Stmt::Pipeline(parts) if parts.len() == 3));
}

#[test]
fn substitutions_in_words_strings_and_assignments() {
    let b = body(r#"echo "a $(rm x) b" <(ls) `pwd` X=$(id)"#);
    let c = command(&b[0]);
    let kinds: Vec<SubstitutionKind> = c.substitutions().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        [
            SubstitutionKind::Command,
            SubstitutionKind::ProcessIn,
            SubstitutionKind::Command,
            SubstitutionKind::Command
        ]
    );
    let inner = command(&c.words[1].substitutions[0].body[0]);
    assert_eq!(inner.name(), Some("rm"));
    let b = body("X=$(id) ls");
    assert_eq!(command(&b[0]).substitutions().count(), 1);
}

#[test]
fn redirections_and_their_targets() {
    let b = body("ls 2>/dev/null >out.txt 2>&1 >>log <in >&-");
    let c = command(&b[0]);
    let ops: Vec<(Option<u32>, RedirectOp)> = c.redirects.iter().map(|r| (r.fd, r.op)).collect();
    assert_eq!(
        ops,
        [
            (Some(2), RedirectOp::Write),
            (None, RedirectOp::Write),
            (Some(2), RedirectOp::DupOut),
            (None, RedirectOp::Append),
            (None, RedirectOp::Read),
            (None, RedirectOp::Close),
        ]
    );
    let writes: Vec<bool> = c.redirects.iter().map(Redirect::writes_file).collect();
    assert_eq!(writes, [true, true, false, true, false, false]);
}

#[test]
fn words_after_a_redirection_go_back_to_the_command() {
    let b = body("find > /dev/null . -delete");
    assert_eq!(values(command(&b[0])), [Some("find"), Some("."), Some("-delete")]);
}

#[test]
fn heredocs_quoted_and_not_and_what_follows_them() {
    let b = body("cat <<EOF > f\nhello $(rm x)\nEOF");
    let c = command(&b[0]);
    let heredoc = c.redirects.iter().find_map(|r| r.heredoc.as_ref()).unwrap();
    assert!(!heredoc.quoted);
    assert_eq!(heredoc.substitutions.len(), 1);
    assert!(c.redirects.iter().any(|r| r.op == RedirectOp::Write));

    let b = body("cat <<'EOF'\n$(rm x)\nEOF");
    let heredoc = command(&b[0]).redirects[0].heredoc.clone().unwrap();
    assert!(heredoc.quoted);
    assert!(heredoc.substitutions.is_empty());

    let b = body("cat <<EOF | grep x\nhi\nEOF");
    let Stmt::Sequence(items) = &b[0] else { panic!("{b:?}") };
    assert!(matches!(&items[1], Stmt::Pipeline(p) if command(&p[0]).name() == Some("grep")));
}

#[test]
fn subshells_groups_negation_and_tests() {
    let b = body("(cd x; ls) > f; { ls; }; ! ls; [ -f x ] && [[ -n $(id) ]]");
    assert!(
        matches!(&b[0], Stmt::Redirected { body, redirects } if matches!(body.as_ref(), Stmt::Subshell(_)) && redirects.len() == 1)
    );
    assert!(matches!(&b[1], Stmt::Group(_)));
    assert!(matches!(&b[2], Stmt::Not(_)));
    let Stmt::AndOr { right, .. } = &b[3] else { panic!() };
    assert!(matches!(right.as_ref(), Stmt::Test(subs) if subs.len() == 1));
}

#[test]
fn unanalysed_constructs_are_unknown_with_their_commands_inside() {
    for (line, construct) in [
        ("for f in *; do rm -rf $f; done", "a for loop"),
        ("if true; then rm x; fi", "an if statement"),
        ("export PATH=/tmp", "`export`"),
        ("f() { rm x; }", "a function definition"),
        ("((x=1))", "an arithmetic command (( ))"),
        ("[ a > b ]", "a `>` or `<` inside `[ ]` (a redirection to bash)"),
    ] {
        let b = body(line);
        let Stmt::Unknown { construct: got, .. } = &b[0] else {
            panic!("{line}: {b:?}")
        };
        assert_eq!(got, construct, "{line}");
    }
    let b = body("if true; then rm -rf /; fi");
    let Stmt::Unknown { inner, .. } = &b[0] else { panic!() };
    assert!(
        inner
            .iter()
            .any(|s| matches!(s, Stmt::Command(c) if c.name() == Some("rm")))
    );
}

#[test]
fn nested_backquotes_are_unknown() {
    let b = body(r"echo `echo \`ls\``");
    let sub = &command(&b[0]).words[1].substitutions[0];
    assert!(matches!(&sub.body[0], Stmt::Unknown { construct, .. } if construct == "nested backquotes"));
}

#[test]
fn words_know_globs_home_and_unsafe_expansions() {
    let b = body(r#"ls *.rs src/*.rs ~/x "$HOME/y" ${HOME} '*' ${x:=v} ${x@P}"#);
    let w = &command(&b[0]).words;
    assert!(w[1].glob && w[1].leading_glob);
    assert!(w[2].glob && !w[2].leading_glob);
    assert_eq!(w[3].home_relative.as_deref(), Some("/x"));
    assert_eq!(w[4].home_relative.as_deref(), Some("/y"));
    assert_eq!(w[5].home_relative.as_deref(), Some(""));
    assert!(!w[6].glob);
    assert!(w[7].unsafe_expansion.is_some());
    assert!(w[8].unsafe_expansion.is_some());
}

#[test]
fn syntax_errors_are_reported_with_their_offset() {
    for (line, at) in [("echo \"unterminated", 5), ("ls &&", 5), ("ls )", 3), ("echo 'abc", 4)] {
        let script = parse(line);
        let Some(ParseProblem::Syntax { at: got }) = script.error else {
            panic!("{line}: {:?}", script.error)
        };
        assert!(got >= at.min(got) && got <= line.len(), "{line}: {got}");
    }
    // What tree-sitter recovered is kept.
    let script = parse("echo 'abc");
    assert!(matches!(&script.body[0], Stmt::Command(c) if c.name() == Some("echo")));
}

#[test]
fn too_long_and_too_deep_lines_are_errors() {
    let long = "a".repeat(MAX_LINE_BYTES + 1);
    assert_eq!(parse(&long).error, Some(ParseProblem::TooLong));
    let deep = format!("{}ls{}", "$(echo ".repeat(MAX_DEPTH + 5), ")".repeat(MAX_DEPTH + 5));
    assert_eq!(parse(&deep).error, Some(ParseProblem::TooDeep));
}

/// Records the directory each command may run in.
struct Dirs(Vec<(String, Cwd)>);

impl Visitor for Dirs {
    fn command(&mut self, command: &Command, cwd: &Cwd, piped: bool) {
        let name = command.name().unwrap_or("?");
        let name = if piped { format!("|{name}") } else { name.to_owned() };
        self.0.push((name, cwd.clone()));
    }
    fn redirects(&mut self, _: &[Redirect], _: &Cwd) {}
    fn unknown(&mut self, _: &str, _: &Cwd) {}
}

fn dirs_of(line: &str) -> Vec<(String, Cwd)> {
    let mut v = Dirs(Vec::new());
    walk(
        &parse(line).body,
        Cwd::at(Path::new("/p")),
        Some(Path::new("/home/u")),
        &mut v,
    );
    v.0
}

fn known(paths: &[&str]) -> Cwd {
    Cwd::Known(paths.iter().map(PathBuf::from).collect())
}

#[test]
fn the_walk_follows_cd() {
    let d = dirs_of("cd build && rm x");
    assert_eq!(d[1], ("rm".to_owned(), known(&["/p/build"])));
    let d = dirs_of("cd build; rm x");
    assert_eq!(d[1].1, known(&["/p", "/p/build"]));
    let d = dirs_of("cd build || rm x");
    assert_eq!(d[1].1, known(&["/p"]));
    let d = dirs_of("(cd /tmp) && rm x");
    assert_eq!(d[1].1, known(&["/p"]));
    let d = dirs_of("cd \"$d\" && rm x");
    assert_eq!(d[1].1, Cwd::Unknown);
    let d = dirs_of("cd && ls && cd ~/w && ls && cd .. && ls");
    assert_eq!(d[1].1, known(&["/home/u"]));
    assert_eq!(d[3].1, known(&["/home/u/w"]));
    assert_eq!(d[5].1, known(&["/home/u"]));
    // Up from the start: bash goes up from its remembered `$PWD`, which may be elsewhere after a link.
    let d = dirs_of("cd .. && ls; cd build && cd .. && ls");
    assert_eq!(d[1].1, Cwd::Unknown);
    let d = dirs_of("cd build && cd .. && ls && cd ../x && ls");
    assert_eq!(d[2].1, known(&["/p"]));
    assert_eq!(d[4].1, Cwd::Unknown);
    let d = dirs_of("echo $(cd /tmp && pwd) && ls");
    assert_eq!(d[1], ("pwd".to_owned(), known(&["/tmp"])));
    assert_eq!(d.last().unwrap().1, known(&["/p"]));
}

#[test]
fn the_walk_knows_piped_input() {
    let names: Vec<String> = dirs_of("a | (b; c) | d && e; f $(g)")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["a", "|b", "|c", "|d", "e", "g", "f"]);
}
