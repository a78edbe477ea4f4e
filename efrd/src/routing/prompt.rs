//! A terminal's prompt routed: the scope key of its working directory, the decision ([`super::route`]) from the
//! terminal's slots and the store's rows, and the conversation it goes to with what its actor records
//! ([`crate::conversation::Routed`]).

use std::path::Path;
use std::time::Duration;

use efr_protocol::ErrorBody;
use efr_protocol::events::TerminalAttached;
use efr_protocol::ids::Timestamp;
use efr_protocol::wire::{AttachHow, PromptContext, PromptRoute, RouteScope};
use efr_store::{ConversationSummary, PageRequest, Store};

use super::{Candidate, Choice, ScopeKey, Terminals, is_open, route};
use crate::conversation::{ConversationHandle, Conversations, Deps, Routed, summary_to_wire};
use crate::projects::Registry;

/// The store page read at a time while looking for a conversation to pick up.
const PICK_PAGE: u32 = 200;
/// The most conversations that look takes (newest first); older ones are idle long since.
const PICK_SCAN: usize = 5_000;

/// What routing needs of the daemon.
#[derive(Debug, Clone, Copy)]
pub struct Router<'a> {
    /// The event store (the summary rows).
    pub store: &'a Store,
    /// The live conversations.
    pub conversations: &'a Conversations,
    /// What a new conversation's actor needs.
    pub deps: &'a Deps,
    /// The terminals and their slots.
    pub terminals: &'a Terminals,
    /// The project registry in force.
    pub registry: &'a Registry,
    /// `[routing] idle_after_secs`; `None`: never.
    pub idle_after: Option<Duration>,
}

/// A routed prompt: its conversation and what its actor records. [`Routing::attach`] makes the conversation the
/// terminal's once the prompt was taken.
#[derive(Debug)]
pub struct Routing {
    /// The conversation the prompt goes to.
    pub handle: ConversationHandle,
    /// What its actor records.
    pub routed: Routed,
    tty: String,
    shell_pid: Option<u32>,
    key: ScopeKey,
}

impl Routing {
    /// Makes the conversation the one of the terminal's slot for the prompt's key, and its current one.
    pub fn attach(&self, terminals: &Terminals) {
        terminals.attach(&self.tty, self.shell_pid, self.key.clone(), self.handle.id());
    }
}

/// The scope key of `cwd`, with the project's name and the route's `dir`.
pub(super) fn scope_of(
    registry: &Registry,
    cwd: Option<&Path>,
) -> (ScopeKey, Option<String>, Option<std::path::PathBuf>) {
    match cwd.and_then(|dir| registry.holding(dir)) {
        Some(project) => (
            ScopeKey::Project(project.id.clone()),
            project.name.clone().or_else(|| Some(project.id.clone())),
            Some(project.root.clone()),
        ),
        None => (ScopeKey::Outside, None, cwd.map(Path::to_path_buf)),
    }
}

fn candidate(summary: &ConversationSummary) -> Candidate {
    let wire = summary_to_wire(summary);
    Candidate {
        id: summary.id,
        title: wire.title,
        updated_at: summary.updated_at,
    }
}

/// Routes the prompt of the terminal `tty` (see the module docs of [`super`]). `new` is `,new`.
///
/// # Errors
/// `unavailable` when the store fails; the errors of loading a conversation.
pub async fn route_prompt(
    router: Router<'_>,
    tty: &str,
    context: &PromptContext,
    new: bool,
) -> Result<Routing, ErrorBody> {
    let cwd = context.cwd.as_deref();
    let shell_pid = context.shell_context.as_ref().and_then(|s| s.pid);
    let (key, name, dir) = scope_of(router.registry, cwd);
    router.terminals.release_closed(tty, shell_pid, &is_open);
    let slotted = router.terminals.slotted(tty, &key);
    let slot_row = match slotted.slot {
        Some(id) => router
            .store
            .conversation(id)
            .await
            .map_err(ErrorBody::from)?
            .as_ref()
            .map(candidate),
        None => None,
    };
    let now = Timestamp::now();
    let idle_after = router.idle_after.unwrap_or(Duration::MAX);
    let pick = if !new && slot_row.is_none() {
        find_pick(router, &key, now, idle_after).await?
    } else {
        None
    };
    let decision = route(new, &slotted, slot_row.as_ref(), || pick, now, idle_after);
    let handle = match decision.choice {
        Choice::Existing(id) => router.conversations.get(router.deps, id).await?,
        Choice::New => router.conversations.create(router.deps),
    };
    let scope = key.to_wire();
    let routed = Routed {
        scope: cwd.is_some().then(|| scope.clone()),
        attach: decision.picked_up.then(|| TerminalAttached {
            tty: tty.to_owned(),
            route: scope.clone(),
            shell_pid,
            how: AttachHow::PickedUp,
        }),
        route: PromptRoute {
            scope,
            name,
            dir,
            switch: decision.switch,
            hint: None,
        },
    };
    Ok(Routing {
        handle,
        routed,
        tty: tty.to_owned(),
        shell_pid,
        key,
    })
}

/// The newest conversation of `key` that no open terminal holds and that changed within `idle_after`.
async fn find_pick(
    router: Router<'_>,
    key: &ScopeKey,
    now: Timestamp,
    idle_after: Duration,
) -> Result<Option<Candidate>, ErrorBody> {
    let wire: RouteScope = key.to_wire();
    let mut after = None;
    let mut scanned = 0;
    loop {
        let page = router
            .store
            .list_conversations(PageRequest {
                limit: PICK_PAGE,
                after,
            })
            .await
            .map_err(ErrorBody::from)?;
        for summary in &page.conversations {
            // Newest first: past the idle gap, every later row is older still.
            if super::decide::idle_for(summary.updated_at, now) > idle_after {
                return Ok(None);
            }
            let route = summary
                .extra
                .get("route")
                .and_then(|r| serde_json::from_value::<RouteScope>(r.clone()).ok());
            // Any terminal that holds it: the closed ones were released before this decision.
            let held = router.terminals.open_holder(summary.id, None, &|_, _| true).is_some();
            if route.as_ref() == Some(&wire) && !held {
                return Ok(Some(candidate(summary)));
            }
        }
        scanned += page.conversations.len();
        after = page.next;
        if after.is_none() || scanned >= PICK_SCAN {
            return Ok(None);
        }
    }
}
