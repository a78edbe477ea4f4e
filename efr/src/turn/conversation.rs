//! Which conversation a prompt goes to when `--conversation` names none (the newest of the terminal of stdin), and
//! whether the prompt waits behind another turn of it.

use efr_protocol::ids::{ConversationId, TurnId};
use efr_protocol::wire::{ConversationsListParams, ConversationsListResult};

use crate::client::{Client, ClientError};

/// Whether another turn than `turn_id` runs in the conversation, so that the prompt waits for it. A snapshot that
/// cannot be had counts as no: the notice is a courtesy, the turn is shown either way.
pub async fn queued_behind(client: &Client, conversation_id: ConversationId, turn_id: TurnId) -> bool {
    client
        .snapshot(conversation_id)
        .await
        .is_ok_and(|snapshot| snapshot.running.is_some_and(|running| running.turn_id != turn_id))
}

/// The newest conversation of `tty`, if it has one.
pub async fn newest_of_tty(client: &Client, tty: &str) -> Result<Option<ConversationId>, ClientError> {
    // With a tty, efrd lists only that terminal's conversations, newest first.
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
