//! Paths as the policy compares them: lexically normalized, absolute, and (by the caller, through [`resolve`]) with
//! their symbolic links resolved.
//!
//! [`super::decide()`] never touches the file system, so that it stays a pure, table-tested function. It compares
//! paths lexically: `.` and `..` are folded ([`normalize`]) and a path is inside a root when the root is one of its
//! ancestors ([`is_within`]). A symbolic link inside a project that points outside (`proj/link -> /etc`) would
//! therefore look inside; the caller closes that gap by passing every patch path and project root through
//! [`resolve`] first, which resolves the links of the longest part of the path that exists. A relative path is
//! never inside anything: the policy cannot place it.

use std::io;
use std::path::{Component, Path, PathBuf};

/// Folds `.` and `..` of an absolute path without touching the file system (`/a/./b/../c` is `/a/c`; `..` at `/`
/// stays `/`). A relative path is returned with its `.` components dropped and its `..` kept, since it cannot be
/// placed.
#[must_use]
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                if path.is_absolute() {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// [`normalize`] of `path` read from `/`: a relative path is taken as absolute (`a/../b` is `/b`, `../x` is `/x`), so
/// the result is always absolute. For a path that a sandbox's plan or explanation places, where nothing is relative.
#[must_use]
pub fn normalize_from_root(path: &Path) -> PathBuf {
    normalize(&Path::new("/").join(path))
}

/// Like [`normalize`], but a relative path is folded too: a `..` takes back the name before it (`a/../b` is `b`),
/// and only the `..`s that lead the path stay (`../a/..` is `..`), since they name a place outside what the path is
/// relative to. For showing paths: `/..` is `/`.
#[must_use]
pub fn normalize_relative(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::ParentDir | Component::CurDir) | None => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Whether `path` is `root` or below it, after [`normalize`] of both. Both must be absolute; a relative one is never
/// within.
#[must_use]
pub fn is_within(path: &Path, root: &Path) -> bool {
    path.is_absolute() && root.is_absolute() && normalize(path).starts_with(normalize(root))
}

/// The first of `roots` that holds `path`, if any.
#[must_use]
pub fn root_of<'r>(path: &Path, roots: &'r [PathBuf]) -> Option<&'r Path> {
    roots.iter().map(PathBuf::as_path).find(|root| is_within(path, root))
}

/// Resolves an absolute path for the policy: the longest ancestor that exists is canonicalized (its symbolic links
/// resolved), and the rest, which does not exist yet, is appended after [`normalize`].
///
/// So `proj/link/new.txt` with `proj/link -> /etc` gives `/etc/new.txt`, and a file a patch will add gives its
/// future path.
///
/// # Errors
///
/// [`io::ErrorKind::InvalidInput`] for a relative path; any error of [`std::fs::canonicalize`] other than "not
/// found" (such as permission denied on an ancestor).
pub fn resolve(path: &Path) -> io::Result<PathBuf> {
    if !path.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not absolute", path.display()),
        ));
    }
    canonical_prefix(&normalize(path))
}

/// Where the kernel takes an absolute `path`: like [`resolve`], but `..` is not folded first, so a link is followed
/// before the `..` after it goes up (`a/link/..` is the folder above the link's target); the rest that does not
/// exist is folded lexically.
///
/// # Errors
///
/// As [`resolve`]; also "not found" when a `..` ends a part of the path that does not exist.
pub fn resolve_as_written(path: &Path) -> io::Result<PathBuf> {
    canonical_prefix(path).map(|resolved| normalize(&resolved))
}

/// The longest part of `path` that exists, canonicalized, with the rest appended as it is.
fn canonical_prefix(path: &Path) -> io::Result<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        match std::fs::canonicalize(existing) {
            Ok(real) => {
                let mut out = real;
                out.extend(rest.iter().rev());
                return Ok(out);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err(e);
                };
                rest.push(name.to_owned());
                existing = parent;
            }
            Err(e) => return Err(e),
        }
    }
}

/// How a path is shown in a question: relative to the project root that holds it, `~/…` under the home folder, or
/// absolute.
#[must_use]
pub fn display(path: &Path, roots: &[PathBuf], home: Option<&Path>) -> String {
    let path = normalize(path);
    if let Some(root) = root_of(&path, roots)
        && let Ok(rest) = path.strip_prefix(root)
        && !rest.as_os_str().is_empty()
    {
        return rest.display().to_string();
    }
    if let Some(home) = home
        && let Ok(rest) = path.strip_prefix(home)
    {
        return if rest.as_os_str().is_empty() {
            "~".to_owned()
        } else {
            format!("~/{}", rest.display())
        };
    }
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_folds_dots_lexically() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalize(Path::new("/../..")), Path::new("/"));
        assert_eq!(normalize(Path::new("a/../b")), Path::new("a/../b"));
    }

    /// The variants differ only where a path is relative or climbs above its start; on an absolute path all three
    /// agree.
    #[test]
    fn the_variants_of_normalize() {
        for absolute in ["/a/./b/../c", "/../..", "/a/b/../../..", "/"] {
            let path = Path::new(absolute);
            assert_eq!(normalize_from_root(path), normalize(path), "{absolute}");
            assert_eq!(normalize_relative(path), normalize(path), "{absolute}");
        }
        assert_eq!(normalize_from_root(Path::new("a/../b")), Path::new("/b"));
        assert_eq!(normalize_from_root(Path::new("../x")), Path::new("/x"));
        assert_eq!(normalize_relative(Path::new("a/../b")), Path::new("b"));
        assert_eq!(normalize_relative(Path::new("../a/..")), Path::new(".."));
        assert_eq!(normalize_relative(Path::new("./../../a")), Path::new("../../a"));
    }

    #[test]
    fn within_needs_whole_components_and_absolute_paths() {
        assert!(is_within(Path::new("/p/src/a.rs"), Path::new("/p")));
        assert!(is_within(Path::new("/p"), Path::new("/p")));
        assert!(!is_within(Path::new("/proj2/a"), Path::new("/proj")));
        assert!(!is_within(Path::new("/p/../etc/passwd"), Path::new("/p")));
        assert!(!is_within(Path::new("src/a.rs"), Path::new("/p")));
    }

    #[test]
    fn resolve_follows_links_and_keeps_the_missing_rest() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("proj")).unwrap();
        std::fs::create_dir(real.join("outside")).unwrap();
        std::os::unix::fs::symlink(real.join("outside"), real.join("proj/link")).unwrap();
        let got = resolve(&real.join("proj/link/new/file.txt")).unwrap();
        assert_eq!(got, real.join("outside/new/file.txt"));
        let got = resolve(&real.join("proj/./sub/../a.txt")).unwrap();
        assert_eq!(got, real.join("proj/a.txt"));
    }

    #[test]
    fn resolve_refuses_a_relative_path() {
        let err = resolve(Path::new("src/a.rs")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn display_prefers_the_project_then_home() {
        let roots = vec![PathBuf::from("/home/u/proj")];
        let home = Some(Path::new("/home/u"));
        assert_eq!(display(Path::new("/home/u/proj/src/a.rs"), &roots, home), "src/a.rs");
        assert_eq!(display(Path::new("/home/u/.bashrc"), &roots, home), "~/.bashrc");
        assert_eq!(display(Path::new("/etc/hosts"), &roots, home), "/etc/hosts");
    }
}
