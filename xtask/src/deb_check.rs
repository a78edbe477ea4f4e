//! `cargo xtask deb-check`: CI's test of the Debian package, on this machine, as root.
//!
//! 1. builds two packages of the debug build ([`crate::deb`] with `--dev`): the previous commit's (`HEAD~1`), by its
//!    own recipe in a worktree under the target folder, with `~ci.previous` appended to the version (which dpkg
//!    orders first), then this tree's;
//! 2. lintian on the newer one: no error and no warning that `packaging/debian/lintian-overrides` does not hold;
//! 3. `dpkg -i` of the previous commit's, then checks of what it installed: the programs, the helpers in
//!    `/usr/libexec/efr`, efrd.socket enabled for every user, the AppArmor profile only where AppArmor runs;
//! 4. the demo against the installed programs and units under a real `systemd --user` manager;
//! 5. the upgrade: `dpkg -i` of this tree's, a new manager on the same folders, and the demo's conversation
//!    still readable (`efr diff --conversation ID` names the file its turn patched); `efr sandbox check` passes
//!    with the helpers of `/usr/libexec/efr`;
//! 6. `dpkg --remove`: the running efrd still runs (never stopped by force), the user's event log is kept, and no
//!    file of the package is left (`dpkg -L` before against the disk after: only folders another package owns
//!    remain); then `dpkg --purge` says where the data is and removes the global enablement.
//!
//! Whatever fails, the package is purged at the end, so no later test sees its units.
//!
//! The previous commit is built in a target folder of its own, seeded with a copy of this build's dependencies, so
//! that only the workspace's own crates compile again. A clone without the previous commit (a shallow one) or a
//! previous commit without a package recipe fails the check and says so.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use efr_test_support::systemd::{UserManager, require_root};

use crate::deb::{Options, build, output};

/// Runs the check (see the module doc).
///
/// # Errors
/// The first step that fails, named.
pub fn check(root: &Path) -> Result<()> {
    require_root()?;
    let newer = build(
        root,
        &Options {
            dev: true,
            version: None,
        },
    )?;
    let older = previous_package(root)?;
    lintian(&newer)?;
    let _purge = Purge;
    let result = install_use_upgrade_remove(root, &older, &newer);
    if let Err(error) = &result {
        println!("==> the package check failed: {error:#}");
    }
    result
}

/// The package of the previous commit (`HEAD~1`), built by that commit's own `cargo xtask deb --dev` in a worktree
/// of its own (`<target>/deb-previous/tree`), with the version `<this version>~ci.previous`.
///
/// # Errors
/// No previous commit in this clone, no package recipe in it, or its build fails.
fn previous_package(root: &Path) -> Result<PathBuf> {
    let git = || {
        let mut command = Command::new("git");
        command.arg("-C").arg(root);
        command
    };
    let commit = output(git().args(["rev-parse", "--verify", "--quiet", "HEAD~1^{commit}"])).context(
        "deb-check upgrades from the previous commit's package, and this clone has no previous commit (a shallow \
         clone: `git fetch --deepen=1`)",
    )?;
    let target = crate::demo::target_dir(root);
    let place = target.join("deb-previous");
    let tree = place.join("tree");
    if place.exists() {
        let _ = git().args(["worktree", "remove", "--force"]).arg(&tree).status();
        let _ = std::fs::remove_dir_all(&place);
    }
    let _ = git().args(["worktree", "prune"]).status();
    crate::cmd::run(
        "git worktree add (the previous commit)",
        git()
            .args(["worktree", "add", "--detach", "--force"])
            .arg(&tree)
            .arg(&commit),
    )?;
    if !tree.join("xtask/src/deb.rs").exists() {
        bail!("the previous commit {commit} has no package recipe (xtask/src/deb.rs): nothing to upgrade from");
    }
    // Seeded with this build's dependencies: only the workspace's own crates (another path) compile again.
    let previous_target = place.join("target");
    let seeded = previous_target.join("debug");
    std::fs::create_dir_all(&seeded)?;
    for part in ["deps", "build", ".fingerprint"] {
        let from = target.join("debug").join(part);
        if from.exists() {
            crate::cmd::run(
                "cp -a (seed the previous commit's build)",
                Command::new("cp").arg("-a").arg(&from).arg(&seeded),
            )?;
        }
    }
    let version = format!("{}~ci.previous", env!("CARGO_PKG_VERSION"));
    println!("==> the previous commit's package ({commit}), version {version}");
    let text = output(
        crate::cmd::cargo()
            .current_dir(&tree)
            .env("CARGO_TARGET_DIR", &previous_target)
            .args(["xtask", "deb", "--dev", "--version", &version]),
    )?;
    let package = text
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("==> "))
        .map(PathBuf::from)
        .filter(|path| path.extension().is_some_and(|ext| ext == "deb"))
        .with_context(|| format!("the previous commit's `cargo xtask deb` named no package:\n{text}"))?;
    // The package moves beside this tree's; the previous commit's tree and build go (gigabytes a CI disk needs).
    let kept = target.join("deb").join(package.file_name().context("a package file")?);
    std::fs::create_dir_all(target.join("deb"))?;
    std::fs::rename(&package, &kept).with_context(|| format!("cannot move {}", package.display()))?;
    let _ = git().args(["worktree", "remove", "--force"]).arg(&tree).status();
    std::fs::remove_dir_all(&place).with_context(|| format!("cannot remove {}", place.display()))?;
    Ok(kept)
}

/// lintian with warnings as failures (each kept one is overridden in the package, with its reason).
fn lintian(package: &Path) -> Result<()> {
    crate::cmd::run(
        "lintian (errors and warnings fail)",
        Command::new("lintian")
            .args([
                "--allow-root",
                "--fail-on",
                "error,warning",
                "--display-level",
                ">=warning",
            ])
            .arg(package),
    )
}

/// Purges the package when dropped, whatever happened.
#[derive(Debug)]
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        if installed() {
            let _ = Command::new("dpkg").args(["--purge", "efr"]).status();
        }
    }
}

/// Whether dpkg has efr installed (or half installed).
fn installed() -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Status}", "efr"])
        .output()
        .is_ok_and(|out| out.status.success() && !out.stdout.is_empty() && out.stdout != b"not-installed")
}

fn dpkg(args: &[&str], package: Option<&Path>) -> Result<String> {
    let mut command = Command::new("dpkg");
    command.args(args);
    if let Some(package) = package {
        command.arg(package);
    }
    let name = format!("dpkg {}", args.join(" "));
    println!("==> {name}");
    let out = command.output().with_context(|| format!("cannot run {name}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    print!("{text}");
    if !out.status.success() {
        bail!("{name} failed ({})", out.status);
    }
    Ok(text)
}

fn install_use_upgrade_remove(root: &Path, older: &Path, newer: &Path) -> Result<()> {
    if installed() {
        bail!("efr is installed already (dpkg -l efr): purge it first, the check installs its own");
    }
    dpkg(&["-i"], Some(older))?;
    check_layout()?;

    println!("==> the demo against the installed programs and units");
    let outcome = crate::demo::run(
        root,
        &crate::demo::Options {
            installed: true,
            ..Default::default()
        },
    )?;
    let conversation = outcome
        .conversation
        .context("the demo's transcript named no conversation")?;
    let manager_root = outcome.manager_root.context("the demo ran no systemd --user manager")?;

    dpkg(&["-i"], Some(newer))?;
    let manager = UserManager::start(&manager_root)?;
    let efr = |args: &[&str]| -> Result<std::process::Output> {
        Command::new("/usr/bin/efr")
            .args(args)
            .env_clear()
            .envs(manager.envs())
            .output()
            .context("cannot run /usr/bin/efr")
    };
    let diff = efr(&["diff", "--stat", "--conversation", &conversation])?;
    let text = String::from_utf8_lossy(&diff.stdout);
    println!("==> after the upgrade, efr diff --stat of the demo's conversation:\n{text}");
    if !diff.status.success() || !text.contains("calc.py") {
        bail!(
            "the demo's conversation is not readable after the upgrade: {}\nmanager log:\n{}",
            String::from_utf8_lossy(&diff.stderr),
            manager.log()
        );
    }
    let status = efr(&["status"])?;
    let status_text = String::from_utf8_lossy(&status.stdout);
    if !status_text.contains(&format!("efrd {}", env!("CARGO_PKG_VERSION"))) {
        bail!("efr status after the upgrade: {status_text}");
    }
    let sandbox = efr(&["sandbox", "check"])?;
    let sandbox_text = String::from_utf8_lossy(&sandbox.stdout);
    println!("==> efr sandbox check:\n{sandbox_text}");
    if !sandbox.status.success() || !sandbox_text.contains("\napparmor: ") {
        bail!("efr sandbox check failed with the packaged helpers");
    }

    remove_and_purge(&manager, &manager_root)
}

/// What the package must have put where (see the module doc).
fn check_layout() -> Result<()> {
    let executable = |path: &str| {
        std::fs::metadata(path)
            .is_ok_and(|meta| std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0)
    };
    for program in [
        "/usr/bin/efr",
        "/usr/bin/efrd",
        "/usr/libexec/efr/efr-launcher",
        "/usr/libexec/efr/efr-proxy",
        "/usr/libexec/efr/efr-bus-proxy",
    ] {
        if !executable(program) {
            bail!("{program} is not an installed program");
        }
    }
    for file in [
        "/usr/lib/systemd/user/efrd.socket",
        "/usr/lib/systemd/user/efrd.service",
        "/usr/share/bash-completion/completions/efr",
        "/usr/share/zsh/vendor-completions/_efr",
        "/usr/share/fish/vendor_completions.d/efr.fish",
        "/usr/share/man/man1/efr.1.gz",
        "/usr/share/man/man1/efr-sandbox-check.1.gz",
        "/usr/share/man/man8/efrd.8.gz",
        "/usr/share/doc/efr/copyright",
        "/usr/share/efr/apparmor/efr-bwrap",
    ] {
        if !Path::new(file).is_file() {
            bail!("{file} is missing");
        }
    }
    let link = Path::new("/etc/systemd/user/sockets.target.wants/efrd.socket");
    if std::fs::read_link(link).ok() != Some(PathBuf::from("/usr/lib/systemd/user/efrd.socket")) {
        bail!(
            "efrd.socket is not enabled for every user ({} is not a link to the unit)",
            link.display()
        );
    }
    let apparmor_runs = Path::new("/sys/kernel/security/apparmor").is_dir();
    let profile = Path::new("/etc/apparmor.d/efr-bwrap").exists();
    if !apparmor_runs && profile {
        bail!("/etc/apparmor.d/efr-bwrap was installed where AppArmor does not run");
    }
    println!(
        "==> the layout is right; AppArmor {}, /etc/apparmor.d/efr-bwrap {}",
        if apparmor_runs { "runs" } else { "does not run" },
        if profile { "installed" } else { "not installed" }
    );
    Ok(())
}

/// Removes the package with efrd running, checks what stays, then purges.
fn remove_and_purge(manager: &UserManager, manager_root: &Path) -> Result<()> {
    let listed = output(Command::new("dpkg").args(["-L", "efr"]))?;
    // dpkg lists the root as `/.`, owned by every package.
    let paths: Vec<PathBuf> = listed.lines().filter(|line| *line != "/.").map(PathBuf::from).collect();
    let running = manager.systemctl_ok(&["show", "-p", "MainPID", "--value", "efrd.service"])?;
    let pid = running.trim().to_owned();
    if pid == "0" || pid.is_empty() {
        bail!("efrd does not run before the removal");
    }
    dpkg(&["--remove", "efr"], None)?;
    if !Path::new(&format!("/proc/{pid}")).exists() {
        bail!("the removal stopped the running efrd (pid {pid})");
    }
    let left: Vec<&PathBuf> = paths
        .iter()
        .filter(|path| path.symlink_metadata().is_ok())
        .filter(|path| !(path.is_dir() && owned_by_another_package(path)))
        .collect();
    if !left.is_empty() {
        bail!("files of the package are left after dpkg --remove: {left:?}");
    }
    let log = manager_root.join("data/efr/efr.db");
    if !log.is_file() {
        bail!("the user's event log {} is gone after the removal", log.display());
    }
    println!(
        "==> removed: {} paths of the package gone, efrd (pid {pid}) still runs, {} kept",
        paths.len(),
        log.display()
    );
    let said = dpkg(&["--purge", "efr"], None)?;
    if !said.contains("~/.local/share/efr") {
        bail!("the purge did not say where the data is");
    }
    if Path::new("/etc/systemd/user/sockets.target.wants/efrd.socket")
        .symlink_metadata()
        .is_ok()
    {
        bail!("the purge left efrd.socket enabled for every user");
    }
    Ok(())
}

/// Whether dpkg lists `path` for another package than efr (a shared folder such as `/usr/bin`).
fn owned_by_another_package(path: &Path) -> bool {
    Command::new("dpkg")
        .arg("-S")
        .arg(path)
        .output()
        .is_ok_and(|out| out.status.success())
}
