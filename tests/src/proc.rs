//! A process's memory as `/proc/<pid>/status` reports it, and its CPU time as `/proc/<pid>/stat` does, for the tests
//! and benches that hold it to a budget.

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

/// The CPU time process `pid` has used, user and system, all its threads (`utime + stime` of `/proc/<pid>/stat`, in
/// clock ticks of 10 ms on Linux's fixed `USER_HZ` of 100).
///
/// # Errors
/// When the file cannot be read or its fields are not what proc(5) says.
pub fn cpu_time(pid: u32) -> Result<std::time::Duration> {
    /// Linux reports these fields in `USER_HZ`, 100 on every architecture efr runs on.
    const TICKS_PER_SECOND: u64 = 100;
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    // The command name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .with_context(|| format!("{path} has no command name"))?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12 here.
    let tick = |at: usize| -> Result<u64> {
        fields
            .get(at)
            .and_then(|field| field.parse().ok())
            .with_context(|| format!("{path}: field {} is not a number", at + 3))
    };
    let ticks = tick(11)? + tick(12)?;
    Ok(std::time::Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
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

    #[test]
    fn cpu_time_grows_with_work() {
        let pid = std::process::id();
        let before = cpu_time(pid).unwrap();
        // Spin until 50 ms of CPU are counted: on a loaded machine that takes longer than 50 ms of wall time.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut x: u64 = 1;
        while cpu_time(pid).unwrap() < before + std::time::Duration::from_millis(50) {
            assert!(
                std::time::Instant::now() < deadline,
                "no CPU time counted after 30 s of spinning"
            );
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
        }
        let used = cpu_time(pid).unwrap() - before;
        assert!(used < std::time::Duration::from_secs(30), "{used:?}");
        assert!(cpu_time(u32::MAX).is_err());
    }
}
