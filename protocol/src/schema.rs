//! The JSON Schema of the protocol: `docs/protocol.schema.json`, for code generators (the phone app makes its
//! TypeScript types from it).
//!
//! It is JSON Schema draft 2020-12 with one root and `$defs`, generated from the Rust types with schemars, so it can
//! never drift from the code: `cargo xtask protocol-schema` writes [`render`], and a test fails when the file is not
//! byte-equal to it. The root's `properties` name every public wire type, each a `$ref` into `$defs`; the root
//! itself validates nothing beyond that. A reader that meets an event kind or an enum value that the schema does not
//! list takes it as unknown (see [`crate::events`]), so the schema lists what a writer sends today.
//!
//! Source: the contract's summary (docs/protocol.md, "Summary": "docs/protocol.schema.json holds every type of the
//! protocol ... a root and $defs").

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::device::{PairingPayload, ProveInputs};
use crate::error::{ErrorBody, ErrorCode};
use crate::events::{DaemonEvent, Event};
use crate::hello::{HelloParams, HelloResult};
use crate::methods::Scope;
use crate::streams::{SubscribeItem, WatchItem};
use crate::wire::ExitRecord;
use crate::wire::{AdminBackupParams, AdminBackupResult};
use crate::wire::{
    AdminConfigReloadParams, AdminConfigReloadResult, AdminLoginApiKeyParams, AdminLoginApiKeyResult,
    AdminLogoutParams, AdminLogoutResult, AdminSandboxCheckParams, AdminSandboxCheckResult, AdminStatusParams,
    AdminStatusResult, ApprovalRespondParams, ApprovalRespondResult, ConversationDiffParams, ConversationDiffResult,
    ConversationSubscribeParams, ConversationsListParams, ConversationsListResult, InputRespondParams,
    InputRespondResult, ModelsListParams, ModelsListResult, PromptSendParams, PromptSendResult, SandboxExplainParams,
    SandboxExplainResult, ShellInterruptParams, ShellInterruptResult, ShellStatusParams, ShellStatusResult,
    TurnInterruptParams, TurnInterruptResult,
};
use crate::wire::{
    AdminProjectAddParams, AdminProjectRemoveParams, ProjectWriteResult, ProjectsListParams, ProjectsListResult,
};
use crate::wire::{
    CallBackgroundParams, CallBackgroundResult, JobsListParams, JobsListResult, JobsStopParams, JobsStopResult,
};
use crate::wire::{
    ConversationCompactParams, ConversationCompactResult, ConversationContextParams, ConversationContextResult,
};
use crate::wire::{ConversationDeleteParams, ConversationDeleteResult, DeleteBusy};
use crate::wire::{ConversationResumeParams, ConversationResumeResult};
use crate::wire::{
    ConversationSearchParams, ConversationSearchResult, ConversationsSearchParams, ConversationsSearchResult,
};
use crate::wire::{ConversationsRecentParams, ConversationsRecentResult, ConversationsWatchParams};
use crate::wire::{
    DeviceEnrollParams, DeviceEnrollResult, DeviceListParams, DeviceListResult, DevicePairConfirmParams,
    DevicePairConfirmResult, DevicePairStartParams, DeviceProveParams, DeviceProveResult, DeviceRevokeParams,
    DeviceRevokeResult, PairStartItem,
};
use crate::wire::{PresenceSetParams, PresenceSetResult};
use crate::wire::{PromptWithdrawParams, PromptWithdrawResult, TurnSteerParams, TurnSteerResult};
use crate::wire::{SandboxExplainHostParams, SandboxExplainHostResult};
use crate::wire::{SandboxSurfaceRespondParams, SandboxSurfaceRespondResult};
use crate::wire::{
    TrashListParams, TrashListResult, TrashRestoreParams, TrashRestoreResult, TurnUndoParams, TurnUndoResult,
    UndoRefusal,
};

/// The `$schema` of draft 2020-12.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// Adds each type to the generator and lists it as a root property named by its schema name.
macro_rules! root_types {
    ($generator:expr, $properties:expr, [$($ty:ty),+ $(,)?]) => {
        $( $properties.insert(<$ty as JsonSchema>::schema_name().into_owned(), $generator.subschema_for::<$ty>().to_value()); )+
    };
}

/// The schema: `{"$schema", "title", "description", "type", "properties": {Name: {"$ref"}}, "$defs": {...}}`.
///
/// The top-level types are the params and result of each method that has wire types, the subscription item, the
/// events, the error body and the device proof inputs; `$defs` also holds every type they use.
#[must_use]
pub fn protocol_schema() -> Value {
    let mut generator = SchemaGenerator::new(SchemaSettings::draft2020_12());
    let mut properties = Map::new();
    root_types!(
        generator,
        properties,
        [
            HelloParams,
            HelloResult,
            PromptSendParams,
            PromptSendResult,
            ConversationSubscribeParams,
            SubscribeItem,
            ConversationsListParams,
            ConversationsListResult,
            ConversationsRecentParams,
            ConversationsRecentResult,
            ConversationsWatchParams,
            ConversationsSearchParams,
            ConversationsSearchResult,
            ConversationSearchParams,
            ConversationSearchResult,
            ConversationDeleteParams,
            ConversationDeleteResult,
            DeleteBusy,
            ConversationResumeParams,
            ConversationResumeResult,
            crate::wire::AttachHow,
            WatchItem,
            ConversationDiffParams,
            ConversationDiffResult,
            ConversationContextParams,
            ConversationContextResult,
            ConversationCompactParams,
            ConversationCompactResult,
            JobsListParams,
            JobsListResult,
            JobsStopParams,
            JobsStopResult,
            CallBackgroundParams,
            CallBackgroundResult,
            TurnInterruptParams,
            TurnInterruptResult,
            TurnSteerParams,
            TurnSteerResult,
            PromptWithdrawParams,
            PromptWithdrawResult,
            TurnUndoParams,
            TurnUndoResult,
            UndoRefusal,
            TrashListParams,
            TrashListResult,
            TrashRestoreParams,
            TrashRestoreResult,
            ModelsListParams,
            ModelsListResult,
            AdminStatusParams,
            AdminStatusResult,
            AdminConfigReloadParams,
            AdminConfigReloadResult,
            ProjectsListParams,
            ProjectsListResult,
            AdminProjectAddParams,
            AdminProjectRemoveParams,
            ProjectWriteResult,
            AdminLoginApiKeyParams,
            AdminLoginApiKeyResult,
            AdminLogoutParams,
            AdminLogoutResult,
            AdminBackupParams,
            AdminBackupResult,
            AdminSandboxCheckParams,
            AdminSandboxCheckResult,
            SandboxExplainParams,
            SandboxExplainResult,
            SandboxExplainHostParams,
            SandboxExplainHostResult,
            SandboxSurfaceRespondParams,
            SandboxSurfaceRespondResult,
            InputRespondParams,
            InputRespondResult,
            ApprovalRespondParams,
            ApprovalRespondResult,
            PresenceSetParams,
            PresenceSetResult,
            ShellStatusParams,
            ShellStatusResult,
            ShellInterruptParams,
            ShellInterruptResult,
            DevicePairStartParams,
            PairStartItem,
            DevicePairConfirmParams,
            DevicePairConfirmResult,
            DeviceEnrollParams,
            DeviceEnrollResult,
            DeviceProveParams,
            DeviceProveResult,
            DeviceListParams,
            DeviceListResult,
            DeviceRevokeParams,
            DeviceRevokeResult,
            ExitRecord,
            Event,
            DaemonEvent,
            ErrorBody,
            ErrorCode,
            Scope,
            ProveInputs,
            PairingPayload,
        ]
    );
    let definitions = generator.take_definitions(true);
    json!({
        "$schema": DIALECT,
        "title": "efr protocol",
        "description": format!(
            "The wire types of the efr protocol, version {}. Generated from efr-protocol by `cargo xtask protocol-schema`; do not edit.",
            crate::PROTOCOL_VERSION
        ),
        "type": "object",
        "properties": properties,
        "$defs": definitions,
    })
}

/// The exact text of `docs/protocol.schema.json`: [`protocol_schema`] pretty-printed with two spaces, and a trailing
/// newline.
#[must_use]
pub fn render() -> String {
    format!("{:#}\n", protocol_schema())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_root_property_refers_to_a_definition() {
        let schema = protocol_schema();
        let defs = schema["$defs"].as_object().unwrap();
        let properties = schema["properties"].as_object().unwrap();
        assert!(properties.len() >= 37);
        for (name, property) in properties {
            let reference = property["$ref"]
                .as_str()
                .unwrap_or_else(|| panic!("{name} is inline: {property}"));
            let target = reference.strip_prefix("#/$defs/").unwrap();
            assert!(defs.contains_key(target), "{reference} is not in $defs");
        }
        assert_eq!(schema["$schema"], DIALECT);
    }

    #[test]
    fn every_reference_resolves() {
        fn walk(value: &Value, defs: &Map<String, Value>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(reference)) = map.get("$ref") {
                        let target = reference
                            .strip_prefix("#/$defs/")
                            .unwrap_or_else(|| panic!("{reference}"));
                        assert!(defs.contains_key(target), "{reference} does not resolve");
                    }
                    map.values().for_each(|v| walk(v, defs));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, defs)),
                _ => {}
            }
        }
        let schema = protocol_schema();
        walk(&schema, schema["$defs"].as_object().unwrap());
    }
}
