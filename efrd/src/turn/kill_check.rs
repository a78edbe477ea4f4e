//! The kill floors that need `/proc`: a `kill` of a pid that is efrd, one of its ancestors (the service manager, the
//! user's login), a session leader (a terminal's shell, a login), or a process of one of efr's programs (a launcher, a
//! proxy) is refused in every mode, full included (docs/adr/0023-floors-that-hold.md). The floors a line
//! shows by itself (pid 1, `-1`, groups, `$PPID`, `pkill efrd`, `killall -u`) are the policy's
//! ([`efr_policy::kills`]).

use efr_policy::SeenCommand;
use efr_policy::kills::{EFR_PROGRAMS, KILL};

/// The refusal when a `kill` of the line's `commands` names a pid that efrd protects.
#[must_use]
pub fn refusal(commands: &[SeenCommand]) -> Option<String> {
    let protected = Protected::now();
    commands
        .iter()
        .filter(|cmd| cmd.name == "kill")
        .flat_map(pids)
        .any(|pid| protected.covers(pid))
        .then(|| KILL.to_owned())
}

/// The literal pids of a `kill` (the signal option left out).
fn pids(cmd: &SeenCommand) -> Vec<u32> {
    let values: Vec<&str> = cmd.values().collect();
    let mut operands = values.iter().copied().peekable();
    match operands.peek().copied() {
        Some("-s" | "-n") => {
            operands.next();
            operands.next();
        }
        Some(first) if first.starts_with('-') && first != "--" && values.len() > 1 => {
            operands.next();
        }
        _ => {}
    }
    operands.filter_map(|v| v.parse::<u32>().ok()).collect()
}

/// efrd's own pid and its ancestors, read once per call.
struct Protected {
    lineage: Vec<u32>,
}

impl Protected {
    fn now() -> Self {
        let mut lineage = vec![std::process::id()];
        while let Some(parent) = lineage.last().and_then(|pid| stat(*pid)).map(|s| s.ppid) {
            if parent == 0 || lineage.contains(&parent) || lineage.len() > 64 {
                break;
            }
            lineage.push(parent);
        }
        Self { lineage }
    }

    fn covers(&self, pid: u32) -> bool {
        if self.lineage.contains(&pid) {
            return true;
        }
        let leader = stat(pid).is_some_and(|s| s.session == pid);
        let program = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
        let efr = program
            .as_deref()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .is_some_and(|name| EFR_PROGRAMS.contains(&name));
        leader || efr
    }
}

/// The fields of `/proc/<pid>/stat` that the floors read.
struct Stat {
    ppid: u32,
    session: u32,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's `(name)`, which may hold spaces: state, ppid, pgrp, session.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(1);
    let ppid = fields.next()?.parse().ok()?;
    let _pgrp = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    Some(Stat { ppid, session })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kill(line: &str) -> Option<String> {
        let call = efr_policy::ShellCall {
            command: line.to_owned(),
            cwd: "/".into(),
        };
        let ctx = efr_policy::PolicyContext::new(Vec::new(), efr_protocol::wire::Origin::Terminal);
        refusal(&efr_policy::analyse_call(&call, &ctx).commands)
    }

    #[test]
    fn efrd_its_ancestors_and_session_leaders_are_floors_a_child_of_a_call_is_not() {
        let own = std::process::id();
        let parent = stat(own).unwrap().ppid;
        assert_eq!(kill(&format!("kill {own}")).as_deref(), Some(KILL));
        assert_eq!(kill(&format!("kill -9 {parent}")).as_deref(), Some(KILL));
        // A session leader: a child made one with setsid.
        let mut leader = std::process::Command::new("setsid")
            .args(["sleep", "30"])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        // setsid forks when it is a group leader already; the session's leader is then sleep, a child of setsid's.
        let sid = stat(leader.id()).map(|s| s.session).unwrap();
        let leaders_kill = kill(&format!("kill -s TERM {sid}"));
        // A plain child of this test is neither.
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let childs_kill = kill(&format!("kill {}", child.id()));
        let _ = leader.kill();
        let _ = child.kill();
        let _ = leader.wait();
        let _ = child.wait();
        assert_eq!(leaders_kill.as_deref(), Some(KILL));
        assert_eq!(childs_kill, None);
    }
}
