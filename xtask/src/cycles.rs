//! The check that efrd's top-level modules form no cycle (docs/architecture.md, "The modules of efrd"): a lower
//! layer never imports a higher one, so each module can be read, tested and changed with only the ones below it.
//!
//! A module is a folder or a file directly under `efrd/src` (not `lib.rs` or `main.rs`). Module `a` depends on `b`
//! when a line of `a`'s code (comments aside, tests included) names `crate::b`. The check finds the strongly
//! connected components of that graph (Tarjan) and fails on any with more than one module, naming each edge of it
//! with the first place that makes it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// One module's dependencies: the module it names → the first place (file:line) that names it.
type Edges = BTreeMap<String, BTreeMap<String, String>>;

/// Fails when efrd's top-level modules form a cycle.
pub fn check(root: &Path) -> Result<()> {
    let src = root.join("efrd/src");
    let edges = module_edges(&src)?;
    let cycles = cycles(&edges);
    if cycles.is_empty() {
        return Ok(());
    }
    let mut message =
        String::from("efrd's top-level modules form a cycle (a lower layer must not import a higher one):");
    for cycle in &cycles {
        message.push_str(&format!("\n  cycle {}:", cycle.join(" ↔ ")));
        for from in cycle {
            for (to, place) in &edges[from] {
                if cycle.contains(to) {
                    message.push_str(&format!("\n    {from} → {to} at {place}"));
                }
            }
        }
    }
    bail!("{message}")
}

/// The dependencies between the top-level modules under `src`.
fn module_edges(src: &Path) -> Result<Edges> {
    let mut modules = Vec::new();
    for entry in std::fs::read_dir(src).with_context(|| format!("cannot read {}", src.display()))? {
        let path = entry?.path();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        let is_module =
            path.is_dir() || (path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main");
        if is_module {
            modules.push((name, path));
        }
    }
    let names: Vec<String> = modules.iter().map(|(name, _)| name.clone()).collect();
    let mut edges = Edges::new();
    for (name, path) in &modules {
        let targets = edges.entry(name.clone()).or_default();
        for file in rust_files(path)? {
            let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
            for (number, line) in text.lines().enumerate() {
                for target in named_modules(line) {
                    if target != name && names.iter().any(|n| n == target) {
                        let place = format!("{}:{}", file.strip_prefix(src).unwrap_or(&file).display(), number + 1);
                        targets.entry(target.to_owned()).or_insert(place);
                    }
                }
            }
        }
    }
    Ok(edges)
}

/// The `.rs` files at or under `path`.
fn rust_files(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).with_context(|| format!("cannot read {}", path.display()))? {
        let entry = entry?.path();
        if entry.is_dir() {
            files.extend(rust_files(&entry)?);
        } else if entry.extension().is_some_and(|e| e == "rs") {
            files.push(entry);
        }
    }
    files.sort();
    Ok(files)
}

/// The top-level modules a line of code names as `crate::name`, comments aside.
fn named_modules(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or_default();
    code.match_indices("crate::")
        .filter(|(at, _)| {
            // `efr_crate::x` or `mycrate::x` is not this crate.
            !code[..*at].ends_with(|c: char| c.is_alphanumeric() || c == '_')
        })
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The strongly connected components with more than one module, each sorted, in a stable order (Tarjan).
fn cycles(edges: &Edges) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a Edges,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(state: &mut State<'a>, node: &'a str) {
        let index = state.index.len();
        state.index.insert(node, index);
        state.low.insert(node, index);
        state.stack.push(node);
        let edges = state.edges;
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            let next = next.as_str();
            if !state.index.contains_key(next) {
                visit(state, next);
                let low = state.low[node].min(state.low[next]);
                state.low.insert(node, low);
            } else if state.stack.contains(&next) {
                let low = state.low[node].min(state.index[next]);
                state.low.insert(node, low);
            }
        }
        if state.low[node] == state.index[node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                component.push(member.to_owned());
                if member == node {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                state.found.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in edges.keys() {
        if !state.index.contains_key(node.as_str()) {
            visit(&mut state, node);
        }
    }
    state.found.sort();
    state.found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join("efrd/src").join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_layered_tree_passes() {
        let dir = tree(&[
            ("lib.rs", "pub mod a; pub mod b;"),
            ("a/mod.rs", "use crate::b::Thing;\n"),
            (
                "b.rs",
                "// crate::a in a comment is no dependency\nuse efr_crate::a::X;\n",
            ),
        ]);
        check(dir.path()).unwrap();
    }

    #[test]
    fn a_cycle_is_named_with_the_places_that_make_it() {
        let dir = tree(&[
            ("lib.rs", ""),
            ("a/mod.rs", "use crate::b::Thing;\n"),
            ("a/deep.rs", "\n\nfn f() { crate::c::g(); }\n"),
            ("b.rs", "pub struct Thing;\n"),
            ("c/mod.rs", "fn g() { let _ = crate::a::deep::f; }\n"),
        ]);
        let error = check(dir.path()).unwrap_err().to_string();
        assert!(error.contains("cycle a ↔ c"), "{error}");
        assert!(error.contains("a → c at a/deep.rs:3"), "{error}");
        assert!(error.contains("c → a at c/mod.rs:1"), "{error}");
        assert!(!error.contains("→ b"), "{error}");
    }

    #[test]
    fn the_named_modules_of_a_line() {
        assert_eq!(
            named_modules("use crate::turn::{a, b}; crate::policy::x(); // crate::store"),
            ["turn", "policy"]
        );
        assert_eq!(named_modules("let x = mycrate::turn::y;"), Vec::<&str>::new());
    }
}
