//! Unit tests of the envelope and of kinds a reader does not know.

use serde_json::json;

use super::*;

const CONVERSATION: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
const TURN: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

#[test]
fn a_known_event_round_trips_with_kind_after_the_envelope() {
    let wire = json!({
        "seq": 3, "at": "2026-11-30T14:33:11.042Z", "conversation_id": CONVERSATION, "turn_id": TURN,
        "kind": "assistant_message_updated", "index": 0, "offset": 6, "delta": "größe"
    });
    let event: Event = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(event.seq, 3);
    assert_eq!(event.body.kind(), "assistant_message_updated");
    assert!(matches!(&event.body, EventBody::AssistantMessageUpdated(u) if u.offset == 6 && u.delta == "größe"));
    let text = serde_json::to_string(&event).unwrap();
    assert!(text.starts_with(&format!(
        r#"{{"seq":3,"at":"2026-11-30T14:33:11.042Z","conversation_id":"{CONVERSATION}","turn_id":"{TURN}","kind":"assistant_message_updated""#
    )), "{text}");
    assert_eq!(serde_json::to_value(&event).unwrap(), wire);
}

#[test]
fn an_unknown_kind_keeps_its_name_and_members_and_writes_back_unchanged() {
    let wire = json!({
        "seq": 9, "at": "2026-11-30T14:33:11.042Z", "conversation_id": CONVERSATION,
        "kind": "hologram_projected", "angle": 42, "colours": ["red", "blue"]
    });
    let event: Event = serde_json::from_value(wire.clone()).unwrap();
    let EventBody::Unknown(unknown) = &event.body else {
        panic!("expected Unknown, got {:?}", event.body);
    };
    assert_eq!(unknown.kind, "hologram_projected");
    assert_eq!(unknown.members.get("angle"), Some(&json!(42)));
    assert!(
        !unknown.members.contains_key("seq"),
        "envelope members stay in the envelope"
    );
    assert_eq!(event.body.kind(), "hologram_projected");
    assert_eq!(event.turn_id, None);
    assert_eq!(serde_json::to_value(&event).unwrap(), wire);
}

#[test]
fn a_known_kind_with_bad_members_is_an_error_not_unknown() {
    let wire = json!({
        "seq": 1, "at": "2026-11-30T14:33:11.042Z", "conversation_id": CONVERSATION,
        "kind": "assistant_message_updated", "index": 0, "delta": "x"
    });
    let err = serde_json::from_value::<Event>(wire).unwrap_err().to_string();
    assert!(
        err.contains("assistant_message_updated") && err.contains("offset"),
        "{err}"
    );
}

#[test]
fn kind_must_be_present_and_a_string() {
    let base = json!({"seq": 1, "at": "2026-11-30T14:33:11.042Z", "conversation_id": CONVERSATION});
    let err = serde_json::from_value::<Event>(base.clone()).unwrap_err().to_string();
    assert!(err.contains("kind"), "{err}");
    let mut numbered = base;
    numbered["kind"] = json!(7);
    let err = serde_json::from_value::<Event>(numbered).unwrap_err().to_string();
    assert!(err.contains("`kind` must be a string"), "{err}");
}

#[test]
fn the_envelope_is_required() {
    let err = serde_json::from_value::<Event>(json!({
        "seq": 1, "at": "2026-11-30T14:33:11.042Z", "kind": "turn_cancelled", "reason": "r"
    }))
    .unwrap_err()
    .to_string();
    assert!(err.contains("conversation_id"), "{err}");
    assert!(
        serde_json::from_value::<Event>(json!({
            "seq": -1, "at": "2026-11-30T14:33:11.042Z", "conversation_id": CONVERSATION,
            "kind": "turn_cancelled", "reason": "r"
        }))
        .is_err()
    );
}

#[test]
fn daemon_events_have_no_conversation_and_keep_unknown_kinds() {
    let wire =
        json!({"seq": 2, "at": "2026-11-30T14:33:11.042Z", "kind": "logout_completed", "provider": "openai-api"});
    let event: DaemonEvent = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(
        event.body,
        DaemonEventBody::LogoutCompleted(LogoutCompleted {
            provider: "openai-api".into()
        })
    );
    assert_eq!(serde_json::to_value(&event).unwrap(), wire);
    let wire = json!({"seq": 3, "at": "2026-11-30T14:33:11.042Z", "kind": "quota_reset", "provider": "x"});
    let event: DaemonEvent = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(event.body.kind(), "quota_reset");
    assert_eq!(serde_json::to_value(&event).unwrap(), wire);
    // A conversation's event kind is not a daemon event kind.
    let wire = json!({"seq": 4, "at": "2026-11-30T14:33:11.042Z", "kind": "turn_started"});
    assert!(matches!(
        serde_json::from_value::<DaemonEvent>(wire).unwrap().body,
        DaemonEventBody::Unknown(_)
    ));
}

#[test]
fn kinds_are_unique_and_call_ids_are_found() {
    let mut kinds: Vec<_> = EventBody::KINDS.to_vec();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(kinds.len(), EventBody::KINDS.len());
    assert_eq!(EventBody::KINDS.len(), 47);
    let body = EventBody::ApprovalExpired(ApprovalExpired {
        call_id: "c7".into(),
        away: true,
    });
    assert_eq!(body.call_id().map(CallId::as_str), Some("c7"));
    assert_eq!(
        EventBody::TurnCancelled(TurnCancelled { reason: "r".into() }).call_id(),
        None
    );
}
