//! Always rules (docs/auto.md, "Always rules"; docs/adr/0026-always-rules.md): which exits a rule may
//! cover, the rule a question offers, whether a rule covers a call's exits, and the floors that disable a rule.
//!
//! A rule may cover an exit only when a model judge could approve it too ([`approvers`] says `Any`): the exits that
//! only the user may approve (a floor file's edit, a kill, an unmask, the whole network, anything unsandboxed) are
//! asked each time, rule or none. A rule holds in one project, for one kind, and for grants it lists: an exit whose
//! grants are all among them is covered. Nothing here reads a file; the floors are those of
//! [`crate::exits::find::FLOOR_FILES`] and efr's own roots.

use std::path::{Path, PathBuf};

use efr_policy::EfrDirs;
use efr_policy::paths::is_within;
use efr_protocol::wire::{ExitRecord, Grant};

use super::approvers::{Approvers, approvers};
use super::find::FLOOR_FILES;
use crate::config::AlwaysRule;

/// What disables a rule: the user's home (for the floor files) and efr's roots.
#[derive(Debug, Clone, Default)]
pub struct RuleFloors {
    /// The user's home.
    pub home: Option<PathBuf>,
    /// efr's roots.
    pub efr_dirs: EfrDirs,
}

/// Whether a rule could ever cover `record`: a model could approve it, it runs contained, and each grant is of a kind
/// a rule may hold (never the whole network, a whole bus or an unmask).
#[must_use]
pub fn coverable(record: &ExitRecord) -> bool {
    approvers(record) == Approvers::Any
        && !record.needs.unsandboxed
        && !record.needs.grants.is_empty()
        && !record.targets.iter().any(|t| t.masked)
        && record.needs.grants.iter().all(|g| {
            matches!(
                g,
                Grant::Write { .. }
                    | Grant::Host { .. }
                    | Grant::Socket { .. }
                    | Grant::Device { .. }
                    | Grant::Desktop { .. }
                    | Grant::NetView
                    | Grant::BusFilter { .. }
            )
        })
}

/// The rule a question about `records` offers (`None`: no rule may cover the call, so the question offers no
/// allow_always): one record that a rule may cover, in a project, and no floor that would disable the rule.
#[must_use]
pub fn offer(records: &[ExitRecord], project: Option<&Path>, floors: &RuleFloors) -> Option<AlwaysRule> {
    let [record] = records else { return None };
    let project = project?;
    if !coverable(record) {
        return None;
    }
    let mut rule = AlwaysRule {
        kind: record.kind,
        project: project.to_owned(),
        grants: record.needs.grants.clone(),
        rule: String::new(),
    };
    rule.rule = words(&rule, floors.home.as_deref());
    disabled(&rule, floors).is_none().then_some(rule)
}

/// The rules of `rules` that together cover every record (each record by one rule), by index; `None` when a record is
/// covered by none. A disabled rule covers nothing.
#[must_use]
pub fn covering(
    rules: &[AlwaysRule],
    records: &[ExitRecord],
    project: Option<&Path>,
    floors: &RuleFloors,
) -> Option<Vec<usize>> {
    let project = project?;
    if records.is_empty() {
        return None;
    }
    records
        .iter()
        .map(|record| {
            rules
                .iter()
                .position(|rule| covers(rule, record, project) && disabled(rule, floors).is_none())
        })
        .collect()
}

fn covers(rule: &AlwaysRule, record: &ExitRecord, project: &Path) -> bool {
    rule.kind == record.kind
        && rule.project == project
        && coverable(record)
        && record.needs.grants.iter().all(|g| rule.grants.contains(g))
}

/// Why a floor disables `rule`, one clause; `None` when none does. A rule is disabled when one of its grants would
/// open a floor: a write grant on a floor file, inside a floor folder or above one (a grant of a folder opens all
/// below it), or on efr's own roots; or a grant of a kind no rule may hold.
#[must_use]
pub fn disabled(rule: &AlwaysRule, floors: &RuleFloors) -> Option<String> {
    for grant in &rule.grants {
        match grant {
            Grant::Write { path } => {
                if let Some(reason) = write_floor(path, floors) {
                    return Some(reason);
                }
            }
            Grant::Host { .. }
            | Grant::Socket { .. }
            | Grant::Device { .. }
            | Grant::Desktop { .. }
            | Grant::NetView
            | Grant::BusFilter { .. } => {}
            Grant::OpenNetwork | Grant::Bus { .. } | Grant::Unmask { .. } | Grant::Unknown => {
                return Some("only the user may approve its grant each time".to_owned());
            }
        }
    }
    None
}

fn write_floor(path: &Path, floors: &RuleFloors) -> Option<String> {
    if floors.efr_dirs.write_refusal(path, true).is_some() {
        return Some(format!("{} holds efr's own files", path.display()));
    }
    let home = floors.home.as_deref()?;
    if path == home {
        return Some("it would write the whole home, floor files included".to_owned());
    }
    FLOOR_FILES.iter().find_map(|floor| {
        let floor_path = home.join(floor.trim_end_matches('/'));
        let hit = is_within(path, &floor_path) || is_within(&floor_path, path);
        hit.then(|| format!("it would write the floor file ~/{floor}"))
    })
}

/// The warnings of a config's always rules that a floor disables, one sentence each (admin.config_reload's
/// `warnings`).
#[must_use]
pub fn warnings(rules: &[AlwaysRule], floors: &RuleFloors) -> Vec<String> {
    rules
        .iter()
        .enumerate()
        .filter_map(|(i, rule)| {
            let why = disabled(rule, floors)?;
            let words = if rule.rule.is_empty() {
                words(rule, floors.home.as_deref())
            } else {
                rule.rule.clone()
            };
            Some(format!(
                "auto.always[{i}] ({words}) is disabled: {why}; efr asks for that exit each time."
            ))
        })
        .collect()
}

/// A rule in words: its kind, its grants and its project, as `host crates.io in the project efr`.
#[must_use]
pub fn words(rule: &AlwaysRule, home: Option<&Path>) -> String {
    let shown = |path: &Path| efr_policy::paths::display(path, &[], home);
    let grants: Vec<String> = rule
        .grants
        .iter()
        .map(|grant| match grant {
            Grant::Host {
                host,
                port: None | Some(443),
            } => host.clone(),
            Grant::Host { host, port: Some(port) } => format!("{host}:{port}"),
            Grant::Write { path } => format!("writes in {}", shown(path)),
            Grant::Socket { path } | Grant::Device { path } | Grant::Unmask { path } => shown(path),
            Grant::Desktop { desktop } => format!("the {} desktop", desktop.as_str()),
            Grant::BusFilter { bus } | Grant::Bus { bus } => format!("the {} bus", bus.as_str()),
            Grant::NetView => "the network view".to_owned(),
            Grant::OpenNetwork => "the network".to_owned(),
            Grant::Unknown => "an unknown grant".to_owned(),
        })
        .collect();
    let project = rule.project.file_name().map_or_else(
        || rule.project.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    format!("{} {} in the project {project}", rule.kind.as_str(), grants.join(", "))
}

#[cfg(test)]
#[path = "always_tests.rs"]
mod tests;
