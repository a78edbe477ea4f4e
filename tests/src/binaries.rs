//! Workspace binaries that a test needs beside its own: a crate's tests can name only that crate's binaries with
//! `CARGO_BIN_EXE_<name>`, so efr's tests find efrd (and efrd's find efr-launcher) next to the binary cargo built.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace binary `name` of `package` in the folder of `beside` (`target/<profile>/`), built with cargo first
/// when it is not there yet (`cargo test -p efr` builds only efr's binaries), in the same profile (`--release` when
/// that folder is `release`).
///
/// # Panics
/// When cargo cannot run or the build fails: a test cannot run without the binary, and says which.
#[must_use]
pub fn sibling(beside: &Path, name: &str, package: &str) -> PathBuf {
    let path = beside.with_file_name(name);
    if !path.is_file() {
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "-p", package, "--bin", name]);
        if beside.parent().and_then(Path::file_name) == Some(OsStr::new("release")) {
            build.arg("--release");
        }
        let status = build
            .status()
            .unwrap_or_else(|e| panic!("cannot run cargo to build {name}: {e}"));
        assert!(status.success(), "cannot build {name} ({status})");
    }
    assert!(path.is_file(), "{name} is not at {}", path.display());
    path
}
