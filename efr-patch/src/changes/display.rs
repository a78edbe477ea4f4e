//! Paths as a client shows them: relative to the project root, under `$SCRATCH/`, under `~/`, or absolute.
//!
//! Spec (changelog, "what the agent changed in files"): `file_change.path` is "relative to the turn's project root,
//! under $SCRATCH/, under ~/ or absolute". The rule is a pure function of the path and the three roots, so it is the
//! same for a patch, a shell call and `conversation.diff`.

use std::path::{Path, PathBuf};

use efr_policy::paths::normalize_relative;

/// The roots a shown path is made relative to; a root that is `None` is not used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DisplayRoots<'a> {
    /// The turn's project root: paths under it are shown relative to it.
    pub project: Option<&'a Path>,
    /// The conversation's scratch folder: paths under it are shown as `$SCRATCH/...`.
    pub scratch: Option<&'a Path>,
    /// The user's home folder: paths under it are shown as `~/...`.
    pub home: Option<&'a Path>,
}

/// The path as a client shows it.
///
/// `path` is normalized lexically first (`.` dropped, `a/..` taken back; the file system is not asked, so a
/// symlink is not resolved), and so are the roots. Then the deepest root that holds the path wins; on a tie the
/// project wins over `$SCRATCH`, and `$SCRATCH` over `~`. A path under no root stays absolute. A root itself shows
/// as `.`, `$SCRATCH` or `~`. A relative `path` is taken as relative to the project already and returned normalized.
pub fn display_path(path: &Path, roots: &DisplayRoots<'_>) -> PathBuf {
    let path = normalize_relative(path);
    if !path.is_absolute() {
        return path;
    }
    let candidates = [(roots.project, "."), (roots.scratch, "$SCRATCH"), (roots.home, "~")];
    let mut best: Option<(usize, &str, PathBuf)> = None;
    for (root, shown) in candidates {
        let Some(root) = root.map(normalize_relative).filter(|root| root.is_absolute()) else {
            continue;
        };
        let Ok(rest) = path.strip_prefix(&root) else {
            continue;
        };
        let depth = root.components().count();
        // Strictly deeper wins, so on a tie the earlier candidate (project, then scratch, then home) stays.
        if best.as_ref().is_none_or(|(best_depth, _, _)| depth > *best_depth) {
            best = Some((depth, shown, rest.to_path_buf()));
        }
    }
    match best {
        None => path,
        Some((_, shown, rest)) if rest.as_os_str().is_empty() => PathBuf::from(shown),
        Some((_, ".", rest)) => rest,
        Some((_, shown, rest)) => Path::new(shown).join(rest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_of_shown_paths() {
        let project = Path::new("/home/me/src/app");
        let scratch = Path::new("/home/me/.local/state/efr/scratch/c1");
        let home = Path::new("/home/me");
        let all = DisplayRoots {
            project: Some(project),
            scratch: Some(scratch),
            home: Some(home),
        };
        let no_project = DisplayRoots { project: None, ..all };
        let none = DisplayRoots::default();
        // Scratch inside the project: the deeper root wins.
        let nested_scratch = DisplayRoots {
            project: Some(project),
            scratch: Some(Path::new("/home/me/src/app/.scratch")),
            home: None,
        };
        // The same folder as project and home: the project wins the tie.
        let same = DisplayRoots {
            project: Some(home),
            scratch: None,
            home: Some(home),
        };
        let table: &[(&str, &DisplayRoots<'_>, &str)] = &[
            ("/home/me/src/app/src/main.rs", &all, "src/main.rs"),
            ("/home/me/src/app/README", &all, "README"),
            ("/home/me/src/app", &all, "."),
            ("/home/me/src/app/", &all, "."),
            ("/home/me/src/app/./a/../b.txt", &all, "b.txt"),
            ("/home/me/src/application/x", &all, "~/src/application/x"),
            ("/home/me/.local/state/efr/scratch/c1/out.log", &all, "$SCRATCH/out.log"),
            ("/home/me/.local/state/efr/scratch/c1", &all, "$SCRATCH"),
            ("/home/me/.bashrc", &all, "~/.bashrc"),
            ("/home/me", &all, "~"),
            ("/home/me/src/app/../other/x.rs", &all, "~/src/other/x.rs"),
            ("/home/mel/x", &all, "/home/mel/x"),
            ("/etc/hosts", &all, "/etc/hosts"),
            ("/", &all, "/"),
            ("/../etc/hosts", &all, "/etc/hosts"),
            ("/home/me/src/app/src/main.rs", &no_project, "~/src/app/src/main.rs"),
            ("/home/me/src/app/src/main.rs", &none, "/home/me/src/app/src/main.rs"),
            ("/home/me/src/app/.scratch/t", &nested_scratch, "$SCRATCH/t"),
            ("/home/me/src/app/x", &nested_scratch, "x"),
            ("/home/me/x", &same, "x"),
            ("src/lib.rs", &all, "src/lib.rs"),
            ("./src/../lib.rs", &all, "lib.rs"),
            ("../up.rs", &all, "../up.rs"),
            ("/home/me/src/app/größe 🙂.txt", &all, "größe 🙂.txt"),
        ];
        for (path, roots, want) in table {
            assert_eq!(
                display_path(Path::new(path), roots),
                PathBuf::from(want),
                "{path} with {roots:?}"
            );
        }
    }

    #[test]
    fn roots_are_normalized_and_relative_roots_are_not_used() {
        let roots = DisplayRoots {
            project: Some(Path::new("/srv/./app/")),
            scratch: Some(Path::new("tmp")),
            home: None,
        };
        assert_eq!(display_path(Path::new("/srv/app/a"), &roots), PathBuf::from("a"));
        assert_eq!(display_path(Path::new("/tmp/x"), &roots), PathBuf::from("/tmp/x"));
    }
}
