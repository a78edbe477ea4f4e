//! Full mode's rules that the config and the process decide (docs/adr/0029-full-mode.md): whether the config allows
//! it, why efrd refuses it although allowed (admin.status `full_mode`), and which changes of `config.toml` loosen
//! permissions, so that a reload that brings them while a full turn runs is held (admin.status `config.held`).
//!
//! Source: docs/protocol.md, "The contract": "full mode" (full_refusal root, snapshot_off, undo_off, no_zsh; the
//! config object's `held` with `loosens`).

use std::path::Path;

use efr_protocol::wire::full::{FullModeStatus, FullRefusal};

use super::schema::{Config, ShellProgram};

/// What efrd knows of the process and the disk for [`refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullFacts {
    /// efrd's effective uid is 0.
    pub root: bool,
    /// The snapshot store's folder can take a new snapshot (efrd may write and search it).
    pub snapshots_writable: bool,
}

impl FullFacts {
    /// The facts of this process, with the snapshot store in `snapshots`.
    #[must_use]
    pub fn of_process(snapshots: &Path) -> Self {
        let root = nix::unistd::geteuid().is_root();
        let writable = nix::unistd::access(
            snapshots,
            nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
        )
        .is_ok();
        Self {
            root,
            snapshots_writable: writable,
        }
    }
}

/// Why efrd refuses full mode, in this order: root unless `permissions.allow_full_as_root` (an uncontained call as
/// root can change the whole machine, and the floors are too few to stand for a sandbox there), undo_off and snapshot_off (full mode must be undoable, so
/// a full turn needs its covered snapshots), no_zsh (the floors are read by a bash parser; zsh's syntax would pass
/// lines it does not read). `None`: efrd does not refuse it (whether the config allows it is apart).
#[must_use]
pub fn refusal(config: &Config, facts: FullFacts) -> Option<FullRefusal> {
    if facts.root && !config.permissions.allow_full_as_root {
        Some(FullRefusal::Root)
    } else if !config.undo.enabled {
        Some(FullRefusal::UndoOff)
    } else if !facts.snapshots_writable {
        Some(FullRefusal::SnapshotOff)
    } else if config.shell.program == ShellProgram::Zsh {
        Some(FullRefusal::NoZsh)
    } else {
        None
    }
}

/// admin.status `full_mode`.
#[must_use]
pub fn status(config: &Config, facts: FullFacts) -> FullModeStatus {
    FullModeStatus {
        allowed: config.permissions.allow_full,
        refused: refusal(config, facts),
    }
}

/// One sentence on why full mode cannot run, for an error and the log.
#[must_use]
pub fn refusal_words(refusal: FullRefusal) -> &'static str {
    match refusal {
        FullRefusal::Root => {
            "efrd runs as root, where a call with no sandbox and no question could change the whole machine \
             ([permissions] allow_full_as_root is for a throwaway container)"
        }
        FullRefusal::UndoOff => "undo is off ([undo] enabled = false), and a full turn must be undoable",
        FullRefusal::SnapshotOff => {
            "the turns' snapshots cannot be taken (the snapshot store is not writable), and a full turn must be undoable"
        }
        FullRefusal::NoZsh => "the hidden shell is zsh, whose lines the floors' parser does not read",
        FullRefusal::Unknown => "a reason this efrd does not know",
    }
}

/// The dotted keys whose change from `old` to `new` loosens permissions, sorted: a looser `permissions.default_mode`,
/// `permissions.allow_full` or `permissions.allow_full_as_root` turned on, a host added to `network.allow` or removed from `network.deny`, a mask
/// removed from `sandbox.extra_masks`, a name or rule added to `[bus]` or the bus filter turned off, an always rule
/// added (`auto.always`), undo turned off (`undo.enabled`: a full turn must stay undoable). A change that only
/// tightens, or touches other keys, loosens nothing.
#[must_use]
pub fn loosens(old: &Config, new: &Config) -> Vec<String> {
    fn added<T: PartialEq>(old: &[T], new: &[T]) -> bool {
        new.iter().any(|item| !old.contains(item))
    }
    let mut keys = Vec::new();
    let mut check = |key: &str, loosened: bool| {
        if loosened {
            keys.push(key.to_owned());
        }
    };
    let (p, q) = (&old.permissions, &new.permissions);
    check("permissions.default_mode", q.default_mode > p.default_mode);
    check("permissions.allow_full", q.allow_full && !p.allow_full);
    check(
        "permissions.allow_full_as_root",
        q.allow_full_as_root && !p.allow_full_as_root,
    );
    check("network.allow", added(&old.network.allow, &new.network.allow));
    check("network.deny", added(&new.network.deny, &old.network.deny));
    check(
        "sandbox.extra_masks",
        added(&new.sandbox.extra_masks, &old.sandbox.extra_masks),
    );
    let (b, c) = (&old.bus, &new.bus);
    check("bus.enabled", b.enabled && !c.enabled);
    check("bus.see", added(&b.see, &c.see));
    check("bus.talk", added(&b.talk, &c.talk));
    check("bus.own", added(&b.own, &c.own));
    check("bus.call", added(&b.call, &c.call));
    check("bus.broadcast", added(&b.broadcast, &c.broadcast));
    check("auto.always", added(&old.auto.always, &new.auto.always));
    check("undo.enabled", old.undo.enabled && !new.undo.enabled);
    keys.sort();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse::parse;

    fn config(text: &str) -> Config {
        parse(text).expect("a valid config").config
    }

    const FREE: FullFacts = FullFacts {
        root: false,
        snapshots_writable: true,
    };

    #[test]
    fn each_refusal_in_its_order() {
        let base = Config::default();
        assert_eq!(refusal(&base, FREE), None);
        let root = FullFacts { root: true, ..FREE };
        assert_eq!(refusal(&base, root), Some(FullRefusal::Root));
        let undo_off = config("[undo]\nenabled = false\n[shell]\nprogram = \"zsh\"\n");
        assert_eq!(refusal(&undo_off, FREE), Some(FullRefusal::UndoOff));
        assert_eq!(refusal(&undo_off, root), Some(FullRefusal::Root));
        let as_root = config("[permissions]\nallow_full_as_root = true\n");
        assert_eq!(refusal(&as_root, root), None, "the container's own opt-in");
        let stuck = FullFacts {
            snapshots_writable: false,
            ..FREE
        };
        assert_eq!(refusal(&base, stuck), Some(FullRefusal::SnapshotOff));
        let zsh = config("[shell]\nprogram = \"zsh\"\n");
        assert_eq!(refusal(&zsh, FREE), Some(FullRefusal::NoZsh));
        assert!(!status(&base, FREE).allowed, "off by default");
        assert_eq!(
            status(&base, FREE),
            FullModeStatus {
                allowed: false,
                refused: None
            }
        );
    }

    #[test]
    fn loosening_keys_and_tightening_ones() {
        let old = config(
            "[permissions]\ndefault_mode = \"auto\"\nallow_full = false\n\
             [network]\nallow = [\"crates.io\"]\ndeny = [\"gist.github.com\"]\n",
        );
        let looser = config(
            "[permissions]\ndefault_mode = \"full\"\nallow_full = true\nallow_full_as_root = true\n\
             [network]\nallow = [\"crates.io\", \"evil.example\"]\ndeny = []\n[undo]\nenabled = false\n",
        );
        assert_eq!(
            loosens(&old, &looser),
            [
                "network.allow",
                "network.deny",
                "permissions.allow_full",
                "permissions.allow_full_as_root",
                "permissions.default_mode",
                "undo.enabled"
            ]
        );
        assert!(
            loosens(&looser, &old).is_empty(),
            "the way back only tightens: {:?}",
            loosens(&looser, &old)
        );
        let other = config(
            "[permissions]\ndefault_mode = \"auto\"\nallow_full = false\n\
             [network]\nallow = [\"crates.io\"]\ndeny = [\"gist.github.com\"]\n[model]\nmodel = \"gpt-5\"\n",
        );
        assert!(loosens(&old, &other).is_empty());
    }
}
