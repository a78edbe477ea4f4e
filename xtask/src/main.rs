//! `cargo xtask`: the project's automation, in Rust so it runs wherever cargo does.
//!
//! | command | what it does |
//! |---|---|
//! | `bless` | rewrites `protocol/fixtures/v1/` from the typed examples in efr-protocol, and the golden requests of `efrd/tests/data/prompt/` |
//! | `protocol-schema` | rewrites `docs/protocol.schema.json` from the wire types (`--check`: fail when stale) |
//! | `tidy` | `cargo fmt --check`, no unused dependency (cargo-shear), clippy with `-D warnings`, `structure`, schema and fixtures current |
//! | `structure` | no cycle between the modules of any folder of the workspace, and docs/architecture.md in step with the code (its modules, crates and layers); `structure DIR` checks the workspace at DIR |
//! | `typescript` | types from `docs/protocol.schema.json` (json-schema-to-typescript) and `tsc --strict` on a small client (`tests/typescript`) |
//! | `ci` | installs the Debian packages the tests need (as root, when missing) and cargo-shear, then `tidy`, `typescript`, every test, the demo and `deb-check` |
//! | `install` | `cargo install` of efr, efrd, efr-launcher, efr-proxy and efr-bus-proxy (`--root DIR` to choose where) |
//! | `deb-check` | CI's test of the package as root: lintian, `dpkg -i`, the demo against the installed programs, an upgrade, removal and purge |
//! | `deb` | the Debian package (`--dev`: of the debug build; `--version V`), with dpkg-deb (docs/adr/0022-debian-package.md) |
//! | `demo` | the main job end to end: a sample project's failing test fixed through efrd (`--release`: optimised; `--no-systemd`: systemd-socket-activate instead of a user manager) |
//! | `bench` | runs the benchmarks and prints each number next to its budget (docs/architecture.md, "Budgets") |
//! | `soak` | the long soak run of a release efrd, on demand (`--turns N`, `--minutes M`, `--clients C`; docs/operations.md) |
//!
//! Every command exits non-zero on the first failure and says which step failed.

mod bench;
mod ci;
mod cmd;
mod deb;
mod deb_check;
mod demo;
mod install;
mod protocol;
mod structure;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

const USAGE: &str = "usage: cargo xtask <bless | protocol-schema [--check] | tidy | structure [DIR] | typescript | ci | demo [--release] [--no-systemd] | install [--root DIR] | deb [--dev] [--version V] | deb-check | bench | soak [--turns N] [--minutes M] [--clients C]>";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<()> {
    let root = workspace_root()?;
    std::env::set_current_dir(&root).with_context(|| format!("cannot enter {}", root.display()))?;
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    match (args.first().map(String::as_str), rest.as_slice()) {
        (Some("bless"), []) => protocol::bless(&root),
        (Some("protocol-schema"), []) => protocol::write_schema(&root),
        (Some("protocol-schema"), ["--check"]) => protocol::check_schema(&root),
        (Some("tidy"), []) => ci::tidy(&root),
        (Some("structure"), []) => structure::check(&root),
        (Some("structure"), [dir]) => structure::check(std::path::Path::new(dir)),
        (Some("typescript"), []) => ci::typescript(&root),
        (Some("ci"), []) => ci::ci(&root),
        (Some("bench"), []) => bench::bench(&root),
        (Some("soak"), _) => bench::soak(&args[1..]),
        (Some("demo"), rest) => demo::demo(&root, rest),
        (Some("install"), rest) => install::install(&root, rest),
        (Some("deb"), rest) => deb::deb(&root, rest),
        (Some("deb-check"), []) => deb_check::check(&root),
        _ => bail!("{USAGE}"),
    }
}

/// The workspace root: the parent of this crate's folder.
fn workspace_root() -> Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(PathBuf::from)
        .context("xtask has no parent folder")
}
