//! Which files the project ignores, by git's rules, through the `ignore` crate.
//!
//! The rules are git's: in a project inside a git repository (the root or a parent folder has `.git`), the
//! `.gitignore` files from the repository's top down to each file, `.git/info/exclude` and the user's global excludes
//! file (`core.excludesFile`), and none above the repository's top. In a project outside any repository, only the
//! project's own `.gitignore` files (none from its parent folders, such as a `~/.gitignore` of a dotfiles setup that
//! ignores everything), since a project without git still says in `.gitignore` what is not its own. ripgrep's own
//! `.ignore` files are not read, and hidden files are not skipped: a change to `.github/` or to `.env` is a change
//! like any other (`.env` is shown as ignored only when a rule ignores it).
//!
//! Above those rules, the folders in [`CACHE_FOLDERS`] are always ignored, with or without a `.gitignore`: a tool
//! writes them as a cache of its own (Python's bytecode, pytest's last failures), so they are never a change the
//! model or the user made, and a project without git would otherwise list every cached file as one. Being ignored
//! folders, nothing in them is walked or shown, not even as an ignored file. A `.gitignore` cannot take them back
//! (`!__pycache__/`): they are `ignore`'s overrides, which come before the `.gitignore` files.

use std::path::Path;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::{IncrementalIgnore, WalkBuilder};

/// Folders that are caches by definition: each is written by one tool as its own cache, rebuilt from the sources
/// when it is gone, and never holds source. As `.gitignore` patterns (a trailing `/`: folders only; no `/` before
/// the last part: at any depth). Kept to caches: `node_modules` (installed packages), `.tox` and `.venv`
/// (environments), `build/`, `dist/` and `target/` (build outputs a project may keep) are the project's own call,
/// made in its `.gitignore`.
pub const CACHE_FOLDERS: &[&str] = &[
    // CPython's bytecode cache (PEP 3147: `__pycache__/<module>.<tag>.pyc`), rewritten when a module is imported
    // or compiled.
    "__pycache__/",
    // pytest's cache plugin (last failures, step-wise state; `pytest --cache-clear` empties it).
    ".pytest_cache/",
    // mypy's incremental type-check cache.
    ".mypy_cache/",
    // Ruff's lint cache.
    ".ruff_cache/",
    // The shared cache folder of JavaScript build tools (babel-loader, ESLint, webpack, terser; the `find-cache-dir`
    // convention): a cache inside node_modules, whose other files stay as the project's rules say.
    "**/node_modules/.cache/",
];

/// The override matcher that ignores [`CACHE_FOLDERS`] below `root`; empty if the globs cannot be built (they are
/// constant and tested, so only a broken `ignore` crate would fail).
fn cache_overrides(root: &Path) -> Override {
    let mut builder = OverrideBuilder::new(root);
    for folder in CACHE_FOLDERS {
        // In an override, `!` ignores what matches; other paths are left to the `.gitignore` rules.
        if builder.add(&format!("!{folder}")).is_err() {
            return Override::empty();
        }
    }
    builder.build().unwrap_or_else(|_| Override::empty())
}

/// A walk of `root` configured with the rules above; the snapshot walk and [`IgnoreRules`] share it so they agree.
pub fn walk_builder(root: &Path) -> WalkBuilder {
    let in_repository = root.ancestors().any(|folder| folder.join(".git").exists());
    let mut builder = WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .hidden(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        // In a repository, `ignore` stops at its top (the `.git` it finds) only when it requires git.
        .require_git(in_repository)
        .parents(in_repository)
        .overrides(cache_overrides(root))
        .follow_links(false);
    builder
}

/// The ignore rules of one project root, loaded lazily folder by folder and kept (build a new one to see edits of
/// the `.gitignore` files).
#[derive(Debug, Clone)]
pub struct IgnoreRules {
    matcher: Option<IncrementalIgnore>,
}

impl IgnoreRules {
    /// The rules of the project at `root` (an absolute folder).
    pub fn new(root: &Path) -> Self {
        Self {
            matcher: walk_builder(root).build_matchers().into_iter().next(),
        }
    }

    /// Whether `path` (absolute, or relative to the root) is ignored, either itself or through an ignored folder
    /// that holds it. A path outside the root is not ignored: the project's rules do not speak of it.
    pub fn is_ignored(&mut self, path: &Path, is_dir: bool) -> bool {
        let Some(matcher) = self.matcher.as_mut() else {
            return false;
        };
        let relative = if path.is_absolute() {
            match matcher.normalize(path) {
                Some(relative) => relative,
                None => return false,
            }
        } else {
            path.to_path_buf()
        };
        if relative.as_os_str().is_empty() {
            return false;
        }
        // An ignored folder hides everything in it (git cannot re-include a file below an excluded folder).
        let mut prefix = std::path::PathBuf::new();
        let mut components = relative.components().peekable();
        while let Some(component) = components.next() {
            prefix.push(component);
            let last = components.peek().is_none();
            if matcher.matched(&prefix, if last { is_dir } else { true }).is_ignore() {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_rules_folders_negations_and_outside_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), ".env\ntarget/\n*.log\n!keep.log\n").expect("write");
        std::fs::create_dir_all(root.join("sub/deep")).expect("mkdir");
        std::fs::write(root.join("sub/.gitignore"), "secret.txt\n").expect("write");
        let mut rules = IgnoreRules::new(root);
        assert!(rules.is_ignored(&root.join(".env"), false));
        assert!(rules.is_ignored(Path::new(".env"), false));
        assert!(rules.is_ignored(&root.join("target"), true));
        assert!(rules.is_ignored(&root.join("target/debug/x.o"), false));
        assert!(rules.is_ignored(&root.join("a.log"), false));
        assert!(!rules.is_ignored(&root.join("keep.log"), false));
        assert!(rules.is_ignored(&root.join("sub/deep/secret.txt"), false));
        assert!(!rules.is_ignored(&root.join("secret.txt"), false));
        assert!(!rules.is_ignored(&root.join("src/main.rs"), false));
        assert!(!rules.is_ignored(Path::new("/etc/.env"), false));
        assert!(!rules.is_ignored(root, true));
    }

    #[test]
    fn cache_folders_are_ignored_at_any_depth_without_a_gitignore() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut rules = IgnoreRules::new(dir.path());
        for cached in [
            "__pycache__/app.cpython-311.pyc",
            "pkg/sub/__pycache__/m.cpython-311.pyc",
            ".pytest_cache/v/cache/lastfailed",
            ".mypy_cache/3.11/app.meta.json",
            "src/.ruff_cache/0.4.0/123",
            "node_modules/.cache/babel-loader/x.json",
            "web/node_modules/.cache/eslint/y",
        ] {
            assert!(rules.is_ignored(Path::new(cached), false), "{cached}");
        }
        for kept in [
            "app.py",
            "__pycache__.py",
            "node_modules/dep/index.js",
            ".cache/notes.txt",
            "docs/__pycache__",
        ] {
            assert!(!rules.is_ignored(Path::new(kept), false), "{kept}");
        }
        // The project's rules still apply next to them.
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").expect("write");
        let mut rules = IgnoreRules::new(dir.path());
        assert!(rules.is_ignored(Path::new("a.log"), false));
        assert!(rules.is_ignored(Path::new("__pycache__/x.pyc"), false));
        assert!(!rules.is_ignored(Path::new("app.py"), false));
    }

    #[test]
    fn rules_above_the_repository_or_above_a_project_without_git_do_not_apply() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(".gitignore"), "*.txt\n").expect("write");
        let repository = dir.path().join("repo");
        std::fs::create_dir_all(repository.join("src")).expect("mkdir");
        std::fs::write(repository.join(".gitignore"), "*.log\n").expect("write");
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&repository)
            .status();
        assert!(status.expect("git must be installed").success());
        // A project root below the repository's top still gets the top's rules, not those above it.
        let mut rules = IgnoreRules::new(&repository.join("src"));
        assert!(rules.is_ignored(Path::new("x.log"), false));
        assert!(!rules.is_ignored(Path::new("a.txt"), false));
        let plain = dir.path().join("plain");
        std::fs::create_dir_all(&plain).expect("mkdir");
        std::fs::write(plain.join(".gitignore"), ".env\n").expect("write");
        let mut rules = IgnoreRules::new(&plain);
        assert!(rules.is_ignored(Path::new(".env"), false));
        assert!(!rules.is_ignored(Path::new("a.txt"), false));
    }
}
