//! The rows of conversations.recent and conversations.watch, made from the store's summary rows.
//!
//! Source: docs/protocol.md, "The contract": "resuming a conversation": the conversations of the scope key of `pwd`
//! come first, each part newest first; a row has its summary, route, project, turns, open_in and here; the result names
//! the scope of `pwd` and the terminal's current conversation.
//!
//! # What the rows say
//!
//! The facts of routing by scope come through [`Places`] (the project registry and the terminals' slots, which
//! `crate::routing` owns; docs/adr/0030-projects-and-routing.md):
//!
//! - The scope key of a row is its `route` (the scope key of its first prompt); a conversation from before routing
//!   has none, and its key is then that of its working directory. A row is `here` when its key is the key of `pwd`;
//!   the result's `scope` is the key of `pwd`.
//! - `project` is the name of the row's project (its id when it has no name); absent outside projects and for a
//!   project that is no longer registered.
//! - `open_in` is the open terminal other than the asking one whose slot holds the conversation.
//! - `current` is the asking terminal's current conversation; after a restart of efrd, before the terminal's first
//!   prompt, the newest conversation whose row names the asking tty.
//!
//! Without [`Places`] (conversations.watch, tests), a row is `here` when its `cwd` holds `pwd`, `project` is absent
//! and `open_in` is the terminal its row names.

use std::path::Path;

use efr_protocol::ids::ConversationId;
use efr_protocol::wire::{ConversationsRecentResult, RecentConversation, RouteScope};

use super::summary_to_wire;
use efr_store::ConversationSummary;

/// What routing by scope knows of folders and terminals.
pub trait Places: Sync {
    /// The scope key of a folder: the registered project that holds it, else outside.
    fn scope_of(&self, dir: &Path) -> RouteScope;
    /// The name of the registered project `id` (its id when it has no name); `None` when no project has that id.
    fn project_name(&self, id: &str) -> Option<String>;
    /// The open terminal other than `asking` whose slot holds `id`.
    fn open_in(&self, id: ConversationId, asking: Option<&str>) -> Option<String>;
    /// The current conversation of the terminal `tty`, when efrd routed a prompt of it since it started.
    fn current(&self, tty: &str) -> Option<ConversationId>;
}

/// Who asks: the terminal and its working directory, each optional (both absent for conversations.watch), and the
/// facts of routing.
#[derive(Clone, Copy, Default)]
pub struct Asker<'a> {
    /// The asking terminal, such as `/dev/pts/3`.
    pub tty: Option<&'a str>,
    /// Its working directory.
    pub pwd: Option<&'a Path>,
    /// The project registry and the terminals; `None`: rows without them (see the module docs).
    pub places: Option<&'a dyn Places>,
}

impl std::fmt::Debug for Asker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asker")
            .field("tty", &self.tty)
            .field("pwd", &self.pwd)
            .field("places", &self.places.is_some())
            .finish()
    }
}

/// The row of one conversation as `asker` sees it.
#[must_use]
pub fn recent_row(summary: &ConversationSummary, asker: Asker<'_>) -> RecentConversation {
    let wire = summary_to_wire(summary);
    let (here, project, open_in) = match asker.places {
        Some(places) => {
            let key = wire
                .route
                .clone()
                .or_else(|| wire.cwd.as_deref().map(|cwd| places.scope_of(cwd)));
            let here = asker.pwd.is_some_and(|pwd| key.as_ref() == Some(&places.scope_of(pwd)));
            let project = match &key {
                Some(RouteScope::Project { value }) => places.project_name(value),
                _ => None,
            };
            (here, project, places.open_in(summary.id, asker.tty))
        }
        None => {
            let here = match (asker.pwd, wire.cwd.as_deref()) {
                (Some(pwd), Some(cwd)) => pwd.starts_with(cwd),
                _ => false,
            };
            (
                here,
                None,
                wire.tty.clone().filter(|tty| Some(tty.as_str()) != asker.tty),
            )
        }
    };
    RecentConversation {
        route: wire.route.clone(),
        project,
        turns: wire.turns,
        open_in,
        here,
        summary: wire,
    }
}

/// conversations.recent from `newest_first` (the store's rows, newest first): the rows of `asker`'s scope first,
/// each part newest first, at most `limit` rows; `current` is found among all of `newest_first`.
#[must_use]
pub fn recent(newest_first: &[ConversationSummary], asker: Asker<'_>, limit: usize) -> ConversationsRecentResult {
    let current: Option<ConversationId> = asker.tty.and_then(|tty| {
        asker.places.and_then(|places| places.current(tty)).or_else(|| {
            newest_first
                .iter()
                .find(|s| s.extra.get("tty").and_then(|t| t.as_str()) == Some(tty))
                .map(|s| s.id)
        })
    });
    let rows: Vec<RecentConversation> = newest_first.iter().map(|s| recent_row(s, asker)).collect();
    // A stable partition keeps each part newest first.
    let (mut conversations, rest): (Vec<_>, Vec<_>) = rows.into_iter().partition(|row| row.here);
    conversations.extend(rest);
    conversations.truncate(limit);
    ConversationsRecentResult {
        scope: asker.places.zip(asker.pwd).map(|(places, pwd)| places.scope_of(pwd)),
        current,
        conversations,
    }
}

#[cfg(test)]
mod tests {
    use efr_protocol::ids::Timestamp;
    use serde_json::{Map, Value};

    use super::*;

    fn row(cwd: Option<&str>, tty: Option<&str>, turns: u64) -> ConversationSummary {
        let mut extra = Map::new();
        if let Some(tty) = tty {
            extra.insert("tty".into(), Value::from(tty));
        }
        ConversationSummary {
            id: ConversationId::new(),
            title: Some("t".into()),
            status: "idle".into(),
            cwd: cwd.map(str::to_owned),
            created_at: Timestamp::now(),
            updated_at: Timestamp::now(),
            turn_count: turns,
            extra,
        }
    }

    #[test]
    fn the_rows_of_the_pwd_come_first_each_part_newest_first() {
        let rows = [
            row(Some("/tmp/a"), None, 1),
            row(Some("/home/ada/efr"), Some("/dev/pts/3"), 2),
            row(None, None, 3),
            row(Some("/home/ada/efr/protocol"), Some("/dev/pts/7"), 4),
            row(Some("/home/ada"), None, 5),
        ];
        let asker = Asker {
            tty: Some("/dev/pts/7"),
            pwd: Some(Path::new("/home/ada/efr/protocol")),
            places: None,
        };
        let result = recent(&rows, asker, 20);
        let turns: Vec<u64> = result.conversations.iter().map(|r| r.turns).collect();
        assert_eq!(turns, [2, 4, 5, 1, 3]);
        let here: Vec<bool> = result.conversations.iter().map(|r| r.here).collect();
        assert_eq!(here, [true, true, true, false, false]);
        assert_eq!(result.current, Some(rows[3].id));
        // The asking terminal is not "another open terminal".
        assert_eq!(result.conversations[0].open_in.as_deref(), Some("/dev/pts/3"));
        assert_eq!(result.conversations[1].open_in, None);
        assert_eq!(result.scope, None);
    }

    #[test]
    fn limit_cuts_after_the_order_and_current_needs_a_tty() {
        let rows = [row(None, Some("/dev/pts/1"), 1), row(Some("/x"), None, 2)];
        let result = recent(
            &rows,
            Asker {
                tty: None,
                pwd: Some(Path::new("/x/y")),
                places: None,
            },
            1,
        );
        assert_eq!(result.conversations.len(), 1);
        assert_eq!(result.conversations[0].turns, 2);
        assert_eq!(result.current, None);
        // Without a tty every holder is another terminal.
        let all = recent(&rows, Asker::default(), 5);
        assert_eq!(all.conversations[0].open_in.as_deref(), Some("/dev/pts/1"));
        assert!(all.conversations.iter().all(|r| !r.here));
    }

    #[test]
    fn a_sibling_folder_with_a_common_prefix_is_not_here() {
        let r = recent_row(
            &row(Some("/home/ada/efr"), None, 1),
            Asker {
                tty: None,
                pwd: Some(Path::new("/home/ada/efr-old")),
                places: None,
            },
        );
        assert!(!r.here);
    }
}
