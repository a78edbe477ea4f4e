//! The method table: every public method of the protocol with its scope, its shape, whether it is a write, and the
//! transports that may call it.
//!
//! One table serves the dispatcher (scope and transport checks before a handler runs), the docs and the schema.
//! Source: the contract's changelog (docs/protocol.md, "The contract"), which names each method with its scope, whether
//! it has a command id, and (for the phone) what the tailnet listener refuses.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A permission that a connection holds. A local peer of the same uid holds all five; a phone holds its device's
/// scopes, never `terminal` or `admin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// See conversations, events, models, status.
    Read,
    /// Send prompts, steer, interrupt, undo, compact.
    Operate,
    /// Answer approval questions.
    Approve,
    /// Act as the user's terminal: type into a running command, stop or move it, delete a conversation.
    Terminal,
    /// Change the daemon: config, logins, devices, projects.
    Admin,
    /// A scope that this reader does not know. Never granted.
    #[serde(other)]
    Unknown,
}

impl Scope {
    /// Every scope a local peer of the same uid holds.
    pub const LOCAL: [Scope; 5] = [
        Scope::Read,
        Scope::Operate,
        Scope::Approve,
        Scope::Terminal,
        Scope::Admin,
    ];

    /// The wire name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Operate => "operate",
            Self::Approve => "approve",
            Self::Terminal => "terminal",
            Self::Admin => "admin",
            Self::Unknown => "unknown",
        }
    }
}

/// How many items a method's answer has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Exactly one item (the result), then `end`.
    Unary,
    /// Items until the stream ends or is cancelled.
    Stream,
}

/// Which listeners may serve a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transports {
    /// The Unix socket and the tailnet WebSocket.
    Both,
    /// Only the Unix socket: the tailnet listener refuses the method with `forbidden`.
    LocalOnly,
    /// Only the tailnet WebSocket: the Unix socket refuses the method with `forbidden` (device.enroll, device.prove).
    RemoteOnly,
}

/// A transport a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The Unix socket, peer of the same uid.
    Local,
    /// The tailnet WebSocket (the phone origin).
    Remote,
}

impl Transports {
    /// Whether a request on `transport` may call the method.
    #[must_use]
    pub const fn allows(self, transport: Transport) -> bool {
        matches!(
            (self, transport),
            (Self::Both, _) | (Self::LocalOnly, Transport::Local) | (Self::RemoteOnly, Transport::Remote)
        )
    }
}

/// One row of the method table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodSpec {
    /// The method.
    pub method: Method,
    /// The wire name, such as `prompt.send`.
    pub name: &'static str,
    /// The scope a connection needs to call it.
    pub scope: Scope,
    /// Unary or stream.
    pub shape: Shape,
    /// A write: the params carry a client-generated `command_id`, and a repeat returns the stored outcome.
    pub write: bool,
    /// The listeners that serve it.
    pub transports: Transports,
}

macro_rules! method_table {
    ($( $variant:ident = $name:literal, $scope:ident, $shape:ident, $write:literal, $transports:ident; )*) => {
        /// A public method of the protocol.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )*
        }

        /// The method table, in the order of the docs.
        pub const METHODS: &[MethodSpec] = &[
            $( MethodSpec {
                method: Method::$variant,
                name: $name,
                scope: Scope::$scope,
                shape: Shape::$shape,
                write: $write,
                transports: Transports::$transports,
            }, )*
        ];

        impl Method {
            /// The method of a wire name, `None` for a name the protocol does not have.
            #[must_use]
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $( $name => Some(Self::$variant), )*
                    _ => None,
                }
            }

            /// The wire name.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $( Self::$variant => $name, )*
                }
            }

            /// The method's row of the table.
            #[must_use]
            pub const fn spec(self) -> &'static MethodSpec {
                match self {
                    $( Self::$variant => {
                        const SPEC: MethodSpec = MethodSpec {
                            method: Method::$variant,
                            name: $name,
                            scope: Scope::$scope,
                            shape: Shape::$shape,
                            write: $write,
                            transports: Transports::$transports,
                        };
                        &SPEC
                    } )*
                }
            }
        }
    };
}

method_table! {
    Hello = "hello", Read, Unary, false, Both;
    PromptSend = "prompt.send", Operate, Unary, true, Both;
    PromptWithdraw = "prompt.withdraw", Operate, Unary, true, Both;
    TurnSteer = "turn.steer", Operate, Unary, true, Both;
    TurnInterrupt = "turn.interrupt", Operate, Unary, true, Both;
    // A phone may not undo (docs/protocol.md, "The contract": "What a phone may do").
    TurnUndo = "turn.undo", Operate, Unary, true, LocalOnly;
    // The trash holds what a forced undo moved away: local only, as undo.
    TrashList = "trash.list", Read, Unary, false, LocalOnly;
    TrashRestore = "trash.restore", Operate, Unary, true, LocalOnly;
    // A phone may not type into a command (docs/protocol.md, "The contract": "What a phone may do").
    InputRespond = "input.respond", Terminal, Unary, false, LocalOnly;
    ApprovalRespond = "approval.respond", Approve, Unary, true, Both;
    ModelsList = "models.list", Read, Unary, false, Both;
    ProjectsList = "projects.list", Read, Unary, false, Both;
    PresenceSet = "presence.set", Operate, Unary, true, Both;
    JobsList = "jobs.list", Read, Unary, false, Both;
    JobsStop = "jobs.stop", Operate, Unary, true, Both;
    ShellStatus = "shell.status", Read, Unary, false, Both;
    ShellInterrupt = "shell.interrupt", Terminal, Unary, true, LocalOnly;
    CallBackground = "call.background", Terminal, Unary, true, LocalOnly;
    SandboxExplain = "sandbox.explain", Read, Unary, false, Both;
    // It names the hosts the user holds tokens for and the files that hold them: local only, as admin.sandbox_check.
    SandboxExplainHost = "sandbox.explain_host", Read, Unary, false, LocalOnly;
    SandboxSurfaceRespond = "sandbox.surface_respond", Approve, Unary, true, Both;
    ConversationSubscribe = "conversation.subscribe", Read, Stream, false, Both;
    ConversationDiff = "conversation.diff", Read, Unary, false, Both;
    ConversationCompact = "conversation.compact", Operate, Unary, true, Both;
    ConversationContext = "conversation.context", Read, Unary, false, Both;
    ConversationSearch = "conversation.search", Read, Unary, false, Both;
    ConversationResume = "conversation.resume", Operate, Unary, true, Both;
    ConversationDelete = "conversation.delete", Terminal, Unary, true, LocalOnly;
    ConversationsList = "conversations.list", Read, Unary, false, Both;
    ConversationsRecent = "conversations.recent", Read, Unary, false, Both;
    ConversationsSearch = "conversations.search", Read, Unary, false, Both;
    ConversationsWatch = "conversations.watch", Read, Stream, false, Both;
    AdminStatus = "admin.status", Admin, Unary, false, LocalOnly;
    AdminConfigReload = "admin.config_reload", Admin, Unary, false, LocalOnly;
    AdminProjectAdd = "admin.project_add", Admin, Unary, false, LocalOnly;
    AdminProjectRemove = "admin.project_remove", Admin, Unary, false, LocalOnly;
    AdminSandboxCheck = "admin.sandbox_check", Admin, Unary, false, LocalOnly;
    AdminLoginApiKey = "admin.login_api_key", Admin, Unary, false, LocalOnly;
    AdminLogout = "admin.logout", Admin, Unary, false, LocalOnly;
    AdminBackup = "admin.backup", Admin, Unary, false, LocalOnly;
    DevicePairStart = "device.pair_start", Admin, Stream, false, LocalOnly;
    DevicePairConfirm = "device.pair_confirm", Admin, Unary, false, LocalOnly;
    // The Unix socket refuses enroll and prove with forbidden (docs/protocol.md, "The contract": "The answers of the
    // tailnet listener").
    DeviceEnroll = "device.enroll", Read, Unary, false, RemoteOnly;
    DeviceProve = "device.prove", Read, Unary, false, RemoteOnly;
    DeviceList = "device.list", Admin, Unary, false, LocalOnly;
    DeviceRevoke = "device.revoke", Admin, Unary, false, LocalOnly;
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_name_is_unique_and_round_trips() {
        let mut names = HashSet::new();
        for spec in METHODS {
            assert!(names.insert(spec.name), "{} twice", spec.name);
            assert_eq!(Method::from_name(spec.name), Some(spec.method));
            assert_eq!(spec.method.spec(), spec);
        }
        assert_eq!(METHODS.len(), 46);
        assert_eq!(Method::from_name("prompt.sned"), None);
    }

    #[test]
    fn the_phone_can_never_reach_admin_or_terminal_methods() {
        for spec in METHODS {
            if matches!(spec.scope, Scope::Admin | Scope::Terminal) {
                assert!(
                    !spec.transports.allows(Transport::Remote),
                    "{} is reachable remotely",
                    spec.name
                );
            }
        }
    }

    #[test]
    fn streams_are_the_three_the_spec_names() {
        let streams: Vec<_> = METHODS
            .iter()
            .filter(|s| s.shape == Shape::Stream)
            .map(|s| s.name)
            .collect();
        assert_eq!(
            streams,
            ["conversation.subscribe", "conversations.watch", "device.pair_start"]
        );
    }
}
