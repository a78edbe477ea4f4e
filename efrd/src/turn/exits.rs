//! A call's exits in the turn (docs/adr/0016-exit-kinds.md; docs/auto.md, "Applying a verdict"): what finding needs
//! from the turn ([`TurnExits`](super::env::TurnExits), [`ExitPlace`]), and the judging of one call's exits ([`judge`]): each record's
//! denial counts filled, `exit_requested` recorded once per record, the chain ([`crate::exits::judge::review`]) run
//! and its events recorded, and, when it passes the exits to the user, `approval_requested` with the exit and the
//! user's `exit_judged` per record. What comes out is an [`ExitVerdict`]: run with the union of the records' needs,
//! or do not run, with one line the model can act on.
//!
//! Finding is [`crate::exits::find`]'s and the chain is [`crate::exits::judge`]'s; running the verdict is
//! [`super::tools`]'s (before a call) and [`super::exit_call`]'s (after a contained call failed).

use std::path::{Path, PathBuf};

use efr_protocol::events::{EventBody, ExitJudged, ExitRequested};
use efr_protocol::ids::{CallId, TurnId};
use efr_protocol::internal::host::HostPattern;
use efr_protocol::wire::{
    ApprovalDecision, ChainStep, Desktop, ExitInfo, ExitKind, ExitRecord, Grant, JudgeKind, Needs, Verdict,
};

use super::env::ToolEnv;
use super::sink::{Answer, Sink};
use crate::exits::approvers::{Approvers, approvers};
use crate::exits::find::ExitContext;
use crate::exits::judge::{ChainOutcome, Review, review};
use efr_policy::{EfrDirs, LaunchKind, Question};

/// The walls of the sandbox as finding reads them, owned for one call ([`ExitPlace::with`] lends the
/// [`ExitContext`]).
#[derive(Debug, Clone)]
pub struct ExitPlace {
    cwd: PathBuf,
    project_roots: Vec<PathBuf>,
    writable_roots: Vec<PathBuf>,
    home: Option<PathBuf>,
    efr_dirs: EfrDirs,
    masked: Vec<PathBuf>,
    allow: Vec<HostPattern>,
    deny: Vec<HostPattern>,
    /// efr-proxy is installed: without it `[network] allow` lets nothing through.
    proxied: bool,
    project_remotes: Vec<String>,
    desktop: Option<Desktop>,
    /// efrd runs the filtered bus proxy for contained calls.
    bus_filter: bool,
}

impl ExitPlace {
    /// The place of a call of `env`'s turn: its roots resolved like the policy's, `$SCRATCH` writable, the layout's
    /// masks, `[network]` as the turn started.
    #[must_use]
    pub fn of(env: &ToolEnv) -> Self {
        let project_roots = super::patch_paths::resolved_roots(&env.roots);
        let mut writable_roots = project_roots.clone();
        writable_roots.extend(super::patch_paths::resolved_roots(std::slice::from_ref(&env.scratch)));
        Self {
            cwd: env.cwd.clone(),
            project_roots,
            writable_roots,
            home: env.home.clone(),
            efr_dirs: super::patch_paths::resolved_dirs(&env.efr_dirs),
            masked: env.layout.masks().into_iter().map(|mask| mask.path).collect(),
            allow: env.network.allow.clone(),
            deny: env.network.deny.clone(),
            proxied: env.network.proxy.installed(),
            project_remotes: env.exits.project_remotes.clone(),
            desktop: env.desktop.clone(),
            bus_filter: env.bus.config.enabled && env.bus.proxy.installed(),
        }
    }

    /// Whether `host:port` needs no exit: `[network] allow` lets it through the proxy, or `[network] deny` names it
    /// (the proxy checks deny first, so no grant could open it: an exit would be asked for nothing).
    fn allowed(&self, host: &str, port: u16) -> bool {
        self.deny.iter().any(|p| p.denies(host, port))
            || (self.proxied && self.allow.iter().any(|p| p.matches(host, port)))
    }

    /// Runs `f` with the finding context of this place.
    pub fn with<R>(&self, f: impl FnOnce(&ExitContext<'_>) -> R) -> R {
        let allowed = |host: &str, port: u16| self.allowed(host, port);
        f(&ExitContext {
            cwd: &self.cwd,
            project_roots: &self.project_roots,
            writable_roots: &self.writable_roots,
            home: self.home.as_deref(),
            efr_dirs: &self.efr_dirs,
            masked: &self.masked,
            allowed_hosts: &allowed,
            project_remotes: &self.project_remotes,
            desktop: self.desktop.as_ref(),
            bus_filter: self.bus_filter,
            program_of: &users_program,
        })
    }
}

/// The program of a process of this user (`/proc/<pid>/exe`), `None` when there is none or it is another user's.
fn users_program(pid: u32) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dir = PathBuf::from(format!("/proc/{pid}"));
    let owner = std::fs::metadata(&dir).ok()?.uid();
    (owner == nix::unistd::getuid().as_raw()).then_some(())?;
    std::fs::read_link(dir.join("exe")).ok()
}

/// What the judges decided for a call's exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExitVerdict {
    /// Every exit was approved: run with the union of their needs.
    Run {
        /// The union of the records' needs.
        needs: Needs,
        /// The user approved them (at a question), not a model.
        by_user: bool,
    },
    /// An exit was denied: the call does not run (again).
    Denied {
        /// The one line the model gets: the kind, the target, the reason, and what to do instead.
        line: String,
    },
}

impl ExitVerdict {
    /// How an approved call runs: unsandboxed when a record needs it, else contained.
    #[must_use]
    pub fn launch(needs: &Needs) -> LaunchKind {
        if needs.unsandboxed {
            LaunchKind::Unsandboxed
        } else {
            LaunchKind::Contained
        }
    }
}

/// One call's exits for [`judge`].
#[derive(Debug, Clone, Copy)]
pub struct CallExits<'a> {
    /// The turn.
    pub turn_id: TurnId,
    /// The call.
    pub call_id: &'a CallId,
    /// The call's summary for a question (its line, or a patch's files).
    pub summary: &'a str,
    /// The call may wait for input at the terminal.
    pub interactive: bool,
}

/// Judges a call's exits (`records`, not empty, found by [`crate::exits::find`]) and records their events; see the
/// module docs. `None` when the sink is gone.
pub async fn judge(
    env: &ToolEnv,
    sink: &Sink,
    call: CallExits<'_>,
    mut records: Vec<ExitRecord>,
) -> Option<ExitVerdict> {
    let CallExits { turn_id, call_id, .. } = call;
    let mut denials = env.exits.denials.lock().await;
    for record in &mut records {
        record.facts.denials_in_a_row = denials.in_a_row;
        record.facts.denials_this_turn = denials.this_turn;
    }
    sink.record(turn_id, requested(env, call_id, &records)).await.ok()?;
    if super::exit_rules::approve_by_rule(env, sink, (turn_id, call_id), &records).await? {
        denials.approved();
        drop(denials);
        return Some(ExitVerdict::Run {
            needs: union_needs(&records),
            by_user: false,
        });
    }
    let recent = env.exits.recent();
    let previous = env.exits.previous_judged();
    let chain = review(
        &env.exits.judges,
        &mut denials,
        Review {
            call_id,
            records: &records,
            user_prompt: &env.exits.user_prompt,
            recent_calls: &recent,
            previous_exits: &previous,
        },
    )
    .await;
    drop(denials);
    env.exits.note_judged(&chain.events);
    sink.record(turn_id, chain.events).await.ok()?;
    let shown = Shown::of(env);
    match chain.outcome {
        ChainOutcome::Approved => Some(ExitVerdict::Run {
            needs: union_needs(&records),
            by_user: false,
        }),
        ChainOutcome::Denied { reason } => Some(ExitVerdict::Denied {
            line: denied_line(&records, &reason, &shown),
        }),
        ChainOutcome::AskUser { passed_on_by, reason } => {
            let rule = super::exit_rules::offered(env, &records);
            let (verdict, always) = ask_user(
                env,
                sink,
                call,
                &records,
                (passed_on_by, rule.as_ref()),
                &reason,
                &shown,
            )
            .await?;
            if let (true, Some(rule)) = (always, rule) {
                super::exit_rules::save(env, sink, (turn_id, call_id), rule).await?;
            }
            Some(verdict)
        }
    }
}

/// The chain passed the exits on to the user: the question (offering `rule` when there is one), then one
/// exit_judged per record for the answer. Also says whether the user answered allow_always to a question with a
/// rule. `None` when the sink is gone.
async fn ask_user(
    env: &ToolEnv,
    sink: &Sink,
    call: CallExits<'_>,
    records: &[ExitRecord],
    (passed_on_by, rule): (Option<ChainStep>, Option<&crate::config::AlwaysRule>),
    reason: &str,
    shown: &Shown,
) -> Option<(ExitVerdict, bool)> {
    let CallExits {
        turn_id,
        call_id,
        summary,
        interactive,
    } = call;
    let mut info = exit_info(records, passed_on_by, reason, shown);
    info.always = rule.map(|rule| rule.rule.clone());
    let needs = info.needs.clone();
    let question = Question {
        summary: summary.to_owned(),
        reason: reason.to_owned(),
        interactive,
        // A question about running as another user is the user's machine's alone, as in the other modes.
        local_only: interactive || records.iter().any(|r| r.kind == ExitKind::Privilege),
        expires_in_secs: None,
        launch: ExitVerdict::launch(&needs),
        exit: Some(info),
    };
    let answer = sink.ask(turn_id, call_id.clone(), question).await.ok()?;
    let allowed = matches!(
        answer.decision(),
        ApprovalDecision::Allow | ApprovalDecision::AllowAlways
    );
    let always = rule.is_some() && answer.decision() == ApprovalDecision::AllowAlways;
    // An expiry while the user was away is judged presence_expired, not by the user (spec, "phase A").
    let (judge, why) = match answer {
        Answer::Expired { away: true } => (
            JudgeKind::PresenceExpired,
            "the question expired while the user was away",
        ),
        Answer::Expired { away: false } => (JudgeKind::User, "the user did not answer in time"),
        Answer::Decided(_) => (JudgeKind::User, "the user denied it"),
    };
    let verdict = if allowed { Verdict::Approve } else { Verdict::Deny };
    let judged: Vec<EventBody> = records
        .iter()
        .map(|record| {
            EventBody::ExitJudged(ExitJudged {
                call_id: call_id.clone(),
                exit_kind: record.kind,
                judge,
                verdict,
                reason: if allowed || judge == JudgeKind::User && matches!(answer, Answer::Decided(_)) {
                    String::new()
                } else {
                    why.to_owned()
                },
                chain_step: Some(ChainStep::User),
                skipped: Vec::new(),
                reasked: false,
            })
        })
        .collect();
    env.exits.note_judged(&judged);
    sink.record(turn_id, judged).await.ok()?;
    let verdict = if allowed {
        ExitVerdict::Run { needs, by_user: true }
    } else {
        ExitVerdict::Denied {
            line: denied_line(records, "the user denied it (or did not answer in time)", shown),
        }
    };
    Some((verdict, always))
}

/// One exit_requested per record, each with the turn's exits judged before it.
pub(super) fn requested(env: &ToolEnv, call_id: &CallId, records: &[ExitRecord]) -> Vec<EventBody> {
    let previous = env.exits.previous_judged();
    records
        .iter()
        .map(|exit| {
            EventBody::ExitRequested(ExitRequested {
                call_id: call_id.clone(),
                exit: exit.clone(),
                previous_exits_this_turn: previous.clone(),
            })
        })
        .collect()
}

/// The union of the records' needs: every grant once, in the order found; unsandboxed when any record needs it.
#[must_use]
pub fn union_needs(records: &[ExitRecord]) -> Needs {
    let mut needs = Needs::default();
    for record in records {
        for grant in &record.needs.grants {
            if !needs.grants.contains(grant) {
                needs.grants.push(grant.clone());
            }
        }
        needs.unsandboxed |= record.needs.unsandboxed;
    }
    needs
}

/// Leaves out the records whose needs the call's launch already has (`base`: a contained shell call's `[network]
/// allow` hosts and its session bus filter): such an exit would grant nothing, so it is no exit.
pub fn drop_covered(records: &mut Vec<ExitRecord>, base: &[Grant]) {
    records.retain(|r| r.needs.unsandboxed || !r.needs.grants.iter().all(|g| base.contains(g)));
}

/// `base` plus the grants of `needs` that it lacks: the grants of an approved exit's contained launch.
#[must_use]
pub fn with_grants(base: &[Grant], needs: &Needs) -> Vec<Grant> {
    let mut grants = base.to_vec();
    for grant in &needs.grants {
        if !grants.contains(grant) {
            grants.push(grant.clone());
        }
    }
    grants
}

/// How paths are shown to the user and the model: relative to the project, or with `~`.
#[derive(Debug, Clone, Default)]
pub struct Shown {
    roots: Vec<PathBuf>,
    home: Option<PathBuf>,
}

impl Shown {
    /// The roots and home of `env`.
    #[must_use]
    pub fn of(env: &ToolEnv) -> Self {
        Self {
            roots: env.roots.clone(),
            home: env.home.clone(),
        }
    }

    fn path(&self, path: &Path) -> String {
        efr_policy::paths::display(path, &self.roots, self.home.as_deref())
    }
}

/// The index of the record a question is about: the first that only the user may approve, or else the first.
fn main_index(records: &[ExitRecord]) -> Option<usize> {
    records
        .iter()
        .position(|r| approvers(r) == Approvers::UserAlone)
        .or_else(|| (!records.is_empty()).then_some(0))
}

/// A record's target in a few words: its first path (a masked one first), else its first host, else its first
/// grant, else its kind.
#[must_use]
pub fn target_words(record: &ExitRecord, shown: &Shown) -> String {
    let target = record.main_target();
    if let Some(target) = target {
        return shown.path(&target.path);
    }
    if let Some(host) = record.facts.hosts.first() {
        return match host.port {
            Some(port) if port != 443 => format!("{}:{port}", host.host),
            _ => host.host.clone(),
        };
    }
    if let Some(command) = record.facts.outside_commands.first() {
        return command.clone();
    }
    match record.needs.grants.first() {
        Some(Grant::Host { host, .. }) => host.clone(),
        Some(Grant::Write { path } | Grant::Unmask { path }) => shown.path(path),
        _ => record
            .action
            .command
            .as_deref()
            .map_or_else(|| record.kind.as_str().to_owned(), efr_policy::decide::shell_summary),
    }
}

/// approval_requested's `exit`: the main record's kind, the others' kinds in `also`, the union of the needs.
#[must_use]
pub fn exit_info(records: &[ExitRecord], passed_on_by: Option<ChainStep>, reason: &str, shown: &Shown) -> ExitInfo {
    let main = main_index(records);
    let kind = main.map_or(ExitKind::Unsandboxed, |i| records[i].kind);
    let also = records
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != main)
        .map(|(_, r)| r.kind)
        .collect();
    ExitInfo {
        kind,
        also,
        needs: union_needs(records),
        target: main.map(|i| target_words(&records[i], shown)).unwrap_or_default(),
        reason: reason.to_owned(),
        passed_on_by,
        always: None,
    }
}

/// The one line a denied call's model gets: the kind, the target, the judge's reason, and what to do instead.
#[must_use]
pub fn denied_line(records: &[ExitRecord], reason: &str, shown: &Shown) -> String {
    let Some(main) = main_index(records).map(|i| &records[i]) else {
        return format!("[efr denied this call's exit from its sandbox: {reason}]");
    };
    let reason = reason.trim().trim_end_matches('.');
    let reason = if reason.is_empty() { "no reason given" } else { reason };
    format!(
        "[efr denied this call's {} exit ({}) from its sandbox: {reason}. It did not run with the exit; do not try \
         another way around the sandbox: ask the user, or work inside the project]",
        main.kind.as_str(),
        target_words(main, shown)
    )
}

#[cfg(test)]
#[path = "exits_tests.rs"]
mod tests;
