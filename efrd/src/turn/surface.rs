//! Surface changes of auto's contained calls (`docs/auto.md`, "Surface changes"): after each such call, the changed
//! files that code outside the sandbox later runs from ([`crate::sandbox::surface`]) are recorded
//! (sandbox_surface_changed), and each that can run code is held and asked about (surface_question_requested). The
//! turn does not wait for the answer: a held executable has its executable bits removed until the user keeps it,
//! so nothing outside the sandbox runs it meanwhile. sandbox.surface_respond answers; [`keep`] gives the bits back,
//! [`remove`] moves the new file or content to efr's trash and puts back the old content from the call's snapshot.
//! The conversation's actor keeps the questions ([`Book`]); at the turn's end it records turn_surface_report.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use efr_protocol::events::EventBody;
use efr_protocol::ids::{CallId, QuestionId, TurnId};
use efr_protocol::wire::{FileChangeKind, ReportedFile, SurfaceChange, SurfaceKind, SurfaceOutcome};
use sha2::{Digest as _, Sha256};

use super::sink::{Held, Sink};
use crate::sandbox::surface::{self as detect, Changed, SurfaceFacts};
use crate::undo::trash::Trash;
use efr_patch::changes::{Body, Change};

/// How long efrd waits for `git rev-parse --git-path hooks`.
const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// What a contained call knew of the user's shell when it ran: for the PATH folders inside the project.
#[derive(Debug, Clone, Default)]
pub struct CallShell {
    /// The shell's exported `PATH`, when it had one.
    pub path_var: Option<String>,
    /// The shell's working folder.
    pub cwd: Option<PathBuf>,
}

/// After an auto contained call: finds its surface changes among `raw` (the call's changes, absolute paths), holds
/// each that can run code, and records sandbox_surface_changed and the questions through `sink`. Returns a note for
/// the model (none when nothing was found); `None` when the sink is gone.
pub async fn after_call(
    sink: &Sink,
    turn_id: TurnId,
    call_id: &CallId,
    project: Option<&Path>,
    raw: Vec<Change>,
    shell: CallShell,
) -> Option<Option<String>> {
    let Some(project) = project.map(Path::to_path_buf) else {
        return Some(None);
    };
    if !raw.iter().any(|c| c.path.starts_with(&project)) {
        return Some(None);
    }
    let hooks = git_hooks_dir(&project).await;
    let found = tokio::task::spawn_blocking(move || find_and_hold(&project, &raw, &shell, hooks.as_deref()))
        .await
        .unwrap_or_default();
    if found.changes.is_empty() {
        return Some(None);
    }
    let asked = found.held.len();
    let ids = sink
        .surface_changed(turn_id, call_id.clone(), found.changes, found.held)
        .await
        .ok()?;
    let note = (asked > 0).then(|| {
        format!(
            "[efr held {asked} file(s) this call wrote that code outside the sandbox runs from ({}); the user decides \
             whether to keep each, and a held executable is not executable until then]",
            ids.iter().map(QuestionId::as_str).collect::<Vec<_>>().join(", ")
        )
    });
    Some(note)
}

/// At a contained job's end: its surface changes among `raw` (what changed in the project while it ran) and the
/// files whose executable bits efrd removed, so that nothing outside the sandbox runs them until the user makes them
/// executable again. Nothing is asked: the job's turn is long over (docs/jobs.md, "How a job ends").
pub async fn at_job_end(project: &Path, raw: Vec<Change>, shell: CallShell) -> (Vec<SurfaceChange>, Vec<PathBuf>) {
    if !raw.iter().any(|c| c.path.starts_with(project)) {
        return (Vec::new(), Vec::new());
    }
    let hooks = git_hooks_dir(project).await;
    let project = project.to_path_buf();
    let found = tokio::task::spawn_blocking(move || find_and_hold(&project, &raw, &shell, hooks.as_deref()))
        .await
        .unwrap_or_default();
    let quarantined = found
        .held
        .iter()
        .filter(|held| held.held_mode.is_some())
        .map(|held| held.change.path.clone())
        .collect();
    (found.changes, quarantined)
}

/// What [`find_and_hold`] found.
#[derive(Debug, Default)]
struct Found {
    changes: Vec<SurfaceChange>,
    held: Vec<Held>,
}

/// The facts of the project, the surface changes among `raw` and, for each that can run code, its hold.
fn find_and_hold(project: &Path, raw: &[Change], shell: &CallShell, hooks: Option<&Path>) -> Found {
    let facts = facts(project, shell, hooks);
    let mut rel: Vec<(PathBuf, &Change, bool)> = raw
        .iter()
        .filter_map(|c| {
            let path = c.path.strip_prefix(project).ok()?.to_path_buf();
            Some((path, c, is_executable(&c.path)))
        })
        .collect();
    rel.sort_by(|a, b| a.0.cmp(&b.0));
    let changed: Vec<Changed<'_>> = rel
        .iter()
        .map(|(path, c, executable)| Changed {
            path,
            kind: c.kind,
            executable: *executable,
        })
        .collect();
    let changes = detect::find(&changed, &facts);
    let held = changes
        .iter()
        .filter(|change| change.runs_code)
        .filter_map(|change| {
            let (_, raw, _) = rel.iter().find(|(path, _, _)| *path == change.path)?;
            Some(hold(project, change.clone(), raw))
        })
        .collect();
    Found { changes, held }
}

/// The project's surface facts: the PATH folders inside it, its hook folders, whether a hook runs make or just.
fn facts(project: &Path, shell: &CallShell, hooks: Option<&Path>) -> SurfaceFacts {
    let mut facts = SurfaceFacts::plain();
    if let Some(path_var) = &shell.path_var {
        let cwd = shell.cwd.as_deref().unwrap_or(project);
        facts.path_dirs = detect::path_dirs(path_var, cwd, project);
    }
    if let Some(rel) = hooks.and_then(|dir| dir.strip_prefix(project).ok())
        && !facts.hook_dirs.iter().any(|d| d == rel)
    {
        facts.hook_dirs.push(rel.to_path_buf());
    }
    facts.hooks_run_tasks = facts.hook_dirs.iter().any(|dir| {
        std::fs::read_dir(project.join(dir))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|entry| !entry.file_name().to_string_lossy().ends_with(".sample"))
            .filter(|entry| is_executable(&entry.path()))
            .filter_map(|entry| std::fs::read(entry.path()).ok())
            .any(|bytes| detect::runs_tasks(&String::from_utf8_lossy(&bytes)))
    });
    facts
}

/// Where git takes the project's hooks from (`core.hooksPath` or `.git/hooks`), absolute; `None` when git does not
/// say (no repository, no git).
async fn git_hooks_dir(project: &Path) -> Option<PathBuf> {
    let mut command = efr_git::command_for_hook_paths();
    command
        .args(["rev-parse", "--path-format=absolute", "--git-path", "hooks"])
        .current_dir(project)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(GIT_TIMEOUT, command.output()).await.ok()?.ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(PathBuf::from(text.trim_end_matches('\n')))
}

fn is_executable(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn digest(path: &Path) -> Option<[u8; 32]> {
    std::fs::read(path).ok().map(|bytes| Sha256::digest(&bytes).into())
}

/// Holds one change that can run code: an executable surface loses its executable bits.
fn hold(project: &Path, change: SurfaceChange, raw: &Change) -> Held {
    let old = match (&raw.old, raw.kind) {
        (Body::Absent, _) | (_, FileChangeKind::Added) => Some(None),
        (Body::Text(text), _) => Some(Some(text.clone().into_bytes())),
        _ => None,
    };
    let from = raw
        .from
        .as_ref()
        .and_then(|f| f.strip_prefix(project).ok())
        .map(Path::to_path_buf);
    let path = project.join(&change.path);
    let executable_surface = matches!(
        change.surface,
        SurfaceKind::GitHook | SurfaceKind::PathExecutable | SurfaceKind::PackageBin
    );
    let mut held_mode = None;
    if executable_surface && let Ok(meta) = std::fs::symlink_metadata(&path) {
        let mode = meta.permissions().mode() & 0o7777;
        if meta.is_file() && std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode & !0o111)).is_ok() {
            held_mode = Some(mode);
        }
    }
    Held {
        digest: digest(&path),
        change,
        root: project.to_path_buf(),
        from,
        old,
        held_mode,
    }
}

/// keep=true: the change stays; a held executable gets its bits back, unless its content changed since the question
/// (then it stays held: the user kept what they were asked about, not what came later).
///
/// # Errors
/// Why the bits could not come back.
pub fn keep(held: &Held) -> Result<(), String> {
    let Some(mode) = held.held_mode else {
        return Ok(());
    };
    let path = held.path();
    if digest(&path) != held.digest {
        return Err(format!(
            "{} changed after the question, so efrd left it not executable",
            held.change.path.display()
        ));
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot make {} executable again: {e}", held.change.path.display()))
}

/// keep=false: the file as it is now goes to efr's trash (folder `trash_folder` of `trash_dir`), and the old content
/// comes back (a changed file's, or a renamed file's at its old path).
///
/// # Errors
/// Why it could not be put back: the old content was not kept (the change stays held), or a file operation failed.
pub fn remove(held: &Held, trash_dir: &Path, trash_folder: &str) -> Result<(), String> {
    let shown = held.change.path.display();
    let Some(old) = &held.old else {
        return Err(format!(
            "the old content of {shown} was not kept (binary, or over the bound of a call's snapshots), so efrd left \
             it held"
        ));
    };
    let path = held.path();
    let exists = std::fs::symlink_metadata(&path).is_ok();
    if exists {
        let rel = held.change.path.to_string_lossy();
        Trash::new(trash_dir, trash_folder, 0)
            .put(&held.root, &rel)
            .map_err(|e| format!("cannot move {shown} to efr's trash: {e}"))?;
    }
    if let Some(bytes) = old {
        let back = held.root.join(held.from.as_ref().unwrap_or(&held.change.path));
        if std::fs::symlink_metadata(&back).is_ok() {
            return Err(format!(
                "{} exists again, so efrd did not write its old content",
                back.display()
            ));
        }
        std::fs::write(&back, bytes).map_err(|e| format!("cannot put back the old content of {shown}: {e}"))?;
        if let Some(mode) = held.held_mode {
            let _ = std::fs::set_permissions(&back, std::fs::Permissions::from_mode(mode));
        }
    }
    Ok(())
}

/// A question that waits for its answer.
#[derive(Debug)]
struct Waiting {
    held: Held,
}

/// The surface changes and questions of one conversation, kept by its actor: the numbering of its question ids,
/// the questions that wait, what became of those answered, and each running turn's changes for its report.
#[derive(Debug, Default)]
pub struct Book {
    /// The last question id's number.
    last: u64,
    waiting: HashMap<QuestionId, Waiting>,
    /// Answered questions and their outcome.
    answered: HashMap<QuestionId, SurfaceOutcome>,
    /// Questions asked before a restart that got no answer: nothing of their hold is known any more.
    orphaned: HashSet<QuestionId>,
    /// Each turn's changes in order, with their question.
    turns: HashMap<TurnId, Vec<(CallId, SurfaceChange, Option<QuestionId>)>>,
}

/// Why an answer cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAnswerable {
    /// The conversation never asked it.
    Unknown,
    /// It was answered already.
    Answered,
    /// It was asked before efrd restarted and never answered: the change stays as it was held.
    Orphaned,
}

impl Book {
    /// Notes one event of the stored log (the actor's load): numbering goes on after the last question, answered
    /// ones stay answered, and those left open are orphaned.
    pub fn replay(&mut self, body: &EventBody) {
        match body {
            EventBody::SurfaceQuestionRequested(asked) => {
                self.last = self.last.max(asked.question_id.number());
                self.orphaned.insert(asked.question_id.clone());
            }
            EventBody::SurfaceQuestionAnswered(answered) => {
                self.orphaned.remove(&answered.question_id);
                self.answered.insert(answered.question_id.clone(), answered.outcome);
            }
            _ => {}
        }
    }

    /// Numbers the questions of a call's held changes: their ids, in order (not kept until [`Book::asked`]).
    #[must_use]
    pub fn next_ids(&self, count: usize) -> Vec<QuestionId> {
        (1..=count as u64).map(|n| QuestionId::nth(self.last + n)).collect()
    }

    /// Keeps a call's changes and questions once their events are committed.
    pub fn asked(
        &mut self,
        turn_id: TurnId,
        call_id: &CallId,
        changes: Vec<SurfaceChange>,
        held: Vec<(QuestionId, Held)>,
    ) {
        let turn = self.turns.entry(turn_id).or_default();
        for change in changes {
            let question = held.iter().find(|(_, h)| h.change == change).map(|(id, _)| id.clone());
            turn.push((call_id.clone(), change, question));
        }
        for (id, held) in held {
            self.last = self.last.max(id.number());
            self.waiting.insert(id, Waiting { held });
        }
    }

    /// The hold of a waiting question.
    ///
    /// # Errors
    /// Why it cannot be answered.
    pub fn waiting(&self, id: &QuestionId) -> Result<&Held, NotAnswerable> {
        if let Some(waiting) = self.waiting.get(id) {
            return Ok(&waiting.held);
        }
        Err(if self.answered.contains_key(id) {
            NotAnswerable::Answered
        } else if self.orphaned.contains(id) {
            NotAnswerable::Orphaned
        } else {
            NotAnswerable::Unknown
        })
    }

    /// Marks a question answered once its event is committed.
    pub fn answered(&mut self, id: &QuestionId, outcome: SurfaceOutcome) {
        self.waiting.remove(id);
        self.answered.insert(id.clone(), outcome);
    }

    /// Whether any question waits (the actor does not retire then: the holds live in its memory).
    #[must_use]
    pub fn has_waiting(&self) -> bool {
        !self.waiting.is_empty()
    }

    /// The report of a turn that ends, and forgets its changes; `None` when it made none.
    pub fn report(&mut self, turn_id: TurnId) -> Option<Vec<ReportedFile>> {
        let changes = self.turns.remove(&turn_id)?;
        Some(
            changes
                .into_iter()
                .map(|(call_id, change, question_id)| {
                    let outcome = match &question_id {
                        None => SurfaceOutcome::Kept,
                        Some(id) if self.waiting.contains_key(id) => SurfaceOutcome::Pending,
                        Some(id) => self.answered.get(id).copied().unwrap_or(SurfaceOutcome::Pending),
                    };
                    ReportedFile {
                        call_id,
                        change,
                        question_id,
                        outcome,
                    }
                })
                .collect(),
        )
    }
}
