//! `cargo xtask demo [--release] [--no-systemd]`: the main job from the README, end to end, on this machine.
//!
//! 1. builds the binaries (debug by default, `--release` for optimised ones; the first line says which);
//! 2. copies `demo/sample` (a tiny Python project whose `mean` has an off-by-one, so two unittests fail) to a fresh
//!    folder under the target folder (not `/tmp`: a contained call gets a private `/tmp`);
//! 3. starts the scripted model server (`efr-scripted-model demo/script.json`) unless `OPENAI_API_KEY` or
//!    `ANTHROPIC_API_KEY` is set, in which case that provider is used for real (it needs the network);
//! 4. starts efrd through real socket activation: as root, a `systemd --user` manager (efr-test-support's
//!    [`UserManager`], docs/architecture.md, "Testing") with the units installed by `efr daemon install`; otherwise
//!    (and with `--no-systemd`) `systemd-socket-activate` in a temporary `EFR_HOME`. Either way efrd starts on the first connection;
//! 5. logs in with `efr login --api-key` (the key on stdin), runs `efr --mode auto "The tests fail. Fix the bug."`
//!    in the copy and prints its transcript (efr's plain format, as a pipe gets it);
//! 6. runs the sample's tests itself and ends with `sample tests pass`, or fails.
//!
//! [`run`] with [`Options::installed`] runs the same job against the programs and units the Debian package installed
//! (`cargo xtask deb-check`).
//!
//! The script makes the model run the tests (they fail), read `calc.py`, fix it with apply_patch, run the tests
//! again (they pass) and sum up. The demo checks the outcome only (the tests pass afterwards), not how each call
//! ran, so it holds whatever launch kind the mode gives a call.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use efr_test_support::scripted::Script;
use efr_test_support::systemd::{UserManager, require_root};

use crate::cmd::{self, cargo, target_outside_tmp};

/// The prompt of the demo.
pub const PROMPT: &str = "The tests fail. Fix the bug.";
/// The longest the prompt may take.
const TURN_TIMEOUT: Duration = Duration::from_secs(300);
/// A placeholder key for the scripted server, which checks none (never a real key).
const SCRIPTED_KEY: &str = "sk-demo-scripted-0000000000000000";
/// The binaries the demo runs: efr, efrd and what efrd starts, and the scripted model server.
const PACKAGES: [&str; 6] = [
    "efr",
    "efrd",
    "efr-launcher",
    "efr-proxy",
    "efr-bus-proxy",
    "efr-test-support",
];

/// How the demo runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Optimised binaries.
    pub release: bool,
    /// `systemd-socket-activate` instead of a `systemd --user` manager.
    pub no_systemd: bool,
    /// Run the programs and units the efr package installed (`/usr/bin/efr`, `/usr/bin/efrd`, the helpers in
    /// `/usr/libexec/efr`, the units of `/usr/lib/systemd/user` enabled for every user) instead of the build's: no
    /// `efr daemon install`, a `systemd --user` manager required. Only the scripted model server comes from the
    /// build. The manager's folders are kept under `<target>/demo-installed/systemd` for the next step.
    pub installed: bool,
}

/// What a demo leaves for the steps after it.
#[derive(Debug)]
pub struct Outcome {
    /// The conversation of the demo's turn (from efr's last line).
    pub conversation: Option<String>,
    /// The root of the `systemd --user` manager's folders, when one ran.
    pub manager_root: Option<PathBuf>,
}

/// Runs the demo from the workspace `root`; `args` may hold `--release` and `--no-systemd`.
///
/// # Errors
/// Any step that fails, named; the sample's tests failing at the end.
pub fn demo(root: &Path, args: &[&str]) -> Result<()> {
    let mut options = Options::default();
    for arg in args {
        match *arg {
            "--release" => options.release = true,
            "--no-systemd" => options.no_systemd = true,
            _ => bail!("usage: cargo xtask demo [--release] [--no-systemd]"),
        }
    }
    run(root, &options).map(|_| ())
}

/// Runs the demo with `options` (see [`demo`]).
///
/// # Errors
/// Any step that fails, named; the sample's tests failing at the end.
pub fn run(root: &Path, options: &Options) -> Result<Outcome> {
    let started = Instant::now();
    let target = target_dir(root);
    let profile = if options.release { "release" } else { "debug" };
    println!("==> building the {profile} binaries in {}", target.display());
    let mut build = cargo();
    build.env("CARGO_TARGET_DIR", &target).args(["build", "--bins"]);
    let packages: &[&str] = if options.installed {
        &["efr-test-support"]
    } else {
        &PACKAGES
    };
    for package in packages {
        build.args(["-p", package]);
    }
    if options.release {
        build.arg("--release");
    }
    cmd::run("cargo build", &mut build)?;
    let built = target.join(profile);
    let bin = if options.installed {
        println!("==> running the installed efr: /usr/bin/efr, /usr/bin/efrd, /usr/libexec/efr/, efrd's user units");
        PathBuf::from("/usr/bin")
    } else {
        built.clone()
    };

    let work = target.join(if options.installed { "demo-installed" } else { "demo" });
    if work.exists() {
        std::fs::remove_dir_all(&work).with_context(|| format!("cannot remove the last demo at {}", work.display()))?;
    }
    let sample = work.join("sample");
    copy_dir(&root.join("demo").join("sample"), &sample)?;
    println!("==> the sample project is in {}", sample.display());

    let provider = Provider::from_env();
    let model = start_model(root, &built, &provider)?;
    let base_url = model.as_ref().map(|server| server.base_url.clone());

    if options.installed && options.no_systemd {
        bail!("the installed programs run under a systemd --user manager only");
    }
    let daemon = Daemon::start(&work, &bin, !options.no_systemd, options.installed)?;
    let config = config_toml(&provider, base_url.as_deref());
    let config_dir = daemon.config_dir();
    std::fs::create_dir_all(&config_dir)?;
    std::fs::write(config_dir.join("config.toml"), config)?;
    if let Daemon::Systemd(manager) = &daemon {
        if options.installed {
            units_of_the_package(manager)?;
        } else {
            daemon_install(&bin, &daemon, manager)?;
        }
    }

    println!("==> efr login --api-key --provider {}", provider.name());
    let mut login = efr_command(&bin, &daemon)
        .args(["login", "--api-key", "--provider", provider.name()])
        .stdin(Stdio::piped())
        .spawn()
        .context("cannot run efr login")?;
    if let Some(mut stdin) = login.stdin.take() {
        stdin.write_all(provider.key().as_bytes())?;
    }
    let status = login.wait()?;
    if !status.success() {
        bail!("efr login failed ({status}){}", daemon.log_hint());
    }

    println!("==> efr --mode auto {PROMPT:?}   (in {})", sample.display());
    println!();
    let (status, conversation) = run_prompt(&bin, &daemon, &sample)?;
    println!();
    println!("==> efr exited with {status}");

    sample_tests_pass(&sample, started)?;
    let manager_root = match &daemon {
        Daemon::Systemd(manager) => Some(manager.root().to_path_buf()),
        Daemon::SocketActivate { .. } => None,
    };
    Ok(Outcome {
        conversation,
        manager_root,
    })
}

/// The scripted model server, unless a real provider is used (`None` then).
fn start_model(root: &Path, built: &Path, provider: &Provider) -> Result<Option<ScriptedServer>> {
    match provider {
        Provider::Scripted => {
            // A broken script says so here rather than as a 500 in the middle of the turn.
            load_script(root)?;
            let server = ScriptedServer::start(
                &built.join("efr-scripted-model"),
                &root.join("demo").join("script.json"),
            )?;
            println!(
                "==> the scripted model server stands in for the provider at {}",
                server.base_url
            );
            Ok(Some(server))
        }
        Provider::Real { name, .. } => {
            println!("==> using {name} for real (a key is set in the environment)");
            Ok(None)
        }
    }
}

/// Runs the sample's tests (the demo's verdict).
fn sample_tests_pass(sample: &Path, started: Instant) -> Result<()> {
    println!("==> python3 -m unittest (the sample's tests, run by the demo)");
    let tests = Command::new("python3")
        .args(["-m", "unittest"])
        .current_dir(sample)
        .output()
        .context("cannot run python3")?;
    let elapsed = started.elapsed().as_secs_f32();
    if !tests.status.success() {
        bail!(
            "the sample's tests still fail after the turn:\n{}{}",
            String::from_utf8_lossy(&tests.stdout),
            String::from_utf8_lossy(&tests.stderr)
        )
    }
    println!("sample tests pass ({elapsed:.0} s in all)");
    Ok(())
}

/// `efr daemon install` of the built efrd into the manager's unit folder.
fn daemon_install(bin: &Path, daemon: &Daemon, manager: &UserManager) -> Result<()> {
    let output = efr_command(bin, daemon)
        .args(["daemon", "install", "--efrd"])
        .arg(bin.join("efrd"))
        .output()
        .context("cannot run efr daemon install")?;
    print!("{}", String::from_utf8_lossy(&output.stdout));
    if !output.status.success() {
        bail!(
            "efr daemon install failed: {}\nmanager log:\n{}",
            String::from_utf8_lossy(&output.stderr),
            manager.log()
        );
    }
    Ok(())
}

/// Checks that the package's units, enabled for every user, made the manager listen: efrd.socket enabled (by the
/// global link) and active, efrd.service from `/usr/lib/systemd/user` and not started yet.
fn units_of_the_package(manager: &UserManager) -> Result<()> {
    let enabled = manager.systemctl_ok(&["is-enabled", "efrd.socket"])?;
    let active = manager.systemctl_ok(&["is-active", "efrd.socket"])?;
    let path = manager.systemctl_ok(&["show", "-p", "FragmentPath", "--value", "efrd.service"])?;
    println!("==> efrd.socket: {enabled}, {active}; efrd.service: {path}");
    if enabled.trim() != "enabled" || active.trim() != "active" || path.trim() != "/usr/lib/systemd/user/efrd.service" {
        bail!("the package's units are not in use\nmanager log:\n{}", manager.log());
    }
    Ok(())
}

/// Runs the prompt and copies efr's stdout (its plain transcript) to ours line by line, bounded by
/// [`TURN_TIMEOUT`]; with the conversation that efr's last line names.
fn run_prompt(bin: &Path, daemon: &Daemon, sample: &Path) -> Result<(std::process::ExitStatus, Option<String>)> {
    let mut efr = efr_command(bin, daemon)
        .args(["--mode", "auto", PROMPT])
        .current_dir(sample)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run efr")?;
    let stdout = efr.stdout.take().context("efr has no stdout")?;
    let copier = std::thread::spawn(move || {
        let mut out = std::io::stdout().lock();
        let mut conversation = None;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = writeln!(out, "{line}");
            if let Some(rest) = line.strip_prefix("conversation ") {
                conversation = rest.split_whitespace().next().map(str::to_owned);
            }
        }
        conversation
    });
    let deadline = Instant::now() + TURN_TIMEOUT;
    let status = loop {
        if let Some(status) = efr.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = efr.kill();
            let _ = efr.wait();
            bail!("efr did not finish within {TURN_TIMEOUT:?}{}", daemon.log_hint());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let conversation = copier.join().unwrap_or_default();
    Ok((status, conversation))
}

/// The provider of the demo.
#[derive(Debug)]
enum Provider {
    /// The scripted model server.
    Scripted,
    /// A real provider whose key is set in the environment.
    Real {
        /// `openai-api` or `anthropic-api`.
        name: &'static str,
        /// The key; only ever written to efr login's stdin.
        key: String,
    },
}

impl Provider {
    fn from_env() -> Self {
        for (var, name) in [("ANTHROPIC_API_KEY", "anthropic-api"), ("OPENAI_API_KEY", "openai-api")] {
            if let Some(key) = std::env::var(var).ok().filter(|key| !key.trim().is_empty()) {
                return Self::Real { name, key };
            }
        }
        Self::Scripted
    }

    fn name(&self) -> &'static str {
        match self {
            Self::Scripted => "openai-api",
            Self::Real { name, .. } => name,
        }
    }

    fn key(&self) -> &str {
        match self {
            Self::Scripted => SCRIPTED_KEY,
            Self::Real { key, .. } => key,
        }
    }
}

/// efrd's `config.toml`: the provider, and for the scripted server its base URL and model.
fn config_toml(provider: &Provider, base_url: Option<&str>) -> String {
    match base_url {
        Some(url) => format!(
            "[model]\nprovider = \"{}\"\nmodel = \"gpt-5\"\n\n[providers.{}]\nbase_url = \"{url}\"\n",
            provider.name(),
            provider.name()
        ),
        None => format!("[model]\nprovider = \"{}\"\n", provider.name()),
    }
}

/// The scripted model server as a child process, killed on drop.
#[derive(Debug)]
struct ScriptedServer {
    child: Child,
    base_url: String,
}

impl ScriptedServer {
    fn start(binary: &Path, script: &Path) -> Result<Self> {
        let mut child = Command::new(binary)
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let stdout = child.stdout.take().context("the scripted server has no stdout")?;
        let mut line = String::new();
        // It prints its port at once, or exits with a message on stderr.
        BufReader::new(stdout).read_line(&mut line)?;
        let Ok(port) = line.trim().parse::<u16>() else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("the scripted model server did not print its port (it printed {line:?})");
        };
        Ok(Self {
            child,
            base_url: format!("http://127.0.0.1:{port}"),
        })
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// efrd behind real socket activation.
#[derive(Debug)]
enum Daemon {
    /// A `systemd --user` manager with efrd's units (as root).
    Systemd(UserManager),
    /// `systemd-socket-activate` listening on `$EFR_HOME/run/daemon.sock`; it execs efrd on the first connection.
    SocketActivate {
        /// The listener (later efrd, same pid).
        child: Child,
        /// `EFR_HOME`.
        home: PathBuf,
    },
}

impl Daemon {
    fn start(work: &Path, bin: &Path, systemd: bool, installed: bool) -> Result<Self> {
        let manager = if systemd {
            require_root().and_then(|()| UserManager::start(&work.join("systemd")))
        } else {
            Err(anyhow::anyhow!("--no-systemd"))
        };
        if installed {
            return manager.map(Self::Systemd);
        }
        match manager {
            Ok(manager) => {
                println!(
                    "==> a systemd --user manager runs (pid {}); efrd starts through efrd.socket",
                    manager.pid().unwrap_or_default()
                );
                return Ok(Self::Systemd(manager));
            }
            Err(error) => println!("==> no systemd --user manager ({error:#}); using systemd-socket-activate"),
        }
        let home = work.join("efr-home");
        let run = home.join("run");
        std::fs::create_dir_all(&run)?;
        std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        let socket = run.join("daemon.sock");
        let log = std::fs::File::create(home.join("efrd.log"))?;
        let mut command = Command::new("systemd-socket-activate");
        command
            .arg("--listen")
            .arg(&socket)
            .arg("--fdname=efrd")
            .arg(setenv("EFR_HOME", home.as_os_str()));
        for var in ["LANG", "EFR_LOG"] {
            if let Some(value) = std::env::var_os(var) {
                command.arg(setenv(var, &value));
            }
        }
        let child = command
            .arg(bin.join("efrd"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("cannot start systemd-socket-activate (apt-get install systemd)")?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !socket.exists() {
            if Instant::now() > deadline {
                bail!("systemd-socket-activate did not listen on {}", socket.display());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        println!(
            "==> systemd-socket-activate listens on {}; efrd starts on the first connection",
            socket.display()
        );
        Ok(Self::SocketActivate { child, home })
    }

    /// The variables efr needs to find this efrd.
    fn envs(&self) -> Vec<(&'static str, OsString)> {
        match self {
            Self::Systemd(manager) => manager.envs(),
            Self::SocketActivate { home, .. } => vec![("EFR_HOME", home.clone().into_os_string())],
        }
    }

    /// Where efrd reads `config.toml`.
    fn config_dir(&self) -> PathBuf {
        match self {
            Self::Systemd(manager) => manager.config_home().join("efr"),
            Self::SocketActivate { home, .. } => home.join("config"),
        }
    }

    /// Where to look when something failed.
    fn log_hint(&self) -> String {
        match self {
            Self::Systemd(manager) => format!("\nsystemd --user log:\n{}", manager.log()),
            Self::SocketActivate { home, .. } => {
                format!(
                    "\nefrd's log:\n{}",
                    std::fs::read_to_string(home.join("efrd.log")).unwrap_or_default()
                )
            }
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Self::SocketActivate { child, .. } = self {
            // SIGTERM: efrd stops gracefully (and systemd-socket-activate, before the first connection, just exits).
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status();
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `-E NAME=VALUE` for systemd-socket-activate (its children get only the variables named so).
fn setenv(name: &str, value: &std::ffi::OsStr) -> OsString {
    let mut arg = OsString::from(format!("--setenv={name}="));
    arg.push(value);
    arg
}

/// efr with the variables that find this efrd (over this process's environment, minus efr's roots and the keys).
fn efr_command(bin: &Path, daemon: &Daemon) -> Command {
    let mut command = Command::new(bin.join("efr"));
    // The user's own efrd roots would point efr at another socket.
    for var in [
        "EFR_HOME",
        "EFR_RUNTIME_DIR",
        "EFR_CONFIG_DIR",
        "EFR_DATA_DIR",
        "EFR_STATE_DIR",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
    ] {
        command.env_remove(var);
    }
    command.envs(daemon.envs());
    command
}

/// The target folder: `CARGO_TARGET_DIR`, else outside `/tmp` when the workspace is there, else `target/`.
pub fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| target_outside_tmp(root))
        .unwrap_or_else(|| root.join("target"))
}

/// Copies the files and folders of `from` into a new folder `to`.
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("cannot create {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {} to {}", entry.path().display(), target.display()))?;
        }
    }
    Ok(())
}

/// The demo's script, parsed.
///
/// # Errors
/// When `demo/script.json` cannot be read or is not a script.
pub fn load_script(root: &Path) -> Result<Script> {
    let path = root.join("demo").join("script.json");
    let text = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("{} is not a script", path.display()))
}

#[cfg(test)]
mod tests {
    use efr_test_support::scripted::{ReplyEvent, Step};

    use super::*;

    /// The tool calls of a script, in order: (tool, input as one text).
    fn tool_calls(script: &Script) -> Vec<(String, String)> {
        script
            .steps
            .iter()
            .filter_map(|step| match step {
                Step::Reply(reply) => Some(&reply.events),
                _ => None,
            })
            .flatten()
            .filter_map(|event| match event {
                ReplyEvent::ToolCall(call) => Some((call.name.clone(), call.input.concat())),
                _ => None,
            })
            .collect()
    }

    fn root() -> PathBuf {
        crate::workspace_root().unwrap()
    }

    fn unittest(dir: &Path) -> std::process::Output {
        Command::new("python3")
            .args(["-m", "unittest"])
            .current_dir(dir)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .expect("python3 runs")
    }

    #[test]
    fn the_script_runs_the_tests_reads_patches_and_runs_them_again() {
        let script = load_script(&root()).unwrap();
        let calls = tool_calls(&script);
        let tools: Vec<&str> = calls.iter().map(|(tool, _)| tool.as_str()).collect();
        assert_eq!(tools, ["shell", "shell", "apply_patch", "shell"]);
        let command = |input: &str| serde_json::from_str::<serde_json::Value>(input).unwrap()["command"].clone();
        assert_eq!(command(&calls[0].1), "python3 -m unittest");
        assert_eq!(command(&calls[1].1), "cat calc.py");
        assert_eq!(command(&calls[3].1), "python3 -m unittest");
        assert!(
            calls[2].1.starts_with("*** Begin Patch\n*** Update File: calc.py\n"),
            "{}",
            calls[2].1
        );
        // The last reply answers without a call, so the turn ends.
        let Some(Step::Reply(last)) = script.steps.last() else {
            panic!("no last reply")
        };
        assert!(last.events.iter().all(|event| matches!(event, ReplyEvent::Text(_))));
        assert!(
            script.models.iter().any(|model| model == "gpt-5"),
            "config_toml's model is served"
        );
    }

    #[test]
    fn the_sample_fails_as_it_is_and_passes_with_the_scripted_patch() {
        let dir = std::env::temp_dir().join(format!("xtask-demo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_dir(&root().join("demo").join("sample"), &dir).unwrap();
        assert!(
            !unittest(&dir).status.success(),
            "the sample's tests must fail before the fix"
        );

        // The patch's one change, applied by hand: its `-` line must be in calc.py as it is.
        let script = load_script(&root()).unwrap();
        let patch = tool_calls(&script).remove(2).1;
        let removed: Vec<&str> = patch.lines().filter_map(|l| l.strip_prefix('-')).collect();
        let added: Vec<&str> = patch.lines().filter_map(|l| l.strip_prefix('+')).collect();
        assert_eq!((removed.len(), added.len()), (1, 1), "{patch}");
        let source = std::fs::read_to_string(dir.join("calc.py")).unwrap();
        assert_eq!(
            source.matches(removed[0]).count(),
            1,
            "the patch's context is in calc.py once"
        );
        std::fs::write(dir.join("calc.py"), source.replace(removed[0], added[0])).unwrap();
        let after = unittest(&dir);
        assert!(after.status.success(), "{}", String::from_utf8_lossy(&after.stderr));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_config_points_the_provider_at_the_scripted_server() {
        let text = config_toml(&Provider::Scripted, Some("http://127.0.0.1:9"));
        assert!(
            text.starts_with("[model]\nprovider = \"openai-api\"\nmodel = \"gpt-5\"\n"),
            "{text}"
        );
        assert!(
            text.ends_with("[providers.openai-api]\nbase_url = \"http://127.0.0.1:9\"\n"),
            "{text}"
        );
        let real = Provider::Real {
            name: "anthropic-api",
            key: "k".into(),
        };
        assert_eq!(config_toml(&real, None), "[model]\nprovider = \"anthropic-api\"\n");
    }
}
