//! The structure checks on small trees: the reading of source, each kind of cycle with its places, and each kind
//! of drift between docs/architecture.md and the code.

mod source {
    use super::super::source::scan;

    fn paths(text: &str) -> Vec<(String, Option<String>, usize)> {
        scan(text)
            .paths
            .into_iter()
            .map(|p| (p.segments.join("::"), p.binding, p.line))
            .collect()
    }

    #[test]
    fn comments_strings_chars_and_lifetimes_name_nothing() {
        let text = "// crate::a\n/* crate::b /* nested */ crate::c */\nlet s = \"crate::d\";\nlet r = r#\"crate::e\"#;\n\
                    let c = '\"'; fn f<'a>(x: &'a str) {}\nlet b = b\"crate::f\"; crate::g::h();\n";
        assert_eq!(paths(text), [("crate::g::h".to_owned(), None, 6)]);
    }

    #[test]
    fn use_trees_over_several_lines() {
        let text = "use super::{\n    a,\n    b::{self, C as D},\n    e::*,\n};\nuse crate::turn::{tools::X, env};\n";
        let got = paths(text);
        let want = [
            ("super::a", Some("a"), 2),
            ("super::b", Some("b"), 3),
            ("super::b::C", Some("D"), 3),
            ("super::e", None, 4),
            ("crate::turn::tools::X", Some("X"), 6),
            ("crate::turn::env", Some("env"), 6),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(p, b, l)| ((*p).to_owned(), b.map(str::to_owned), *l))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn mods_inline_mods_and_test_items() {
        let text = "#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests;\npub mod a;\n#[cfg(test)]\nfn helper() { \
                    crate::t::x(); }\nfn real() { crate::r::y(); }\n#[cfg(test)]\nmod inner {\n    use super::super::q;\n}\n";
        let scan = scan(text);
        let mods: Vec<_> = scan
            .mods
            .iter()
            .map(|m| (m.name.as_str(), m.path.as_deref(), m.test))
            .collect();
        assert_eq!(mods, [("tests", Some("x_tests.rs"), true), ("a", None, false)]);
        assert_eq!(scan.inline_mods, [(vec!["inner".to_owned()], true)]);
        let tests: Vec<_> = scan
            .paths
            .iter()
            .map(|p| (p.segments.join("::"), p.test, p.inline.clone()))
            .collect();
        assert_eq!(
            tests,
            [
                ("crate::t::x".to_owned(), true, vec![]),
                ("crate::r::y".to_owned(), false, vec![]),
                ("super::super::q".to_owned(), true, vec!["inner".to_owned()]),
            ]
        );
    }

    #[test]
    fn a_test_field_or_variant_ends_with_its_type_or_comma() {
        let text = "struct S {\n    #[cfg(test)]\n    f: crate::t::T\n}\nenum E {\n    #[cfg(test)]\n    A(crate::t::U),\n    \
                    B(crate::r::V),\n}\nfn f() { crate::r::w(); }\n";
        let tests: Vec<_> = scan(text)
            .paths
            .iter()
            .map(|p| (p.segments.join("::"), p.test))
            .collect();
        let want = [
            ("crate::t::T", true),
            ("crate::t::U", true),
            ("crate::r::V", false),
            ("crate::r::w", false),
        ];
        assert_eq!(tests, want.map(|(p, t)| (p.to_owned(), t)));
    }

    #[test]
    fn visibility_and_other_crates_are_no_paths() {
        assert_eq!(
            paths("pub(crate) fn f() {} pub(super) struct S; let x = mycrate::a; <Self as super::T>::f();"),
            [("super::T".to_owned(), None, 1)]
        );
    }
}

mod cycles {
    use super::*;

    #[test]
    fn a_cycle_inside_a_folder_through_super() {
        let dir = krate(&[
            ("lib.rs", "mod f;\n"),
            ("f/mod.rs", "mod a;\nmod b;\n"),
            ("f/a.rs", "fn g() { super::b::h(); }\n"),
            ("f/b.rs", "// super::a in a comment\n\nuse super::a;\n"),
        ]);
        let report = cycles(&dir);
        assert!(report.contains("lib-a/src/f/: cycle a ↔ b"), "{report}");
        assert!(report.contains("a → b at lib-a/src/f/a.rs:1"), "{report}");
        assert!(report.contains("b → a at lib-a/src/f/b.rs:3"), "{report}");
    }

    #[test]
    fn a_cycle_through_grouped_use_trees_over_lines() {
        let dir = krate(&[
            ("lib.rs", "pub mod g;\n"),
            ("g/mod.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
            ("g/a.rs", "use crate::g::{\n    b::{self, Thing},\n};\npub struct X;\n"),
            ("g/b.rs", "pub struct Thing;\nuse super::{\n    c,\n};\n"),
            ("g/c.rs", "use crate::g::a::X;\n"),
        ]);
        let report = cycles(&dir);
        assert!(report.contains("lib-a/src/g/: cycle a ↔ b ↔ c"), "{report}");
        assert!(report.contains("a → b at lib-a/src/g/a.rs:2"), "{report}");
        assert!(report.contains("b → c at lib-a/src/g/b.rs:3"), "{report}");
        assert!(report.contains("c → a at lib-a/src/g/c.rs:1"), "{report}");
    }

    #[test]
    fn a_cycle_between_top_level_modules_through_crate_paths() {
        let dir = krate(&[
            ("lib.rs", "mod p;\nmod q;\nmod r;\n"),
            ("p.rs", "fn f() { crate::q::g(); }\nuse crate::r::S;\n"),
            ("q/mod.rs", "mod deep;\n"),
            ("q/deep.rs", "\n\nfn g() { let _ = crate::p::f; }\n"),
            ("r.rs", "pub struct S;\n"),
        ]);
        let report = cycles(&dir);
        assert!(report.contains("lib-a/src/: cycle p ↔ q"), "{report}");
        assert!(report.contains("p → q at lib-a/src/p.rs:1"), "{report}");
        assert!(report.contains("q → p at lib-a/src/q/deep.rs:3"), "{report}");
        assert!(!report.contains("→ r"), "{report}");
    }

    #[test]
    fn super_means_the_parent_of_mod_rs_and_of_a_subfolder() {
        let dir = krate(&[
            ("lib.rs", "mod h;\nmod p;\n"),
            ("p.rs", "use crate::h::b::T;\n"),
            ("h/mod.rs", "mod a;\npub mod b;\nmod sub;\nuse super::p;\n"),
            ("h/a.rs", "pub struct A;\n"),
            ("h/b.rs", "pub struct T;\nuse super::sub::y::Y;\n"),
            ("h/sub/mod.rs", "mod x;\npub mod y;\n"),
            ("h/sub/x.rs", "pub struct X;\n"),
            (
                "h/sub/y.rs",
                "pub struct Y;\nuse super::x::X;\nuse super::super::a::A;\nuse super::super::b::T;\n",
            ),
        ]);
        let graphs = graphs(&dir);
        let edge = |folder: &str, from: &str, to: &str| graphs[folder][from][to].to_string();
        assert_eq!(edge("lib-a/src/", "h", "p"), "lib-a/src/h/mod.rs:4");
        assert_eq!(edge("lib-a/src/h/", "sub", "a"), "lib-a/src/h/sub/y.rs:3");
        assert_eq!(edge("lib-a/src/h/sub/", "y", "x"), "lib-a/src/h/sub/y.rs:2");
        let report = cycles(&dir);
        assert!(report.contains("lib-a/src/: cycle h ↔ p"), "{report}");
        assert!(report.contains("lib-a/src/h/: cycle b ↔ sub"), "{report}");
        assert!(report.contains("sub → b at lib-a/src/h/sub/y.rs:4"), "{report}");
    }

    #[test]
    fn a_name_from_mod_rs_is_its_definer_s_or_no_edge() {
        let dir = krate(&[
            ("lib.rs", "mod f;\n"),
            (
                "f/mod.rs",
                "mod a;\nmod b;\npub use b::Thing;\nuse a::Other as Renamed;\npub struct Shared;\n",
            ),
            ("f/a.rs", "use super::{Shared, Thing};\npub struct Other;\n"),
            (
                "f/b.rs",
                "pub struct Thing;\nfn f() -> super::Shared { super::Shared }\n",
            ),
        ]);
        let graphs = graphs(&dir);
        assert_eq!(graphs["lib-a/src/f/"]["a"]["b"].to_string(), "lib-a/src/f/a.rs:1");
        assert!(!graphs["lib-a/src/f/"].contains_key("b"), "{graphs:?}");
        std::fs::write(dir.path().join("lib-a/src/f/b.rs"), "use super::Renamed;\n").unwrap();
        let report = cycles(&dir);
        assert!(report.contains("b → a at lib-a/src/f/b.rs:1"), "{report}");
    }

    #[test]
    fn code_for_tests_only_makes_no_edge() {
        let dir = krate(&[
            ("lib.rs", "mod f;\n"),
            ("f/mod.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod testing;\n"),
            (
                "f/a.rs",
                "use super::b::B;\n#[cfg(test)]\nmod tests {\n    use super::super::testing;\n}\n",
            ),
            (
                "f/b.rs",
                "pub struct B;\n#[cfg(test)]\n#[path = \"b_tests.rs\"]\nmod tests;\n#[cfg(test)]\nfn helper() { \
                 crate::f::a::x(); }\n",
            ),
            ("f/b_tests.rs", "use super::super::a;\n"),
            ("f/testing.rs", "use super::a;\n"),
        ]);
        assert_eq!(cycles(&dir), "");
        assert_eq!(graphs(&dir)["lib-a/src/f/"].keys().collect::<Vec<_>>(), ["a"]);
    }

    #[test]
    fn a_bin_crate_and_a_path_module_are_read() {
        let dir = krate(&[("lib.rs", "#[path = \"other_name.rs\"]\nmod p;\n")]);
        std::fs::write(dir.path().join("lib-a/src/other_name.rs"), "").unwrap();
        std::fs::write(dir.path().join("lib-a/src/main.rs"), "mod m;\nmod n;\n").unwrap();
        std::fs::write(dir.path().join("lib-a/src/m.rs"), "use crate::n::N;\n").unwrap();
        std::fs::write(dir.path().join("lib-a/src/n.rs"), "pub struct N;\nuse super::m;\n").unwrap();
        let workspace = Workspace::load(dir.path()).unwrap();
        let paths: Vec<Vec<String>> = workspace.crates.iter().map(Crate::module_paths).collect();
        assert_eq!(paths, [vec!["", "p"], vec!["", "m", "n"]]);
        let report = cycles(&dir);
        assert!(
            report.contains("lib-a/src/ (lib-a/src/main.rs): cycle m ↔ n"),
            "{report}"
        );
    }
}

mod drift {
    use super::*;

    #[test]
    fn a_layered_tree_passes() {
        let dir = efrd(&[]);
        check(dir.path()).unwrap();
    }

    #[test]
    fn a_cycle_between_efrd_s_modules_fails() {
        let dir = efrd(&[("efrd/src/config.rs", "pub struct Config;\nuse crate::turn::Shared;\n")]);
        let error = failure(&dir);
        assert!(error.contains("efrd/src/: cycle config ↔ turn"), "{error}");
        assert!(error.contains("config → turn at efrd/src/config.rs:2"), "{error}");
        assert!(error.contains("turn → config at efrd/src/turn/a.rs:2"), "{error}");
    }

    #[test]
    fn a_module_missing_from_the_tables_fails() {
        let lib = LIB.replace("pub mod turn;", "pub mod turn;\npub mod undo;");
        let dir = efrd(&[("efrd/src/lib.rs", &lib), ("efrd/src/undo.rs", "")]);
        let error = failure(&dir);
        assert!(
            error.contains("\"The modules of efrd\": the table has no row for module `undo`, which efrd/src/lib.rs"),
            "{error}"
        );
        assert!(
            error.contains("efrd/src/lib.rs: the table of its `//!` doc has no row for module [`undo`]"),
            "{error}"
        );
        assert!(
            error.contains("module `undo` is in no layer: add \"`undo` — on none\""),
            "{error}"
        );
    }

    #[test]
    fn a_row_naming_a_module_that_is_gone_fails() {
        let page = PAGE_TEXT.replace("| `turn` | the turn |", "| `turn` | the turn |\n| `git` | gone |");
        let lib = LIB.replace(
            "//! | [`turn`] | the turn |",
            "//! | [`turn`] | the turn |\n//! | [`git`] | gone |",
        );
        let dir = efrd(&[("docs/architecture.md", &page), ("efrd/src/lib.rs", &lib)]);
        let error = failure(&dir);
        let line = 1 + page.lines().position(|l| l.contains("`git`")).unwrap();
        assert!(
            error.contains(&format!(
                "docs/architecture.md:{line}: the modules table names `git`, which efrd/src/lib.rs does not declare"
            )),
            "{error}"
        );
        assert!(
            error.contains("efrd/src/lib.rs:7: the modules table names `git`"),
            "{error}"
        );
    }

    #[test]
    fn a_file_of_no_module_fails() {
        let dir = efrd(&[("efrd/src/stray.rs", ""), ("efrd/src/old/mod.rs", "")]);
        let error = failure(&dir);
        assert!(error.contains("efrd/src/stray.rs is code of no module"), "{error}");
        assert!(error.contains("efrd/src/old/ holds no module of efrd"), "{error}");
    }

    #[test]
    fn a_layer_item_missing_an_edge_fails() {
        let page = PAGE_TEXT.replace("2. `turn` — on\n   `config`.", "2. `turn` — on none.");
        let dir = efrd(&[("docs/architecture.md", &page)]);
        let error = failure(&dir);
        assert!(
            error.contains("`turn` depends on `config` (efrd/src/turn/a.rs:2) but its layer item does not say so"),
            "{error}"
        );
    }

    #[test]
    fn a_layer_item_naming_an_edge_that_is_not_there_fails() {
        let page = PAGE_TEXT.replace("1. `config` — on none.", "0. `config` — on `turn`.");
        let dir = efrd(&[("docs/architecture.md", &page)]);
        let error = failure(&dir);
        assert!(error.contains("this one should be 1"), "{error}");
        assert!(
            error.contains("says `config` is on `turn`, but no code of it names `turn`"),
            "{error}"
        );
        assert!(error.contains("`config` (layer 1) is on `turn` (layer 2)"), "{error}");
    }

    #[test]
    fn a_module_at_the_layer_of_what_it_depends_on_fails() {
        let page = PAGE_TEXT.replace("1. `config` — on none.", "1. `config` — on none; `turn` — on `config`.");
        let page = page.replace("2. `turn` — on\n   `config`.", "2. `git` — on none.");
        let dir = efrd(&[("docs/architecture.md", &page)]);
        let error = failure(&dir);
        assert!(error.contains("`turn` (layer 1) is on `config` (layer 1)"), "{error}");
        assert!(error.contains("names `git`, which is no module of efrd"), "{error}");
    }

    #[test]
    fn a_layer_item_in_another_form_fails_saying_the_form() {
        let page = PAGE_TEXT.replace("2. `turn` — on\n   `config`.", "2. `turn` depends on `config`.");
        let dir = efrd(&[("docs/architecture.md", &page)]);
        let error = failure(&dir);
        assert!(error.contains("no em dash (—)"), "{error}");
        assert!(
            error.contains("an item reads \"N. `a`, `b` — on `x` and `y`; `c` — on none.\""),
            "{error}"
        );
        assert!(!error.contains("is in no layer"), "{error}");
    }

    #[test]
    fn the_crates_block_missing_a_member_or_naming_no_folder_fails() {
        let page = PAGE_TEXT.replace("efr-git/     git\n", "gone/        moved away\n");
        let dir = efrd(&[("docs/architecture.md", &page)]);
        let error = failure(&dir);
        assert!(
            error.contains("the code block misses the workspace member `efr-git/`"),
            "{error}"
        );
        assert!(error.contains("names `gone/`, which does not exist"), "{error}");
    }

    #[test]
    fn the_clauses_of_a_layer_item() {
        let clauses = clauses("`a`, `b` and `c` — on none; `d` — on `a`, and `b`. Prose: `x` — on y.").unwrap();
        let names = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            clauses,
            [
                Clause {
                    modules: names(&["a", "b", "c"]),
                    on: vec![],
                },
                Clause {
                    modules: names(&["d"]),
                    on: names(&["a", "b"]),
                },
            ]
        );
        assert!(clauses_err("`a` — none."));
        assert!(clauses_err("`a` — on."));
        assert!(clauses_err("`a` — on `b` or `c`."));
        assert!(clauses_err("`a` - on none."));
    }

    fn clauses_err(text: &str) -> bool {
        clauses(text).is_err()
    }
}

use std::path::Path;

use super::check;
use super::layers::{Clause, clauses};
use super::tree::{Crate, Graphs, Workspace};

/// A workspace of one member, `lib-a`, with these files under its `src`.
fn krate(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "Cargo.toml", "[workspace]\nmembers = [\"lib-a\"]\n");
    for (path, text) in files {
        write(dir.path(), &format!("lib-a/src/{path}"), text);
    }
    dir
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn graphs(dir: &tempfile::TempDir) -> Graphs {
    Workspace::load(dir.path()).unwrap().graphs(false)
}

fn cycles(dir: &tempfile::TempDir) -> String {
    super::cycles::report(&graphs(dir))
}

const LIB: &str = "//! efrd.\n//!\n//! | module | owns |\n//! |---|---|\n//! | [`config`] | settings |\n//! | [`turn`] | the \
                   turn |\n\npub mod config;\npub mod turn;\n";

const PAGE_TEXT: &str = "# arch\n\n## Crates\n\n```\nCargo.toml   workspace\nefrd/        the daemon\nefr-git/     git\n\
                         \x20            more words/ here\ndocs/        pages\n```\n\n## The modules of efrd\n\n| module | \
                         owns |\n|---|---|\n| `config` | settings |\n| `turn` | the turn |\n\n### The direction of \
                         dependencies\n\nFrom the bottom:\n\n1. `config` — on none. Settings.\n2. `turn` — on\n   \
                         `config`. The loop.\n\n## Next\n\n1. `nothing` here.\n";

/// A workspace of efrd (config below turn, a folder with a subfolder, a test file) and efr-git, its page in step;
/// `changes` replaces or adds files.
fn efrd(changes: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\n    \"efrd\",\n    \"efr-git\",\n]\n",
        ),
        ("efr-git/Cargo.toml", ""),
        ("efr-git/src/lib.rs", "pub fn run() {}\n"),
        ("efrd/Cargo.toml", ""),
        ("efrd/src/lib.rs", LIB),
        ("efrd/src/main.rs", "fn main() {}\n"),
        ("efrd/src/config.rs", "pub struct Config;\n"),
        (
            "efrd/src/turn/mod.rs",
            "mod a;\nmod b;\nmod sub;\npub use b::Thing;\nuse crate::config::Config;\npub struct Shared;\n",
        ),
        (
            "efrd/src/turn/a.rs",
            "use super::{Shared, Thing};\nuse crate::config::Config;\n",
        ),
        (
            "efrd/src/turn/b.rs",
            "pub struct Thing;\n#[cfg(test)]\n#[path = \"b_tests.rs\"]\nmod tests;\n",
        ),
        ("efrd/src/turn/b_tests.rs", "use super::super::a;\n"),
        ("efrd/src/turn/sub/mod.rs", "mod x;\nmod y;\n"),
        ("efrd/src/turn/sub/x.rs", "use super::super::b::Thing;\n"),
        ("efrd/src/turn/sub/y.rs", "use super::x;\n"),
        ("docs/architecture.md", PAGE_TEXT),
    ];
    for (path, text) in files.iter().chain(changes) {
        write(dir.path(), path, text);
    }
    dir
}

fn failure(dir: &tempfile::TempDir) -> String {
    format!("{:#}", check(dir.path()).unwrap_err())
}
