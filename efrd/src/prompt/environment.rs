//! The environment block: what the model is told about the machine and the turn, rebuilt at each turn's start and
//! sent at the head of the turn's prompt (docs/context.md, "The environment block").
//!
//! Reading it is bounded and cheap: the OS from `/etc/os-release`, the branch from the repository's `HEAD` file (no
//! process), and whether the tree is dirty from one `git status` run as [`efr_git::command`] makes it (no program
//! that the repository's config or attributes name can start: the rules of docs/adr/0008-git-outside-the-sandbox.md,
//! with the filter drivers blanked), that stops at its first byte of output or after [`GIT_TIMEOUT`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;

/// How long the dirty check may take before the block says `status unknown`.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(2);

/// The repository state of the project root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitState {
    /// The checked-out branch; `None` for a detached `HEAD`.
    pub branch: Option<String>,
    /// The first 12 hex digits of a detached `HEAD`.
    pub detached_at: Option<String>,
    /// Whether tracked or untracked files differ from `HEAD`; `None` when the check failed or timed out.
    pub dirty: Option<bool>,
}

/// The environment of one turn, as the block shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The OS, such as `Debian GNU/Linux 12 (bookworm)`.
    pub os: String,
    /// The hidden shell: `bash` or `zsh`.
    pub shell: String,
    /// The hidden shell's working directory at the turn's start.
    pub cwd: PathBuf,
    /// The project root; `None` outside a project.
    pub project_root: Option<PathBuf>,
    /// The project's repository; `None` when the project root holds no `.git`.
    pub git: Option<GitState>,
    /// The local date, `YYYY-MM-DD`.
    pub date: String,
    /// The model, with its effort when set (`gpt-5, effort medium`).
    pub model: String,
    /// The turn's permission mode.
    pub mode: String,
}

impl Environment {
    /// The block, as the prompt carries it.
    #[must_use]
    pub fn block(&self) -> String {
        let mut out = String::from("<environment>\n");
        let _ = writeln!(out, "os: {}", self.os);
        let _ = writeln!(out, "shell: {}", self.shell);
        let _ = writeln!(out, "working directory: {}", self.cwd.display());
        match &self.project_root {
            Some(root) => {
                let _ = writeln!(out, "project root: {}", root.display());
            }
            None => out.push_str("project root: none\n"),
        }
        match &self.git {
            None => out.push_str("git: not a repository\n"),
            Some(git) => {
                let head = match (&git.branch, &git.detached_at) {
                    (Some(branch), _) => format!("branch {branch}"),
                    (None, Some(at)) => format!("detached at {at}"),
                    (None, None) => "no commit".to_owned(),
                };
                let state = match git.dirty {
                    Some(true) => "uncommitted changes",
                    Some(false) => "clean",
                    None => "status unknown",
                };
                let _ = writeln!(out, "git: {head}, {state}");
            }
        }
        let _ = writeln!(out, "date: {}", self.date);
        let _ = writeln!(out, "model: {}", self.model);
        let _ = writeln!(out, "mode: {}", self.mode);
        out.push_str("</environment>\n");
        out
    }
}

/// The OS's name from `/etc/os-release` (`PRETTY_NAME`), else `Linux`; read once a process (the OS does not change
/// under a running efrd, and each turn's prompt reads it before the model is asked).
#[must_use]
pub fn os_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(read_os_name).clone()
}

fn read_os_name() -> String {
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines().find_map(|line| {
                line.strip_prefix("PRETTY_NAME=")
                    .map(|value| value.trim().trim_matches('"').to_owned())
            })
        })
        .filter(|name| !name.is_empty() && name.len() <= 200)
        .unwrap_or_else(|| "Linux".to_owned())
}

/// Today's local date, `YYYY-MM-DD`, at most [`TODAY_STALE`] old: the local time zone costs about ten system calls
/// a reading (chrono looks at `/etc/localtime` and the zone's file), and each turn's prompt reads the date before the
/// model is asked.
#[must_use]
pub fn today() -> String {
    static TODAY: std::sync::Mutex<Option<(std::time::Instant, String)>> = std::sync::Mutex::new(None);
    let mut cached = TODAY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match cached.as_ref() {
        Some((read, date)) if read.elapsed() < TODAY_STALE => date.clone(),
        _ => {
            let date = chrono::Local::now().format("%Y-%m-%d").to_string();
            *cached = Some((std::time::Instant::now(), date.clone()));
            date
        }
    }
}

/// How long [`today`] keeps a date it read: the prompt's date may lag midnight or a change of time zone by this much.
pub const TODAY_STALE: Duration = Duration::from_secs(60);

/// The repository state of `root` when `root/.git` exists; `None` otherwise.
pub async fn git_state(root: &Path) -> Option<GitState> {
    let git_dir = git_dir(root)?;
    let head = std::fs::read_to_string(git_dir.join("HEAD")).unwrap_or_default();
    let head = head.trim();
    let (branch, detached_at) = match head.strip_prefix("ref: ") {
        Some(reference) => (
            Some(reference.strip_prefix("refs/heads/").unwrap_or(reference).to_owned()),
            None,
        ),
        None if head.len() >= 12 && head.bytes().all(|b| b.is_ascii_hexdigit()) => (None, Some(head[..12].to_owned())),
        None => (None, None),
    };
    let dirty = dirty(root).await;
    Some(GitState {
        branch,
        detached_at,
        dirty,
    })
}

/// The git folder of `root`: `.git` itself, or where a `.git` file (`gitdir: ...`, a worktree or submodule) points.
fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.trim().strip_prefix("gitdir:")?.trim();
    Some(root.join(target))
}

/// Whether `git status` prints anything (tracked changes or untracked files), reading at most its first byte.
async fn dirty(root: &Path) -> Option<bool> {
    tokio::time::timeout(GIT_TIMEOUT, dirty_unbounded(root))
        .await
        .ok()
        .flatten()
}

async fn dirty_unbounded(root: &Path) -> Option<bool> {
    let mut listing = efr_git::command();
    listing
        .arg("-C")
        .arg(root)
        .args(["config", "-z", "--get-regexp", r"^filter\."])
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    // The listing is short (the config's filter keys); none exits 1 with no output.
    let listing = tokio::process::Command::from(listing)
        .kill_on_drop(true)
        .output()
        .await
        .ok()?;
    let mut command = efr_git::command();
    efr_git::blank_filters(&mut command, &listing.stdout).ok()?;
    command
        .arg("-C")
        .arg(root)
        .args(["status", "--porcelain", "-z", "--ignore-submodules=all"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = tokio::process::Command::from(command).kill_on_drop(true).spawn().ok()?;
    let mut stdout = child.stdout.take()?;
    let mut byte = [0u8; 1];
    if stdout.read(&mut byte).await.ok()? > 0 {
        return Some(true);
    }
    child.wait().await.ok()?.success().then_some(false)
}
