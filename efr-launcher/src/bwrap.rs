//! The plan → bubblewrap arguments, as a pure function ([`bwrap_args`]).
//!
//! The only facts it needs from the host are the kinds of the masked and protected paths (a folder is masked with an
//! empty read-only tmpfs, a file with `/dev/null`, a missing path not at all; a protected path is bound over itself, a
//! missing one gets the placeholder its source asks for), which the outer stage reads first ([`HostFacts::read`]) and
//! tests make up. The same read refuses a desktop socket of the plan that is not a socket. The mounts come from [`LaunchPlan::mounts`], so their order is the one
//! `sandbox.explain` reads back.
//!
//! The arguments, in order:
//!
//! ```text
//! --new-session --die-with-parent --unshare-all --unshare-user --disable-userns [--share-net]
//! --json-status-fd N --clearenv --setenv K V ...
//! --ro-bind / / --dev /dev --size BYTES --tmpfs /dev/shm --proc /proc --tmpfs /tmp
//! (--bind P P | --tmpfs M | --ro-bind /dev/null M | --dev-bind D D     the plan's mounts, deepest last (a desktop
//!                                                                        or bus socket is a --bind)
//!  | --ro-bind R R | --tmpfs R | --ro-bind /dev/null R)...               (R: protected paths and their placeholders)
//! [--ro-bind PROXY /dev/efr-proxy]                                       the plan's proxy socket, when it has one
//! --remount-ro M ...                                                     every folder mask and placeholder, once all
//!                                                                        binds are in
//! --chdir CWD
//! ```
//!
//! `--new-session` stops a command from typing into the user's terminal (TIOCSTI); `--die-with-parent` ends the
//! sandbox with the launcher; `--disable-userns` stops a nested user namespace (a way around the mount masks), on
//! top of the inner stage's seccomp filter, which refuses one on every bubblewrap (`LaunchPlan::disable_userns` is
//! false for a bubblewrap older than 0.8, which does not know the option).
//! `--share-net` keeps the host's network for `net_view` and `open_network`. The proxy socket is bound read-only
//! at [`PROXY_SOCKET_INSIDE`] (a connect needs no write access; the call cannot change the socket's mode); the call
//! reaches it through the bridge on its loopback ([`crate::bridge`]), or directly.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use efr_protocol::internal::{IfMissing, LaunchPlan, MountKind, Network, PlanError};

use crate::bridge::PROXY_SOCKET_INSIDE;

/// What a masked or protected path is on the host, after following links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaskTarget {
    /// A folder at this (canonical) path: masked with an empty read-only tmpfs.
    Dir(PathBuf),
    /// A file (or socket, or device) at this (canonical) path: masked with `/dev/null`.
    File(PathBuf),
    /// Nothing there: nothing to hide, and `/` is read-only, so nothing is mounted.
    Missing,
}

/// The host facts [`bwrap_args`] needs: the target of each masked and each protected path of the plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// Plan mask path → what is there. A mask without an entry counts as [`MaskTarget::Missing`].
    pub masks: BTreeMap<PathBuf, MaskTarget>,
    /// Plan protected path → what is there. A protected path without an entry counts as [`MaskTarget::Missing`].
    pub protected: BTreeMap<PathBuf, MaskTarget>,
}

impl HostFacts {
    /// Reads the target of every mask of `plan` from the host (following links, so a link to a credential store
    /// masks the store itself).
    ///
    /// # Errors
    ///
    /// An I/O error other than "not found" while resolving a mask, such as a permission error on a parent folder:
    /// the launcher refuses the call rather than leave a store unmasked.
    pub fn read(plan: &LaunchPlan) -> io::Result<Self> {
        let mut masks = BTreeMap::new();
        for mask in &plan.masks {
            let target = match std::fs::canonicalize(&mask.path) {
                Ok(real) if real.is_dir() => MaskTarget::Dir(real),
                Ok(real) => MaskTarget::File(real),
                Err(err) if err.kind() == io::ErrorKind::NotFound => MaskTarget::Missing,
                Err(err) => {
                    return Err(io::Error::new(
                        err.kind(),
                        format!("cannot resolve the mask {:?}: {err}", mask.path),
                    ));
                }
            };
            masks.insert(mask.path.clone(), target);
        }
        let mut protected = BTreeMap::new();
        // A read-only root is bound over itself like a protected path, and refused as a link the same way.
        for path in plan
            .protected
            .iter()
            .map(|entry| &entry.path)
            .chain(&plan.read_only_roots)
        {
            protected.insert(path.clone(), protected_target(path)?);
        }
        for socket in &plan.desktop_sockets {
            check_desktop_socket(&socket.path)?;
        }
        Ok(Self { masks, protected })
    }
}

/// A desktop grant's path must be a socket now, not a link (whose target the grant does not name) nor a file or a
/// folder: anything else refuses the call (docs/protocol.md, "The contract": "desktop grants").
fn check_desktop_socket(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => Ok(()),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the desktop socket {} is not a socket", path.display()),
        )),
        Err(err) => Err(io::Error::new(
            err.kind(),
            format!("cannot read the desktop socket {}: {err}", path.display()),
        )),
    }
}

/// What a protected path is. A link is refused: the bind would land on its target, and the call could replace the
/// link itself (with a folder holding a config of its own).
fn protected_target(path: &Path) -> io::Result<MaskTarget> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is a link inside a writable root: efr cannot keep a contained call from replacing it (make it a \
                 real folder or file, or run this call in another mode)",
                path.display()
            ),
        )),
        Ok(_) => {
            let real = std::fs::canonicalize(path)
                .map_err(|err| io::Error::new(err.kind(), format!("cannot resolve {}: {err}", path.display())))?;
            Ok(if real.is_dir() {
                MaskTarget::Dir(real)
            } else {
                MaskTarget::File(real)
            })
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(MaskTarget::Missing),
        Err(err) => Err(io::Error::new(
            err.kind(),
            format!("cannot read the protected path {}: {err}", path.display()),
        )),
    }
}

/// The bubblewrap options for `plan` (everything before `--` and the command), to be passed with `--args FD`.
/// `status_fd` is the descriptor bubblewrap writes its JSON status to.
///
/// # Errors
///
/// The plan's [`PlanError`] when it does not pass [`LaunchPlan::validate`].
pub fn bwrap_args(plan: &LaunchPlan, host: &HostFacts, status_fd: i32) -> Result<Vec<OsString>, PlanError> {
    let mounts = plan.mounts()?;
    let mut args = Args::default();
    args.push(["--new-session", "--die-with-parent", "--unshare-all", "--unshare-user"]);
    if plan.disable_userns {
        args.push(["--disable-userns"]);
    }
    if plan.network() != Network::None {
        args.push(["--share-net"]);
    }
    args.push(["--json-status-fd"]);
    args.push([status_fd.to_string()]);
    args.push(["--clearenv"]);
    for (name, value) in &plan.env {
        args.push(["--setenv", name, value]);
    }
    let mut read_only_later = Vec::new();
    for mount in &mounts {
        let path = mount.path.as_path();
        match mount.kind {
            MountKind::RootReadOnly => args.paths("--ro-bind", path, path),
            MountKind::Dev => args.path("--dev", path),
            MountKind::Proc => args.path("--proc", path),
            MountKind::Tmp => args.path("--tmpfs", path),
            MountKind::SharedMemory => {
                if let Some(size) = plan.shm_size {
                    args.push(["--size".to_owned(), size.to_string()]);
                }
                args.path("--tmpfs", path);
            }
            MountKind::Writable | MountKind::Socket => args.paths("--bind", path, path),
            MountKind::BusSocket => args.paths("--bind", mount.source.as_deref().unwrap_or(path), path),
            MountKind::Device => args.paths("--dev-bind", path, path),
            MountKind::Mask => match host.masks.get(path).unwrap_or(&MaskTarget::Missing) {
                MaskTarget::Dir(real) => {
                    args.path("--tmpfs", real);
                    read_only_later.push(real.clone());
                }
                MaskTarget::File(real) => args.paths("--ro-bind", Path::new("/dev/null"), real),
                MaskTarget::Missing => {}
            },
            // A bind of a path over itself is a mount point, which cannot be renamed or removed (EBUSY): git's folder
            // cannot be swapped for one the call made, though git still writes in it.
            MountKind::Pinned => match host.protected.get(path).unwrap_or(&MaskTarget::Missing) {
                MaskTarget::Dir(real) | MaskTarget::File(real) => args.paths("--bind", real, real),
                MaskTarget::Missing => {}
            },
            // Landlock cannot take rights away below a writable root's rule: the read-only mount's EROFS is what
            // stops a write here, and as a mount point the path cannot be renamed either.
            MountKind::ReadOnly(if_missing) => match (host.protected.get(path), if_missing) {
                (Some(MaskTarget::Dir(real) | MaskTarget::File(real)), _) => args.paths("--ro-bind", real, real),
                (_, IfMissing::EmptyFolder) => {
                    args.path("--tmpfs", path);
                    read_only_later.push(path.to_path_buf());
                }
                (_, IfMissing::EmptyFile) => args.paths("--ro-bind", Path::new("/dev/null"), path),
                (_, IfMissing::Nothing) => {}
            },
        }
    }
    if let Some(proxy) = &plan.proxy {
        args.paths("--ro-bind", proxy, Path::new(PROXY_SOCKET_INSIDE));
    }
    // Read-only only now: a later bind (such as $SCRATCH inside masked efr state) needs its mount point made
    // in the mask's tmpfs first.
    for real in &read_only_later {
        args.path("--remount-ro", real);
    }
    args.path("--chdir", &plan.cwd);
    Ok(args.0)
}

/// Encodes options for `--args FD`: each one followed by a NUL byte.
pub fn encode_args(args: &[OsString]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for arg in args {
        bytes.extend_from_slice(arg.as_encoded_bytes());
        bytes.push(0);
    }
    bytes
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push<const N: usize, S: Into<OsString>>(&mut self, items: [S; N]) {
        self.0.extend(items.into_iter().map(Into::into));
    }

    fn path(&mut self, option: &str, path: &Path) {
        self.0.push(option.into());
        self.0.push(path.into());
    }

    fn paths(&mut self, option: &str, source: &Path, dest: &Path) {
        self.0.push(option.into());
        self.0.push(source.into());
        self.0.push(dest.into());
    }
}

#[cfg(test)]
mod tests {
    use efr_protocol::internal::{Mask, MaskSource, Protected, ProtectedSource, SHM_SIZE, Writable, WritableSource};
    use efr_protocol::wire::Grant;

    use super::*;

    fn strings(args: &[OsString]) -> Vec<&str> {
        args.iter().map(|a| a.to_str().unwrap()).collect()
    }

    fn plan() -> LaunchPlan {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/home/u/p");
        plan.env.insert("HOME".into(), "/home/u".into());
        plan.env.insert("PATH".into(), "/usr/bin:/bin".into());
        plan.writable.push(Writable {
            path: "/home/u/p".into(),
            source: WritableSource::Project,
        });
        plan.writable.push(Writable {
            path: "/home/u/.local/state/efr/s/c1".into(),
            source: WritableSource::Scratch,
        });
        plan.masks.push(Mask {
            path: "/home/u/.ssh".into(),
            source: MaskSource::Default,
        });
        plan.masks.push(Mask {
            path: "/home/u/.netrc".into(),
            source: MaskSource::Default,
        });
        plan.masks.push(Mask {
            path: "/home/u/.aws".into(),
            source: MaskSource::Default,
        });
        plan.masks.push(Mask {
            path: "/home/u/.local/state/efr".into(),
            source: MaskSource::EfrRoot,
        });
        plan
    }

    fn host() -> HostFacts {
        let mut host = HostFacts::default();
        host.masks
            .insert("/home/u/.ssh".into(), MaskTarget::Dir("/home/u/.ssh".into()));
        host.masks
            .insert("/home/u/.netrc".into(), MaskTarget::File("/home/u/.netrc".into()));
        host.masks.insert(
            "/home/u/.local/state/efr".into(),
            MaskTarget::Dir("/data/efr-state".into()),
        );
        host
    }

    #[test]
    fn a_project_call_in_its_own_network() {
        let args = bwrap_args(&plan(), &host(), 7).unwrap();
        assert_eq!(
            strings(&args),
            [
                "--new-session",
                "--die-with-parent",
                "--unshare-all",
                "--unshare-user",
                "--disable-userns",
                "--json-status-fd",
                "7",
                "--clearenv",
                "--setenv",
                "HOME",
                "/home/u",
                "--setenv",
                "PATH",
                "/usr/bin:/bin",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--size",
                "268435456",
                "--tmpfs",
                "/dev/shm",
                "--proc",
                "/proc",
                "--tmpfs",
                "/tmp",
                "--bind",
                "/home/u/p",
                "/home/u/p",
                "--tmpfs",
                "/home/u/.ssh",
                "--ro-bind",
                "/dev/null",
                "/home/u/.netrc",
                // .aws is missing on this host: nothing mounted. The efr root is a link: its target is masked.
                "--tmpfs",
                "/data/efr-state",
                "--bind",
                "/home/u/.local/state/efr/s/c1",
                "/home/u/.local/state/efr/s/c1",
                "--remount-ro",
                "/home/u/.ssh",
                "--remount-ro",
                "/data/efr-state",
                "--chdir",
                "/home/u/p",
            ]
        );
    }

    #[test]
    fn a_bubblewrap_without_size_gets_an_unbounded_shared_memory() {
        let mut plan = plan();
        let bounded = strings(&bwrap_args(&plan, &host(), 3).unwrap()).join(" ");
        assert!(
            bounded.contains(&format!("--size {SHM_SIZE} --tmpfs /dev/shm")),
            "{bounded}"
        );
        plan.shm_size = None;
        let text = strings(&bwrap_args(&plan, &host(), 3).unwrap()).join(" ");
        assert!(!text.contains("--size"), "{text}");
        assert!(text.contains("--dev /dev --tmpfs /dev/shm --proc /proc"), "{text}");
    }

    #[test]
    fn a_bubblewrap_older_than_0_8_gets_no_disable_userns() {
        let mut plan = plan();
        plan.disable_userns = false;
        let text = strings(&bwrap_args(&plan, &host(), 3).unwrap()).join(" ");
        assert!(!text.contains("--disable-userns"), "{text}");
        assert!(text.contains("--unshare-user --json-status-fd 3"), "{text}");
    }

    #[test]
    fn grants_keep_the_network_and_add_binds() {
        let mut plan = plan();
        plan.grants.push(Grant::NetView);
        plan.grants.push(Grant::Device {
            path: "/dev/kvm".into(),
        });
        plan.grants.push(Grant::Socket {
            path: "/run/user/1000/bus".into(),
        });
        plan.grants.push(Grant::Unmask {
            path: "/home/u/.ssh".into(),
        });
        plan.grants.push(Grant::Write {
            path: "/home/u/.cache".into(),
        });
        let args = bwrap_args(&plan, &host(), 3).unwrap();
        let text = strings(&args).join(" ");
        assert!(
            text.contains("--disable-userns --share-net --json-status-fd 3"),
            "{text}"
        );
        assert!(text.contains("--dev-bind /dev/kvm /dev/kvm"), "{text}");
        assert!(text.contains("--bind /run/user/1000/bus /run/user/1000/bus"), "{text}");
        assert!(text.contains("--bind /home/u/.cache /home/u/.cache"), "{text}");
        assert!(!text.contains(".ssh"), "unmasked: {text}");
        plan.grants[0] = Grant::OpenNetwork;
        assert!(strings(&bwrap_args(&plan, &host(), 3).unwrap()).contains(&"--share-net"));
    }

    #[test]
    fn protected_paths_are_bound_over_themselves_or_get_their_placeholder() {
        let mut plan = plan();
        for (path, source) in [
            ("/home/u/p/.git", ProtectedSource::GitDir),
            ("/home/u/p/.git/config", ProtectedSource::GitConfig),
            ("/home/u/p/.git/hooks", ProtectedSource::GitHooks),
            ("/home/u/p/sub/.git", ProtectedSource::GitFile),
            ("/home/u/p/efr", ProtectedSource::EfrRoots),
        ] {
            plan.protected.push(Protected {
                path: path.into(),
                source,
            });
        }
        let mut host = host();
        host.protected
            .insert("/home/u/p/.git".into(), MaskTarget::Dir("/home/u/p/.git".into()));
        host.protected.insert(
            "/home/u/p/.git/config".into(),
            MaskTarget::File("/home/u/p/.git/config".into()),
        );
        // .git/hooks, sub/.git and efr are missing on this host.
        let args = bwrap_args(&plan, &host, 3).unwrap();
        let text = strings(&args).join(" ");
        assert!(
            text.contains(
                "--ro-bind /dev/null /home/u/.netrc --bind /home/u/p/.git /home/u/p/.git --tmpfs /home/u/p/efr \
                 --ro-bind /home/u/p/.git/config"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "--ro-bind /home/u/p/.git/config /home/u/p/.git/config --tmpfs /home/u/p/.git/hooks \
                 --tmpfs /data/efr-state"
            ),
            "{text}"
        );
        assert!(
            !text.contains("sub/.git"),
            "a missing .git file gets no placeholder: {text}"
        );
        assert!(
            text.ends_with(
                "--remount-ro /home/u/.ssh --remount-ro /home/u/p/efr --remount-ro /home/u/p/.git/hooks \
                 --remount-ro /data/efr-state --chdir /home/u/p"
            ),
            "{text}"
        );
        // A missing config gets an empty read-only file; an existing folder a read-only bind.
        host.protected.remove(Path::new("/home/u/p/.git/config"));
        host.protected
            .insert("/home/u/p/efr".into(), MaskTarget::Dir("/home/u/p/efr".into()));
        let text = strings(&bwrap_args(&plan, &host, 3).unwrap()).join(" ");
        assert!(text.contains("--ro-bind /dev/null /home/u/p/.git/config"), "{text}");
        assert!(text.contains("--ro-bind /home/u/p/efr /home/u/p/efr"), "{text}");
    }

    #[test]
    fn host_facts_refuse_a_protected_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("p/.git/hooks")).unwrap();
        std::fs::write(dir.path().join("p/.git/config"), "").unwrap();
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/");
        for (name, source) in [
            ("p/.git/hooks", ProtectedSource::GitHooks),
            ("p/.git/config", ProtectedSource::GitConfig),
            ("p/efr", ProtectedSource::EfrRoots),
        ] {
            plan.protected.push(Protected {
                path: dir.path().join(name),
                source,
            });
        }
        let host = HostFacts::read(&plan).unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            host.protected[&dir.path().join("p/.git/hooks")],
            MaskTarget::Dir(real.join("p/.git/hooks"))
        );
        assert_eq!(
            host.protected[&dir.path().join("p/.git/config")],
            MaskTarget::File(real.join("p/.git/config"))
        );
        assert_eq!(host.protected[&dir.path().join("p/efr")], MaskTarget::Missing);
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), dir.path().join("p/efr")).unwrap();
        let err = HostFacts::read(&plan).unwrap_err();
        assert!(err.to_string().contains("is a link inside a writable root"), "{err}");
    }

    #[test]
    fn the_proxy_socket_is_bound_read_only_at_its_fixed_path() {
        let mut plan = plan();
        plan.grants.push(Grant::Host {
            host: "example.com".into(),
            port: None,
        });
        plan.proxy = Some("/run/user/1000/efr/proxy/7.sock".into());
        let args = bwrap_args(&plan, &host(), 3).unwrap();
        let text = strings(&args).join(" ");
        // Its own network namespace (no --share-net); the bind after the plan's mounts, before the remounts.
        assert!(!text.contains("--share-net"), "{text}");
        assert!(
            text.contains(
                "/home/u/.local/state/efr/s/c1 --ro-bind /run/user/1000/efr/proxy/7.sock /dev/efr-proxy \
                 --remount-ro /home/u/.ssh"
            ),
            "{text}"
        );
        assert_eq!(text.matches("/dev/efr-proxy").count(), 1, "{text}");
        // Without a proxy, no bind.
        let text = strings(&bwrap_args(&super::tests::plan(), &host(), 3).unwrap()).join(" ");
        assert!(!text.contains("efr-proxy"), "{text}");
    }

    #[test]
    fn a_bad_plan_gives_no_arguments() {
        let mut plan = plan();
        plan.grants.push(Grant::Host {
            host: "example.com".into(),
            port: None,
        });
        assert_eq!(bwrap_args(&plan, &host(), 3), Err(PlanError::ProxyMissing));
    }

    #[test]
    fn desktop_and_bus_grants_bind_their_sockets_inside_the_masked_runtime_folder() {
        use efr_protocol::internal::launch::{BusSocket, DesktopSocket};
        use efr_protocol::wire::{Bus, DesktopKind};
        let mut plan = plan();
        plan.masks.push(Mask {
            path: "/run/user/1000".into(),
            source: MaskSource::RunUser,
        });
        plan.grants.push(Grant::Desktop {
            desktop: DesktopKind::Hyprland,
        });
        for name in [".socket.sock", ".socket2.sock"] {
            plan.desktop_sockets.push(DesktopSocket {
                desktop: DesktopKind::Hyprland,
                path: format!("/run/user/1000/hypr/sig/{name}").into(),
            });
        }
        plan.grants.push(Grant::Bus { bus: Bus::Session });
        plan.bus_sockets.push(BusSocket {
            bus: Bus::Session,
            socket: "/run/user/1000/bus".into(),
            path: "/run/user/1000/bus".into(),
        });
        let mut host = host();
        host.masks
            .insert("/run/user/1000".into(), MaskTarget::Dir("/run/user/1000".into()));
        let text = strings(&bwrap_args(&plan, &host, 3).unwrap()).join(" ");
        let mask = text.find("--tmpfs /run/user/1000 ").unwrap();
        for bind in [
            "--bind /run/user/1000/bus /run/user/1000/bus",
            "--bind /run/user/1000/hypr/sig/.socket.sock /run/user/1000/hypr/sig/.socket.sock",
            "--bind /run/user/1000/hypr/sig/.socket2.sock /run/user/1000/hypr/sig/.socket2.sock",
        ] {
            let at = text.find(bind).unwrap_or_else(|| panic!("no {bind}: {text}"));
            assert!(at > mask, "{bind} before the mask: {text}");
        }
        assert!(!text.contains("--share-net"), "{text}");
        // A desktop grant without its sockets gives no arguments.
        plan.desktop_sockets.clear();
        assert!(matches!(
            bwrap_args(&plan, &host, 3),
            Err(PlanError::RefusedGrant { kind: "desktop", .. })
        ));
    }

    #[test]
    fn host_facts_refuse_a_desktop_socket_that_is_not_a_socket() {
        use efr_protocol::internal::launch::DesktopSocket;
        use efr_protocol::wire::DesktopKind;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("wayland-9");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        std::os::unix::fs::symlink(&socket, dir.path().join("link")).unwrap();
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/");
        plan.grants.push(Grant::Desktop {
            desktop: DesktopKind::Wayland,
        });
        let with = |name: &str| {
            let mut plan = plan.clone();
            plan.desktop_sockets.push(DesktopSocket {
                desktop: DesktopKind::Wayland,
                path: dir.path().join(name),
            });
            HostFacts::read(&plan)
        };
        assert!(with("wayland-9").is_ok());
        for name in ["file", "link", "missing"] {
            let err = with(name).unwrap_err();
            assert!(err.to_string().contains("desktop socket"), "{name}: {err}");
        }
    }

    #[test]
    fn args_are_nul_terminated() {
        assert_eq!(encode_args(&["--a".into(), "b c".into()]), b"--a\0b c\0");
    }

    #[test]
    fn host_facts_follow_links_and_skip_missing_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("store")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("store"), dir.path().join("link")).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/");
        for name in ["link", "file", "missing"] {
            plan.masks.push(Mask {
                path: dir.path().join(name),
                source: MaskSource::Config,
            });
        }
        let host = HostFacts::read(&plan).unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            host.masks[&dir.path().join("link")],
            MaskTarget::Dir(real.join("store"))
        );
        assert_eq!(
            host.masks[&dir.path().join("file")],
            MaskTarget::File(real.join("file"))
        );
        assert_eq!(host.masks[&dir.path().join("missing")], MaskTarget::Missing);
    }
}
