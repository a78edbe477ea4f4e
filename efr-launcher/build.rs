//! Links the unwinder statically (`libgcc_eh.a`, what `gcc -static-libgcc` links) instead of `libgcc_s.so.1`.
//!
//! Every contained call starts this binary twice (the outer stage, then the inner stage as bubblewrap's command),
//! and loading one shared library less saves about 0.15 ms a start on the development machine
//! (docs/adr/0031-contained-true-breakdown.md). Unwinding and backtraces work as before: the same unwinder, linked
//! in. Only on Linux with glibc, where the unwinder is `libgcc_s`; `-bundle` leaves the archive to the final link,
//! which takes it from the C compiler's own folder.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-lib=static:-bundle=gcc_eh");
    }
}
