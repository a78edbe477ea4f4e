//! The conversation of the terminal of stdin (for the commands that name none), what efr says of the conversation a
//! prompt went to (the switch of a routed prompt), and whether the prompt waits behind another turn of it.

use efr_protocol::ids::{ConversationId, TurnId};
use efr_protocol::wire::{ConversationsListParams, ConversationsListResult, PromptRoute, RouteSwitch, SwitchReason};

use crate::client::{Client, ClientError};

/// Whether another turn than `turn_id` runs in the conversation, so that the prompt waits for it. A snapshot that
/// cannot be had counts as no: the notice is a courtesy, the turn is shown either way.
pub async fn queued_behind(client: &Client, conversation_id: ConversationId, turn_id: TurnId) -> bool {
    client
        .snapshot(conversation_id)
        .await
        .is_ok_and(|snapshot| snapshot.running.is_some_and(|running| running.turn_id != turn_id))
}

/// The current conversation of `tty` (efrd lists it first), else its newest, if it has one.
pub async fn newest_of_tty(client: &Client, tty: &str) -> Result<Option<ConversationId>, ClientError> {
    // With a tty, efrd lists only that terminal's conversations, its current one first.
    let params = ConversationsListParams {
        tty: Some(tty.to_owned()),
        limit: Some(1),
        cursor: None,
    };
    let list: ConversationsListResult = client.call("conversations.list", &params).await?;
    Ok(list
        .conversations
        .into_iter()
        .find(|c| c.tty.as_deref() == Some(tty))
        .map(|c| c.conversation_id))
}

/// The notice of a route's switch: where a terminal's prompt went when it is not the conversation of its last
/// prompt. `None` when it did not change.
#[must_use]
pub fn switch_notice(route: &PromptRoute) -> Option<String> {
    let place = match (&route.name, &route.dir) {
        (Some(name), _) => format!("the project {name}"),
        (None, Some(dir)) => format!("{} (no project)", dir.display()),
        (None, None) => "no project".to_owned(),
    };
    let titled = |title: &Option<String>| title.as_deref().map_or_else(String::new, |t| format!(" \"{t}\""));
    Some(match route.switch.as_ref()? {
        RouteSwitch::Back { title, .. } => format!("back to the conversation{} of {place}", titled(title)),
        RouteSwitch::PickedUp { title, .. } => format!("picked up the conversation{} of {place}", titled(title)),
        RouteSwitch::New { reason, .. } => match reason {
            SwitchReason::Scope => format!("a new conversation for {place}"),
            SwitchReason::Idle { hours } => {
                format!("a new conversation for {place}: the last one was idle for {hours} h")
            }
            SwitchReason::Moved { tty, title } => {
                format!(
                    "a new conversation for {place}: {tty} holds the last one{}",
                    titled(title)
                )
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use efr_protocol::ids::ConversationId;
    use efr_protocol::wire::RouteScope;

    use super::*;

    #[test]
    fn each_switch_has_its_sentence_and_none_without_one() {
        let mut route = PromptRoute {
            scope: RouteScope::Project { value: "efr".into() },
            name: Some("efr".into()),
            dir: None,
            switch: None,
            hint: None,
        };
        assert_eq!(switch_notice(&route), None);
        route.switch = Some(RouteSwitch::New {
            from: ConversationId::new(),
            reason: SwitchReason::Idle { hours: 9 },
        });
        assert_eq!(
            switch_notice(&route).unwrap(),
            "a new conversation for the project efr: the last one was idle for 9 h"
        );
        route.name = None;
        route.dir = Some("/tmp/x".into());
        route.switch = Some(RouteSwitch::New {
            from: ConversationId::new(),
            reason: SwitchReason::Moved {
                tty: "/dev/pts/7".into(),
                title: Some("Fix".into()),
            },
        });
        assert_eq!(
            switch_notice(&route).unwrap(),
            "a new conversation for /tmp/x (no project): /dev/pts/7 holds the last one \"Fix\""
        );
    }
}
