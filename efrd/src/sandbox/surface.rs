//! Which changed files of a contained call are a surface: a file that code outside the sandbox later runs from, as
//! the user and unsandboxed (`docs/auto.md`, "Surface changes"). Pure: the caller gives the changed paths, whether
//! each is executable now, and the facts of the project ([`SurfaceFacts`]); nothing here reads the disk.
//!
//! The surfaces, each a [`SurfaceKind`]:
//! - an executable in a folder of the user's PATH that lies inside the project (`path_executable`), or in such a
//!   folder named `node_modules/.bin` (`package_bin`);
//! - a `.envrc` in any folder of the project (direnv loads it when the shell enters that folder or one below);
//! - a git hook: a file directly in the repository's hooks folder (`.git/hooks`, or `core.hooksPath`'s folder when
//!   it lies in the project), but not a `*.sample`;
//! - the project's `Makefile`, `makefile`, `GNUmakefile`, `justfile`, `Justfile` or `.justfile` when a hook of the
//!   project runs make or just (`task_file`; an alias of the user's is out of efrd's sight);
//! - `.vscode/tasks.json` and `.pre-commit-config.yaml` at the project's root.
//!
//! Whether a change can run code ([`SurfaceChange::runs_code`]): never for a deleted file; for an executable
//! surface (PATH, package bin, hook) only when the file is executable now, as nothing runs one that is not; always
//! for the others, which their runner reads as text.

use std::path::{Component, Path, PathBuf};

use efr_protocol::wire::{FileChangeKind, SurfaceChange, SurfaceKind};

/// What the project says about where code outside the sandbox runs from. Paths are relative to the project root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SurfaceFacts {
    /// The folders of the user's PATH that lie inside the project ([`path_dirs`]).
    pub path_dirs: Vec<PathBuf>,
    /// The folders git takes hooks from: `.git/hooks` always, and `core.hooksPath`'s folder when it lies inside the
    /// project.
    pub hook_dirs: Vec<PathBuf>,
    /// A hook of the project runs `make` or `just`, so its Makefile or justfile is code that git runs.
    pub hooks_run_tasks: bool,
}

impl SurfaceFacts {
    /// The facts of a project with no PATH folder inside it, hooks in `.git/hooks`, and no hook that runs a task.
    #[must_use]
    pub fn plain() -> Self {
        Self {
            hook_dirs: vec![PathBuf::from(".git/hooks")],
            ..Self::default()
        }
    }
}

/// One changed file of a call, as [`find`] takes it.
#[derive(Debug, Clone, Copy)]
pub struct Changed<'a> {
    /// Relative to the project root (for a rename: where the file is now).
    pub path: &'a Path,
    /// How it changed.
    pub kind: FileChangeKind,
    /// It is a file with an executable bit now (false when deleted).
    pub executable: bool,
}

/// The surface changes among `changed`, in its order.
#[must_use]
pub fn find(changed: &[Changed<'_>], facts: &SurfaceFacts) -> Vec<SurfaceChange> {
    changed
        .iter()
        .filter_map(|c| {
            let surface = surface_of(c.path, facts)?;
            let deleted = c.kind == FileChangeKind::Deleted;
            let needs_exec = matches!(
                surface,
                SurfaceKind::PathExecutable | SurfaceKind::PackageBin | SurfaceKind::GitHook
            );
            Some(SurfaceChange {
                path: c.path.to_path_buf(),
                surface,
                change: c.kind,
                runs_code: !deleted && (c.executable || !needs_exec),
            })
        })
        .collect()
}

/// The surface a project-relative path is, if any.
#[must_use]
pub fn surface_of(path: &Path, facts: &SurfaceFacts) -> Option<SurfaceKind> {
    if !is_plain_relative(path) {
        return None;
    }
    let name = path.file_name()?.to_str()?;
    let parent = path.parent().unwrap_or(Path::new(""));
    if name == ".envrc" {
        return Some(SurfaceKind::Envrc);
    }
    if facts.hook_dirs.iter().any(|dir| dir == parent) && !name.ends_with(".sample") {
        return Some(SurfaceKind::GitHook);
    }
    if facts.path_dirs.iter().any(|dir| dir == parent) {
        return Some(if parent.ends_with("node_modules/.bin") {
            SurfaceKind::PackageBin
        } else {
            SurfaceKind::PathExecutable
        });
    }
    let at_root = parent.as_os_str().is_empty();
    match (at_root, name) {
        (true, "Makefile" | "makefile" | "GNUmakefile" | "justfile" | "Justfile" | ".justfile")
            if facts.hooks_run_tasks =>
        {
            Some(SurfaceKind::TaskFile)
        }
        (true, ".pre-commit-config.yaml") => Some(SurfaceKind::PreCommitConfig),
        (false, "tasks.json") if parent == Path::new(".vscode") => Some(SurfaceKind::EditorTasks),
        _ => None,
    }
}

/// A path of only normal parts (no `..`, no root): what a project-relative change path is.
fn is_plain_relative(path: &Path) -> bool {
    path.components().all(|c| matches!(c, Component::Normal(_)))
}

/// The folders of `path_var` (the user's PATH, `:`-separated) that lie inside `project`, relative to it. A relative
/// entry (`bin`, `./bin`, or an empty one, which means the working folder) is taken from `cwd`, as the shell would.
#[must_use]
pub fn path_dirs(path_var: &str, cwd: &Path, project: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for entry in path_var.split(':') {
        let absolute = if entry.is_empty() {
            cwd.to_path_buf()
        } else if Path::new(entry).is_absolute() {
            PathBuf::from(entry)
        } else {
            cwd.join(entry)
        };
        let Some(rel) = efr_policy::paths::normalize(&absolute)
            .strip_prefix(project)
            .ok()
            .map(Path::to_path_buf)
        else {
            continue;
        };
        if !dirs.contains(&rel) {
            dirs.push(rel);
        }
    }
    dirs
}

/// Whether a hook's text runs make or just: a word `make`, `gmake` or `just` at the start of a command (a line, or
/// after `;`, `&&`, `||`, `|`, `(` or `exec`).
#[must_use]
pub fn runs_tasks(hook: &str) -> bool {
    hook.lines().any(|line| {
        let line = line.split('#').next().unwrap_or("");
        line.split([';', '|', '&', '(', '`'])
            .filter_map(|command| {
                let mut words = command.split_whitespace();
                let first = words.next()?;
                Some(if first == "exec" { words.next()? } else { first })
            })
            .any(|program| {
                let name = program.rsplit('/').next().unwrap_or(program);
                matches!(name, "make" | "gmake" | "just")
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use FileChangeKind::{Added, Deleted, Modified, Renamed};
    use SurfaceKind::{EditorTasks, Envrc, GitHook, PackageBin, PathExecutable, PreCommitConfig, TaskFile};

    fn facts() -> SurfaceFacts {
        SurfaceFacts {
            path_dirs: vec!["bin".into(), "node_modules/.bin".into()],
            hook_dirs: vec![".git/hooks".into(), ".githooks".into()],
            hooks_run_tasks: true,
        }
    }

    #[test]
    fn each_surface_is_found_and_whether_it_runs_code() {
        // (path, change, executable now, the surface, runs code)
        let table: &[(&str, FileChangeKind, bool, Option<SurfaceKind>, bool)] = &[
            (".git/hooks/pre-commit", Added, true, Some(GitHook), true),
            (".git/hooks/pre-commit", Added, false, Some(GitHook), false),
            (".git/hooks/pre-commit.sample", Added, true, None, false),
            (".githooks/pre-push", Modified, true, Some(GitHook), true),
            (".githooks/pre-push", Deleted, false, Some(GitHook), false),
            (".githooks/lib/helper.sh", Added, true, None, false),
            (".envrc", Added, false, Some(Envrc), true),
            ("web/.envrc", Modified, false, Some(Envrc), true),
            (".envrc", Deleted, false, Some(Envrc), false),
            ("bin/deploy", Added, true, Some(PathExecutable), true),
            ("bin/deploy", Renamed, true, Some(PathExecutable), true),
            ("bin/README", Added, false, Some(PathExecutable), false),
            ("bin/tools/deploy", Added, true, None, false),
            ("node_modules/.bin/eslint", Added, true, Some(PackageBin), true),
            ("web/node_modules/.bin/eslint", Added, true, None, false),
            ("Makefile", Modified, false, Some(TaskFile), true),
            ("justfile", Added, false, Some(TaskFile), true),
            ("sub/Makefile", Modified, false, None, false),
            (".vscode/tasks.json", Added, false, Some(EditorTasks), true),
            (".vscode/settings.json", Added, false, None, false),
            ("web/.vscode/tasks.json", Added, false, None, false),
            (".pre-commit-config.yaml", Modified, false, Some(PreCommitConfig), true),
            ("src/main.rs", Modified, false, None, false),
            ("scripts/build.sh", Added, true, None, false),
            ("../outside/.envrc", Added, false, None, false),
        ];
        let facts = facts();
        for &(path, kind, executable, surface, runs_code) in table {
            let found = find(
                &[Changed {
                    path: Path::new(path),
                    kind,
                    executable,
                }],
                &facts,
            );
            let got = found.first().map(|c| (c.surface, c.runs_code, c.change));
            assert_eq!(
                got,
                surface.map(|s| (s, runs_code, kind)),
                "{path} {kind:?} executable={executable}"
            );
        }
    }

    #[test]
    fn a_makefile_is_a_surface_only_when_a_hook_runs_tasks() {
        let plain = SurfaceFacts::plain();
        assert_eq!(surface_of(Path::new("Makefile"), &plain), None);
        assert_eq!(surface_of(Path::new(".git/hooks/post-merge"), &plain), Some(GitHook));
        assert_eq!(surface_of(Path::new("bin/deploy"), &plain), None);
        assert!(runs_tasks("#!/bin/sh\nset -e\nmake lint\n"));
        assert!(runs_tasks("#!/bin/sh\ncargo fmt --check && just test\n"));
        assert!(runs_tasks("exec /usr/bin/make check"));
        assert!(!runs_tasks("#!/bin/sh\n# make sure it builds\ncargo build\n"));
        assert!(!runs_tasks("echo make"));
        assert!(!runs_tasks("makeself ./x"));
    }

    #[test]
    fn path_folders_inside_the_project_are_found_relative_to_it() {
        let project = Path::new("/home/ada/app");
        let cwd = Path::new("/home/ada/app/web");
        let path = "/usr/bin:/home/ada/app/bin:./node_modules/.bin:../tools/../scripts::/home/ada/apple/bin:/bin";
        assert_eq!(
            path_dirs(path, cwd, project),
            vec![
                PathBuf::from("bin"),
                PathBuf::from("web/node_modules/.bin"),
                PathBuf::from("scripts"),
                PathBuf::from("web"),
            ]
        );
        assert!(path_dirs("/usr/bin:/bin", cwd, project).is_empty());
    }
}
