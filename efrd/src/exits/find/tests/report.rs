//! The exits of a patch and of a failed call's report.

use std::path::PathBuf;

use efr_protocol::wire::{BlockReason, Blocked, Bus, BusRefusal, ExitAction, ExitKind, ExitSource, SandboxSummary};

use super::{Fixture, call, line, render};
use crate::exits::find::report::{missing_paths, refused_writes};
use crate::exits::find::{patch_exits, report_exits};
use efr_policy::{ChangeKind, PatchChange};

fn change(path: &str, kind: ChangeKind) -> PatchChange {
    PatchChange {
        path: PathBuf::from(path),
        kind,
    }
}

fn blocked(host: &str, port: u16, reason: BlockReason) -> Blocked {
    Blocked {
        host: host.to_owned(),
        port,
        reason,
        count: 1,
    }
}

fn refusal(bus: Bus, name: &str) -> BusRefusal {
    BusRefusal {
        bus,
        name: name.to_owned(),
        member: Some("Notify".to_owned()),
        path: None,
        count: 1,
    }
}

#[test]
fn a_patch_inside_the_writable_roots_needs_no_exit() {
    let fixture = Fixture::new();
    let changes = [
        change("/home/u/proj/src/a.rs", ChangeKind::Update),
        change("/home/u/proj/b.rs", ChangeKind::Add),
        change("/home/u/.local/state/efr/scratch/c1/x", ChangeKind::Delete),
    ];
    assert!(patch_exits(&changes, "*** Begin Patch", &fixture.ctx()).is_empty());
}

#[test]
fn a_patch_outside_is_a_write_or_a_delete_with_the_narrowest_grant() {
    let fixture = Fixture::new();
    let changes = [
        change("/home/u/notes/x.md", ChangeKind::Update),
        change("/home/u/notes/y.md", ChangeKind::Add),
        change("/home/u/old/z.md", ChangeKind::Delete),
        change(
            "/home/u/proj/m.rs",
            ChangeKind::Move {
                to: "/home/u/elsewhere/m.rs".into(),
            },
        ),
    ];
    let records = patch_exits(&changes, "patch", &fixture.ctx());
    let got: Vec<String> = records.iter().map(render).collect();
    assert_eq!(
        got,
        [
            "write write:~/notes write:~/elsewhere >~/notes/x.md(home) >~/notes/y.md(home) >~/elsewhere/m.rs(home)",
            "delete write:~/old >~/old/z.md(home)",
        ]
    );
    assert!(
        records
            .iter()
            .all(|r| r.source == ExitSource::Edit && r.action.edit.is_none())
    );
    assert_eq!(records[0].action.tool, "apply_patch");
}

#[test]
fn a_patch_of_a_floor_file_is_a_floor_edit_carrying_the_patch_cut_at_8_kib() {
    let fixture = Fixture::new();
    let text = format!("*** Update File: ~/.bashrc\n+{}", "é".repeat(5000));
    let records = patch_exits(&[change("/home/u/.bashrc", ChangeKind::Update)], &text, &fixture.ctx());
    let got: Vec<String> = records.iter().map(render).collect();
    assert_eq!(got, ["floor_edit write:~/.bashrc >~/.bashrc(home)b"]);
    let edit = records[0].action.edit.as_deref().unwrap_or_default();
    assert!(edit.len() <= ExitAction::MAX_EDIT_BYTES && edit.len() > ExitAction::MAX_EDIT_BYTES - 4);
    assert!(text.starts_with(edit));
    let short = patch_exits(
        &[change("/home/u/.gitconfig", ChangeKind::Update)],
        "tiny",
        &fixture.ctx(),
    );
    assert_eq!(short[0].action.edit.as_deref(), Some("tiny"));
}

#[test]
fn a_patch_of_a_masked_file_is_an_unmask_too_and_a_floor_is_never_an_exit() {
    let fixture = Fixture::new();
    let records = patch_exits(
        &[change("/home/u/.aws/config", ChangeKind::Update)],
        "p",
        &fixture.ctx(),
    );
    let got: Vec<String> = records.iter().map(render).collect();
    assert_eq!(
        got,
        [
            "unmask unmask:~/.aws >~/.aws/config(home)m",
            "write write:~/.aws/config >~/.aws/config(home)m"
        ]
    );
    for floor in [
        "/home/u/.config/efr/config.toml",
        "/home/u/.local/state/efr/keys/k",
        "/dev/sda",
    ] {
        assert!(
            patch_exits(&[change(floor, ChangeKind::Update)], "p", &fixture.ctx()).is_empty(),
            "{floor}"
        );
    }
    assert!(patch_exits(&[change("relative/x", ChangeKind::Add)], "p", &fixture.ctx()).is_empty());
}

#[test]
fn blocked_hosts_are_host_exits_from_the_proxy() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let summary = SandboxSummary {
        proxied: true,
        blocked: vec![
            blocked("Example.org.", 443, BlockReason::NotAllowed),
            blocked("api.example.com", 8443, BlockReason::NotAllowed),
            blocked("github.com", 443, BlockReason::NotAllowed),
            blocked("tokens.example", 443, BlockReason::Denied),
            blocked("10.0.0.1", 443, BlockReason::IpLiteral),
            blocked("odd.example", 443, BlockReason::BadRequest),
        ],
        ..SandboxSummary::default()
    };
    let records = report_exits(&call("python3 fetch.py"), &summary, "", &[], &ctx);
    let got: Vec<String> = records.iter().map(render).collect();
    assert_eq!(
        got,
        [
            "host host:example.org host:api.example.com:8443 host:github.com @example.org @api.example.com:8443 @github.com*",
            "open_network open_network @10.0.0.1",
        ]
    );
    assert!(records.iter().all(|r| r.source == ExitSource::Proxy));
}

#[test]
fn a_blocked_host_of_an_upload_line_is_an_upload_and_what_the_line_asked_is_not_repeated() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let summary = SandboxSummary {
        blocked: vec![
            blocked("x.example", 443, BlockReason::NotAllowed),
            blocked("y.example", 443, BlockReason::NotAllowed),
        ],
        ..SandboxSummary::default()
    };
    let command = "curl -T a.txt https://x.example/ && python3 send.py";
    let already = line(command, &ctx);
    let records = report_exits(&call(command), &summary, "", &already, &ctx);
    let got: Vec<String> = records.iter().map(render).collect();
    assert_eq!(got, ["upload host:y.example @y.example"]);
}

#[test]
fn bus_refusals_are_bus_exits_per_bus_and_a_lost_bus_is_none() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let summary = SandboxSummary {
        bus_refused: vec![
            refusal(Bus::Session, "org.freedesktop.Notifications"),
            refusal(Bus::Session, "org.freedesktop.Notifications"),
            refusal(Bus::Session, "org.freedesktop.DBus"),
            refusal(Bus::System, "org.freedesktop.login1"),
        ],
        ..SandboxSummary::default()
    };
    let records = report_exits(&call("./notify.sh"), &summary, "", &[], &ctx);
    let got: Vec<String> = records.iter().map(render).collect();
    assert_eq!(
        got,
        ["bus bus_filter:session bus_filter:system #org.freedesktop.Notifications #org.freedesktop.login1"]
    );
    assert!(records.iter().all(|r| r.source == ExitSource::BusProxy));
    let secret = SandboxSummary {
        bus_refused: vec![refusal(Bus::Session, "org.freedesktop.secrets")],
        ..SandboxSummary::default()
    };
    let got: Vec<String> = report_exits(&call("./x"), &secret, "", &[], &ctx)
        .iter()
        .map(render)
        .collect();
    assert_eq!(got, ["bus bus:session #org.freedesktop.secrets"]);
    let lost = SandboxSummary {
        bus_refused: vec![refusal(Bus::Session, "org.freedesktop.DBus")],
        ..SandboxSummary::default()
    };
    assert!(report_exits(&call("./x"), &lost, "", &[], &ctx).is_empty());
}

#[test]
fn refused_writes_in_the_output_are_write_delete_and_floor_edit_exits() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let output = "\
touch: cannot touch '/home/u/notes/a.md': Read-only file system
bash: line 1: /home/u/x.log: Read-only file system
rm: cannot remove '/home/u/.cache/pip/http': Read-only file system
npm ERR! Error: EACCES: permission denied, mkdir '/usr/local/lib/node_modules/typescript'
sed: couldn't open temporary file /home/u/.bashrc.tmp: Read-only file system
cp: cannot create regular file '/home/u/.profile': Permission denied
OSError: [Errno 30] Read-only file system: '/home/u/proj/ok.txt'
touch: cannot touch '/tmp/private': Read-only file system
mkdir: cannot create directory '/home/u/.config/efr/x': Read-only file system
";
    let records = report_exits(&call("./install.sh"), &SandboxSummary::default(), output, &[], &ctx);
    let got: Vec<String> = records.iter().map(render).collect();
    assert_eq!(
        got,
        [
            "write write:~/notes write:~/x.log write:/usr/local/lib/node_modules write:~/.bashrc.tmp \
             >~/notes/a.md(home) >~/x.log(home) >/usr/local/lib/node_modules/typescript(system) >~/.bashrc.tmp(home)",
            "delete write:~/.cache/pip >~/.cache/pip/http(cache)",
            "floor_edit write:~/.profile >~/.profile(home)b",
        ]
    );
    assert!(records.iter().all(|r| r.source == ExitSource::Report));
}

#[test]
fn a_read_that_was_denied_is_no_write_and_an_output_never_widens_a_grant() {
    let paths = refused_writes("cat: /etc/shadow: Permission denied\n./run.sh: Permission denied\n");
    assert!(paths.is_empty(), "{paths:?}");
    // The shell's own path is not the refused write's: a relative path names nothing to grant.
    let paths = refused_writes("/usr/bin/bash: line 1: .git/config: Read-only file system\n");
    assert!(paths.is_empty(), "{paths:?}");
    let paths = refused_writes("/usr/bin/bash: line 3: /home/u/x.log: Read-only file system\n");
    assert_eq!(paths, [(PathBuf::from("/home/u/x.log"), false)]);
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    // A path that names the home, a top-level folder or a folder that holds a floor file: the file alone.
    let output = "touch: cannot touch '/home/u/evil': Read-only file system\n\
                  touch: cannot touch '/opt/x': Read-only file system\n\
                  touch: cannot touch '/home/u/.config/x.conf': Read-only file system\n";
    let records = report_exits(&call("./x"), &SandboxSummary::default(), output, &[], &ctx);
    let got: Vec<String> = records.iter().map(render).collect();
    assert_eq!(
        got,
        [
            "write write:~/evil write:/opt/x write:~/.config/x.conf >~/evil(home) >/opt/x(system) >~/.config/x.conf(home)"
        ]
    );
}

#[test]
fn a_write_the_line_already_asked_for_is_not_repeated() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let command = "echo note >> ~/notes/todo.md";
    let already = line(command, &ctx);
    assert_eq!(already[0].kind, ExitKind::Write);
    let output = "bash: /home/u/notes/todo.md: Read-only file system";
    assert!(report_exits(&call(command), &SandboxSummary::default(), output, &already, &ctx).is_empty());
}

#[test]
fn a_blocked_host_is_an_upload_only_when_the_line_sends_data() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let summary = SandboxSummary {
        blocked: vec![blocked("files.example", 443, BlockReason::NotAllowed)],
        ..SandboxSummary::default()
    };
    let kinds = |command: &str| -> Vec<ExitKind> {
        report_exits(&call(command), &summary, "", &[], &ctx)
            .iter()
            .map(|r| r.kind)
            .collect()
    };
    // The URL expands, so the line's own exits name no host; the file still leaves.
    assert_eq!(kinds("curl -T build.tgz \"$URL\""), [ExitKind::Upload]);
    assert_eq!(kinds("npm i @types/node"), [ExitKind::Host]);
    assert_eq!(kinds("python3 -c 'import urllib.request'"), [ExitKind::Host]);
}

#[test]
fn a_masked_path_the_call_could_not_find_is_an_unmask_exit() {
    let fixture = Fixture::new();
    let ctx = fixture.ctx();
    let output = "\
cat: /home/u/.ssh/id_rsa: No such file or directory
ls: cannot access '/run/user/1000/bus': No such file or directory
cat: /home/u/proj/missing.txt: No such file or directory
";
    assert_eq!(missing_paths(output).len(), 3);
    let records = report_exits(&call("./deploy.sh"), &SandboxSummary::default(), output, &[], &ctx);
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = &records[0];
    assert_eq!((record.kind, record.source), (ExitKind::Unmask, ExitSource::Report));
    assert_eq!(
        record.needs.grants,
        [efr_protocol::wire::Grant::Unmask {
            path: PathBuf::from("/home/u/.ssh")
        }]
    );
    assert!(record.targets[0].masked, "{record:?}");
    // Asked for on the line already: not again.
    let again = report_exits(&call("./deploy.sh"), &SandboxSummary::default(), output, &records, &ctx);
    assert!(again.is_empty(), "{again:?}");
}
