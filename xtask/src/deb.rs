//! `cargo xtask deb [--dev] [--version V]`: the Debian package of efr, built with dpkg-deb from a tree this module
//! lays out (docs/adr/0022-debian-package.md says why dpkg-deb and not cargo-deb or debhelper).
//!
//! | path | what |
//! |---|---|
//! | `/usr/bin/efr`, `/usr/bin/efrd` | the client and the daemon |
//! | `/usr/libexec/efr/efr-launcher`, `efr-proxy`, `efr-bus-proxy` | the helpers efrd starts (it finds them there) |
//! | `/usr/lib/systemd/user/efrd.socket`, `efrd.service` | the user units (`ExecStart=/usr/bin/efrd`), enabled for every user by postinst |
//! | `/usr/share/efr/apparmor/efr-bwrap` | the AppArmor profile's one source; postinst puts it in `/etc/apparmor.d/` where AppArmor needs it |
//! | `/usr/share/bash-completion/completions/efr`, `/usr/share/zsh/vendor-completions/_efr`, `/usr/share/fish/vendor_completions.d/efr.fish` | completions |
//! | `/usr/share/man/man1/efr*.1.gz`, `/usr/share/man/man8/efrd.8.gz` | man pages |
//! | `/usr/share/doc/efr/` | README, docs, ADRs, copyright, changelog |
//!
//! The maintainer scripts, copyright and lintian overrides are files of `packaging/debian/`. Binaries are stripped
//! as dh_strip would. `--dev` packages the debug build (CI's package test, which checks the packaging and not the
//! optimiser, reuses the build of the tests); the default is the release build users get. `--version` sets the
//! package's version (the workspace's by default), for the upgrade test from the previous commit's package.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::cmd::{cargo, run};

/// The programs in `/usr/bin`.
const BIN: [&str; 2] = ["efr", "efrd"];
/// The helpers in `/usr/libexec/efr`.
const LIBEXEC: [&str; 3] = ["efr-launcher", "efr-proxy", "efr-bus-proxy"];

/// How to build the package.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Package the debug build instead of the release build.
    pub dev: bool,
    /// The package's version; the workspace's when `None`.
    pub version: Option<String>,
}

impl Options {
    /// Reads `--dev` and `--version V`.
    ///
    /// # Errors
    /// Any other argument.
    pub fn parse(args: &[&str]) -> Result<Self> {
        let mut options = Self::default();
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            match *arg {
                "--dev" => options.dev = true,
                "--version" => options.version = Some(rest.next().context("--version needs a value")?.to_string()),
                _ => bail!("usage: cargo xtask deb [--dev] [--version V]"),
            }
        }
        Ok(options)
    }

    fn version(&self) -> String {
        self.version
            .clone()
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned())
    }
}

/// `cargo xtask deb`: builds the package and prints its path.
///
/// # Errors
/// A step that fails, named.
pub fn deb(root: &Path, args: &[&str]) -> Result<()> {
    let package = build(root, &Options::parse(args)?)?;
    println!("==> {}", package.display());
    Ok(())
}

/// Builds the programs and the package; returns the `.deb`'s path (in `<target>/deb/`).
///
/// # Errors
/// A step that fails, named.
pub fn build(root: &Path, options: &Options) -> Result<PathBuf> {
    let target = crate::demo::target_dir(root);
    let mut build = cargo();
    build
        .env("CARGO_TARGET_DIR", &target)
        .args(["build", "--locked", "--bins"]);
    for program in BIN.iter().chain(&LIBEXEC) {
        build.args(["-p", program]);
    }
    if options.dev {
        // The demo's set of packages, so cargo unifies the same features and the demo's build is reused as it is.
        build.args(["-p", "efr-test-support"]);
    } else {
        build.arg("--release");
    }
    run("cargo build (the five programs)", &mut build)?;
    let bin = target.join(if options.dev { "debug" } else { "release" });

    let version = options.version();
    let arch = output(Command::new("dpkg").arg("--print-architecture"))?;
    let out = target.join("deb");
    let stage = out.join(format!("efr_{version}_{arch}"));
    if stage.exists() {
        std::fs::remove_dir_all(&stage).with_context(|| format!("cannot remove {}", stage.display()))?;
    }
    println!("==> laying out the package in {}", stage.display());
    for program in BIN {
        install_program(&bin.join(program), &stage.join("usr/bin"))?;
    }
    for program in LIBEXEC {
        install_program(&bin.join(program), &stage.join("usr/libexec/efr"))?;
    }
    units(root, &stage)?;
    file(
        &stage.join("usr/share/efr/apparmor/efr-bwrap"),
        &std::fs::read(root.join("packaging/apparmor/efr-bwrap"))?,
    )?;
    completions(&stage)?;
    man_pages(&stage)?;
    docs(root, &stage, &version)?;
    file(
        &stage.join("usr/share/lintian/overrides/efr"),
        &std::fs::read(root.join("packaging/debian/lintian-overrides"))?,
    )?;
    control(root, &stage, &version, &arch)?;
    folders_0755(&stage)?;

    let package = out.join(format!("efr_{version}_{arch}.deb"));
    // xz for the package users get; the debug build's is for CI only, where xz of its larger programs costs half a
    // minute.
    let compression: &[&str] = if options.dev { &["-Zgzip", "-z1"] } else { &["-Zxz"] };
    run(
        "dpkg-deb --build",
        Command::new("dpkg-deb")
            .arg("--root-owner-group")
            .args(compression)
            .arg("--build")
            .arg(&stage)
            .arg(&package),
    )?;
    Ok(package)
}

/// The trimmed stdout of a command that must succeed.
pub fn output(command: &mut Command) -> Result<String> {
    let out = command.output().with_context(|| format!("cannot run {command:?}"))?;
    if !out.status.success() {
        bail!("{command:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Creates `path`'s folders (0755) and writes it with mode 0644.
fn file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        folders(parent)?;
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))?;
    Ok(())
}

/// Creates a folder and its parents (made 0755 by [`folders_0755`] before the package is built).
fn folders(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))
}

/// Makes every folder under `dir`, and `dir`, 0755 whatever the umask was.
fn folders_0755(dir: &Path) -> Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            folders_0755(&entry.path())?;
        }
    }
    Ok(())
}

/// Copies a program into `dir`, strips it as dh_strip does and makes it 0755.
fn install_program(program: &Path, dir: &Path) -> Result<()> {
    folders(dir)?;
    let name = program.file_name().context("a program without a name")?;
    let to = dir.join(name);
    std::fs::copy(program, &to).with_context(|| format!("cannot copy {}", program.display()))?;
    run(
        &format!("strip {}", name.to_string_lossy()),
        Command::new("strip")
            .args([
                "--remove-section=.comment",
                "--remove-section=.note",
                "--strip-unneeded",
            ])
            .arg(&to),
    )?;
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// The user units: the socket as it is, the service with `ExecStart=/usr/bin/efrd`.
fn units(root: &Path, stage: &Path) -> Result<()> {
    let dir = stage.join("usr/lib/systemd/user");
    let socket = std::fs::read_to_string(root.join("systemd/efrd.socket"))?;
    let service = std::fs::read_to_string(root.join("systemd/efrd.service"))?;
    let service = packaged_service(&service)?;
    file(&dir.join("efrd.socket"), socket.as_bytes())?;
    file(&dir.join("efrd.service"), service.as_bytes())
}

/// The service unit with the package's efrd in `ExecStart=`.
///
/// # Errors
/// When the template has no `ExecStart=` line.
pub fn packaged_service(template: &str) -> Result<String> {
    if !template.lines().any(|line| line.starts_with("ExecStart=")) {
        bail!("systemd/efrd.service has no ExecStart= line");
    }
    Ok(template
        .lines()
        .map(|line| {
            if line.starts_with("ExecStart=") {
                "ExecStart=/usr/bin/efrd\n".to_owned()
            } else {
                format!("{line}\n")
            }
        })
        .collect())
}

/// The completions, written by the staged efr.
fn completions(stage: &Path) -> Result<()> {
    let efr = stage.join("usr/bin/efr");
    for (shell, path) in [
        ("bash", "usr/share/bash-completion/completions/efr"),
        ("zsh", "usr/share/zsh/vendor-completions/_efr"),
        ("fish", "usr/share/fish/vendor_completions.d/efr.fish"),
    ] {
        let text = output(Command::new(&efr).args(["completions", shell]))?;
        file(&stage.join(path), format!("{text}\n").as_bytes())?;
    }
    Ok(())
}

/// The man pages, written by the staged efr and efrd, compressed as Debian wants them (`gzip -9n`).
fn man_pages(stage: &Path) -> Result<()> {
    let man1 = stage.join("usr/share/man/man1");
    let man8 = stage.join("usr/share/man/man8");
    folders(&man1)?;
    folders(&man8)?;
    output(Command::new(stage.join("usr/bin/efr")).arg("man-pages").arg(&man1))?;
    let efrd = Command::new(stage.join("usr/bin/efrd"))
        .arg("--man-page")
        .output()
        .context("cannot run efrd --man-page")?;
    if !efrd.status.success() {
        bail!("efrd --man-page failed");
    }
    file(&man8.join("efrd.8"), &efrd.stdout)?;
    for dir in [&man1, &man8] {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
            gzip(&path)?;
        }
    }
    Ok(())
}

/// `gzip -9n`: no name or time stamp in the header, so the package is reproducible.
fn gzip(path: &Path) -> Result<()> {
    output(Command::new("gzip").args(["-9nf"]).arg(path)).map(|_| ())
}

/// `/usr/share/doc/efr`: the README and docs (compressed past 4 KiB, Debian policy 12.3), the copyright and a
/// changelog naming the commit.
fn docs(root: &Path, stage: &Path, version: &str) -> Result<()> {
    let doc = stage.join("usr/share/doc/efr");
    let mut sources = vec![(root.join("README.md"), doc.join("README.md"))];
    for (from, to) in [("docs", doc.join("docs")), ("docs/adr", doc.join("docs/adr"))] {
        for entry in std::fs::read_dir(root.join(from))? {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == "md") {
                let name = path.file_name().context("a file without a name")?.to_owned();
                sources.push((path, to.join(name)));
            }
        }
    }
    for (from, to) in sources {
        let bytes = std::fs::read(&from).with_context(|| format!("cannot read {}", from.display()))?;
        file(&to, &bytes)?;
        if bytes.len() > 4096 {
            gzip(&to)?;
        }
    }
    file(
        &doc.join("copyright"),
        &std::fs::read(root.join("packaging/debian/copyright"))?,
    )?;
    let commit = output(
        Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(root),
    )
    .unwrap_or_else(|_| "unknown".to_owned());
    let date = output(Command::new("date").arg("-R"))?;
    let changelog = format!(
        "efr ({version}) unstable; urgency=medium\n\n  * Built from commit {commit} of the efr repository.\n\n -- \
         {MAINTAINER}  {date}\n"
    );
    let path = doc.join("changelog");
    file(&path, changelog.as_bytes())?;
    gzip(&path)
}

/// The extended description, each line a blank and at most 79 characters (Debian policy 5.6.13).
const DESCRIPTION: &str = " efr is an AI coding agent for the Linux terminal. Its daemon, efrd, is started\n \
     by each user's systemd through a socket; the efr command sends prompts and\n shows the turns. The commands \
     the model runs are contained in a sandbox made\n with bubblewrap, Landlock and seccomp, under a permission \
     mode (manual,\n cautious, auto, full).\n";

/// The package's maintainer.
const MAINTAINER: &str = "efr developers <efr-dev@users.noreply.github.com>";

/// `DEBIAN/`: control, the maintainer scripts and md5sums.
fn control(root: &Path, stage: &Path, version: &str, arch: &str) -> Result<()> {
    let debian = stage.join("DEBIAN");
    folders(&debian)?;
    let installed_kib = output(
        Command::new("du")
            .args(["-sk", "--apparent-size"])
            .arg(stage.join("usr")),
    )?
    .split_whitespace()
    .next()
    .unwrap_or("0")
    .to_owned();
    let shlibs = shared_library_depends(stage)?;
    let control = format!(
        "Package: efr\nVersion: {version}\nArchitecture: {arch}\nMaintainer: {MAINTAINER}\nInstalled-Size: \
         {installed_kib}\nDepends: {shlibs}, bubblewrap (>= 0.6), git\nRecommends: dbus, dbus-user-session\n\
         Section: devel\nPriority: optional\nHomepage: https://github.com/efr-dev/efr\nDescription: AI coding agent \
         in a per-user systemd daemon\n{DESCRIPTION}"
    );
    file(&debian.join("control"), control.as_bytes())?;
    for script in ["postinst", "postrm"] {
        let to = debian.join(script);
        std::fs::copy(root.join("packaging/debian").join(script), &to)?;
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o755))?;
    }
    let sums = output(
        Command::new("sh")
            .args(["-c", "find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum"])
            .current_dir(stage),
    )?;
    file(&debian.join("md5sums"), format!("{sums}\n").as_bytes())
}

/// The shared libraries the programs link, as dependencies (`dpkg-shlibdeps`, as debhelper's `${shlibs:Depends}`).
fn shared_library_depends(stage: &Path) -> Result<String> {
    // dpkg-shlibdeps reads debian/control of its working folder; an empty one is enough.
    let work = stage.with_extension("shlibs");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("debian"))?;
    std::fs::write(work.join("debian/control"), "")?;
    let mut command = Command::new("dpkg-shlibdeps");
    command.arg("-O").current_dir(&work);
    for program in BIN
        .iter()
        .map(|p| format!("usr/bin/{p}"))
        .chain(LIBEXEC.iter().map(|p| format!("usr/libexec/efr/{p}")))
    {
        command.arg(stage.join(program));
    }
    let line = output(&mut command)?;
    let _ = std::fs::remove_dir_all(&work);
    line.strip_prefix("shlibs:Depends=")
        .map(str::to_owned)
        .with_context(|| format!("dpkg-shlibdeps said {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_packaged_service_runs_usr_bin_efrd() {
        let root = crate::workspace_root().unwrap();
        let template = std::fs::read_to_string(root.join("systemd/efrd.service")).unwrap();
        let service = packaged_service(&template).unwrap();
        assert_eq!(service.lines().filter(|l| l.starts_with("ExecStart=")).count(), 1);
        assert!(service.contains("\nExecStart=/usr/bin/efrd\n"), "{service}");
        assert_eq!(service.lines().count(), template.lines().count());
        assert!(packaged_service("[Service]\n").is_err());
    }

    #[test]
    fn the_package_holds_every_program_that_xtask_install_installs() {
        let mut packaged: Vec<&str> = BIN.iter().chain(&LIBEXEC).copied().collect();
        packaged.sort_unstable();
        let mut installed = crate::install::CRATES.to_vec();
        installed.sort_unstable();
        assert_eq!(packaged, installed);
    }

    #[test]
    fn the_description_fits_80_columns() {
        for line in DESCRIPTION.lines() {
            assert!(line.starts_with(' ') && line.len() < 80, "{line:?}");
        }
    }

    #[test]
    fn options_read_dev_and_version() {
        let options = Options::parse(&["--dev", "--version", "1.2~ci1"]).unwrap();
        assert!(options.dev);
        assert_eq!(options.version(), "1.2~ci1");
        assert_eq!(Options::parse(&[]).unwrap().version(), env!("CARGO_PKG_VERSION"));
        assert!(Options::parse(&["--bogus"]).is_err());
        assert!(Options::parse(&["--version"]).is_err());
    }
}
