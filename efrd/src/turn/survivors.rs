//! After an unsandboxed or privileged run of an approved exit: the processes it started that still run are ended
//! (docs/protocol.md, "The contract": sandbox_summary's `survivors`). efrd walks `/proc` for the descendants of the
//! hidden shell (the shell itself stays), sends each SIGTERM, then SIGKILL to those that did not end; the programs
//! of those it could not end (such as a process that `sudo` left running as root) go to the call's sandbox summary,
//! and the conversation's hidden shell is closed, so the next call starts a new one.

use std::time::Duration;

use efr_protocol::wire::SandboxSummary;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::env::ToolEnv;
use super::shell_call::Executed;

/// How long the descendants get to end after SIGTERM, and again after SIGKILL.
const GRACE: Duration = Duration::from_millis(1500);

/// How often the descendants are checked while they end.
const POLL: Duration = Duration::from_millis(50);

/// One live process: its id, its parent's, and whether it is a zombie (ended, not reaped yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcEntry {
    /// The process.
    pub pid: u32,
    /// Its parent.
    pub ppid: u32,
    /// It ended and waits for its parent to reap it.
    pub zombie: bool,
}

/// The processes under `root` in `table` (children, their children, …), `root` not among them, zombies left out.
#[must_use]
pub fn descendants(table: &[ProcEntry], root: u32) -> Vec<u32> {
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            table
                .iter()
                .filter(|e| e.ppid == parent && e.pid != root && !found.contains(&e.pid))
                .map(|e| e.pid)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    found.remove(0);
    found.retain(|pid| table.iter().any(|e| e.pid == *pid && !e.zombie));
    found
}

/// Parses `/proc/<pid>/stat`: the parent and whether it is a zombie (the fields after the `(comm)`, which may hold
/// spaces and parentheses).
#[must_use]
pub fn parse_stat(pid: u32, stat: &str) -> Option<ProcEntry> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(ProcEntry {
        pid,
        ppid,
        zombie: state == "Z" || state == "X",
    })
}

/// Every process that `/proc` shows now.
fn proc_table() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| parse_stat(pid, &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?))
        .collect()
}

/// A process's program, for `survivors`: its `comm`, or its id when `/proc` no longer shows it.
fn program(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|comm| comm.trim().to_owned())
        .unwrap_or_else(|_| format!("pid {pid}"))
}

/// Sends `signal` to each process and waits up to [`GRACE`] for the descendants of `root` to end; returns those
/// that still run.
async fn signal_and_wait(root: u32, pids: &[u32], signal: Signal) -> Vec<u32> {
    for pid in pids {
        let Ok(raw) = i32::try_from(*pid) else { continue };
        // EPERM (a process of another user) and ESRCH (already gone) are both answered by the next look.
        let _ = kill(Pid::from_raw(raw), signal);
    }
    let deadline = tokio::time::Instant::now() + GRACE;
    loop {
        let left: Vec<u32> = descendants(&proc_table(), root)
            .into_iter()
            .filter(|pid| pids.contains(pid))
            .collect();
        if left.is_empty() || tokio::time::Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Ends the descendants of `root` (SIGTERM, then SIGKILL); returns the programs of those that still run.
pub async fn end_descendants(root: u32) -> Vec<String> {
    let pids = descendants(&proc_table(), root);
    if pids.is_empty() {
        return Vec::new();
    }
    let left = signal_and_wait(root, &pids, Signal::SIGTERM).await;
    if left.is_empty() {
        return Vec::new();
    }
    let left = signal_and_wait(root, &left, Signal::SIGKILL).await;
    let mut programs: Vec<String> = left.into_iter().map(program).collect();
    programs.sort();
    programs.dedup();
    programs
}

/// After an unsandboxed run that ended (not left running): ends what it left running under the hidden shell; with
/// survivors, names them in the call's sandbox summary and closes the hidden shell.
pub async fn after_unsandboxed(env: &ToolEnv, executed: &mut Executed<'_>) {
    if executed.left_running() {
        return;
    }
    let root = env
        .shell
        .lock()
        .await
        .current()
        .map(crate::tools::shell::HiddenShell::pid);
    let Some(root) = root else { return };
    let survivors = end_descendants(root).await;
    if survivors.is_empty() {
        return;
    }
    executed.output.output.push_str(&format!(
        "\n[efr could not end what this command left running outside the sandbox ({}); the hidden shell was \
         closed, so the next call starts a new one]",
        survivors.join(", ")
    ));
    executed
        .completed
        .sandbox
        .get_or_insert_with(SandboxSummary::default)
        .survivors = survivors;
    env.shell.lock().await.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: u32, ppid: u32) -> ProcEntry {
        ProcEntry {
            pid,
            ppid,
            zombie: false,
        }
    }

    #[test]
    fn descendants_are_the_tree_under_the_root_without_zombies() {
        let table = [
            entry(1, 0),
            entry(10, 1),
            entry(11, 10),
            entry(12, 11),
            ProcEntry {
                pid: 13,
                ppid: 10,
                zombie: true,
            },
            entry(20, 1),
        ];
        assert_eq!(descendants(&table, 10), vec![11, 12]);
        assert_eq!(descendants(&table, 20), Vec::<u32>::new());
        assert_eq!(descendants(&table, 99), Vec::<u32>::new());
    }

    #[test]
    fn stat_lines_parse_with_spaces_and_parentheses_in_the_name() {
        let stat = "4242 (my (odd) prog) S 17 4242 4242 0 -1 4194560";
        assert_eq!(
            parse_stat(4242, stat),
            Some(ProcEntry {
                pid: 4242,
                ppid: 17,
                zombie: false
            })
        );
        assert!(parse_stat(7, "7 (x) Z 1 0").unwrap().zombie);
        assert_eq!(parse_stat(7, "garbage"), None);
    }

    #[tokio::test]
    async fn a_process_tree_is_ended_and_one_that_ignores_sigterm_is_killed() {
        // A real tree: sh starts a sleeper and a sleeper that ignores SIGTERM, then waits.
        let mut root = std::process::Command::new("sh")
            .arg("-c")
            .arg("sleep 300 & (trap '' TERM; sleep 300) & wait")
            .spawn()
            .unwrap();
        let pid = root.id();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while descendants(&proc_table(), pid).len() < 2 {
            assert!(std::time::Instant::now() < deadline, "the tree did not start");
            tokio::time::sleep(POLL).await;
        }
        let survivors = end_descendants(pid).await;
        assert!(survivors.is_empty(), "{survivors:?}");
        assert!(descendants(&proc_table(), pid).is_empty());
        let _ = root.kill();
        let _ = root.wait();
    }
}
