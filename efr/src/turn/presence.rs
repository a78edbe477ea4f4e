//! The user's presence while efr shows a turn (docs/auto.md, "Presence"). A key typed at the terminal is the user's
//! input; no key for `--away-after` seconds ([`DEFAULT_AWAY_AFTER_SECS`] when absent, 0: never) says away
//! (presence.set), so an approval question of the turn expires after efrd's `[permissions] away_question_secs`
//! rather than waiting for nobody; the first key after that says present again. Only with a terminal on stdin:
//! without one efr asks nothing and says nothing of presence.

use std::time::{Duration, Instant};

use efr_protocol::ids::{CommandId, ConversationId};
use efr_protocol::wire::{Presence, PresenceSetParams, PresenceSetResult};

use crate::client::{Client, ClientError};

/// Seconds with no key before efr says the user is away: ten minutes, long enough to read a long answer.
pub const DEFAULT_AWAY_AFTER_SECS: u64 = 600;

/// When the user last typed, and whether efr said away since.
#[derive(Debug)]
pub(super) struct Idle {
    /// `None`: never away (no terminal, or `--away-after 0`).
    after: Option<Duration>,
    last_input: Instant,
    away: bool,
}

impl Idle {
    /// Idle from `now`; away after `after_secs` without a key (0: never), only with a terminal.
    pub(super) fn new(after_secs: u64, terminal: bool, now: Instant) -> Self {
        Self {
            after: (terminal && after_secs > 0).then(|| Duration::from_secs(after_secs)),
            last_input: now,
            away: false,
        }
    }

    /// A key was typed: present, when efr said away before.
    pub(super) fn input(&mut self, now: Instant) -> Option<Presence> {
        self.last_input = now;
        std::mem::take(&mut self.away).then_some(Presence::Present)
    }

    /// A tick of the loop: away, once, when no key came for the idle time.
    pub(super) fn tick(&mut self, now: Instant) -> Option<Presence> {
        let after = self.after?;
        if self.away || now.duration_since(self.last_input) < after {
            return None;
        }
        self.away = true;
        Some(Presence::Away)
    }
}

/// presence.set of `conversation` (`None`: each that had input since efrd started).
///
/// # Errors
/// efrd's error, or a connection error.
pub(super) async fn set(
    client: &Client,
    conversation: Option<ConversationId>,
    presence: Presence,
) -> Result<PresenceSetResult, ClientError> {
    let params = PresenceSetParams {
        command_id: CommandId::new(),
        conversation_id: conversation,
        presence,
    };
    client.call("presence.set", &params).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn away_once_after_the_idle_time_and_present_at_the_next_key() {
        let start = Instant::now();
        let mut idle = Idle::new(600, true, start);
        assert_eq!(idle.tick(start + Duration::from_secs(599)), None);
        assert_eq!(idle.tick(start + Duration::from_secs(600)), Some(Presence::Away));
        assert_eq!(idle.tick(start + Duration::from_secs(900)), None, "said once");
        assert_eq!(idle.input(start + Duration::from_secs(901)), Some(Presence::Present));
        assert_eq!(idle.input(start + Duration::from_secs(902)), None, "already present");
        assert_eq!(
            idle.tick(start + Duration::from_secs(1500)),
            None,
            "the wait starts at the last key"
        );
        assert_eq!(idle.tick(start + Duration::from_secs(1502)), Some(Presence::Away));
    }

    #[test]
    fn never_away_without_a_terminal_or_with_zero() {
        let start = Instant::now();
        let later = start + Duration::from_secs(100_000);
        assert_eq!(Idle::new(600, false, start).tick(later), None);
        assert_eq!(Idle::new(0, true, start).tick(later), None);
        assert_eq!(Idle::new(600, false, start).input(later), None);
    }
}
