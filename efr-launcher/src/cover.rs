//! What a call contained by Landlock and seccomp alone may read (docs/adr/0020-landlock-only-reads.md).
//!
//! Without bubblewrap there is no mount to put over a mask, and Landlock only grants: a right given on a folder holds
//! for everything beneath it. So the rules grant reading the file system *around* the hidden paths: from `/` down
//! to each hidden path, every folder on the way gets listing only (`ReadDir`, which shows names, never contents),
//! and each of its other entries gets reading (a folder its whole tree, a file itself). A link among those entries
//! is granted at its target, and left out when the target is hidden or holds a hidden path.
//!
//! Hidden: the plan's masks (as written and resolved), and what bubblewrap would have replaced with a private one:
//! the host's `/tmp` (only the call's own folders under it are read, [`Unshared::read`]), `/dev` (only the harmless
//! nodes and the call's own terminal are opened, read and write) and `/proc` (its global files and the call's own
//! process, never another process's `environ` or `mem`).

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The device nodes every call may open, read and write (bubblewrap's `--dev` has them too).
pub const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// What the inner stage needs for Landlock-only containment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unshared {
    /// The masks of the plan that are not unmasked: hidden.
    pub masks: Vec<PathBuf>,
    /// Folders under `/tmp` the call reads (its project root or start folder there).
    pub read: Vec<PathBuf>,
    /// The call's private scratch folder (`TMPDIR`), the one place it may write.
    pub scratch: PathBuf,
}

/// The rules of one call: what it may list, read, and open as a device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cover {
    /// Folders that may be listed (names only), not read beneath.
    pub list: Vec<PathBuf>,
    /// Folders whose whole tree may be read.
    pub read_trees: Vec<PathBuf>,
    /// Files that may be read (and executed).
    pub read_files: Vec<PathBuf>,
    /// Device nodes and terminals that may be opened for reading and writing.
    pub devices: Vec<PathBuf>,
}

/// The paths bubblewrap would have replaced with a private one: never granted as a whole.
const PRIVATE: &[&str] = &["/tmp", "/dev", "/proc"];

/// The cover of `unshared` for the process `own_pid`, whose standard descriptors may name its terminal.
#[must_use]
pub fn cover(unshared: &Unshared, own_pid: u32) -> Cover {
    let mut hidden: Vec<PathBuf> = Vec::new();
    for mask in &unshared.masks {
        hidden.push(mask.clone());
        if let Ok(real) = fs::canonicalize(mask) {
            hidden.push(real);
        }
    }
    let mut on_the_way: Vec<PathBuf> = hidden
        .iter()
        .flat_map(|path| path.ancestors().skip(1).map(Path::to_path_buf))
        .collect();
    on_the_way.push("/".into());
    on_the_way.sort();
    on_the_way.dedup();
    let mut out = Cover::default();
    walk(Path::new("/"), &hidden, &on_the_way, &mut out);
    proc_entries(own_pid, &mut out);
    // The call's own folders under /tmp: read whole, or walked around a mask they hold, never one inside a mask.
    for root in &unshared.read {
        if on_the_way.contains(root) {
            walk(root, &hidden, &on_the_way, &mut out);
        } else if !hidden.iter().any(|path| root.starts_with(path)) {
            out.read_trees.push(root.clone());
        }
    }
    out.devices = HARMLESS_DEVICES.iter().map(PathBuf::from).collect();
    for fd in 0..3 {
        if let Ok(target) = fs::read_link(format!("/proc/self/fd/{fd}"))
            && (target.starts_with("/dev/pts/") || target.starts_with("/dev/tty"))
            && !out.devices.contains(&target)
        {
            out.devices.push(target);
        }
    }
    out
}

/// Lists `dir` and grants each entry that neither is nor holds a hidden path; goes down into those that hold one.
fn walk(dir: &Path, hidden: &[PathBuf], on_the_way: &[PathBuf], out: &mut Cover) {
    out.list.push(dir.to_path_buf());
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if PRIVATE.iter().any(|private| path == Path::new(private)) || hidden.contains(&path) {
            continue;
        }
        if on_the_way.contains(&path) {
            walk(&path, hidden, on_the_way, out);
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        // Landlock opens a rule's path following links: a link is judged by where it leads.
        let target = if meta.file_type().is_symlink() {
            match fs::canonicalize(&path) {
                Ok(real) if !reaches_hidden(&real, hidden) => real,
                _ => continue,
            }
        } else {
            path
        };
        grant(target, out);
    }
}

/// Whether `real` is hidden, lies in a hidden path or a private one, or holds a hidden path.
fn reaches_hidden(real: &Path, hidden: &[PathBuf]) -> bool {
    hidden
        .iter()
        .any(|path| real.starts_with(path) || path.starts_with(real))
        || PRIVATE.iter().any(|private| real.starts_with(private))
}

fn grant(path: PathBuf, out: &mut Cover) {
    if path.is_dir() {
        out.read_trees.push(path);
    } else {
        out.read_files.push(path);
    }
}

/// `/proc`: listed; its global entries read; of the processes, only `own_pid`'s.
fn proc_entries(own_pid: u32, out: &mut Cover) {
    out.list.push("/proc".into());
    let Ok(entries) = fs::read_dir("/proc") else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_pid = name.bytes().all(|b| b.is_ascii_digit());
        let is_link = entry.file_type().is_ok_and(|kind| kind.is_symlink());
        if (is_pid && name != own_pid.to_string()) || is_link {
            continue;
        }
        grant(entry.path(), out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cover_goes_around_the_masks_and_the_private_folders() {
        // Not under /tmp, which the cover never walks.
        let home = tempfile::tempdir_in("/var/tmp").unwrap();
        let h = home.path();
        for dir in [".ssh", "src/app", ".config/gh", ".config/nvim"] {
            fs::create_dir_all(h.join(dir)).unwrap();
        }
        fs::write(h.join(".ssh/id_ed25519"), "key").unwrap();
        fs::write(h.join("notes.txt"), "n").unwrap();
        std::os::unix::fs::symlink(h.join(".ssh"), h.join("keys")).unwrap();
        std::os::unix::fs::symlink(h.join("src"), h.join("code")).unwrap();
        std::os::unix::fs::symlink(h, h.join("self")).unwrap();
        let unshared = Unshared {
            masks: vec![h.join(".ssh"), h.join(".config/gh"), "/tmp/held/masked".into()],
            read: vec!["/tmp/proj".into(), "/tmp/held".into(), "/tmp/held/masked/in".into()],
            scratch: "/tmp/scratch".into(),
        };
        let cover = cover(&unshared, std::process::id());
        let all: Vec<&PathBuf> = cover.read_trees.iter().chain(&cover.read_files).collect();
        // The masks, and links to them or to a folder that holds them, are not granted; the home is listed only.
        for hidden in [h.join(".ssh"), h.join(".config/gh")] {
            assert!(!all.iter().any(|p| p.starts_with(&hidden)), "{hidden:?} in {all:?}");
        }
        for above in [h.to_path_buf(), h.join(".config")] {
            assert!(!all.contains(&&above), "{above:?} granted whole");
        }
        assert!(cover.list.contains(&h.to_path_buf()) && cover.list.contains(&h.join(".config")));
        assert!(cover.read_trees.contains(&h.join("src")), "{:?}", cover.read_trees);
        assert!(cover.read_trees.contains(&h.join(".config/nvim")));
        assert!(cover.read_files.contains(&h.join("notes.txt")));
        // A link elsewhere is granted at its target (here the same folder, once more).
        assert_eq!(cover.read_trees.iter().filter(|p| **p == h.join("src")).count(), 2);
        // Nothing of /tmp, /dev or another process's /proc but what is named; a folder of the call that holds a
        // mask is walked around it, and one inside a mask is not read.
        assert!(
            all.iter().all(|p| !p.starts_with("/tmp") || p.starts_with("/tmp/proj")),
            "{all:?}"
        );
        assert!(cover.list.contains(&PathBuf::from("/tmp/held")));
        assert!(!all.iter().any(|p| p.starts_with("/dev")));
        assert!(!all.iter().any(|p| **p == Path::new("/proc/1")));
        assert!(
            cover
                .read_trees
                .contains(&PathBuf::from(format!("/proc/{}", std::process::id())))
        );
        assert!(cover.devices.contains(&PathBuf::from("/dev/null")));
        assert!(!cover.devices.iter().any(|d| d.starts_with("/dev/shm")));
    }
}
