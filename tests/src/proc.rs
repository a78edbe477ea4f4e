//! A process's memory as `/proc/<pid>/status` reports it, for the tests and benches that hold it to a budget.

use anyhow::{Context, Result};

/// `VmRSS` of process `pid`, in KiB (1024 bytes; the kernel writes them as `kB`): its resident set, the mapped
/// binary and files included. `std::process::id()` gives the calling process.
///
/// # Errors
/// When `/proc/<pid>/status` cannot be read (no such process) or has no `VmRSS` number (a kernel thread, a zombie).
pub fn rss_kib(pid: u32) -> Result<u64> {
    status_kib(pid, "VmRSS")
}

/// The field `field` (such as `VmRSS`, `RssAnon`, `VmHWM`; without the colon) of `/proc/<pid>/status`, in KiB.
///
/// # Errors
/// When the file cannot be read, or has no such field, or its value is not a number of `kB`.
pub fn status_kib(pid: u32, field: &str) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .with_context(|| format!("{path} has no {field} line"))?;
    value
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .with_context(|| format!("{field} of {path} is not a number of kB: {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_resident_set_and_no_made_up_field() {
        let pid = std::process::id();
        let rss = rss_kib(pid).unwrap();
        assert!(rss > 0, "{rss}");
        assert!(status_kib(pid, "RssAnon").unwrap() <= rss);
        // A prefix of a field is not the field.
        assert!(status_kib(pid, "VmRS").is_err());
        assert!(status_kib(pid, "NoSuchField").is_err());
    }
}
