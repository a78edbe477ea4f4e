//! Whether a sandbox that efrd started still runs: a contained command left running (in any conversation) can change
//! files in its writable roots at any moment, which matters to a check made before a command runs outside the
//! sandbox (cautious's check of git repositories, `turn/git_check.rs`).
//!
//! Read from `/proc`: a process named `bwrap` or `efr-launcher` among efrd's descendants, below a process that is
//! not itself a sandbox's (a hidden shell): the sandboxes of efrd's own probe, which efrd starts directly, are not
//! commands. A sandbox cannot leave that tree: its processes live in bubblewrap's PID namespace, whose init is
//! bubblewrap's child, and bubblewrap dies with its parent (the hidden shell).

use std::collections::HashMap;
use std::fs;

/// The names (`comm`) of the processes that hold a sandbox.
const SANDBOX_NAMES: &[&str] = &["bwrap", "efr-launcher"];

/// Whether a process named `bwrap` or `efr-launcher` runs below process `ancestor` (efrd: `std::process::id()`).
/// A `/proc` that cannot be read counts as a sandbox that runs, so a caller asks rather than trusts.
#[must_use]
pub fn sandbox_runs_below(ancestor: u32) -> bool {
    let Ok(entries) = fs::read_dir("/proc") else {
        return true;
    };
    // pid → (parent, name)
    let mut processes: HashMap<u32, (u32, String)> = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        // A process may end while it is read: it is then not running.
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some(parsed) = parse_stat(&stat) {
            processes.insert(pid, parsed);
        }
    }
    processes.iter().any(|(pid, (_, name))| {
        SANDBOX_NAMES.contains(&name.as_str())
            && child_on_the_way(*pid, ancestor, &processes)
                .and_then(|child| processes.get(&child))
                .is_some_and(|(_, child_name)| !SANDBOX_NAMES.contains(&child_name.as_str()))
    })
}

/// The parent and the name of a process, from its `/proc/<pid>/stat` line (`pid (name) state ppid …`; the name may
/// hold spaces and parentheses, so it ends at the last `)`).
fn parse_stat(stat: &str) -> Option<(u32, String)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_owned();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let _state = rest.next()?;
    let parent = rest.next()?.parse().ok()?;
    Some((parent, name))
}

/// When `pid` descends from `ancestor`, the child of `ancestor` it descends through (itself when it is one); `None`
/// otherwise (bounded: a cycle read from a changing `/proc` ends the walk).
fn child_on_the_way(pid: u32, ancestor: u32, processes: &HashMap<u32, (u32, String)>) -> Option<u32> {
    let mut current = pid;
    for _ in 0..processes.len() {
        let (parent, _) = processes.get(&current)?;
        if *parent == ancestor {
            return Some(current);
        }
        if *parent == 0 || *parent == current {
            return None;
        }
        current = *parent;
    }
    None
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn stat_lines_with_odd_names_are_read() {
        assert_eq!(parse_stat("12 (bwrap) S 7 12 12 0"), Some((7, "bwrap".to_owned())));
        assert_eq!(parse_stat("13 (a (b) c) R 1 13"), Some((1, "a (b) c".to_owned())));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_bwrap_below_a_process_is_seen_and_not_after_it_ends() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let bwrap = crate::sandbox::find_program("bwrap", &path)
            .expect("bubblewrap must be installed (apt-get install bubblewrap)");
        // A process (as efrd) that runs a shell (as a hidden shell) that runs bubblewrap; other tests' sandboxes are
        // not below it. Its own process group, so that all of it can be ended.
        let inner = format!("{} --ro-bind / / -- sleep 30; true", bwrap.display());
        let script = format!("sh -c '{inner}'; true");
        let mut shell = Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh starts");
        let below = shell.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut seen = false;
        while std::time::Instant::now() < deadline && !seen {
            seen = sandbox_runs_below(below);
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(seen, "the sandbox below the shell was not seen");
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{below}")])
            .status();
        let _ = shell.wait();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < deadline && sandbox_runs_below(below) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!sandbox_runs_below(below), "an ended sandbox still counts");
        assert!(
            !sandbox_runs_below(u32::MAX),
            "nothing runs below a process that does not exist"
        );
    }

    #[test]
    fn a_sandbox_started_directly_is_efrds_own_probe_and_does_not_count() {
        let table: HashMap<u32, (u32, String)> = [
            (10, (1, "efrd".to_owned())),
            (11, (10, "efr-launcher".to_owned())),
            (12, (11, "bwrap".to_owned())),
            (20, (10, "bash".to_owned())),
            (21, (20, "efr-launcher".to_owned())),
        ]
        .into_iter()
        .collect();
        assert_eq!(child_on_the_way(12, 10, &table), Some(11));
        assert_eq!(child_on_the_way(21, 10, &table), Some(20));
        assert_eq!(child_on_the_way(11, 10, &table), Some(11));
        assert_eq!(child_on_the_way(12, 99, &table), None);
    }
}
