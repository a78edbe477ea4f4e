//! Fixtures and schema: both are generated from the wire types of efr-protocol, never edited by hand.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// The fixtures folder, relative to the workspace root.
pub const FIXTURES: &str = "protocol/fixtures/v1";
/// The generated schema, relative to the workspace root.
pub const SCHEMA: &str = "docs/protocol.schema.json";

/// Rewrites every fixture from its typed example.
pub fn bless(root: &Path) -> Result<()> {
    let dir = root.join(FIXTURES);
    let written = efr_protocol::fixtures::bless(&dir).with_context(|| format!("cannot write {}", dir.display()))?;
    println!("blessed {} fixtures in {FIXTURES}", written.len());
    println!("add a line to the changelog in docs/protocol.md for every fixture that changed");
    bless_prompts(root)
}

/// Rewrites the golden requests of `efrd/tests/data/prompt/` (what each provider is sent for a sample project):
/// runs their test with `EFR_BLESS=1`. Review the diff: it is what the model is told.
fn bless_prompts(root: &Path) -> Result<()> {
    let status = std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(root)
        .args([
            "test",
            "-p",
            "efrd",
            "--test",
            "all",
            "golden_requests_of_each_provider",
        ])
        .env("EFR_BLESS", "1")
        .status()
        .context("cannot run cargo test")?;
    if !status.success() {
        bail!("the golden requests could not be written (efrd/tests/suite/prompt_golden.rs)");
    }
    println!("blessed the golden requests in efrd/tests/data/prompt/; review their diff");
    Ok(())
}

/// Fails when a fixture differs from its typed example.
pub fn check_fixtures(root: &Path) -> Result<()> {
    let mismatches = efr_protocol::fixtures::check(&root.join(FIXTURES));
    if mismatches.is_empty() {
        return Ok(());
    }
    for mismatch in &mismatches {
        eprintln!("  {mismatch}");
    }
    bail!(
        "{} fixtures are not current: run `cargo xtask bless` and add a changelog line",
        mismatches.len()
    )
}

/// Writes `docs/protocol.schema.json`.
pub fn write_schema(root: &Path) -> Result<()> {
    let path = root.join(SCHEMA);
    std::fs::write(&path, efr_protocol::schema::render())
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {SCHEMA}");
    Ok(())
}

/// Fails when `docs/protocol.schema.json` is not what the wire types generate.
pub fn check_schema(root: &Path) -> Result<()> {
    let path = root.join(SCHEMA);
    let current = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    if current != efr_protocol::schema::render() {
        bail!("{SCHEMA} is not current: run `cargo xtask protocol-schema`");
    }
    Ok(())
}
