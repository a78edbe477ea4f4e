//! The layer list of docs/architecture.md ("The direction of dependencies"): read, then compared with the edges
//! between efrd's top-level modules.
//!
//! The list is numbered, layer 1 at the bottom. The head of each item, up to its first period outside backticks,
//! says which modules the layer holds and what each depends on; prose may follow the period:
//!
//! ```text
//! 1. `config`, `store` — on none. Free prose.
//! 2. `model` — on `config`; `listen` — on `config`.
//! 3. `turn` — on `config`, `model` and `store`.
//! ```
//!
//! A head is clauses separated by `;`; a clause is modules, an em dash (—), the word `on`, then `none` or modules;
//! modules are backticked names separated by `,` or `and`. An item may go on over indented lines. Each module of
//! efrd is in exactly one item; the modules after `on` are exactly those its code names (the edges of the cycle
//! check, tests aside), and each is in a lower item. Items are numbered 1, 2, 3… in order.

use std::collections::{BTreeMap, BTreeSet};

use super::tree::Edges;

/// Whether `name` can be a module's name.
pub fn is_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One clause of a layer item's head: modules and what each of them depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    /// The modules the clause is about.
    pub modules: Vec<String>,
    /// What each of them depends on; empty for `none`.
    pub on: Vec<String>,
}

/// The format of a layer item, for the messages that find one wrong.
const ITEM_FORMAT: &str = "an item reads \"N. `a`, `b` — on `x` and `y`; `c` — on none.\", prose after the period";

/// The clauses of a layer item's head (its text up to the first period outside backticks).
pub fn clauses(text: &str) -> Result<Vec<Clause>, String> {
    let mut ticks = 0;
    let end = text
        .char_indices()
        .find(|(_, c)| {
            ticks += usize::from(*c == '`');
            *c == '.' && ticks % 2 == 0
        })
        .map_or(text.len(), |(at, _)| at);
    let head = &text[..end];
    let mut clauses = Vec::new();
    for clause in head.split(';') {
        let (modules, on) = clause
            .split_once('—')
            .ok_or_else(|| format!("no em dash (—) in {clause:?}"))?;
        let modules = names(modules)?;
        let on = on.trim_start();
        let on = on
            .strip_prefix("on")
            .filter(|rest| rest.starts_with(char::is_whitespace))
            .ok_or_else(|| format!("\"on\" must follow the em dash in {clause:?}"))?;
        let none = on.trim() == "none";
        let on = if none { Vec::new() } else { names(on)? };
        if modules.is_empty() || (on.is_empty() && !none) {
            return Err(format!(
                "a clause needs modules before the em dash, and `none` or modules after `on`: {clause:?}"
            ));
        }
        clauses.push(Clause { modules, on });
    }
    Ok(clauses)
}

/// The backticked names of `text`, which holds nothing else but `,` and `and`.
fn names(text: &str) -> Result<Vec<String>, String> {
    let parts: Vec<&str> = text.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return Err(format!("a backtick is not closed in {text:?}"));
    }
    let mut names = Vec::new();
    for (index, part) in parts.iter().enumerate() {
        if index % 2 == 1 {
            if !is_name(part) {
                return Err(format!("`{part}` is not a module's name"));
            }
            names.push((*part).to_owned());
        } else if !part
            .split(|c: char| c == ',' || c.is_whitespace())
            .all(|w| w.is_empty() || w == "and")
        {
            return Err(format!(
                "{:?} between the names (only `,` and `and` may be)",
                part.trim()
            ));
        }
    }
    Ok(names)
}

/// The numbered items of `lines` with their numbers and first lines, an item's indented lines joined to it.
fn items(lines: &[(usize, &str)]) -> Vec<(usize, usize, String)> {
    let mut items: Vec<(usize, usize, String)> = Vec::new();
    let mut open = false;
    for (n, line) in lines {
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        if let (true, Some(rest)) = (digits > 0, line[digits..].strip_prefix(". ")) {
            items.push((line[..digits].parse().unwrap_or(0), *n, rest.to_owned()));
            open = true;
        } else if let (true, Some(item), true) = (open, items.last_mut(), line.starts_with(char::is_whitespace)) {
            if line.trim().is_empty() {
                open = false;
            } else {
                item.2.push(' ');
                item.2.push_str(line.trim());
            }
        } else {
            open = false;
        }
    }
    items
}

/// Fails when the layer list misses a module, names one the code lacks, misses or invents a dependency, or puts a
/// module at or below something it depends on.
pub fn check(
    page: &str,
    lines: &[(usize, &str)],
    modules: &BTreeSet<String>,
    edges: &Edges,
    failures: &mut Vec<String>,
) {
    let items = items(lines);
    if items.is_empty() {
        failures.push(format!(
            "{page}, \"The direction of dependencies\": no numbered list of layers; {ITEM_FORMAT}"
        ));
        return;
    }
    // module → (layer, line of its item, what the page says it depends on)
    let mut listed: BTreeMap<String, (usize, usize, Vec<String>)> = BTreeMap::new();
    let mut unread = false;
    for (index, (number, line, text)) in items.iter().enumerate() {
        if *number != index + 1 {
            failures.push(format!(
                "{page}:{line}: layer items are numbered 1, 2, 3…: this one should be {}",
                index + 1
            ));
        }
        let clauses = match clauses(text) {
            Ok(clauses) => clauses,
            Err(error) => {
                failures.push(format!("{page}:{line}: {error}; {ITEM_FORMAT}"));
                unread = true;
                continue;
            }
        };
        for clause in clauses {
            for module in clause.modules {
                if let Some((_, first, _)) = listed.get(&module) {
                    failures.push(format!(
                        "{page}:{line}: `{module}` is already in the layer of line {first}"
                    ));
                    continue;
                }
                listed.insert(module, (index + 1, *line, clause.on.clone()));
            }
        }
    }
    // A module in an item that cannot be read is not missing: the item's own failure says what to fix.
    for module in modules.iter().filter(|module| !unread && !listed.contains_key(*module)) {
        let on: Vec<String> = edges
            .get(module)
            .into_iter()
            .flat_map(|to| to.keys())
            .map(|m| format!("`{m}`"))
            .collect();
        let on = if on.is_empty() {
            "none".to_owned()
        } else {
            on.join(", ")
        };
        failures.push(format!(
            "{page}, \"The direction of dependencies\": module `{module}` is in no layer: add \"`{module}` — on {on}\" \
             to an item above all of those"
        ));
    }
    let none = BTreeMap::new();
    for (module, (layer, line, on)) in &listed {
        if !modules.contains(module) {
            failures.push(format!(
                "{page}:{line}: the layer list names `{module}`, which is no module of efrd: remove it"
            ));
            continue;
        }
        let actual = edges.get(module).unwrap_or(&none);
        for (to, place) in actual.iter().filter(|(to, _)| !on.contains(*to)) {
            failures.push(format!(
                "{page}:{line}: `{module}` depends on `{to}` ({place}) but its layer item does not say so: add `{to}` \
                 to what `{module}` is on (or remove the dependency)"
            ));
        }
        for to in on.iter().filter(|to| !actual.contains_key(*to)) {
            let why = if modules.contains(to) {
                "no code of it names"
            } else {
                "efrd has no module"
            };
            failures.push(format!(
                "{page}:{line}: the layer list says `{module}` is on `{to}`, but {why} `{to}`: remove `{to}` from its \
                 list"
            ));
        }
        for to in actual.keys().chain(on).collect::<BTreeSet<_>>() {
            if let Some((below, ..)) = listed.get(to).filter(|(below, ..)| below >= layer) {
                failures.push(format!(
                    "{page}:{line}: `{module}` (layer {layer}) is on `{to}` (layer {below}): a module depends only on \
                     lower layers; move `{module}` up or `{to}` down"
                ));
            }
        }
    }
}
