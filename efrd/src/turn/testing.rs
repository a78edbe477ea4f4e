//! What the turn's unit tests share: a [`ToolEnv`] in a temporary folder, with a real hidden shell (bash) that
//! starts in its `home/`, which is also the project.

use std::path::Path;
use std::sync::Arc;

use efr_protocol::wire::{Mode, Origin};

use super::env::ToolEnv;
use crate::bus::{BusSupervisor, CallBus};
use crate::network::{CallNetwork, ProxySupervisor};
use crate::sandbox::plan::Layout;
use crate::sandbox::{ProbeOptions, SandboxState};
use crate::tools::shell::{ShellKind, ShellOptions, ShellSlot};

/// A tool env of `mode` under `dir`: the project and the shell's start are `dir/home`, the sandbox's bubblewrap is
/// `bwrap` and its launcher is missing (a contained call cannot start).
pub fn tool_env(dir: &Path, bwrap: &str, mode: Mode) -> ToolEnv {
    let home = dir.join("home");
    let run = dir.join("run");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&run).unwrap();
    let options = ProbeOptions {
        launcher: "/nonexistent/efr-launcher".into(),
        bwrap: Some(bwrap.into()),
        home: home.clone(),
        runtime_dir: dir.join("run-user"),
        netview_off: false,
        bus_off: false,
        kernel: Default::default(),
    };
    let proxy = Arc::new(ProxySupervisor::new(
        "/nonexistent/efr-proxy".into(),
        dir.join("run/proxy"),
    ));
    let bus = Arc::new(BusSupervisor::new(
        "/nonexistent/efr-bus-proxy".into(),
        dir.join("run/bus"),
    ));
    let layout = Layout {
        home: home.clone(),
        runtime_dir: dir.join("run-user"),
        efr_roots: vec![dir.join("state")],
        scratch_root: dir.join("state/scratch"),
        config_masks: Vec::new(),
    };
    ToolEnv {
        efr_dirs: efr_policy::EfrDirs::default(),
        home: Some(home.clone()),
        shell: Arc::new(tokio::sync::Mutex::new(ShellSlot::new(ShellOptions::new(
            ShellKind::Bash,
            home.clone(),
            run,
        )))),
        cwd: home.clone(),
        roots: vec![home],
        mode,
        origin: Origin::Terminal,
        question_limit_secs: None,
        snapshots: None,
        call_snapshots: Arc::default(),
        presence: None,
        sandbox: Arc::new(SandboxState::new(options, Arc::clone(&proxy), Arc::clone(&bus))),
        network: CallNetwork {
            allow: Vec::new(),
            deny: Vec::new(),
            home: None,
            proxy,
        },
        bus: CallBus {
            config: crate::config::BusSection::default(),
            session: None,
            proxy: bus,
            runtime_dir: dir.join("run-user"),
        },
        scratch: layout.scratch_root.join("c1"),
        desktop: None,
        layout,
        exits: super::env::TurnExits::default(),
        jobs: None,
    }
}
