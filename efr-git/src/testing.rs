//! A planted repository for tests: its config names a program for every way git has to start one, and each appends
//! its name to a marker file when it runs. efr-git's tests show that efr's git starts none of them; the tests of the
//! crates that run git through it (snapshots, diffs) show the same of theirs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A repository with every planted program, and the file each of them appends its name to when it runs.
#[derive(Debug)]
pub struct Planted {
    _dir: tempfile::TempDir,
    /// The planted repository.
    pub repo: PathBuf,
    /// The file each planted program appends its name to.
    pub marker: PathBuf,
}

impl Planted {
    /// The names of the planted programs that ran, in order.
    pub fn ran(&self) -> Vec<String> {
        std::fs::read_to_string(&self.marker)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Runs plain git (the user's, with the repository's programs) with `args` in `dir`.
pub fn plain_git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("git must be installed (apt-get install git)")
}

/// Sets `key` to `value` in the repository at `dir`.
pub fn set(dir: &Path, key: &str, value: &str) {
    let out = plain_git(dir, &["config", key, value]);
    assert!(
        out.status.success(),
        "git config {key}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A script `bin/<name>` that appends `name` to the marker; a filter's or a textconv's also passes its input
/// through, so that git goes on.
fn program(bin: &Path, marker: &Path, name: &str) -> String {
    let path = bin.join(name);
    let pass = if name.starts_with("filter") || name == "textconv" {
        "cat\n"
    } else {
        ""
    };
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho {name} >> '{}'\n{pass}", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A repository with one commit and a changed file, whose config, attributes and hooks name a program for each of:
/// fsmonitor, hooks (in `.git/hooks` and in `core.hooksPath`), a diff driver's textconv and command,
/// `diff.external`, a filter's clean and smudge, pagers, editors, ssh, askpass, a credential helper, a
/// proxy, gpg with `log.showSignature` and signed commits, and a remote whose transport (`ext::`) runs a command.
/// A repository at a fresh temporary folder whose config plants a program for every way git has to start one.
pub fn planted() -> Planted {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let bin = dir.path().join("bin");
    let hooks = dir.path().join("hooks");
    let marker = dir.path().join("ran");
    for folder in [&repo, &bin, &hooks] {
        std::fs::create_dir_all(folder).unwrap();
    }
    assert!(plain_git(&repo, &["init", "-q"]).status.success(), "git init");
    set(&repo, "user.name", "T");
    set(&repo, "user.email", "t@example.invalid");
    std::fs::write(repo.join("file.txt"), "one\ntwo\n").unwrap();
    assert!(plain_git(&repo, &["add", "file.txt"]).status.success());
    assert!(plain_git(&repo, &["commit", "-qm", "one"]).status.success());

    for hook in [
        "post-index-change",
        "pre-commit",
        "commit-msg",
        "post-commit",
        "reference-transaction",
    ] {
        let script = program(&hooks, &marker, hook);
        let local = repo.join(".git/hooks").join(hook);
        std::fs::copy(&script, &local).unwrap();
    }
    std::fs::write(repo.join(".gitattributes"), "* diff=evil filter=evil\n").unwrap();
    std::fs::write(repo.join(".git/info/attributes"), "* diff=evil filter=evil\n").unwrap();
    let keys = [
        ("core.fsmonitor", "fsmonitor"),
        ("diff.evil.textconv", "textconv"),
        ("diff.evil.command", "diff-command"),
        ("diff.external", "diff-external"),
        ("filter.evil.clean", "filter-clean"),
        ("filter.evil.smudge", "filter-smudge"),
        ("core.pager", "pager"),
        ("pager.log", "pager-log"),
        ("core.editor", "editor"),
        ("sequence.editor", "sequence-editor"),
        ("core.sshCommand", "ssh"),
        ("core.askPass", "askpass"),
        ("credential.helper", "credential"),
        ("core.gitProxy", "proxy"),
        ("gpg.program", "gpg"),
        ("gpg.ssh.program", "gpg-ssh"),
    ];
    for (key, name) in keys {
        set(&repo, key, &program(&bin, &marker, name));
    }
    set(&repo, "filter.evil.required", "true");
    set(&repo, "core.hooksPath", &hooks.display().to_string());
    set(&repo, "log.showSignature", "true");
    set(&repo, "commit.gpgSign", "true");
    let ext = format!("ext::{}", program(&bin, &marker, "ext-transport"));
    set(&repo, "remote.origin.url", &ext);
    set(&repo, "protocol.allow", "always");
    // A change whose stat differs from the index: `status` and `diff` re-read it through the clean filter.
    std::fs::write(repo.join("file.txt"), "one\nTWO\n").unwrap();
    Planted {
        _dir: dir,
        repo,
        marker,
    }
}
