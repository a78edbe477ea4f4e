//! The bus driver's part of the filter (`org.freedesktop.DBus`): which of the client's calls to it pass, and what
//! its replies and signals teach the filter about who owns the names the client may see (docs/bus.md, "What the
//! filter checks").

use std::os::fd::OwnedFd;

use zbus::message::{Builder, Type};

use super::{
    ACCESS_DENIED, Action, DRIVER, FAILED, Filter, NAME_HAS_NO_OWNER, Pending, ReplyKind, SERVICE_UNKNOWN, Side, body,
    parsed, renumbered,
};
use crate::policy::Level;
use crate::wire::Incoming;

impl Filter {
    pub(super) fn driver_call(&mut self, message: &Incoming, fds: Vec<OwnedFd>) -> Vec<Action> {
        let interface = message.interface().unwrap_or(DRIVER);
        let member = message.member().unwrap_or_default();
        let first_arg = || parsed(message).ok()?.body().deserialize_unchecked::<String>().ok();
        match (interface, member) {
            (DRIVER, "Hello") => self.refuse_quietly(message, FAILED, "Already handled an Hello message"),
            (DRIVER, "AddMatch") => match first_arg() {
                Some(rule) if !eavesdrops(&rule) => self.forward_call(message, fds, ReplyKind::Plain),
                _ => self.refuse(message, DRIVER, ACCESS_DENIED, "eavesdropping is not allowed"),
            },
            (DRIVER, "RemoveMatch" | "GetId" | "Features")
            | ("org.freedesktop.DBus.Introspectable", "Introspect")
            | ("org.freedesktop.DBus.Peer", _)
            | ("org.freedesktop.DBus.Properties", "Get" | "GetAll") => {
                self.forward_call(message, fds, ReplyKind::Plain)
            }
            (DRIVER, "ListNames" | "ListActivatableNames") => self.forward_call(message, fds, ReplyKind::ListNames),
            (
                DRIVER,
                "GetNameOwner"
                | "NameHasOwner"
                | "GetConnectionUnixUser"
                | "GetConnectionUnixProcessID"
                | "GetConnectionCredentials"
                | "GetAdtAuditSessionData"
                | "GetConnectionSELinuxSecurityContext"
                | "ListQueuedOwners",
            ) => self.about_a_name(message, fds, member),
            (DRIVER, "StartServiceByName" | "RequestName" | "ReleaseName") => self.use_of_a_name(message, fds, member),
            // BecomeMonitor, UpdateActivationEnvironment, ReloadConfig, Properties.Set and anything new.
            _ => self.refuse(
                message,
                DRIVER,
                ACCESS_DENIED,
                &format!("the call's bus filter refuses {interface}.{member}"),
            ),
        }
    }

    /// A driver call about a name's owner: answered as if the name had none when the client may not see it.
    fn about_a_name(&mut self, message: &Incoming, fds: Vec<OwnedFd>, member: &str) -> Vec<Action> {
        let name = body::<(String,)>(message).map(|(s,)| s);
        match (member, name) {
            ("GetNameOwner", Some(name)) if self.visible(&name) => {
                self.forward_call(message, fds, ReplyKind::NameOwner(name))
            }
            ("GetNameOwner", name) => self.refuse_quietly(
                message,
                NAME_HAS_NO_OWNER,
                &format!(
                    "Could not get owner of name '{}': no such name",
                    name.unwrap_or_default()
                ),
            ),
            (_, Some(name)) if self.visible(&name) => self.forward_call(message, fds, ReplyKind::Plain),
            ("NameHasOwner", _) => self.driver_reply(message, &(false,)),
            (_, name) => {
                let name = name.unwrap_or_default();
                self.refuse_quietly(message, NAME_HAS_NO_OWNER, &format!("the name {name} has no owner"))
            }
        }
    }

    /// A driver call that starts or owns a name: TALK lets a client start a service, OWN own the name.
    fn use_of_a_name(&mut self, message: &Incoming, fds: Vec<OwnedFd>, member: &str) -> Vec<Action> {
        let name = parsed(message)
            .ok()
            .and_then(|m| m.body().deserialize_unchecked::<String>().ok());
        let starts = member == "StartServiceByName";
        let allowed = name.as_deref().is_some_and(|name| {
            if starts {
                self.level_of(name) >= Level::Talk
            } else {
                self.policy.level(name) >= Level::Own
            }
        });
        if allowed {
            return self.forward_call(message, fds, ReplyKind::Plain);
        }
        let name = name.unwrap_or_default();
        if starts {
            self.refuse(
                message,
                &name,
                SERVICE_UNKNOWN,
                &format!("the call's bus filter hides {name}"),
            )
        } else {
            self.refuse(
                message,
                &name,
                ACCESS_DENIED,
                &format!("the call's bus filter does not let it own {name}"),
            )
        }
    }

    pub(super) fn bus_reply(
        &mut self,
        message: &Incoming,
        fds: Vec<OwnedFd>,
        sender: &str,
        pending: Pending,
    ) -> Vec<Action> {
        let serial = self.client_serial();
        let is_return = message.message_type() == Type::MethodReturn;
        match pending.kind {
            ReplyKind::Learn(name) if sender.starts_with(':') => self.learn(sender, &name),
            ReplyKind::NameOwner(name) if is_return => {
                if let Some(owner) = body::<String>(message) {
                    self.learn(&owner, &name);
                }
            }
            ReplyKind::ListNames if is_return => {
                let reply = parsed(message).and_then(|m| {
                    let names: Vec<String> = m.body().deserialize().unwrap_or_default();
                    let names: Vec<String> = names.into_iter().filter(|name| self.visible(name)).collect();
                    Builder::from(m.header())
                        .serial(serial)
                        .reply_serial(Some(pending.client_serial))
                        .build(&(names,))
                });
                return reply.map(|m| Action::ToClient(m.into())).into_iter().collect();
            }
            _ => {}
        }
        renumbered(message, serial, Some(pending.client_serial), None, fds)
            .map(Action::ToClient)
            .into_iter()
            .collect()
    }

    pub(super) fn driver_signal(&mut self, message: &Incoming, fds: Vec<OwnedFd>) -> Vec<Action> {
        if message.member() != Some("NameOwnerChanged") {
            return self.forward(message, fds, Side::Client);
        }
        let Some((name, old, new)) = body::<(String, String, String)>(message) else {
            return Vec::new();
        };
        if !self.visible(&name) {
            return Vec::new();
        }
        if name.starts_with(':') {
            if new.is_empty() {
                self.peers.remove(&name);
            }
        } else {
            if let Some(names) = self.peers.get_mut(&old) {
                names.retain(|n| *n != name);
            }
            if !new.is_empty() {
                self.learn(&new, &name);
            }
        }
        self.forward(message, fds, Side::Client)
    }
}

/// Whether a match rule asks for messages meant for others (`eavesdrop=true`, or any value but `false`).
fn eavesdrops(rule: &str) -> bool {
    let mut rest = rule;
    loop {
        let Some((key, after)) = rest.split_once('=') else {
            return false;
        };
        let (value, after) = match after.strip_prefix('\'') {
            Some(quoted) => match quoted.split_once('\'') {
                Some((value, after)) => (value, after),
                None => (quoted, ""),
            },
            None => after
                .split_once(',')
                .map_or((after, ""), |(value, after)| (value, after)),
        };
        if key.trim().trim_start_matches(',').trim() == "eavesdrop" && value.trim() != "false" {
            return true;
        }
        rest = after;
    }
}

#[cfg(test)]
mod tests {
    use super::eavesdrops;

    #[test]
    fn eavesdropping_match_rules_are_caught() {
        assert!(eavesdrops("type='signal',eavesdrop=true"));
        assert!(eavesdrops("eavesdrop='true'"));
        assert!(eavesdrops("type='method_call', eavesdrop = 'true'"));
        assert!(!eavesdrops("type='signal',eavesdrop='false'"));
        assert!(!eavesdrops("type='signal',arg0='eavesdrop=true'"));
        assert!(!eavesdrops("type='signal',interface='org.foo'"));
    }
}
