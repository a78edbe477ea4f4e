use std::time::Duration;

use efr_protocol::ids::{ConversationId, Timestamp};
use efr_protocol::wire::{RouteSwitch, SwitchReason};

use super::*;

const GAP: Duration = Duration::from_secs(8 * 3600);

fn row(id: ConversationId, hours_ago: i64) -> Candidate {
    Candidate {
        id,
        title: Some("Fix größe".into()),
        updated_at: Timestamp(Timestamp::now().0 - chrono::Duration::hours(hours_ago)),
    }
}

fn efr() -> ScopeKey {
    ScopeKey::Project("efr".into())
}

#[test]
fn a_conversation_moved_to_another_open_terminal_starts_a_new_one_here() {
    let terminals = Terminals::default();
    let a = ConversationId::new();
    terminals.attach("/dev/pts/3", Some(10), efr(), a);
    // Another terminal takes it (what conversation.resume with take does): it leaves the first terminal's slots,
    // which remembers it as taken: the first terminal's next prompt there is `moved`.
    terminals.attach("/dev/pts/7", Some(11), efr(), a);
    let any = |_: &str, _: Option<u32>| true;
    assert_eq!(
        terminals.open_holder(a, Some("/dev/pts/3"), &any).as_deref(),
        Some("/dev/pts/7")
    );
    assert_eq!(
        terminals.open_holder(a, Some("/dev/pts/7"), &any),
        None,
        "the first terminal gave it up"
    );
    // A terminal that is not open holds nothing.
    assert_eq!(terminals.open_holder(a, None, &|tty, _| tty != "/dev/pts/7"), None);
    let slotted = terminals.slotted("/dev/pts/3", &efr());
    assert_eq!(
        (slotted.slot, slotted.held_by.as_deref(), slotted.current),
        (Some(a), Some("/dev/pts/7"), Some(a))
    );
    let decision = route(false, &slotted, Some(&row(a, 0)), || None, Timestamp::now(), GAP);
    assert_eq!(decision.choice, Choice::New);
    assert_eq!(
        decision.switch,
        Some(RouteSwitch::New {
            from: a,
            reason: SwitchReason::Moved {
                tty: "/dev/pts/7".into(),
                title: Some("Fix größe".into())
            }
        })
    );
    // Once its slot holds a new conversation, the taken one is forgotten.
    let b = ConversationId::new();
    terminals.attach("/dev/pts/3", Some(10), efr(), b);
    assert_eq!(terminals.slotted("/dev/pts/3", &efr()).slot, Some(b));
}

#[test]
fn each_switch_is_decided_by_the_rules_order() {
    let (a, b) = (ConversationId::new(), ConversationId::new());
    let now = Timestamp::now();
    let at = |slot, current| Slotted {
        slot,
        held_by: None,
        current,
    };
    // The same conversation: no switch.
    let same = route(false, &at(Some(a), Some(a)), Some(&row(a, 1)), || None, now, GAP);
    assert_eq!((same.choice, same.switch), (Choice::Existing(a), None));
    // Back from another key's conversation.
    let back = route(false, &at(Some(a), Some(b)), Some(&row(a, 1)), || None, now, GAP);
    assert!(matches!(back.switch, Some(RouteSwitch::Back { .. })), "{back:?}");
    // Idle past the gap: new, with whole hours.
    let idle = route(false, &at(Some(a), Some(a)), Some(&row(a, 9)), || None, now, GAP);
    assert_eq!(
        idle.switch,
        Some(RouteSwitch::New {
            from: a,
            reason: SwitchReason::Idle { hours: 9 }
        })
    );
    // No slot: pick up, else new for the scope, else (a first prompt) no switch.
    let picked = route(false, &at(None, Some(b)), None, || Some(row(a, 2)), now, GAP);
    assert_eq!(picked.choice, Choice::Existing(a));
    assert!(picked.picked_up && matches!(picked.switch, Some(RouteSwitch::PickedUp { .. })));
    let scope = route(false, &at(None, Some(b)), None, || None, now, GAP);
    assert_eq!(
        scope.switch,
        Some(RouteSwitch::New {
            from: b,
            reason: SwitchReason::Scope
        })
    );
    assert_eq!(route(false, &at(None, None), None, || None, now, GAP).switch, None);
    // A slot whose conversation is gone (deleted) is an empty slot.
    let gone = route(false, &at(Some(a), Some(a)), None, || None, now, GAP);
    assert_eq!(gone.choice, Choice::New);
    // `,new`: a new one, no switch, nothing asked.
    let new = route(
        true,
        &at(Some(a), Some(a)),
        Some(&row(a, 0)),
        || panic!("not asked"),
        now,
        GAP,
    );
    assert_eq!((new.choice, new.switch), (Choice::New, None));
}

#[test]
fn closed_terminals_and_reused_ttys_release_their_slots() {
    let terminals = Terminals::default();
    let (a, b) = (ConversationId::new(), ConversationId::new());
    terminals.attach("/dev/pts/3", Some(10), efr(), a);
    terminals.attach("/dev/pts/4", Some(20), ScopeKey::Outside, b);
    // pts/4 closed.
    terminals.release_closed("/dev/pts/3", Some(10), &|tty, _| tty != "/dev/pts/4");
    assert_eq!(
        terminals.open_holder(b, Some("/dev/pts/3"), &|_, _| true),
        None,
        "a closed terminal's slots are released"
    );
    assert_eq!(terminals.slotted("/dev/pts/3", &efr()).slot, Some(a));
    // pts/3 now has another shell: a new terminal on a reused path.
    terminals.release_closed("/dev/pts/3", Some(30), &|_, _| true);
    assert_eq!(terminals.slotted("/dev/pts/3", &efr()), Slotted::default());
    assert!(!is_open("/dev/pts/999999", None));
    assert!(!is_open("/etc/passwd", None));
}
