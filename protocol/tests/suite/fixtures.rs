//! The frozen fixtures of `protocol/fixtures/v1/`: every file matches its example byte for byte (serialize → file),
//! parses back to the same value (file → value), and no file in the folder is unregistered.
//!
//! `EFR_BLESS=1 cargo test -p efr-protocol --test all suite::fixtures` rewrites the files first (what
//! `cargo xtask bless` does).

// Tests may unwrap (team rule); clippy.toml allows it only inside #[test] functions, not their helpers.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use efr_protocol::device::{
    PairingUrlVector, ProveMessageVector, key_fingerprint, lower_hex, pairing_qr_url, prove_message,
};
use efr_protocol::events::{DaemonEventBody, EventBody};
use efr_protocol::fixtures::{FIXTURE_DIR, Problem, bless, check, examples};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE_DIR)
}

#[test]
fn every_fixture_matches_its_example_both_ways() {
    let dir = fixture_dir();
    if std::env::var_os("EFR_BLESS").is_some() {
        bless(&dir).unwrap();
    }
    let mismatches = check(&dir);
    let report: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
    assert!(
        mismatches.is_empty(),
        "{} fixture(s) are not current:\n{}",
        report.len(),
        report.join("\n")
    );
}

#[test]
fn every_event_kind_has_its_fixture() {
    let paths: Vec<&str> = examples().iter().map(efr_protocol::fixtures::Example::path).collect();
    for kind in EventBody::KINDS.iter().chain(DaemonEventBody::KINDS) {
        let path = format!("events/{kind}.json");
        assert!(paths.contains(&path.as_str()), "no fixture {path}");
    }
}

fn read<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let text = std::fs::read_to_string(fixture_dir().join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_proof_vector_is_the_message_of_its_inputs() {
    let vector: ProveMessageVector = read("device_prove_message.json");
    let message = prove_message(&vector.inputs).unwrap();
    assert_eq!(lower_hex(&message), vector.message_hex);
    // The first field is the domain tag after its 4-byte length (19 bytes), as the spec defines it.
    assert!(
        vector
            .message_hex
            .starts_with(&format!("00000013{}", lower_hex(b"efr-device-prove-v1")))
    );
    // The protocol field is "1" in decimal.
    assert!(vector.message_hex.contains(&format!("00000001{}", lower_hex(b"1"))));
}

#[test]
fn the_qr_vector_is_the_url_of_its_payload() {
    let vector: PairingUrlVector = read("pairing_qr_url.json");
    assert_eq!(pairing_qr_url(&vector.payload), vector.url);
    assert!(vector.url.starts_with("efr://pair?v=1&d="), "{}", vector.url);
    // The token has bytes outside the unreserved set, so the vector shows the uppercase escapes.
    assert!(
        vector.url.ends_with("&t=Zm9v-YmFy_YmF6.cXV4~d%2F%2B%3D"),
        "{}",
        vector.url
    );
}

#[test]
fn the_spec_fingerprint_vector_holds() {
    let mut key = [0_u8; 65];
    key[0] = 4;
    for (i, byte) in key.iter_mut().enumerate().skip(1) {
        *byte = u8::try_from(i).unwrap();
    }
    assert_eq!(key_fingerprint(&key), "SHA256:0ed3a6ab957ff6f5");
}

/// A copy of the real fixtures in a temporary folder, to break on purpose.
fn scratch_copy() -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    let written = bless(scratch.path()).unwrap();
    assert_eq!(written.len(), examples().len());
    assert!(check(scratch.path()).is_empty());
    scratch
}

fn problems(dir: &Path, path: &str) -> Vec<Problem> {
    check(dir)
        .into_iter()
        .filter(|m| m.path == Path::new(path))
        .map(|m| m.problem)
        .collect()
}

#[test]
fn a_missing_file_is_reported() {
    let scratch = scratch_copy();
    std::fs::remove_file(scratch.path().join("modes.json")).unwrap();
    assert_eq!(problems(scratch.path(), "modes.json"), [Problem::Missing]);
    // bless writes it again, and removes nothing.
    std::fs::write(scratch.path().join("keep.txt"), "x").unwrap();
    bless(scratch.path()).unwrap();
    assert!(scratch.path().join("keep.txt").exists());
    assert_eq!(problems(scratch.path(), "keep.txt"), [Problem::Unregistered]);
}

#[test]
fn a_reformatted_file_differs_but_still_parses() {
    let scratch = scratch_copy();
    let path = scratch.path().join("models_list_result.json");
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::write(&path, serde_json::to_string(&value).unwrap()).unwrap();
    let found = problems(scratch.path(), "models_list_result.json");
    assert!(
        matches!(found.as_slice(), [Problem::Differs { line: 1, .. }]),
        "{found:?}"
    );
}

#[test]
fn a_changed_value_differs_and_parses_to_another_value() {
    let scratch = scratch_copy();
    let path = scratch.path().join("events/turn_started.json");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("\"cautious\"", "\"manual\"");
    std::fs::write(&path, text).unwrap();
    let found = problems(scratch.path(), "events/turn_started.json");
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(matches!(&found[0], Problem::Differs { expected, actual, .. }
        if expected.contains("cautious") && actual.contains("manual")));
    assert!(matches!(&found[1], Problem::Parse(message) if message.contains("parses to")));
}

#[test]
fn a_file_that_does_not_parse_is_reported() {
    let scratch = scratch_copy();
    std::fs::write(scratch.path().join("hello_params.json"), "{\"protocol\": \"one\"}\n").unwrap();
    let found = problems(scratch.path(), "hello_params.json");
    assert!(
        matches!(&found[1], Problem::Parse(message) if message.contains("does not parse")),
        "{found:?}"
    );
}

#[test]
fn an_unregistered_file_in_a_subfolder_is_reported() {
    let scratch = scratch_copy();
    std::fs::write(scratch.path().join("events/turn_paused.json"), "{}\n").unwrap();
    let found = check(scratch.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].path, Path::new("events/turn_paused.json"));
    assert_eq!(found[0].problem, Problem::Unregistered);
    assert!(found[0].to_string().contains("no example claims"));
}

#[test]
fn a_folder_that_does_not_exist_reports_every_file_missing() {
    let scratch = tempfile::tempdir().unwrap();
    let found = check(&scratch.path().join("nowhere"));
    assert_eq!(found.len(), examples().len());
    assert!(found.iter().all(|m| m.problem == Problem::Missing));
}

/// Every member that the schema names is set in at least one fixture, so each optional member is proven in both
/// directions (written when set, read back) by some file.
#[test]
fn every_member_of_the_schema_is_set_in_some_fixture() {
    fn keys(value: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    out.insert(key.clone());
                    keys(value, out);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }
    let mut set = std::collections::BTreeSet::new();
    for example in examples() {
        keys(&serde_json::from_str(example.text().unwrap()).unwrap(), &mut set);
    }
    let schema = efr_protocol::schema::protocol_schema();
    let mut missing = Vec::new();
    for (name, def) in schema["$defs"].as_object().unwrap() {
        let alternatives = def["oneOf"].as_array().into_iter().flatten();
        for properties in std::iter::once(def)
            .chain(alternatives)
            .filter_map(|d| d["properties"].as_object())
        {
            for member in properties.keys() {
                if !set.contains(member) {
                    missing.push(format!("{name}.{member}"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "members no fixture sets: {missing:?}");
}
