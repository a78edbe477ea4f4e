//! Which judges may approve an exit (docs/adr/0016-exit-kinds.md, "The kinds": each kind's "Judges").

use efr_protocol::wire::{ExitKind, ExitRecord, TargetClass};

/// Who may approve a record. Any judge may deny it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approvers {
    /// The classifier, the turn's model or the user.
    Any,
    /// The user alone: the record goes to the user at once, past the models.
    UserAlone,
}

/// Who may approve `record`, from its kind, targets and facts.
#[must_use]
pub fn approvers(record: &ExitRecord) -> Approvers {
    let user_alone = match record.kind {
        ExitKind::OpenNetwork
        | ExitKind::FloorEdit
        | ExitKind::Unmask
        | ExitKind::Service
        | ExitKind::Unsandboxed
        | ExitKind::Privilege
        // A signal to a process outside the sandbox: no contained call started it (the sandbox has its own process
        // namespace), so it is not the conversation's to end (docs/adr/0023-floors-that-hold.md).
        | ExitKind::Kill => true,
        ExitKind::Write => record.targets.iter().any(|t| t.class == TargetClass::System),
        ExitKind::Delete => !record.targets.iter().all(|t| {
            matches!(
                t.class,
                TargetClass::Cache | TargetClass::BuildOutput | TargetClass::Trash
            )
        }),
        // An upload whose destination the record does not name is the user's, like one to a host not the project's.
        ExitKind::Upload => {
            record.facts.hosts.is_empty()
                || record.facts.hosts.iter().any(|h| !h.project_remote)
                || record.targets.iter().any(|t| t.masked)
                || git_code_user_alone(record)
        }
        ExitKind::Outside => git_code_user_alone(record),
        ExitKind::Bus => record
            .needs
            .grants
            .iter()
            .any(|g| matches!(g, efr_protocol::wire::Grant::Bus { .. })),
        ExitKind::Socket => record.targets.iter().any(|t| root_socket(&t.path)),
        ExitKind::Host | ExitKind::Device | ExitKind::Desktop | ExitKind::PackageInstall => false,
    };
    if user_alone {
        Approvers::UserAlone
    } else {
        Approvers::Any
    }
}

/// A git code fact that makes an exit one only the user approves: a writable item, or code efrd could not check.
fn git_code_user_alone(record: &ExitRecord) -> bool {
    record
        .facts
        .git_code
        .as_ref()
        .is_some_and(|code| !code.checked || code.items.iter().any(|item| item.writable))
}

/// A socket that gives root or keys: a container engine's or an agent's.
fn root_socket(path: &std::path::Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    ["docker.sock", "podman.sock", "containerd.sock"].contains(&name)
        || name.starts_with("ssh-")
        || path.components().any(|c| {
            let c = c.as_os_str();
            c == "gnupg" || c == "ssh-agent" || c == "keyring"
        })
        || name.starts_with("S.gpg-agent")
        || name == "agent.sock"
}
