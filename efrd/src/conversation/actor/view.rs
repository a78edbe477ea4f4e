//! What clients read of a conversation from its actor: a subscription's starting point, the snapshot, the summary
//! row on the wire.

// A part of the actor: its imports and private types.
use super::*;

impl Actor {
    /// The starting point of a new subscription: the snapshot and the live receivers at the same point of the log.
    pub(super) fn subscription(&self) -> Subscription {
        Subscription {
            snapshot: self.snapshot(),
            last_seq: self.last_seq,
            events: self.events.subscribe(),
            drafts: Arc::clone(&self.drafts),
        }
    }

    /// What a subscriber sees first: the summary row, the last seq, the running turn and what its model said so far.
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            summary: self.wire_summary(),
            seq: self.last_seq,
            // Not a turn whose end the snapshot's seq already holds (its task may be on its way out).
            running: self.live_turn().map(|r| RunningTurn {
                turn_id: r.turn_id,
                started_at: r.started_at,
                settings: Some(r.settings.clone()),
            }),
            // Filled while a model call of the running turn has said something (spec, "streams for the phone").
            live: self.live_turn().and_then(|_| self.drafts.live()),
        }
    }

    /// The summary row as the protocol shows it.
    pub(super) fn wire_summary(&self) -> WireSummary {
        let now = Timestamp::now();
        match &self.summary {
            Some(s) => summary_to_wire(s),
            None => WireSummary {
                conversation_id: self.id,
                title: None,
                status: ConversationStatus::Idle,
                created_at: now,
                updated_at: now,
                cwd: None,
                route: None,
                tty: None,
                turns: 0,
                last_seq: 0,
            },
        }
    }
}

/// The wire form of a store summary row (`last_seq` and `tty` are kept in its `extra` object).
pub fn summary_to_wire(s: &ConversationSummary) -> WireSummary {
    WireSummary {
        conversation_id: s.id,
        // Titles stored before masking existed are masked when shown (spec: the title with its secrets replaced).
        title: s
            .title
            .as_deref()
            .map(|t| efr_protocol::mask::mask_secrets(t).into_owned()),
        status: serde_json::from_value(serde_json::Value::String(s.status.clone())).unwrap_or(ConversationStatus::Idle),
        created_at: s.created_at,
        updated_at: s.updated_at,
        cwd: s.cwd.as_ref().map(Into::into),
        route: s
            .extra
            .get("route")
            .and_then(|r| serde_json::from_value(r.clone()).ok()),
        tty: s.extra.get("tty").and_then(|t| t.as_str()).map(str::to_owned),
        turns: s.turn_count,
        last_seq: s.extra.get("last_seq").and_then(serde_json::Value::as_u64).unwrap_or(0),
    }
}
