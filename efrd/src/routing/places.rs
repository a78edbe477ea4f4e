//! [`RoutingPlaces`]: what the rows of conversations.recent and conversations.search learn from routing by scope
//! (`crate::conversation::rows::Places`).

use std::path::Path;

use efr_protocol::ids::ConversationId;
use efr_protocol::wire::RouteScope;

use super::{ScopeKey, Terminals, is_open};
use crate::conversation::rows::Places;
use crate::projects::Registry;

/// The project registry in force and the terminals' slots.
#[derive(Debug, Clone, Copy)]
pub struct RoutingPlaces<'a> {
    /// The registry.
    pub registry: &'a Registry,
    /// The terminals.
    pub terminals: &'a Terminals,
}

impl Places for RoutingPlaces<'_> {
    fn scope_of(&self, dir: &Path) -> RouteScope {
        self.registry
            .holding(dir)
            .map_or(ScopeKey::Outside, |p| ScopeKey::Project(p.id.clone()))
            .to_wire()
    }

    fn project_name(&self, id: &str) -> Option<String> {
        self.registry
            .by_id(id)
            .map(|p| p.name.clone().unwrap_or_else(|| p.id.clone()))
    }

    fn open_in(&self, id: ConversationId, asking: Option<&str>) -> Option<String> {
        self.terminals.open_holder(id, asking, &is_open)
    }

    fn current(&self, tty: &str) -> Option<ConversationId> {
        self.terminals.current(tty)
    }
}
