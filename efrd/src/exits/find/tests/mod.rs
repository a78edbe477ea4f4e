//! The finder's tests: the table of lines ([`table`]), patches and reports ([`report`]), and the pure helpers.
//!
//! Every test runs in [`Fixture`]: home `/home/u`, the project `/home/u/proj` (where each line starts), `$SCRATCH`
//! writable, the default credential stores and the runtime folder masked, `[network] allow` holding the crates.io
//! hosts and `allowed.example`, the project's remote on `github.com`, a Wayland desktop with Hyprland and X11 (no
//! Sway, i3 or niri), the bus filter running, and two processes of the user: 1234 running `/usr/bin/node`, 999
//! running efrd.

mod lines;
mod report;
mod table;

use std::path::{Path, PathBuf};

use efr_protocol::internal::DEFAULT_HOME_MASKS;
use efr_protocol::wire::{Desktop, ExitRecord, Grant, TargetClass};

use super::ExitContext;
use efr_policy::analysis::{Scope, analyse};
use efr_policy::{EfrDirs, ShellCall};

pub(super) const HOME: &str = "/home/u";
pub(super) const PROJECT: &str = "/home/u/proj";

/// What an [`ExitContext`] borrows.
pub(super) struct Fixture {
    pub project_roots: Vec<PathBuf>,
    pub writable_roots: Vec<PathBuf>,
    pub efr_dirs: EfrDirs,
    pub masked: Vec<PathBuf>,
    pub project_remotes: Vec<String>,
    pub desktop: Desktop,
}

impl Fixture {
    pub fn new() -> Self {
        let home = Path::new(HOME);
        let efr_dirs = EfrDirs {
            config: Some(home.join(".config/efr")),
            data: Some(home.join(".local/share/efr")),
            state: Some(home.join(".local/state/efr")),
            runtime: Some(PathBuf::from("/run/user/1000/efr")),
            scratch: Some(home.join(".local/state/efr/scratch")),
        };
        let mut masked: Vec<PathBuf> = DEFAULT_HOME_MASKS.iter().map(|m| home.join(m)).collect();
        masked.push(PathBuf::from("/run/user/1000"));
        Self {
            project_roots: vec![PathBuf::from(PROJECT)],
            writable_roots: vec![PathBuf::from(PROJECT), home.join(".local/state/efr/scratch/c1")],
            efr_dirs,
            masked,
            project_remotes: vec!["github.com".to_owned()],
            desktop: Desktop {
                wayland_display: Some("wayland-1".to_owned()),
                display: Some(":0".to_owned()),
                hyprland_instance_signature: Some("abc".to_owned()),
                ..Desktop::default()
            },
        }
    }

    pub fn ctx(&self) -> ExitContext<'_> {
        ExitContext {
            cwd: Path::new(PROJECT),
            project_roots: &self.project_roots,
            writable_roots: &self.writable_roots,
            home: Some(Path::new(HOME)),
            efr_dirs: &self.efr_dirs,
            masked: &self.masked,
            allowed_hosts: &|host, _port| {
                matches!(
                    host,
                    "crates.io" | "index.crates.io" | "static.crates.io" | "allowed.example"
                )
            },
            project_remotes: &self.project_remotes,
            desktop: Some(&self.desktop),
            bus_filter: true,
            program_of: &|pid| match pid {
                1234 => Some(PathBuf::from("/usr/bin/node")),
                999 => Some(PathBuf::from("/usr/local/bin/efrd")),
                _ => None,
            },
        }
    }
}

/// A shell call of `line` in the project.
pub(super) fn call(line: &str) -> ShellCall {
    ShellCall {
        command: line.to_owned(),
        cwd: PathBuf::from(PROJECT),
    }
}

/// The exits of `line`, parsed and analysed as the turn does.
pub(super) fn line(line: &str, ctx: &ExitContext<'_>) -> Vec<ExitRecord> {
    let scope = Scope {
        cwd: ctx.cwd,
        project_roots: ctx.project_roots,
        home: ctx.home,
        efr: ctx.efr_dirs,
        extra_read_only: &[],
        extra_masks: &[],
    };
    let analysis = analyse(line, &scope);
    super::line_exits(&call(line), &analysis, ctx)
}

/// A path as the table writes it: `~` for the home.
fn short(path: &Path) -> String {
    let text = path.display().to_string();
    match text.strip_prefix(HOME) {
        Some(rest) => format!("~{rest}"),
        None => text,
    }
}

/// One record in the table's words: the kind, then its needs (`write:~/x`, `host:h`, `unsandboxed`, …), its
/// targets (`>~/x(home)`, `m` masked, `b` backed up), hosts (`@h`, `*` a project remote), `read` for
/// desktop_read and the bus names (`#name`). Outside commands are left out (the command is the line).
pub(super) fn render(record: &ExitRecord) -> String {
    let mut parts = vec![
        serde_json::to_value(record.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default(),
    ];
    for grant in &record.needs.grants {
        parts.push(match grant {
            Grant::Write { path } => format!("write:{}", short(path)),
            Grant::Host { host, port } => match port {
                Some(port) => format!("host:{host}:{port}"),
                None => format!("host:{host}"),
            },
            Grant::OpenNetwork => "open_network".to_owned(),
            Grant::Socket { path } => format!("socket:{}", short(path)),
            Grant::Bus { bus } => format!("bus:{}", wire(bus)),
            Grant::BusFilter { bus } => format!("bus_filter:{}", wire(bus)),
            Grant::Device { path } => format!("device:{}", short(path)),
            Grant::Unmask { path } => format!("unmask:{}", short(path)),
            Grant::Desktop { desktop } => format!("desktop:{}", wire(desktop)),
            Grant::NetView => "net_view".to_owned(),
            Grant::Unknown => "unknown".to_owned(),
        });
    }
    if record.needs.unsandboxed {
        parts.push("unsandboxed".to_owned());
    }
    for target in &record.targets {
        let mut text = format!(">{}({})", short(&target.path), wire(&target.class));
        if target.masked {
            text.push('m');
        }
        if target.backup_before_write {
            text.push('b');
        }
        parts.push(text);
    }
    for host in &record.facts.hosts {
        let mut text = format!("@{}", host.host);
        if let Some(port) = host.port {
            text.push_str(&format!(":{port}"));
        }
        if host.project_remote {
            text.push('*');
        }
        parts.push(text);
    }
    if record.facts.desktop_read {
        parts.push("read".to_owned());
    }
    for name in &record.facts.bus_names {
        parts.push(format!("#{name}"));
    }
    parts.join(" ")
}

/// A wire enum's name.
fn wire<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

#[test]
fn remote_hosts_reads_https_ssh_and_scp_urls_and_drops_credentials() {
    let config = r#"
[core]
	url = https://not-a-remote.example/x
[remote "origin"]
	url = https://ada:s3cret@GitHub.com/org/repo.git
	fetch = +refs/heads/*:refs/remotes/origin/*
[remote "mirror"]
	url = ssh://git@gitlab.example.org:2222/org/repo
	pushurl = git@Codeberg.org:org/repo.git
[remote "local"]
	url = /srv/git/repo.git
[branch "main"]
	remote = origin
[remote "again"]
	url = git@github.com:org/other.git
"#;
    let hosts = super::remote_hosts(config);
    assert_eq!(hosts, ["github.com", "gitlab.example.org", "codeberg.org"]);
    assert!(hosts.iter().all(|h| !h.contains("ada") && !h.contains("s3cret")));
    assert!(super::remote_hosts("").is_empty());
    assert!(super::remote_hosts("[remote \"x\"]\n\turl = file:///srv/repo\n").is_empty());
}

#[test]
fn url_and_ssh_hosts_take_ports_and_drop_users() {
    let h = super::url_host("https://user:pw@Example.ORG.:8443/x?y").unwrap();
    assert_eq!((h.host.as_str(), h.port), ("example.org", Some(8443)));
    assert_eq!(super::url_host("http://example.org/").unwrap().port, Some(80));
    assert!(super::url_host("http://example.org/").unwrap().plain);
    assert!(!super::url_host("HTTPS://example.org/").unwrap().plain);
    assert_eq!(super::url_host("https://example.org").unwrap().port, None);
    assert_eq!(super::url_host("https://[::1]:8080/").unwrap().host, "::1");
    assert!(super::url_host("example.org/x").is_none());
    assert!(super::url_host("javascript://x").is_none());
    let h = super::ssh_host("git@Host.example", Some(2222)).unwrap();
    assert_eq!((h.host.as_str(), h.port), ("host.example", Some(2222)));
    assert!(super::scp_host("src/main.rs").is_none());
    assert!(super::scp_host("./a:b").is_none());
    assert_eq!(super::scp_host("me@box:dir/").unwrap().host, "box");
}

#[test]
fn target_classes() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let class = |p: &str| ctx.target_class(Path::new(p));
    assert_eq!(class("/home/u/notes/x.md"), TargetClass::Home);
    assert_eq!(class("/etc/hosts"), TargetClass::System);
    assert_eq!(class("/usr/lib/node_modules/x"), TargetClass::System);
    assert_eq!(class("/tmp/x"), TargetClass::Temp);
    assert_eq!(class("/var/tmp/x"), TargetClass::Temp);
    assert_eq!(class("/dev/kvm"), TargetClass::Device);
    assert_eq!(class("/home/u/.cache/pip"), TargetClass::Cache);
    assert_eq!(class("/home/u/.cargo/registry/src"), TargetClass::Cache);
    assert_eq!(class("/home/u/other/target/debug"), TargetClass::BuildOutput);
    assert_eq!(class("/home/u/code/app/node_modules"), TargetClass::BuildOutput);
    assert_eq!(
        class("/home/u/build/notes.txt"),
        TargetClass::Home,
        "the user's own ~/build"
    );
    assert_eq!(class("/home/u/.local/share/Trash/files/x"), TargetClass::Trash);
    let read_only = Fixture {
        writable_roots: Vec::new(),
        ..Fixture::new()
    };
    assert_eq!(
        read_only.ctx().target_class(Path::new("/home/u/proj/a")),
        TargetClass::Project
    );
}

#[test]
fn write_grants_are_the_narrowest_folder_and_never_a_floor_s() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let grant = |p: &str| ctx.write_grant(Path::new(p));
    assert_eq!(grant("/home/u/notes/x.md"), Path::new("/home/u/notes"));
    assert_eq!(grant("/home/u/x.md"), Path::new("/home/u/x.md"), "never the home");
    assert_eq!(grant("/etc/hosts"), Path::new("/etc/hosts"), "never a top-level folder");
    assert_eq!(
        grant("/home/u/.config/app.conf"),
        Path::new("/home/u/.config/app.conf"),
        "holds autostart"
    );
    assert_eq!(
        grant("/home/u/.local/x"),
        Path::new("/home/u/.local/x"),
        "holds efr's roots"
    );
    assert_eq!(grant("/home/u/a/b/../c"), Path::new("/home/u/a"));
}

#[test]
fn floor_files() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    for floor in [
        "/home/u/.bashrc",
        "/home/u/.gitconfig",
        "/home/u/.ssh/config",
        "/home/u/.config/autostart/x.desktop",
    ] {
        assert!(ctx.floor_file(Path::new(floor)), "{floor}");
    }
    for plain in [
        "/home/u/.bashrc.bak",
        "/home/u/.config/autostartx",
        "/etc/profile",
        "/home/u/proj/.bashrc",
    ] {
        assert!(!ctx.floor_file(Path::new(plain)), "{plain}");
    }
}
