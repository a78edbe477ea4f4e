//! `tidy` and `ci`: the checks CI runs, runnable the same way on a developer's machine.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cmd::{cargo, run, target_outside_tmp};
use crate::protocol;

/// Debian packages the tests need. Tests that need one fail (never skip) when it is missing, so `ci` installs them
/// first: bubblewrap for the sandbox, dbus for a real bus (and dbus-user-session for the session bus of a test's
/// `systemd --user`, over which efrd asks for a job's scope), zsh and bash for the hidden shell, iproute2 for network
/// namespaces, python3-venv for the independent phone client, systemd for socket activation and `systemd --user`,
/// tmux to drive the CLI in a real terminal, git for diffs and snapshots, curl and pip as the real clients of the
/// egress proxy, gdbus (libglib2.0-bin) and jeepney as real clients of the bus proxy, xdg-dbus-proxy as the reference
/// the bus proxy's round-trip bench measures beside it, Python's dbus and GLib modules
/// for the test service of efrd's bus tests (and a client inside their contained calls), e2fsprogs and mount for the
/// fault matrix's small loop-mounted data disk (`mkfs.ext4`, `chattr`), man-db to render the man pages (`man -l`),
/// and for the package's check dpkg-dev (`dpkg-shlibdeps`), binutils (`strip`) and lintian.
const PACKAGES: &[&str] = &[
    "bubblewrap",
    "dbus",
    "dbus-user-session",
    "zsh",
    "bash",
    "iproute2",
    "python3-venv",
    "systemd",
    "tmux",
    "git",
    "procps",
    "curl",
    "python3-pip",
    "e2fsprogs",
    "mount",
    "libglib2.0-bin",
    "python3-jeepney",
    "python3-dbus",
    "python3-gi",
    "xdg-dbus-proxy",
    "man-db",
    "dpkg-dev",
    "binutils",
    "lintian",
];

/// The cargo-shear that `tidy` runs, pinned: a newer one may add checks (a red CI on unchanged code), and 1.14
/// needs a newer rustc than the workspace's.
const SHEAR_VERSION: &str = "1.13.0";

/// Whether dpkg has `package` installed.
fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Status}", package])
        .output()
        .is_ok_and(|out| out.status.success() && out.stdout == b"installed")
}

/// Installs the missing packages with apt-get when running as root; otherwise says what is missing.
pub fn install_packages() -> Result<()> {
    let missing: Vec<&str> = PACKAGES.iter().copied().filter(|package| !installed(package)).collect();
    if missing.is_empty() {
        println!("==> packages: all present");
        return Ok(());
    }
    if !nix_is_root() {
        bail!(
            "missing Debian packages {missing:?}; install them (apt-get install {})",
            missing.join(" ")
        );
    }
    run("apt-get update", Command::new("apt-get").args(["update", "-qq"]))?;
    run(
        &format!("apt-get install {}", missing.join(" ")),
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// Whether `cargo install` has cargo-shear at [`SHEAR_VERSION`] (its `--version` says only `dev`).
fn shear_installed() -> bool {
    let want = format!("cargo-shear v{SHEAR_VERSION}:");
    cargo()
        .args(["install", "--list"])
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).lines().any(|line| line == want))
}

/// Installs cargo-shear at [`SHEAR_VERSION`] when it is missing (from source: about 4 minutes on 2 cores).
pub fn install_tools() -> Result<()> {
    if shear_installed() {
        println!("==> cargo-shear {SHEAR_VERSION}: present");
        return Ok(());
    }
    run(
        &format!("cargo install --locked cargo-shear@{SHEAR_VERSION}"),
        cargo().args(["install", "--locked", &format!("cargo-shear@{SHEAR_VERSION}")]),
    )
}

/// Unused and misplaced dependencies, with cargo-shear: a dependency no code of its package names, one only tests or
/// benches use that is not a dev-dependency, a workspace dependency no member uses.
fn unused_dependencies() -> Result<()> {
    println!("==> cargo shear (unused dependencies)");
    if !shear_installed() {
        bail!(
            "cargo-shear {SHEAR_VERSION} is missing: `cargo install --locked cargo-shear@{SHEAR_VERSION}` \
             (`cargo xtask ci` installs it)"
        );
    }
    let status = cargo()
        .args(["shear", "--locked", "--deny-warnings"])
        .status()
        .context("cannot start cargo shear")?;
    if !status.success() {
        bail!(
            "cargo shear found unused or misplaced dependencies (listed above): remove them, move one that only \
             tests or benches use to [dev-dependencies], or, for a false positive (a crate used only through a \
             macro), add it to `ignored` under [package.metadata.cargo-shear] with a comment saying why"
        );
    }
    Ok(())
}

fn nix_is_root() -> bool {
    // The effective uid, read from /proc so xtask needs no libc binding.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|uids| uids.split_whitespace().nth(1))
                .map(|euid| euid == "0")
        })
        .unwrap_or(false)
}

/// Format, unused dependencies, lints, the structure (no cycle between modules, docs/architecture.md in step), the
/// docs without warnings, schema and fixtures.
pub fn tidy(root: &Path) -> Result<()> {
    run("cargo fmt --check", cargo().args(["fmt", "--all", "--check"]))?;
    unused_dependencies()?;
    run(
        "cargo clippy",
        cargo().args([
            "clippy",
            "--workspace",
            "--all-targets",
            "--locked",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    crate::structure::check(root)?;
    // Broken intra-doc links and malformed doc comments fail here, as clippy's warnings do: the docs of a public item
    // are part of its contract.
    run(
        "cargo doc (warnings are errors)",
        cargo()
            .args(["doc", "--workspace", "--no-deps", "--locked"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    println!("==> protocol schema current");
    protocol::check_schema(root)?;
    println!("==> fixtures current");
    protocol::check_fixtures(root)?;
    Ok(())
}

/// The TypeScript check of the protocol schema (`tests/typescript`): json-schema-to-typescript makes types of
/// `docs/protocol.schema.json` and `tsc --strict` checks a small client against them, both pinned in its lock file.
/// npm comes with nodesource's nodejs; without npm, Debian's is installed.
pub fn typescript(root: &Path) -> Result<()> {
    let npm_runs = || {
        Command::new("npm")
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success())
    };
    if !npm_runs() {
        run(
            "apt-get install npm",
            Command::new("apt-get").args(["install", "-y", "-qq", "npm"]),
        )?;
    }
    let dir = root.join("tests/typescript");
    run(
        "npm ci (tests/typescript)",
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir),
    )?;
    run(
        "json2ts and tsc --strict (tests/typescript)",
        Command::new("npm").args(["run", "--silent", "check"]).current_dir(&dir),
    )
}

/// Everything CI checks: packages and cargo-shear, tidy, every test of the workspace, the demo (the main job end to
/// end), then the Debian package (`deb-check`: built from the same debug build, installed, used, upgraded, removed).
pub fn ci(root: &Path) -> Result<()> {
    if let Some(target) = target_outside_tmp(root) {
        println!("==> the workspace is under /tmp: building in {}", target.display());
        // SAFETY: xtask is single-threaded here; nothing reads the environment concurrently.
        unsafe { std::env::set_var("CARGO_TARGET_DIR", &target) };
    }
    install_packages()?;
    install_tools()?;
    tidy(root)?;
    typescript(root)?;
    run(
        "cargo test",
        cargo().args(["test", "--workspace", "--locked", "--no-fail-fast"]),
    )?;
    println!("==> cargo xtask demo");
    crate::demo::demo(root, &[])?;
    println!("==> cargo xtask deb-check");
    crate::deb_check::check(root)
}
