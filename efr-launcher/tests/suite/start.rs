//! What a start of the launcher loads: every contained call starts it twice, and each shared library is a cost of
//! every start (docs/adr/0031-contained-true-breakdown.md), so the unwinder is linked in (`build.rs`).

use std::process::Command;

use crate::support::launcher;

#[test]
fn the_launcher_loads_no_unwinder_library() {
    let out = Command::new("ldd")
        .arg(launcher())
        .output()
        .unwrap_or_else(|e| panic!("ldd (glibc's libc-bin) is needed to list the launcher's libraries: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("libc.so"), "ldd said: {text}");
    assert!(
        !text.contains("libgcc_s"),
        "the launcher loads libgcc_s at each start: {text}"
    );
}
