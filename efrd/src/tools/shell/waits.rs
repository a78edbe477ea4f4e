//! Input waits: does the running command wait for the user to type, and can they see what they type?
//!
//! # The method
//!
//! While a run's command runs, the shell looks every [`POLL_EVERY`] at:
//!
//! 1. the terminal, through the master: its foreground process group (`tcgetpgrp`) and its termios flags, ICANON
//!    ("line mode") and ECHO;
//! 2. each thread of each process in that group (`/proc/<pid>/task/<tid>/stat` for the state and the group,
//!    `/proc/<pid>/task/<tid>/syscall` for the system call it sleeps in and its arguments):
//!    - *reading*: asleep in `read`/`readv`/`pread64` on a file descriptor that is this terminal (the link in
//!      `/proc/<pid>/fd/<fd>` stats to the slave's device and inode, which holds across mount namespaces);
//!    - *polling*: asleep in `poll`/`select`/`epoll_wait` and friends with this terminal among its first open files:
//!      a relay such as ssh, `docker exec -it`, node's REPL or sudo's own pty, which reads the terminal when it
//!      becomes readable;
//!    - *unknown*: asleep, but its system call cannot be read (a set-uid program such as sudo, whose files efrd may
//!      not inspect);
//!    - anything else (running, sleeping in another call) is not a wait.
//!
//! A *reading* thread is a wait at once. A *polling* or *unknown* one is a wait only when the run printed nothing for
//! [`QUIET_FOR`] and the cursor row is not blank (a prompt is showing), since a relay also sleeps in `poll` while the
//! remote side works.
//!
//! The kind comes from the flags: line mode without echo is [`InputKind::Hidden`] (`read -s`, `getpass`, ssh's and
//! sudo's password prompts); line mode with echo is [`InputKind::Visible`]; without line mode the program echoes
//! itself (readline, REPLs, relays), so the wait is visible, and it `looks_secret` when the cursor row looks like a
//! password prompt (docs/protocol.md, "The contract": "answers at the edges"). One exception: when the reader is the
//! hidden shell itself (its `read` builtin), echo off is hidden in either mode, since zsh's `read -s` leaves line mode
//! and the shell has no line editor that would echo (bash's `read -e` would; not worth a guess).
//!
//! Why not `/proc/<pid>/wchan`: its value (`n_tty_read`, `wait_woken`, ...) changes between kernels, and it cannot
//! tell which descriptor a read is on. The syscall file needs ptrace-read access, which efrd has over its own
//! descendants; where it lacks it, the *unknown* rule above applies.

use std::path::Path;
use std::time::Duration;

use super::pty::{TtyId, TtyState};

/// How often a running command's terminal is looked at.
pub const POLL_EVERY: Duration = Duration::from_millis(100);

/// How long a relay's output must be quiet before its sleep counts as a wait.
pub const QUIET_FOR: Duration = Duration::from_millis(300);

/// Whether the command waits for input, and whether what is typed shows (spec: `input`: none, visible, hidden).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputKind {
    /// No wait seen.
    #[default]
    None,
    /// It waits, and the terminal (or the program) echoes what is typed.
    Visible,
    /// It waits with echo off in line mode: a password prompt, `read -s`.
    Hidden,
}

/// One look at a running command's input: what `tool_call_input_changed` and `shell_command_input_changed` carry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputWait {
    /// None, visible or hidden.
    pub kind: InputKind,
    /// A visible wait whose prompt line looks like a password prompt while the terminal is not in line mode (behind
    /// sudo's own pty, ssh, docker exec): a client should hide what the user types. Always false for other kinds.
    pub looks_secret: bool,
    /// The row of the screen that holds the cursor, at most 200 characters; `None` when blank or when no wait.
    pub prompt: Option<String>,
}

impl InputWait {
    /// No wait.
    pub const NONE: Self = Self {
        kind: InputKind::None,
        looks_secret: false,
        prompt: None,
    };
}

/// What one thread of the foreground group is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activity {
    Reading,
    Polling,
    Unknown,
    Other,
}

/// What the processes of the foreground group do, as far as `/proc` tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sleep {
    /// A thread sleeps reading the terminal; `by_shell` when it is the hidden shell itself (a `read` builtin).
    Reading { by_shell: bool },
    /// No thread reads, but one polls the terminal or sleeps where efrd cannot see.
    Maybe,
    /// Not waiting for the terminal.
    No,
}

/// Looks at `/proc` for the processes in group `foreground` and their descendants; `shell` is the hidden shell's
/// pid.
///
/// Descendants count because a contained call's command runs in a session of its own (bubblewrap's
/// `--new-session`): the terminal's foreground group is `efr-launcher`'s, while the program that reads the terminal
/// (through the descriptors it inherited) is the launcher's grandchild in another group. A descendant in a background
/// group of the shell's own session cannot sleep reading the terminal (job control stops it first), so the wider set
/// adds no false waits.
pub(crate) fn foreground_sleep(foreground: i32, tty: TtyId, shell: i32) -> Sleep {
    let mut maybe = false;
    for pid in group_and_descendants(foreground) {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            match task_activity(pid, &task.path(), tty) {
                Activity::Reading => return Sleep::Reading { by_shell: pid == shell },
                Activity::Polling | Activity::Unknown => maybe = true,
                Activity::Other => {}
            }
        }
    }
    if maybe { Sleep::Maybe } else { Sleep::No }
}

/// The pids whose process group is `group` (a scan of `/proc/*/stat`).
#[cfg(test)]
fn group_members(group: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| stat_group(&s) == Some(group)))
        .collect()
}

/// The pids whose process group is `group`, and every descendant of them (one scan of `/proc/*/stat`).
fn group_and_descendants(group: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, parent, group) of every process.
    let table: Vec<(i32, i32, i32)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut fields = stat_fields(&stat)?;
            let parent = fields.nth(1)?.parse().ok()?;
            let pgrp = fields.next()?.parse().ok()?;
            Some((pid, parent, pgrp))
        })
        .collect();
    let mut found: Vec<i32> = table
        .iter()
        .filter(|(_, _, g)| *g == group)
        .map(|(pid, _, _)| *pid)
        .collect();
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        next += 1;
        for (pid, _, _) in table.iter().filter(|(_, p, _)| *p == parent) {
            if !found.contains(pid) {
                found.push(*pid);
            }
        }
    }
    found
}

/// The pids whose session is `session` (a scan of `/proc/*/stat`): what closing a shell must end.
pub(crate) fn session_members(session: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| stat_fields(&s).and_then(|mut f| f.nth(3)?.parse::<i32>().ok()) == Some(session))
        })
        .collect()
}

/// The process group (field 5) of a `/proc/.../stat` line; the command name (field 2) may hold spaces and ')'.
#[cfg(test)]
fn stat_group(stat: &str) -> Option<i32> {
    stat_fields(stat)?.nth(2)?.parse().ok()
}

/// The state letter (field 3) of a `/proc/.../stat` line.
fn stat_state(stat: &str) -> Option<char> {
    stat_fields(stat)?.next()?.chars().next()
}

fn stat_fields(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    let after = stat.rfind(')')?;
    Some(stat[after + 1..].split_whitespace())
}

fn task_activity(pid: i32, task: &Path, tty: TtyId) -> Activity {
    let Ok(stat) = std::fs::read_to_string(task.join("stat")) else {
        return Activity::Other;
    };
    if !matches!(stat_state(&stat), Some('S' | 'D')) {
        return Activity::Other;
    }
    let Ok(syscall) = std::fs::read_to_string(task.join("syscall")) else {
        return Activity::Unknown;
    };
    let mut fields = syscall.split_whitespace();
    let Some(Ok(number)) = fields.next().map(str::parse::<libc::c_long>) else {
        return Activity::Other;
    };
    let first_arg = fields
        .next()
        .and_then(|a| i64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
    if READS.contains(&number) {
        let on_tty = first_arg.is_some_and(|fd| tty.is(Path::new(&format!("/proc/{pid}/fd/{fd}"))));
        return if on_tty { Activity::Reading } else { Activity::Other };
    }
    if POLLS.contains(&number) {
        return if holds_tty(pid, tty) {
            Activity::Polling
        } else {
            Activity::Other
        };
    }
    Activity::Other
}

/// Whether one of the first 64 open files of `pid` is the terminal (a relay opens it early, often as stdin).
fn holds_tty(pid: i32, tty: TtyId) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().take(64).any(|fd| tty.is(&fd.path()))
}

const READS: &[libc::c_long] = &[libc::SYS_read, libc::SYS_readv, libc::SYS_pread64];

#[cfg(target_arch = "x86_64")]
const POLLS: &[libc::c_long] = &[
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_select,
    libc::SYS_pselect6,
    libc::SYS_epoll_wait,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
];

#[cfg(not(target_arch = "x86_64"))]
const POLLS: &[libc::c_long] = &[
    libc::SYS_ppoll,
    libc::SYS_pselect6,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
];

/// Decides the wait from one look: the terminal flags, what the group does, whether output was quiet long enough,
/// and the cursor row.
pub(crate) fn classify(state: TtyState, sleep: Sleep, quiet: bool, prompt: Option<String>) -> InputWait {
    let (waits, by_shell) = match sleep {
        Sleep::Reading { by_shell } => (true, by_shell),
        Sleep::Maybe => (quiet && prompt.is_some(), false),
        Sleep::No => (false, false),
    };
    if !waits {
        return InputWait::NONE;
    }
    let kind = if !state.echo && (state.line_mode || by_shell) {
        InputKind::Hidden
    } else {
        InputKind::Visible
    };
    let looks_secret =
        kind == InputKind::Visible && !state.line_mode && prompt.as_deref().is_some_and(looks_like_password_prompt);
    InputWait {
        kind,
        looks_secret,
        prompt,
    }
}

/// Whether a prompt line asks for a secret: it names one (password, passphrase, PIN, token, ...) and ends like a
/// question (`:`, `?` or `>`), as in `[sudo] password for ana:`, `ana@host's password:`, `Enter passphrase for key
/// '/home/ana/.ssh/id_ed25519':`, `Enter PIN for 'token':`.
pub fn looks_like_password_prompt(prompt: &str) -> bool {
    const WORDS: &[&str] = &[
        "password",
        "passphrase",
        "passcode",
        "passwort",
        "mot de passe",
        "contraseña",
        "pin",
        "token",
        "secret",
        "otp",
        "one-time code",
        "verification code",
    ];
    let line = prompt.trim_end().to_lowercase();
    if !line.ends_with([':', '?', '>']) {
        return false;
    }
    let words: Vec<&str> = line
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    WORDS.iter().any(|word| {
        if word.contains(' ') {
            line.contains(word)
        } else {
            words
                .iter()
                .any(|w| w == word || (word.len() > 5 && w.starts_with(word)))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(line_mode: bool, echo: bool) -> TtyState {
        TtyState {
            foreground: 1,
            line_mode,
            echo,
        }
    }

    #[test]
    fn kinds_follow_the_flags() {
        let p = || Some("Password:".to_owned());
        let program = Sleep::Reading { by_shell: false };
        assert_eq!(
            classify(state(true, false), program, false, p()).kind,
            InputKind::Hidden
        );
        assert_eq!(
            classify(state(true, true), program, false, None).kind,
            InputKind::Visible
        );
        let raw = classify(state(false, false), program, false, p());
        assert_eq!((raw.kind, raw.looks_secret), (InputKind::Visible, true));
        // In line mode with echo a password-like row is not "looks_secret": the terminal shows what is typed.
        assert!(!classify(state(true, true), program, false, p()).looks_secret);
        // The shell's own `read -s` is hidden also out of line mode (zsh).
        let shell = Sleep::Reading { by_shell: true };
        assert_eq!(classify(state(false, false), shell, false, p()).kind, InputKind::Hidden);
        assert_eq!(classify(state(false, true), shell, false, p()).kind, InputKind::Visible);
    }

    #[test]
    fn a_relay_waits_only_when_quiet_with_a_prompt() {
        let p = || Some("remote$".to_owned());
        assert_eq!(classify(state(false, false), Sleep::Maybe, false, p()), InputWait::NONE);
        assert_eq!(classify(state(false, false), Sleep::Maybe, true, None), InputWait::NONE);
        assert_eq!(
            classify(state(false, false), Sleep::Maybe, true, p()).kind,
            InputKind::Visible
        );
        assert_eq!(classify(state(true, true), Sleep::No, true, p()), InputWait::NONE);
    }

    #[test]
    fn password_prompts() {
        for yes in [
            "[sudo] password for ana: ",
            "ana@host's password:",
            "Enter passphrase for key '/home/ana/.ssh/id_ed25519': ",
            "Enter PIN for 'token':",
            "Password for 'https://ana@github.com': ",
            "Passwort:",
        ] {
            assert!(looks_like_password_prompt(yes), "{yes}");
        }
        for no in [
            "Continue? [y/N]",
            "spinning:",
            "$ ",
            "Enter your name:",
            "password saved",
            ">>> ",
        ] {
            assert!(!looks_like_password_prompt(no), "{no}");
        }
    }

    #[test]
    fn stat_fields_survive_odd_command_names() {
        let stat = "1234 (a) b (c)) S 1 777 777 34816 777 4194560 0";
        assert_eq!(stat_group(stat), Some(777));
        assert_eq!(stat_state(stat), Some('S'));
        assert_eq!(stat_group("garbage"), None);
    }

    #[test]
    fn this_process_is_in_its_own_group_scan() {
        let group = nix::unistd::getpgrp().as_raw();
        assert!(group_members(group).contains(&(std::process::id() as i32)));
    }

    #[test]
    fn descendants_in_another_session_are_found() {
        // A child that starts a session of its own (as bubblewrap's --new-session does) leaves this group and is
        // still found as a descendant of it. setsid(1) does not fork here (the child leads no group), so the child
        // itself becomes the new session's leader.
        let group = nix::unistd::getpgrp().as_raw();
        let mut child = std::process::Command::new("setsid")
            .args(["sleep", "5"])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .as_deref()
            .and_then(stat_group)
            != Some(pid)
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the child did not start its session"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let members = group_members(group);
        let wider = group_and_descendants(group);
        let _ = child.kill();
        let _ = child.wait();
        assert!(!members.contains(&pid), "the child left the group");
        assert!(wider.contains(&pid), "and is found as a descendant: {wider:?}");
        assert!(wider.contains(&(std::process::id() as i32)));
    }
}
