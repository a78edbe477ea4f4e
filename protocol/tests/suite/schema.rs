//! `docs/protocol.schema.json` must be byte-equal to what the types generate.
//!
//! `EFR_BLESS=1 cargo test -p efr-protocol --test all suite::schema` rewrites it first (what
//! `cargo xtask protocol-schema` does).

// Tests may unwrap (team rule); clippy.toml allows it only inside #[test] functions, not their helpers.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use efr_protocol::schema::render;

fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/protocol.schema.json")
}

#[test]
fn the_schema_file_is_current() {
    let path = schema_path();
    let rendered = render();
    if std::env::var_os("EFR_BLESS").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "{} cannot be read ({error}); run `cargo xtask protocol-schema`",
            path.display()
        )
    });
    // The file was written by another process (`cargo xtask protocol-schema`), so this also proves that rendering
    // is deterministic across processes (no map in a random order).
    assert!(rendered.ends_with("}\n"), "one JSON document with a final newline");
    assert!(
        on_disk == rendered,
        "{} is not current: a wire type changed. Run `cargo xtask protocol-schema` and add a changelog line to \
         docs/protocol.md.",
        path.display()
    );
}

#[test]
fn the_schema_is_2020_12_with_one_root_and_defs() {
    let schema: serde_json::Value = serde_json::from_str(&render()).unwrap();
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let defs = schema["$defs"].as_object().unwrap();
    for name in [
        "Event",
        "HelloResult",
        "PromptSendParams",
        "Grant",
        "Mode",
        "DaemonEvent",
        "SubscribeItem",
    ] {
        assert!(defs.contains_key(name), "$defs has no {name}");
    }
    // Every event kind the reader knows is in the schema (the body is flattened into the envelope).
    let events = serde_json::to_string(&defs["Event"]).unwrap();
    for kind in efr_protocol::events::EventBody::KINDS {
        assert!(
            events.contains(&format!("\"const\":\"{kind}\"")),
            "the schema has no event kind {kind}"
        );
    }
    let daemon_events = serde_json::to_string(&defs["DaemonEvent"]).unwrap();
    for kind in efr_protocol::events::DaemonEventBody::KINDS {
        assert!(
            daemon_events.contains(&format!("\"const\":\"{kind}\"")),
            "no daemon event kind {kind}"
        );
    }
    // A mode a reader does not know reads as unknown, and the schema says so.
    assert!(serde_json::to_string(&defs["Mode"]).unwrap().contains("\"unknown\""));
}
