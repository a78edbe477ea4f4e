//! The module trees of the workspace's crates, and the dependencies between the modules of each folder.
//!
//! A crate's tree is read from its root file (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`) through its `mod`
//! declarations, `#[path]` included, so every file knows its module path: `config/parse_tests.rs` (declared
//! `#[path = "parse_tests.rs"] mod tests;` in `config/parse.rs`) is `config::parse::tests`, part of `parse`.
//!
//! Each path the code names (see `source`) is resolved to the module it reaches: `crate::` from the root, `super::`
//! from the parent of the module the code is in (inline modules such as `mod tests { … }` count), `self::` from that
//! module, and a bare first segment of a `use` from the module itself (a child it declares, or a name it imported).
//! A name that a module imports (`use child::Name;` or `pub use child::Name;` in a `mod.rs`) is followed to what it
//! names, so a child that imports `super::Name` depends on the sibling that defines `Name`, not on its parent.
//!
//! A path from module `a::b::x` to `a::c::y` is an edge `b → c` in folder `a`: the first modules of the two paths
//! below the deepest module they share. A path to an ancestor (`super::Thing` defined in `mod.rs`, `crate::Thing`
//! from `lib.rs`) is no edge: a folder's own `mod.rs` (or `lib.rs`) is no node of its graph. It declares and
//! re-exports the children, so counting it would make a cycle of every child that uses a shared type or helper of
//! the folder; the code it holds is the folder's face, read with the folder. A glob (`use super::*`) names no
//! module either: what it brings in is unknown without name resolution, and a glob of a parent is mostly the
//! parent's own items, as in tests.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::source::{self, Scan};

/// Where code names a module: a workspace-relative file and a line. Places order by file, then line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    /// The file, relative to the workspace root.
    pub file: String,
    /// The line, from 1.
    pub line: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One folder's graph: a module → the modules it names → the first place that names each.
pub type Edges = BTreeMap<String, BTreeMap<String, Place>>;

/// Every folder's graph, by folder (relative to the workspace root, ending in `/`).
pub type Graphs = BTreeMap<String, Edges>;

/// A module of a crate's tree.
#[derive(Debug, Clone)]
struct Module {
    /// The folder its children are in, as reported (`efrd/src/turn/`); for an inline module, its file and name.
    folder: String,
    /// Whether it is compiled for tests only.
    test: bool,
}

/// A path named by code of a module.
#[derive(Debug, Clone)]
struct Reference {
    from: Vec<String>,
    segments: Vec<String>,
    place: Place,
    test: bool,
}

/// One crate's module tree and the paths its code names.
#[derive(Debug, Default)]
pub struct Crate {
    modules: BTreeMap<Vec<String>, Module>,
    /// The names each module imports (`use`, not for tests only) → the path as written there.
    aliases: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
    references: Vec<Reference>,
    /// The files read, the root's included.
    files: Vec<PathBuf>,
    /// What could not be read, such as a declared module without a file.
    pub problems: Vec<String>,
}

/// The relative path of `path` under `root`, with `/`.
pub fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}

impl Crate {
    /// Reads the tree of the crate whose root file is `file`; `folder` is how its root folder is reported.
    pub fn load(root: &Path, file: &Path, folder: String) -> Crate {
        let mut krate = Crate::default();
        let children = file.parent().map(Path::to_path_buf).unwrap_or_default();
        krate.modules.insert(Vec::new(), Module { folder, test: false });
        krate.load_file(root, file, &[], &children, false);
        krate
    }

    /// Reads `file`, the code of module `path` whose declared children are in `children`.
    fn load_file(&mut self, root: &Path, file: &Path, path: &[String], children: &Path, test: bool) {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(error) => {
                self.problems
                    .push(format!("cannot read {}: {error}", relative(root, file)));
                return;
            }
        };
        self.files.push(file.to_path_buf());
        let scan: Scan = source::scan(&text);
        let test = test || scan.test;
        let rel = relative(root, file);
        for (inline, inline_test) in &scan.inline_mods {
            let folder = format!("{rel} (mod {})", inline.join("::"));
            let test = test || *inline_test;
            self.modules.insert(join(path, inline), Module { folder, test });
        }
        for reference in scan.paths {
            let from = join(path, &reference.inline);
            let test = test || reference.test;
            if let (true, false, Some(binding)) = (reference.used, test, &reference.binding) {
                let aliases = self.aliases.entry(from.clone()).or_default();
                aliases.insert(binding.clone(), reference.segments.clone());
            }
            let place = Place {
                file: rel.clone(),
                line: reference.line,
            };
            self.references.push(Reference {
                from,
                segments: reference.segments,
                place,
                test,
            });
        }
        for declared in scan.mods {
            let module = join(&join(path, &declared.inline), std::slice::from_ref(&declared.name));
            let base = declared
                .inline
                .iter()
                .fold(children.to_path_buf(), |dir, name| dir.join(name));
            let found = match &declared.path {
                Some(attribute) if declared.inline.is_empty() => {
                    let dir = file.parent().unwrap_or(Path::new(""));
                    Some(dir.join(attribute))
                }
                Some(attribute) => Some(base.join(attribute)),
                None => [
                    base.join(format!("{}.rs", declared.name)),
                    base.join(&declared.name).join("mod.rs"),
                ]
                .into_iter()
                .find(|candidate| candidate.is_file()),
            };
            let Some(found) = found.filter(|found| found.is_file()) else {
                self.problems.push(format!(
                    "{rel}:{}: `mod {}` has no file ({}.rs or {}/mod.rs)",
                    declared.line,
                    declared.name,
                    relative(root, &base.join(&declared.name)),
                    relative(root, &base.join(&declared.name)),
                ));
                continue;
            };
            let own_children = if found.file_name().is_some_and(|name| name == "mod.rs") {
                found.parent().map(Path::to_path_buf).unwrap_or_default()
            } else {
                found.with_extension("")
            };
            let folder = format!("{}/", relative(root, &own_children));
            let test = test || declared.test;
            self.modules.insert(module.clone(), Module { folder, test });
            self.load_file(root, &found, &module, &own_children, test);
        }
    }

    /// The module a path written in module `from` reaches: the deepest module of the tree it passes, following
    /// imported names; `None` when it leaves the crate (another crate, `super` above the root).
    fn resolve(&self, from: &[String], segments: &[String], hops: usize) -> Option<Vec<String>> {
        // An import that names itself through others would loop; real chains are one or two imports long.
        if hops > 8 {
            return None;
        }
        let (mut current, rest) = match segments.first().map(String::as_str) {
            Some("crate") => (Vec::new(), &segments[1..]),
            Some("self") => (from.to_vec(), &segments[1..]),
            Some("super") => {
                let supers = segments.iter().take_while(|s| *s == "super").count();
                let mut current = from.to_vec();
                for _ in 0..supers {
                    current.pop()?;
                }
                (current, &segments[supers..])
            }
            _ => (from.to_vec(), segments),
        };
        for (index, segment) in rest.iter().enumerate() {
            let next = join(&current, std::slice::from_ref(segment));
            if self.modules.contains_key(&next) {
                current = next;
                continue;
            }
            if let Some(target) = self.aliases.get(&current).and_then(|aliases| aliases.get(segment)) {
                let mut target = target.clone();
                target.extend_from_slice(&rest[index + 1..]);
                return Some(self.resolve(&current, &target, hops + 1).unwrap_or(current));
            }
            break;
        }
        Some(current)
    }

    /// Adds this crate's edges to `graphs`; code for tests only counts when `tests` says so.
    pub fn add_edges(&self, graphs: &mut Graphs, tests: bool) {
        for reference in &self.references {
            if reference.test && !tests {
                continue;
            }
            let Some(to) = self.resolve(&reference.from, &reference.segments, 0) else {
                continue;
            };
            let from = &reference.from;
            let shared = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if shared >= from.len() || shared >= to.len() {
                continue;
            }
            let Some(folder) = self.modules.get(&from[..shared]) else {
                continue;
            };
            let targets = graphs
                .entry(folder.folder.clone())
                .or_default()
                .entry(from[shared].clone())
                .or_default();
            let place = targets
                .entry(to[shared].clone())
                .or_insert_with(|| reference.place.clone());
            if reference.place < *place {
                *place = reference.place.clone();
            }
        }
    }

    /// How the crate's root folder is reported (`efrd/src/`), the key of its graph in [`Graphs`].
    pub fn folder(&self) -> &str {
        self.modules.get(&Vec::new()).map_or("", |root| root.folder.as_str())
    }

    /// The modules the root file declares, but those for tests only.
    pub fn top_modules(&self) -> Vec<String> {
        self.modules
            .iter()
            .filter(|(path, module)| path.len() == 1 && !module.test)
            .map(|(path, _)| path.join("::"))
            .collect()
    }

    /// Whether `file` is code of this crate.
    pub fn has_file(&self, file: &Path) -> bool {
        self.files.iter().any(|f| f == file)
    }

    /// The paths of this crate's modules (`a::b`), the root's (empty) included.
    #[cfg(test)]
    pub fn module_paths(&self) -> Vec<String> {
        self.modules.keys().map(|path| path.join("::")).collect()
    }
}

fn join(path: &[String], more: &[String]) -> Vec<String> {
    path.iter().chain(more).cloned().collect()
}

/// Members whose code is for tests only (efr-test-support, which tests and benches use), left out of the graphs like
/// `#[cfg(test)]` code.
const TEST_SUPPORT: &[&str] = &["tests"];

/// The workspace: its members (folders relative to the root, as the root `Cargo.toml` lists them) and the crates
/// whose trees are read.
#[derive(Debug)]
pub struct Workspace {
    /// The member folders.
    pub members: Vec<String>,
    /// Each crate root of each member (lib, binaries), but those of [`TEST_SUPPORT`].
    pub crates: Vec<Crate>,
}

impl Workspace {
    /// Reads the members of the workspace at `root` and the tree of each of their crates.
    pub fn load(root: &Path) -> Result<Workspace> {
        let members = members(root)?;
        let mut crates = Vec::new();
        for member in members.iter().filter(|member| !TEST_SUPPORT.contains(&member.as_str())) {
            let src = root.join(member).join("src");
            let lib = src.join("lib.rs");
            let mut roots: Vec<PathBuf> = vec![lib.clone(), src.join("main.rs")];
            if let Ok(entries) = std::fs::read_dir(src.join("bin")) {
                let mut bins: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
                bins.sort();
                roots.extend(bins.into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")));
            }
            for file in roots.into_iter().filter(|file| file.is_file()) {
                let dir = file.parent().unwrap_or(&src);
                let mut folder = format!("{}/", relative(root, dir));
                // A binary beside a library, or one of several in src/bin, is a crate of its own in a shared folder.
                if file != lib && (lib.is_file() || dir != src) {
                    folder = format!("{folder} ({})", relative(root, &file));
                }
                crates.push(Crate::load(root, &file, folder));
            }
        }
        Ok(Workspace { members, crates })
    }

    /// Every folder's graph; code for tests only counts when `tests` says so.
    pub fn graphs(&self, tests: bool) -> Graphs {
        let mut graphs = Graphs::new();
        for krate in &self.crates {
            krate.add_edges(&mut graphs, tests);
        }
        graphs
    }
}

/// The `members` of the root `Cargo.toml`'s `[workspace]`; a `dir/*` entry stands for each folder of `dir` that
/// holds a `Cargo.toml`.
pub fn members(root: &Path) -> Result<Vec<String>> {
    let manifest = root.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).with_context(|| format!("cannot read {}", manifest.display()))?;
    let start = text
        .lines()
        .scan(0, |offset, line| {
            let at = *offset;
            *offset += line.len() + 1;
            Some((at, line))
        })
        .find(|(_, line)| line.trim_start().starts_with("members"))
        .map(|(at, _)| at)
        .context("the root Cargo.toml has no workspace `members`")?;
    let list = &text[start..];
    let list = &list[..list.find(']').context("the workspace `members` list has no end")?];
    let mut members = Vec::new();
    for entry in list.split('"').skip(1).step_by(2) {
        if let Some(dir) = entry.strip_suffix("/*") {
            let mut found: Vec<String> = std::fs::read_dir(root.join(dir))
                .with_context(|| format!("cannot read {dir}"))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|path| path.join("Cargo.toml").is_file())
                .map(|path| relative(root, &path))
                .collect();
            found.sort();
            members.extend(found);
        } else {
            members.push(entry.to_owned());
        }
    }
    Ok(members)
}
