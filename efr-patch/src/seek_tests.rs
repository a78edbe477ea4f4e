//! Placing chunks: levels, cursor, headers and sections, end of file, and the refusal of ambiguous places.

use super::*;

fn find(file: &[&str], headers: &[&str], lines: &[&str], end_of_file: bool, cursor: usize) -> Result<Place, Miss> {
    let keys = Keys::new(file);
    let headers: Vec<String> = headers.iter().map(ToString::to_string).collect();
    locate(
        &keys,
        Target {
            headers: &headers,
            lines,
            end_of_file,
        },
        cursor,
    )
}

fn at(start: usize, level: Level) -> Result<Place, Miss> {
    Ok(Place { start, level })
}

#[test]
fn levels_from_strict_to_loose() {
    let file = ["alpha  ", "  beta", "gamma – “x”", "alpha"];
    assert_eq!(
        find(&file, &[], &["alpha"], false, 0),
        at(3, Level::Exact),
        "exact beats a looser match before it"
    );
    assert_eq!(find(&file, &[], &["beta  "], false, 0), at(1, Level::Trim));
    assert_eq!(find(&file, &[], &["  beta   "], false, 0), at(1, Level::TrimEnd));
    assert_eq!(find(&file, &[], &["gamma - \"x\""], false, 0), at(2, Level::Unicode));
    assert_eq!(find(&file, &[], &["delta"], false, 0), Err(Miss::Lines));
}

#[test]
fn unicode_level_maps_dashes_quotes_and_spaces() {
    assert_eq!(
        Level::Unicode.key("  a\u{2014}b \u{2018}c\u{2019} \u{201c}d\u{201d}\u{00a0}e  "),
        "a-b 'c' \"d\" e"
    );
    assert!(matches!(
        Level::Unicode.key("plain"),
        std::borrow::Cow::Borrowed("plain")
    ));
}

#[test]
fn two_places_at_the_best_level_are_ambiguous() {
    let file = ["x", "y", "x", "y"];
    assert_eq!(
        find(&file, &[], &["x", "y"], false, 0),
        Err(Miss::Ambiguous(vec![0, 2]))
    );
    // After the cursor only one remains.
    assert_eq!(find(&file, &[], &["x", "y"], false, 1), at(2, Level::Exact));
    // A single exact place wins over a loose one elsewhere: not ambiguous.
    let file = ["x ", "x"];
    assert_eq!(find(&file, &[], &["x"], false, 0), at(1, Level::Exact));
    // Two loose places are ambiguous.
    let file = ["x ", "x  "];
    assert_eq!(find(&file, &[], &["x"], false, 0), Err(Miss::Ambiguous(vec![0, 1])));
}

#[test]
fn a_header_narrows_to_its_section() {
    let file = [
        "fn foo() {", //
        "    x += 1;",
        "}",
        "fn bar() {",
        "    x += 1;",
        "}",
    ];
    assert_eq!(
        find(&file, &[], &["    x += 1;"], false, 0),
        Err(Miss::Ambiguous(vec![1, 4]))
    );
    assert_eq!(
        find(&file, &["fn foo() {"], &["    x += 1;"], false, 0),
        at(1, Level::Exact)
    );
    assert_eq!(
        find(&file, &["fn bar() {"], &["    x += 1;"], false, 0),
        at(4, Level::Exact)
    );
    // Headers compare loosely too.
    assert_eq!(
        find(&file, &["fn bar()"], &["    x += 1;"], false, 0),
        Err(Miss::Header(0))
    );
    assert_eq!(
        find(&file, &["  fn bar() {  "], &["    x += 1;"], false, 0),
        at(4, Level::Exact)
    );
}

#[test]
fn nested_headers_narrow_step_by_step() {
    let file = [
        "impl A {",
        "    fn run(&self) {",
        "        go();",
        "    }",
        "}",
        "impl B {",
        "    fn run(&self) {",
        "        go();",
        "    }",
        "}",
    ];
    assert_eq!(
        find(&file, &["fn run(&self) {"], &["go();"], false, 0),
        Err(Miss::Ambiguous(vec![2, 7]))
    );
    assert_eq!(
        find(&file, &["impl B {", "fn run(&self) {"], &["go();"], false, 0),
        at(7, Level::Trim)
    );
    assert_eq!(
        find(&file, &["impl A {", "fn run(&self) {"], &["go();"], false, 0),
        at(2, Level::Trim)
    );
    assert_eq!(
        find(&file, &["impl C {", "fn run(&self) {"], &["go();"], false, 0),
        Err(Miss::Header(0))
    );
    assert_eq!(
        find(&file, &["impl A {", "fn stop() {"], &["go();"], false, 0),
        Err(Miss::Header(1))
    );
}

#[test]
fn a_header_in_two_places_is_fine_when_the_lines_fit_one() {
    let file = [
        "def __init__(self):", //
        "    self.a = 1",
        "def __init__(self):",
        "    self.b = 2",
    ];
    assert_eq!(
        find(&file, &["def __init__(self):"], &["    self.b = 2"], false, 0),
        at(3, Level::Exact)
    );
}

#[test]
fn a_flat_header_searches_to_the_end() {
    // A Markdown heading has no deeper lines: the lines are searched from it on.
    let file = ["# One", "text", "# Two", "text", "more"];
    assert_eq!(find(&file, &[], &["text"], false, 0), Err(Miss::Ambiguous(vec![1, 3])));
    assert_eq!(find(&file, &["# Two"], &["text"], false, 0), at(3, Level::Exact));
    assert_eq!(
        find(&file, &["# One"], &["text"], false, 0),
        Err(Miss::Ambiguous(vec![1, 3]))
    );
    assert_eq!(
        find(&file, &["# One"], &["text", "# Two"], false, 0),
        at(1, Level::Exact)
    );
}

#[test]
fn lines_past_the_section_are_found_from_the_header_on() {
    let file = [
        "fn a() {", //
        "    one();",
        "}",
        "",
        "fn b() {}",
    ];
    // The chunk starts at the closing brace, outside the section: the wide search finds it.
    assert_eq!(
        find(&file, &["fn a() {"], &["}", "", "fn b() {}"], false, 0),
        at(2, Level::Exact)
    );
}

#[test]
fn end_of_file_anchors_at_the_end() {
    let file = ["x", "end", "y", "end"];
    assert_eq!(find(&file, &[], &["end"], true, 0), at(3, Level::Exact));
    assert_eq!(find(&file, &[], &["x"], true, 0), Err(Miss::Lines));
    assert_eq!(
        find(&file, &[], &["end"], true, 4),
        Err(Miss::Lines),
        "the end is before the cursor"
    );
    assert_eq!(find(&file, &["y"], &["end"], true, 0), at(3, Level::Exact));
    assert_eq!(find(&file, &[], &["a", "b", "c", "d", "e"], true, 0), Err(Miss::Lines));
}

#[test]
fn only_added_lines_go_after_the_header_or_at_the_end() {
    let file = ["[package]", "name = \"x\"", "", "[dependencies]", "serde = \"1\""];
    assert_eq!(find(&file, &["[dependencies]"], &[], false, 0), at(4, Level::Exact));
    assert_eq!(find(&file, &[], &[], false, 0), at(5, Level::Exact));
    assert_eq!(find(&file, &["[dependencies]"], &[], true, 0), at(5, Level::Exact));
    assert_eq!(find(&[], &[], &[], false, 0), at(0, Level::Exact));
}

#[test]
fn the_cursor_bounds_the_search() {
    let file = ["a", "b", "c"];
    assert_eq!(find(&file, &[], &["a"], false, 1), Err(Miss::Lines));
    assert_eq!(find(&file, &["a"], &["b"], false, 1), Err(Miss::Header(0)));
    assert_eq!(find(&file, &[], &["c"], false, 2), at(2, Level::Exact));
    assert_eq!(find(&file, &[], &["a", "b", "c", "d"], false, 0), Err(Miss::Lines));
}

#[test]
fn the_header_may_be_the_first_context_line() {
    let file = ["def greet():", "    print(\"Hi\")", "def other():", "    pass"];
    let lines = ["def greet():", "    print(\"Hi\")"];
    assert_eq!(find(&file, &["def greet():"], &lines, false, 0), at(0, Level::Exact));
    // Only-`+` chunks still go below the header.
    assert_eq!(find(&file, &["def greet():"], &[], false, 0), at(1, Level::Exact));
}
