//! Test support for the launcher's integration tests: a real home with secrets, a project, a runtime folder with a
//! listening "bus", the helper program, and a way to run the real `efr-launcher` binary as root or as an
//! unprivileged user.
//!
//! Everything lives under `CARGO_TARGET_TMPDIR` (`target/tmp`), never under `/tmp`: the sandbox hides the host's
//! `/tmp`, so a secret or socket kept there would be out of reach for the wrong reason and a test could not fail.
//!
//! **Unprivileged runs**: the tests run as root (CI does); [`User::Nobody`] runs the launcher through
//! `setpriv --reuid=65534 --regid=65534 --clear-groups`, the standard `nobody` user that every Debian system has,
//! after handing it the fixture's files (`chown`). bubblewrap then builds the sandbox with an unprivileged user
//! namespace, the path a normal user takes. Run as a normal user, the tests fail and say why: they need root to
//! switch users and to make the setuid-root helper.

// Test support panics on a broken fixture, as the tests themselves do.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use efr_protocol::internal::{
    LaunchCommand, LaunchPlan, LaunchReport, Mask, MaskSource, ReportTo, Writable, WritableSource,
};

/// The unprivileged user of [`User::Nobody`].
pub const NOBODY: u32 = 65534;
/// What the masked files hold.
pub const SSH_SECRET: &str = "SECRET-SSH-KEY-4711";
pub const NETRC_SECRET: &str = "SECRET-NETRC-0815";

/// Who runs the launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum User {
    Root,
    Nobody,
}

impl User {
    pub fn uid(self) -> u32 {
        match self {
            User::Root => 0,
            User::Nobody => NOBODY,
        }
    }

    /// A command that runs `program` as this user.
    pub fn command(self, program: &Path) -> Command {
        match self {
            User::Root => Command::new(program),
            User::Nobody => {
                let mut command = Command::new("setpriv");
                command
                    .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                    .arg(program);
                command
            }
        }
    }
}

/// The launcher binary under test.
pub fn launcher() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_efr-launcher"))
}

/// Fails the test with a clear message unless it runs as root.
pub fn require_root() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the launcher's sandbox tests run as root: they switch to an unprivileged user with setpriv and make a \
         setuid-root helper; run them as root (as CI does)"
    );
}

/// The helper program (tests/support/helper.c), built once per test binary with gcc into
/// `target/tmp/efr-launcher-helper/helper` (built under a name of its own, then renamed into place, so test binaries
/// that run at once never see a half-written program).
pub fn helper() -> &'static Path {
    static HELPER: OnceLock<PathBuf> = OnceLock::new();
    HELPER.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("efr-launcher-helper");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let building = dir.join(format!("helper.{}", std::process::id()));
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/helper.c");
        let status = Command::new("gcc")
            .args(["-O1", "-Wall", "-Werror", "-o"])
            .arg(&building)
            .arg(&source)
            .status();
        assert!(
            matches!(status, Ok(s) if s.success()),
            "cannot build the helper with gcc ({status:?}); the escape battery needs gcc"
        );
        let out = dir.join("helper");
        std::fs::rename(&building, &out).unwrap();
        out
    })
}

/// One fixture: a home with secrets, a project, a folder outside every root, a runtime folder with a listening
/// "bus" socket, and a setuid-root copy of the helper.
pub struct Fixture {
    pub user: User,
    pub base: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
    pub outside: PathBuf,
    pub run_user: PathBuf,
    pub bus: PathBuf,
    pub suid_helper: PathBuf,
    _bus_listener: std::os::unix::net::UnixListener,
    _dir: tempfile::TempDir,
    counter: AtomicUsize,
}

impl Fixture {
    pub fn new(user: User) -> Self {
        require_root();
        let dir = tempfile::Builder::new()
            .prefix("launch-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .unwrap();
        let base = dir.path().to_path_buf();
        let home = base.join("home");
        let project = base.join("project");
        let outside = base.join("outside");
        let run_user = base.join("run-user");
        for path in [&home.join(".ssh"), &project, &outside, &run_user] {
            std::fs::create_dir_all(path).unwrap();
        }
        std::fs::write(home.join(".ssh/id_ed25519"), SSH_SECRET).unwrap();
        std::fs::write(home.join(".netrc"), NETRC_SECRET).unwrap();
        std::fs::write(outside.join("existing"), "before").unwrap();
        let bus = run_user.join("bus");
        let bus_listener = std::os::unix::net::UnixListener::bind(&bus).unwrap();
        let uid = user.uid();
        chown_tree(&base, uid);
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The setuid-root copy lives in a root-owned folder, as a real one would.
        let suid_dir = base.join("suid");
        std::fs::create_dir(&suid_dir).unwrap();
        std::fs::set_permissions(&suid_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let suid_helper = suid_dir.join("helper");
        std::fs::copy(helper(), &suid_helper).unwrap();
        chown(&suid_helper, Some(0), Some(0)).unwrap();
        std::fs::set_permissions(&suid_helper, std::fs::Permissions::from_mode(0o4755)).unwrap();
        Self {
            user,
            base,
            home,
            project,
            outside,
            run_user,
            bus,
            suid_helper,
            _bus_listener: bus_listener,
            _dir: dir,
            counter: AtomicUsize::new(0),
        }
    }

    /// The base plan of a call in the project: the default masks under this home, the runtime folder masked.
    pub fn plan(&self, line: &str) -> LaunchPlan {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", Vec::new(), &self.project);
        plan.command = LaunchCommand::Shell {
            shell: "/bin/sh".into(),
            line: line.into(),
        };
        plan.env
            .insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin".into());
        plan.env.insert("HOME".into(), self.home.display().to_string());
        plan.writable.push(Writable {
            path: self.project.clone(),
            source: WritableSource::Project,
        });
        plan.masks = efr_protocol::internal::default_masks(&self.home, &self.run_user, &[], &[]);
        plan
    }

    /// Runs `plan` through the real launcher as the fixture's user (plan in a one-time file, report in a file).
    pub fn run(&self, plan: &LaunchPlan) -> Run {
        self.run_as(self.user, plan, &[])
    }

    /// Runs `plan` as `user` with extra environment variables on the launcher itself.
    pub fn run_as(&self, user: User, plan: &LaunchPlan, launcher_env: &[(&str, &str)]) -> Run {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let plan_path = self.base.join(format!("plan-{n}.json"));
        let report_path = self.base.join(format!("report-{n}"));
        let mut plan = plan.clone();
        plan.report = ReportTo::File {
            path: report_path.clone(),
        };
        std::fs::write(&plan_path, serde_json::to_vec(&plan).unwrap()).unwrap();
        chown(&plan_path, Some(user.uid()), Some(user.uid())).unwrap();
        let mut command = user.command(&launcher());
        command
            .arg("--plan-file")
            .arg(&plan_path)
            .envs(launcher_env.iter().copied());
        let output = run_bounded(command, Duration::from_secs(60));
        let report_text = std::fs::read_to_string(&report_path).unwrap_or_default();
        Run::new(&output, &report_text, plan_path.exists())
    }

    /// A fresh abstract socket name that a listener of this test holds.
    pub fn abstract_name(&self, tag: &str) -> String {
        format!(
            "efr-test-{}-{}-{tag}",
            std::process::id(),
            self.base.file_name().unwrap().to_string_lossy()
        )
    }
}

/// What one launch gave.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub report: Vec<LaunchReport>,
    pub plan_left: bool,
}

impl Run {
    fn new(output: &Output, report: &str, plan_left: bool) -> Self {
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            report: LaunchReport::parse_lines(report).unwrap(),
            plan_left,
        }
    }

    /// The end line of the report.
    pub fn end(&self) -> Option<&LaunchReport> {
        LaunchReport::end(&self.report)
    }

    /// The command ran (the sandbox came up) and exited with `code`.
    pub fn exited(&self) -> Option<i32> {
        match self.end() {
            Some(LaunchReport::Exited { exit_code, .. })
                if self.report.iter().any(|l| matches!(l, LaunchReport::Sandboxed { .. })) =>
            {
                Some(*exit_code)
            }
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "code {:?}\nstdout: {}\nstderr: {}\nreport: {:?}",
            self.code, self.stdout, self.stderr, self.report
        )
    }
}

/// Runs a command with a time limit (a hung sandbox fails the test instead of hanging it).
pub fn run_bounded(mut command: Command, limit: Duration) -> Output {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap_or_else(|err| {
        panic!("cannot run {command:?}: {err} (the unprivileged runs need setpriv, from util-linux)")
    });
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let output = child.wait_with_output().unwrap();
            panic!(
                "the launch ran over {limit:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs the helper outside any sandbox as `user` (the battery's controls).
pub fn helper_outside(user: User, program: &Path, args: &[&str]) -> String {
    let mut command = user.command(program);
    command.args(args);
    let output = run_bounded(command, Duration::from_secs(20));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn chown_tree(path: &Path, uid: u32) {
    chown(path, Some(uid), Some(uid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap() {
            chown_tree(&entry.unwrap().path(), uid);
        }
    }
}

/// A mask of the fixture's plan for `path`, from the config.
pub fn config_mask(path: &Path) -> Mask {
    Mask {
        path: path.to_path_buf(),
        source: MaskSource::Config,
    }
}

/// Writes a line to a file (for fixtures).
pub fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    writeln!(file, "{text}").unwrap();
}
