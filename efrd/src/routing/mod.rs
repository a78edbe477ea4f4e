//! Routing by scope: which conversation a terminal's prompt goes to (the contract's "routing by scope";
//! docs/adr/0030-projects-and-routing.md).
//!
//! A prompt from a terminal (a context with a tty) that names no conversation goes to the conversation of its
//! *scope key*: the registered project that holds its working directory ([`crate::projects`]), else outside every
//! project. Each terminal has one *slot* per scope key. [`route_prompt`] decides ([`route`]), in this order:
//!
//! 1. `,new` (`new` asked): a new conversation; no switch is reported.
//! 2. The terminal's slot for the key holds a conversation (or held one that another terminal took with
//!    conversation.resume's `take`):
//!    - another open terminal holds it now (it was moved there): a new one, reason `moved` (that tty, its title);
//!    - it had no event for longer than `[routing] idle_after_secs`: a new one, reason `idle` (whole hours);
//!    - else that conversation; the switch is `back` when the terminal's last prompt went to another one.
//! 3. No slot: the newest conversation of the key that no open terminal holds and that is not idle is *picked up*
//!    (terminal_attached with how `picked_up`); else a new one, reason `scope` when the terminal held another
//!    conversation, no switch at its first prompt.
//!
//! A terminal is open while its tty is a character device under `/dev` and its shell (the prompt's
//! `shell_context.pid`, when known) is alive ([`is_open`]). A closed terminal's slots are released; a prompt from the
//! same tty path with another shell pid is a new terminal on a reused pseudo-terminal, so the old one's slots go too.
//! The slots live in memory: after a restart each terminal picks its conversations up again.

pub mod decide;
pub mod places;
pub mod prompt;
pub mod resume;

use std::collections::HashMap;
use std::sync::Mutex;

use efr_protocol::ids::ConversationId;
use efr_protocol::wire::RouteScope;

pub use decide::{Candidate, Choice, Decision, Slotted, route};
pub use places::RoutingPlaces;
pub use prompt::{Router, Routing, route_prompt};
pub use resume::resume;

/// A scope key: a project's id, or outside every project.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ScopeKey {
    /// The project with this id.
    Project(String),
    /// Outside every project.
    Outside,
}

impl ScopeKey {
    /// The wire form.
    #[must_use]
    pub fn to_wire(&self) -> RouteScope {
        match self {
            Self::Project(id) => RouteScope::Project { value: id.clone() },
            Self::Outside => RouteScope::Outside,
        }
    }

    /// The key of a wire scope; `None` for a kind this efrd does not know.
    #[must_use]
    pub fn from_wire(scope: &RouteScope) -> Option<Self> {
        match scope {
            RouteScope::Project { value } => Some(Self::Project(value.clone())),
            RouteScope::Outside => Some(Self::Outside),
            RouteScope::Unknown => None,
        }
    }
}

/// One terminal as efrd knows it.
#[derive(Debug, Clone, Default)]
struct Terminal {
    /// Its shell's process id, when a prompt said it.
    shell_pid: Option<u32>,
    /// The conversation of each slot.
    slots: HashMap<ScopeKey, ConversationId>,
    /// The conversations that another terminal took from a slot (conversation.resume with take), by key, until this
    /// terminal's slot of that key holds a conversation again: its next prompt there says `moved`.
    taken: HashMap<ScopeKey, ConversationId>,
    /// The conversation its last prompt went to.
    current: Option<ConversationId>,
}

/// Whether the terminal `tty` (with its shell `shell_pid`, when known) is open now: a character device at that path
/// (a closed pseudo-terminal's `/dev/pts/N` is gone) and a shell process that still runs.
#[must_use]
pub fn is_open(tty: &str, shell_pid: Option<u32>) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    let device = tty.starts_with("/dev/") && std::fs::metadata(tty).is_ok_and(|meta| meta.file_type().is_char_device());
    device && shell_pid.is_none_or(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
}

/// The terminals and their slots (see the module docs).
#[derive(Debug, Default)]
pub struct Terminals {
    map: Mutex<HashMap<String, Terminal>>,
    /// Held from a routing decision until its prompt is taken and attached, so two prompts never decide on the same
    /// slots at once.
    pub deciding: tokio::sync::Mutex<()>,
}

impl Terminals {
    /// Forgets the terminals that closed, and the terminal of `tty` when its shell is no longer `shell_pid` (a
    /// reused pseudo-terminal). `open` says whether a terminal is open ([`is_open`] outside tests).
    pub fn release_closed(&self, tty: &str, shell_pid: Option<u32>, open: &dyn Fn(&str, Option<u32>) -> bool) {
        let mut map = self.lock();
        if let (Some(known), Some(pid)) = (map.get(tty).and_then(|t| t.shell_pid), shell_pid)
            && known != pid
        {
            map.remove(tty);
        }
        map.retain(|tty, terminal| open(tty, terminal.shell_pid));
    }

    /// What the terminal `tty` holds for `key`, and who else holds that conversation (see [`Slotted`]).
    #[must_use]
    pub fn slotted(&self, tty: &str, key: &ScopeKey) -> Slotted {
        let map = self.lock();
        let terminal = map.get(tty);
        let slot = terminal
            .and_then(|t| t.slots.get(key).or_else(|| t.taken.get(key)))
            .copied();
        let held_by = slot.and_then(|id| {
            map.iter()
                .find(|(other, t)| other.as_str() != tty && t.slots.values().any(|held| *held == id))
                .map(|(other, _)| other.clone())
        });
        Slotted {
            slot,
            held_by,
            current: terminal.and_then(|t| t.current),
        }
    }

    /// Makes `id` the conversation of the slot `key` of `tty` (and its current one), and takes it out of every other
    /// terminal's slots: a conversation is the slot conversation of one terminal at most.
    pub fn attach(&self, tty: &str, shell_pid: Option<u32>, key: ScopeKey, id: ConversationId) {
        let mut map = self.lock();
        for (other, terminal) in map.iter_mut() {
            if other != tty {
                let Terminal { slots, taken, .. } = terminal;
                slots.retain(|slot, held| {
                    if *held == id {
                        taken.insert(slot.clone(), id);
                    }
                    *held != id
                });
            }
        }
        let terminal = map.entry(tty.to_owned()).or_default();
        if shell_pid.is_some() {
            terminal.shell_pid = shell_pid;
        }
        terminal.taken.remove(&key);
        terminal.slots.insert(key, id);
        terminal.current = Some(id);
    }

    /// The open terminal other than `except` whose slot holds `id` (a terminal that closed holds nothing, though it
    /// is released only at the next routed prompt); `open` as in [`Terminals::release_closed`]. A caller that asks
    /// for any terminal that holds it, open or not yet released, passes an `open` that answers true.
    #[must_use]
    pub fn open_holder(
        &self,
        id: ConversationId,
        except: Option<&str>,
        open: &dyn Fn(&str, Option<u32>) -> bool,
    ) -> Option<String> {
        self.lock()
            .iter()
            .find(|(tty, t)| {
                Some(tty.as_str()) != except && t.slots.values().any(|held| *held == id) && open(tty, t.shell_pid)
            })
            .map(|(tty, _)| tty.clone())
    }

    /// The terminal of `tty`'s current conversation, if it holds one.
    #[must_use]
    pub fn current(&self, tty: &str) -> Option<ConversationId> {
        self.lock().get(tty).and_then(|t| t.current)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Terminal>> {
        self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests;
