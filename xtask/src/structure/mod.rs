//! `cargo xtask structure` (also run by `tidy`): no cycle between the modules of any folder of the workspace, and
//! docs/architecture.md (with efrd's `lib.rs`) in step with the code.
//!
//! The cycle check reads every crate of every workspace member but efr-test-support (`tree`): in each folder (a
//! crate's `src`, and each module's folder under it), the modules directly in it are the nodes, and `a → b` when code
//! of `a` names `b`. A lower module never imports a higher one, so each can be read, tested and changed with only
//! those below it. The drift check (`architecture`, `layers`) compares docs/architecture.md with efrd's code and with
//! the edges between efrd's top-level modules.
//!
//! Code compiled for tests only (`#[cfg(test)]` items and modules, so the `*_tests.rs`, `tests.rs` and `testing.rs`
//! files they declare) is left out. A test may set up its module with any other (a folder's shared `testing`
//! helpers build calls of its top module), and the layers are about the code that ships; counting tests would make
//! circles of them that say nothing about the design.

mod architecture;
mod cycles;
mod layers;
mod source;
mod tree;

#[cfg(test)]
mod tests;

use std::path::Path;

use anyhow::{Result, bail};

/// Whether code compiled for tests only counts (see the module doc).
const TESTS: bool = false;

/// Fails when the modules of a folder form a cycle, or when docs/architecture.md (or efrd's `lib.rs` table) and the
/// code disagree; every failure is reported, cycles first.
pub fn check(root: &Path) -> Result<()> {
    let workspace = tree::Workspace::load(root)?;
    let graphs = workspace.graphs(TESTS);
    let mut failures = String::new();
    let report = cycles::report(&graphs);
    if report.is_empty() {
        let edges: usize = graphs
            .values()
            .flat_map(|edges| edges.values())
            .map(std::collections::BTreeMap::len)
            .sum();
        println!(
            "==> no cycle between modules ({} folders with dependencies, {edges} edges)",
            graphs.len()
        );
    } else {
        failures.push_str(&format!(
            "modules form a cycle (a lower module must not import a higher one: move what both need into a lower \
             module, or pass it in, so the dependency goes one way):{report}"
        ));
    }
    let drift = architecture::check(root, &workspace, &graphs);
    if drift.is_empty() {
        println!(
            "==> {} matches the code (modules of efrd, crates, layers)",
            architecture::PAGE
        );
    } else {
        if !failures.is_empty() {
            failures.push('\n');
        }
        failures.push_str(&format!("{} and the code disagree:", architecture::PAGE));
        for line in drift {
            failures.push_str(&format!("\n  {line}"));
        }
    }
    if failures.is_empty() {
        return Ok(());
    }
    bail!("{failures}")
}
