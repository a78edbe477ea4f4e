//! The decision of [`route`]: pure, from what the terminal holds and the facts of the conversations it may go to
//! (the rules are in the module docs of [`super`]).

use std::time::Duration;

use efr_protocol::ids::{ConversationId, Timestamp};
use efr_protocol::wire::{RouteSwitch, SwitchReason};

/// What a terminal holds for the prompt's scope key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Slotted {
    /// The conversation of its slot for the key.
    pub slot: Option<ConversationId>,
    /// Another open terminal that holds that conversation now (it was moved there).
    pub held_by: Option<String>,
    /// The conversation its last prompt went to.
    pub current: Option<ConversationId>,
}

/// The facts of one conversation that a decision needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The conversation.
    pub id: ConversationId,
    /// Its title as shown (secrets replaced).
    pub title: Option<String>,
    /// Its last change.
    pub updated_at: Timestamp,
}

/// Where the prompt goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// This existing conversation.
    Existing(ConversationId),
    /// A new conversation.
    New,
}

/// The decision: the conversation, the switch that prompt.send reports, and whether the conversation is picked up
/// (so terminal_attached is recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Where the prompt goes.
    pub choice: Choice,
    /// The switch; `None` when the conversation did not change, at a terminal's first prompt and at `,new`.
    pub switch: Option<RouteSwitch>,
    /// The conversation was picked up: it becomes the terminal's with terminal_attached, how `picked_up`.
    pub picked_up: bool,
}

/// How long `since` is before `now`, zero when it is not before.
#[must_use]
pub fn idle_for(since: Timestamp, now: Timestamp) -> Duration {
    (now.0 - since.0).to_std().unwrap_or_default()
}

/// Decides where a terminal's prompt goes. `slot_row` is the facts of `slotted.slot` (`None` when that conversation
/// is gone); `pick` is the newest conversation of the key that no open terminal holds and that is not idle, asked
/// only when the slot is empty or gone.
pub fn route(
    new: bool,
    slotted: &Slotted,
    slot_row: Option<&Candidate>,
    pick: impl FnOnce() -> Option<Candidate>,
    now: Timestamp,
    idle_after: Duration,
) -> Decision {
    let fresh = |switch| Decision {
        choice: Choice::New,
        switch,
        picked_up: false,
    };
    if new {
        return fresh(None);
    }
    if let Some(row) = slot_row {
        if let Some(tty) = &slotted.held_by {
            return fresh(Some(RouteSwitch::New {
                from: row.id,
                reason: SwitchReason::Moved {
                    tty: tty.clone(),
                    title: row.title.clone(),
                },
            }));
        }
        let idle = idle_for(row.updated_at, now);
        if idle > idle_after {
            return fresh(Some(RouteSwitch::New {
                from: row.id,
                reason: SwitchReason::Idle {
                    hours: idle.as_secs() / 3600,
                },
            }));
        }
        let switch = (slotted.current != Some(row.id)).then(|| RouteSwitch::Back {
            title: row.title.clone(),
            updated_at: row.updated_at,
        });
        return Decision {
            choice: Choice::Existing(row.id),
            switch,
            picked_up: false,
        };
    }
    if let Some(found) = pick() {
        return Decision {
            choice: Choice::Existing(found.id),
            switch: Some(RouteSwitch::PickedUp {
                title: found.title,
                updated_at: found.updated_at,
            }),
            picked_up: true,
        };
    }
    fresh(slotted.current.map(|from| RouteSwitch::New {
        from,
        reason: SwitchReason::Scope,
    }))
}
