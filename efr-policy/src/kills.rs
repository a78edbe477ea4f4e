//! The kill floors that a line shows by itself: signals to every process, to pid 1, to a process group, to efr's own
//! programs by name, to a whole user, session, terminal or parent, and to the caller's parent (`$PPID`).
//!
//! A kill runs outside the sandbox's process namespace only through an exit or in full mode, where nothing contains
//! it. These targets are refused in every mode (docs/adr/0023-floors-that-hold.md): one wrong signal ends
//! efr (the daemon that would have to undo the turn), the user's login, or every process of the user. The kills of
//! a pid that efrd knows (efrd, its launchers and proxies, its ancestors, the session leader) are efrd's to refuse,
//! since only it reads `/proc`.

use super::shell::Word;

/// The refusal of a kill floor.
pub const KILL: &str = "kills efr, pid 1, a process group or the user's session (floor)";

/// efr's own programs: a name-based kill (`pkill`, `killall`) whose pattern names one is a floor.
pub const EFR_PROGRAMS: [&str; 6] = [
    "efrd",
    "efr-launcher",
    "efr-proxy",
    "efr-bus-proxy",
    "efr-helper",
    "efr",
];

/// The refusal when the command `name` with `args` hits a kill floor, else `None`.
#[must_use]
pub fn kill_floor(name: &str, args: &[Word]) -> Option<&'static str> {
    let hit = match name {
        "kill" => kill(args),
        "pkill" | "killall" => by_name(name, args),
        // Every process of the machine (System V's `killall5`), a session or a user through logind.
        "killall5" => true,
        "loginctl" => args.iter().filter_map(|w| w.value.as_deref()).any(|v| {
            matches!(
                v,
                "kill-session" | "kill-user" | "terminate-session" | "terminate-user" | "terminate-seat"
            )
        }),
        _ => false,
    };
    hit.then_some(KILL)
}

/// `kill`: pid 0 (the caller's group), 1, -1 (every process), a negative pid (a process group), or `$PPID` (the
/// parent: the hidden shell's is efrd's side of the call).
fn kill(args: &[Word]) -> bool {
    let mut operands = args.iter().peekable();
    // The signal: `-9`, `-KILL`, `-s KILL`, `-n 9`; `-1` alone is a pid (every process).
    match operands.peek().and_then(|w| w.value.as_deref()) {
        Some("-s" | "-n") => {
            operands.next();
            operands.next();
        }
        Some(first) if first.starts_with('-') && first != "--" && args.len() > 1 => {
            operands.next();
        }
        _ => {}
    }
    operands.any(|word| match word.value.as_deref() {
        Some("--") => false,
        Some(value) => value == "0" || value == "1" || (value.starts_with('-') && is_number(&value[1..])),
        None => matches!(word.source.trim_matches('"'), "$PPID" | "${PPID}"),
    })
}

fn is_number(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// `pkill`, `killall`: a pattern or name that names an efr program, matches every name, or a selection of a whole
/// user, session, group, terminal or parent (`-u`, `-U`, `-s`, `-g`, `-P`, `-t` and their long forms).
fn by_name(name: &str, args: &[Word]) -> bool {
    const WHOLE: [&str; 16] = [
        "-u",
        "-U",
        "-s",
        "-g",
        "-G",
        "-P",
        "-t",
        "--user",
        "--euid",
        "--uid",
        "--session",
        "--pgroup",
        "--group",
        "--parent",
        "--terminal",
        "--ns",
    ];
    let mut patterns = Vec::new();
    let mut skip = false;
    for word in args {
        if skip {
            skip = false;
            continue;
        }
        let Some(value) = word.value.as_deref() else {
            // A name that expands cannot be checked: it may name efr.
            return true;
        };
        if WHOLE.iter().any(|o| value == *o || value.starts_with(&format!("{o}="))) {
            return true;
        }
        // pkill's `-u1000`, killall's `-uada`: the short form with its value attached.
        if value.len() > 2 && ["-u", "-U", "-s", "-g", "-G", "-P", "-t"].contains(&&value[..2]) && name == "pkill" {
            return true;
        }
        if value.starts_with('-') {
            // An option with a value of its own (the signal, the age).
            skip = matches!(
                value,
                "--signal" | "-o" | "--older-than" | "-y" | "--younger-than" | "-n" | "-S"
            );
            continue;
        }
        patterns.push(value);
    }
    let full = args.iter().any(|w| matches!(w.value.as_deref(), Some("-f" | "--full")));
    patterns.iter().any(|pattern| names_efr(pattern, full))
}

/// A pattern (pkill's extended regular expression, killall's name) that may match an efr program. A pattern that
/// does not compile fails closed: it is taken to match.
/// With pkill's `-f` the pattern meets whole command lines, so one that holds `efr` matches too.
fn names_efr(pattern: &str, full: bool) -> bool {
    let matches = match regex::Regex::new(pattern) {
        Ok(regex) => EFR_PROGRAMS.iter().any(|program| regex.is_match(program)),
        Err(_) => true,
    };
    matches || (full && pattern.to_ascii_lowercase().contains("efr"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor(line: &str) -> Option<&'static str> {
        let call = crate::ShellCall {
            command: line.to_owned(),
            cwd: "/home/ada/project".into(),
        };
        let ctx = crate::PolicyContext::new(vec!["/home/ada/project".into()], efr_protocol::wire::Origin::Terminal);
        let analysis = crate::analyse_call(&call, &ctx);
        // A floor refuses in every mode, full included.
        let decided = crate::decide_shell(&call, &analysis, efr_protocol::wire::Mode::Full, &ctx);
        assert_eq!(
            matches!(decided, crate::Decision::Refuse { .. }),
            analysis.refusal.is_some(),
            "{line}"
        );
        analysis.refusal
    }

    #[test]
    fn kills_of_efr_pid_1_groups_sessions_and_users_are_floors() {
        for line in [
            "pkill efrd",
            "pkill -9 efr",
            "pkill -f 'efr-proxy --listen'",
            "killall efrd",
            "killall -9 efr-launcher",
            "pkill 'ef.*'",
            "pkill .",
            "killall -u ada",
            "killall -u \"$USER\"",
            "pkill -u ada node",
            "pkill -U1000",
            "pkill -s 0",
            "pkill --session 12",
            "pkill -t pts/1",
            "pkill -P 1",
            "pkill \"$NAME\"",
            "kill -9 $PPID",
            "kill \"${PPID}\"",
            "kill 1",
            "kill -1",
            "kill -9 -1",
            "kill -- -1234",
            "kill -TERM 0",
            "killall5 -9",
            "loginctl terminate-user ada",
            "loginctl kill-session 3",
        ] {
            assert_eq!(floor(line), Some(KILL), "{line}");
        }
    }

    #[test]
    fn other_kills_are_exits_not_floors() {
        for line in [
            "pkill node",
            "pkill -f 'python3 -m http.server'",
            "killall -9 node",
            "kill 1234",
            "kill -9 1234",
            "kill -s TERM 1234",
            "kill %1",
            "kill $!",
            "kill -l",
            "loginctl list-sessions",
        ] {
            assert_eq!(floor(line), None, "{line}");
        }
    }
}
