//! Processes by their place in the tree, read from `/proc`: the rows that kill one of efrd's children find it here.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::time::{Duration, Instant};

/// The parent pid of `pid`, or `None` when it is gone.
pub fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split(' ').nth(1)?.parse().ok()
}

/// The pids whose ancestors include `ancestor`.
pub fn descendants(ancestor: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            let mut at = pid;
            for _ in 0..64 {
                match parent_of(at) {
                    Some(parent) if parent == ancestor => return true,
                    Some(parent) if parent > 1 => at = parent,
                    _ => return false,
                }
            }
            false
        })
        .collect()
}

/// The command line of `pid`, its words joined by spaces.
pub fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " ").trim_end().to_owned())
        .unwrap_or_default()
}

/// The pids of every process whose command line contains `needle`.
pub fn with_cmdline(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me && cmdline(pid).contains(needle))
        .collect()
}

/// Waits (at most 20 s) until a descendant of `ancestor` matches `pick`, and returns it.
pub fn wait_for_descendant(ancestor: u32, pick: impl Fn(u32) -> bool) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = descendants(ancestor).into_iter().find(|&pid| pick(pid)) {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "no such process under {ancestor} within 20 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (at most 10 s) until no process's command line contains `needle`.
pub fn wait_gone(needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !with_cmdline(needle).is_empty() {
        assert!(
            Instant::now() < deadline,
            "processes with `{needle}` still run 10 s later: {:?}",
            with_cmdline(needle)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGKILL to `pid`.
pub fn kill(pid: u32) {
    let target = nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap());
    nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGKILL).unwrap_or_else(|e| panic!("kill {pid}: {e}"));
}
