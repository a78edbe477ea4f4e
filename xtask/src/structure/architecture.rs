//! The check that docs/architecture.md and efrd's `lib.rs` describe the code as it is.
//!
//! - "## The modules of efrd": the first table of the section has one row per top-level module of efrd, its first
//!   cell the module as `` `name` ``; the `//!` doc of `efrd/src/lib.rs` has the same table with `` [`name`] ``.
//!   Efrd's modules are the `mod` declarations of `efrd/src/lib.rs` (but those for tests only); each file and folder
//!   of `efrd/src` must be code of one of them.
//! - "## Crates": in its first code block, each line that starts (unindented) with a word ending in `/` names a
//!   folder (`efrd/   the daemon`). Every workspace member must be named; a named folder must exist, and one that
//!   holds a `Cargo.toml` must be a member.
//! - "### The direction of dependencies": the layer list, in the format `layers` reads and checks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::layers::{self, is_name};
use super::tree::{Crate, Edges, Graphs, Workspace, relative};

/// The page that describes the architecture, from the workspace root.
pub const PAGE: &str = "docs/architecture.md";
/// The crate whose modules the page lists.
const DAEMON: &str = "efrd";

/// What is wrong between the page, efrd's `lib.rs` and the code, each a message that says what to do.
pub fn check(root: &Path, workspace: &Workspace, graphs: &Graphs) -> Vec<String> {
    let mut failures = Vec::new();
    let page = match std::fs::read_to_string(root.join(PAGE)) {
        Ok(page) => page,
        Err(error) => return vec![format!("cannot read {PAGE}: {error}")],
    };
    let src = format!("{DAEMON}/src/");
    let lib = format!("{src}lib.rs");
    let Some(daemon) = workspace.crates.iter().find(|krate| krate.folder() == src) else {
        return vec![format!("{lib} is missing: the page describes efrd's modules")];
    };
    let modules: BTreeSet<String> = daemon.top_modules().into_iter().collect();
    failures.extend(daemon.problems.iter().cloned());
    files_in_modules(root, workspace, &src, &modules, &mut failures);

    let Some(modules_section) = section(&page, "## The modules of efrd") else {
        failures.push(format!("{PAGE} has no section \"## The modules of efrd\""));
        return failures;
    };
    let cell = |cell: &str| cell.strip_prefix('`')?.strip_suffix('`').map(str::to_owned);
    let rows = table(&modules_section, cell, PAGE, "`name`", &mut failures);
    let missing = |name: &str| {
        format!("{PAGE}, \"The modules of efrd\": the table has no row for module `{name}`, which {lib} declares")
    };
    compare(&rows, &modules, (PAGE, &lib), &mut failures, missing);
    let lib_text = std::fs::read_to_string(root.join(&lib)).unwrap_or_default();
    let doc: Vec<(usize, &str)> = lib_text
        .lines()
        .enumerate()
        .filter_map(|(n, line)| line.strip_prefix("//!").map(|doc| (n + 1, doc.trim_start())))
        .collect();
    let cell = |cell: &str| cell.strip_prefix("[`")?.strip_suffix("`]").map(str::to_owned);
    let rows = table(&doc, cell, &lib, "[`name`]", &mut failures);
    let missing = |name: &str| format!("{lib}: the table of its `//!` doc has no row for module [`{name}`]");
    compare(&rows, &modules, (&lib, &lib), &mut failures, missing);

    crates(root, &page, workspace, &mut failures);
    let empty = Edges::new();
    let edges = graphs.get(&src).unwrap_or(&empty);
    match section(&page, "### The direction of dependencies") {
        Some(lines) => layers::check(PAGE, &lines, &modules, edges, &mut failures),
        None => failures.push(format!("{PAGE} has no section \"### The direction of dependencies\"")),
    }
    failures
}

/// Fails on each file or folder of efrd's `src` that no crate's tree reaches (a file no `mod` declares).
fn files_in_modules(
    root: &Path,
    workspace: &Workspace,
    src: &str,
    modules: &BTreeSet<String>,
    failures: &mut Vec<String>,
) {
    let Ok(entries) = std::fs::read_dir(root.join(src)) else {
        return;
    };
    let mut paths: Vec<_> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .collect();
    paths.sort();
    let in_code = |path: &Path| workspace.crates.iter().any(|krate: &Crate| krate.has_file(path));
    for path in paths {
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let rel = relative(root, &path);
        if path.is_dir() && !modules.contains(name) && !has_code(&path, &in_code) {
            failures.push(format!(
                "{rel}/ holds no module of efrd: {src}lib.rs declares no `mod {name}`; declare it or remove the folder"
            ));
        } else if path.extension().is_some_and(|e| e == "rs") && !in_code(&path) {
            failures.push(format!(
                "{rel} is code of no module: {src}lib.rs declares no `mod {name}`; declare it or remove the file"
            ));
        }
    }
}

/// Whether a file under `dir` is code of a crate.
fn has_code(dir: &Path, in_code: &dyn Fn(&Path) -> bool) -> bool {
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            has_code(&path, in_code)
        } else {
            in_code(&path)
        }
    })
}

/// The lines (numbered from 1) of the section under `heading`, up to the next heading of its level or above.
fn section<'a>(text: &'a str, heading: &str) -> Option<Vec<(usize, &'a str)>> {
    let level = heading.chars().take_while(|c| *c == '#').count();
    let mut lines = text.lines().enumerate();
    lines.find(|(_, line)| line.trim_end() == heading)?;
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in lines {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !fenced && hashes > 0 && hashes <= level && line[hashes..].starts_with(' ') {
            break;
        }
        out.push((n + 1, line));
    }
    Some(out)
}

/// The first cells of the rows of the first table in `lines` (header and separator aside), read by `cell`, with
/// their line numbers; a row whose first cell `cell` cannot read fails, saying the form it must have.
fn table(
    lines: &[(usize, &str)],
    cell: impl Fn(&str) -> Option<String>,
    file: &str,
    form: &str,
    failures: &mut Vec<String>,
) -> BTreeMap<String, usize> {
    let rows: Vec<&(usize, &str)> = lines
        .iter()
        .skip_while(|(_, line)| !line.trim_start().starts_with('|'))
        .take_while(|(_, line)| line.trim_start().starts_with('|'))
        .collect();
    if rows.is_empty() {
        failures.push(format!(
            "{file}: no table of efrd's modules (rows whose first cell is {form})"
        ));
    }
    let mut names = BTreeMap::new();
    for (n, line) in rows.into_iter().skip(2) {
        let first = line
            .trim_start()
            .trim_start_matches('|')
            .split('|')
            .next()
            .unwrap_or_default()
            .trim();
        match cell(first).filter(|name| is_name(name)) {
            Some(name) => {
                names.insert(name, *n);
            }
            None => failures.push(format!(
                "{file}:{n}: the first cell of a row of the modules table must be one module as {form}, not {first:?}"
            )),
        }
    }
    names
}

/// Fails on each module a table (in `files.0`) lacks, as `missing` words it, and each row naming a module that
/// efrd's `lib.rs` (`files.1`) does not declare.
fn compare(
    rows: &BTreeMap<String, usize>,
    modules: &BTreeSet<String>,
    (table, lib): (&str, &str),
    failures: &mut Vec<String>,
    missing: impl Fn(&str) -> String,
) {
    for module in modules.iter().filter(|module| !rows.contains_key(*module)) {
        failures.push(format!("{}: add one", missing(module)));
    }
    let mut extra: Vec<(&usize, &String)> = rows
        .iter()
        .filter(|(name, _)| !modules.contains(*name))
        .map(|(name, line)| (line, name))
        .collect();
    extra.sort();
    for (line, name) in extra {
        failures.push(format!(
            "{table}:{line}: the modules table names `{name}`, which {lib} does not declare: remove the row (or \
             declare the module)"
        ));
    }
}

/// Fails when the code block of "## Crates" misses a workspace member or names a folder that is not one.
fn crates(root: &Path, page: &str, workspace: &Workspace, failures: &mut Vec<String>) {
    let Some(section) = section(page, "## Crates") else {
        failures.push(format!("{PAGE} has no section \"## Crates\""));
        return;
    };
    let block: Vec<&(usize, &str)> = section
        .iter()
        .skip_while(|(_, line)| !line.starts_with("```"))
        .skip(1)
        .take_while(|(_, line)| !line.starts_with("```"))
        .collect();
    let mut named = BTreeMap::new();
    for (n, line) in block {
        let folder = line.split_whitespace().next().and_then(|word| word.strip_suffix('/'));
        if let (false, Some(folder)) = (line.starts_with(char::is_whitespace), folder) {
            named.insert(folder.to_owned(), *n);
        }
    }
    for member in workspace.members.iter().filter(|member| !named.contains_key(*member)) {
        failures.push(format!(
            "{PAGE}, \"Crates\": the code block misses the workspace member `{member}/`: add a line \"{member}/   \
             what it holds\""
        ));
    }
    for (folder, line) in named.iter().filter(|(folder, _)| !workspace.members.contains(folder)) {
        let dir = root.join(folder);
        if !dir.is_dir() {
            failures.push(format!(
                "{PAGE}:{line}: the Crates block names `{folder}/`, which does not exist: remove its line (or \
                 rename it to where it went)"
            ));
        } else if dir.join("Cargo.toml").is_file() {
            failures.push(format!(
                "{PAGE}:{line}: the Crates block names `{folder}/`, a crate that is not a workspace member: add it \
                 to `members` in Cargo.toml or remove its line"
            ));
        }
    }
}
