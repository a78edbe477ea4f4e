//! The wrappers a line's commands run through (`sudo`, `su`, `env`, `command`, `nice`, `time`, `timeout`, `nohup`,
//! `xargs`, `exec`, `watch`, ...): their options read, their concerns noted, and the command they run analysed as a
//! command of its own.

use super::Analyser;
use crate::analysis::options::{self, Opt, Spec};
use crate::analysis::{Concern, dangerous_env};
use crate::readonly::kinds;
use crate::shell::{Cwd, Word};

/// The options of the wrappers efr reads strictly (GNU coreutils and util-linux).
const ENV: Spec = Spec {
    flags: &["-i", "--ignore-environment", "-0", "--null"],
    valued: &["-u", "--unset", "-C", "--chdir"],
};
const COMMAND: Spec = Spec {
    flags: &["-p"],
    valued: &[],
};
const NONE: Spec = Spec {
    flags: &[],
    valued: &[],
};
const SETSID: Spec = Spec {
    flags: &["-c", "--ctty", "-f", "--fork", "-w", "--wait"],
    valued: &[],
};
const NICE: Spec = Spec {
    flags: &[],
    valued: &["-n", "--adjustment"],
};
const TIME: Spec = Spec {
    flags: &[
        "-p",
        "--portability",
        "-v",
        "--verbose",
        "-q",
        "--quiet",
        "-a",
        "--append",
    ],
    valued: &["-o", "--output", "-f", "--format"],
};
const TIMEOUT: Spec = Spec {
    flags: &["--preserve-status", "--foreground", "-v", "--verbose"],
    valued: &["-s", "--signal", "-k", "--kill-after"],
};
const STDBUF: Spec = Spec {
    flags: &[],
    valued: &["-i", "-o", "-e", "--input", "--output", "--error"],
};

/// The index of the first operand after a wrapper's options, read leniently (`valued` options take the next word):
/// where the command of a privileged wrapper or of an option efr does not know starts, for the floors.
pub(super) fn skip_options(args: &[Word], valued: &[&str]) -> usize {
    let mut i = 0;
    while let Some(value) = args.get(i).and_then(|w| w.value.as_deref()) {
        if value == "--" {
            return i + 1;
        }
        if !value.starts_with('-') || value == "-" {
            break;
        }
        i += if valued.contains(&value) { 2 } else { 1 };
    }
    i.min(args.len())
}

impl Analyser<'_> {
    /// Records a privileged wrapper's command (the outermost one, as written) and makes it the one that runs the
    /// commands analysed next; returns the one to restore afterwards.
    pub(super) fn enter_privileged(&mut self, words: &[Word]) -> Option<String> {
        let outer = self.privileged.clone();
        if outer.is_none() {
            let text: Vec<&str> = words.iter().map(|w| w.source.as_str()).collect();
            let text = text.join(" ");
            self.out.privileged_commands.push(text.clone());
            self.privileged = Some(text);
        }
        outer
    }

    /// A wrapper's options, read strictly ([`options::read`]). An option efr does not know is a concern, and the
    /// lenient reading then finds the command, so that it still meets the floors.
    pub(super) fn options(&mut self, name: &str, args: &[Word], spec: Spec) -> (Vec<Opt>, usize) {
        match options::read(args, spec) {
            Ok(read) => read,
            Err(option) => {
                self.concern(Concern::Unknown {
                    construct: format!("`{name} {option}`, an option efr does not read"),
                });
                (Vec::new(), skip_options(args, spec.valued))
            }
        }
    }

    /// A wrapper's command; the wrapper alone is read-only.
    pub(super) fn wrapped(&mut self, inner: &[Word], cwd: &Cwd) {
        if !inner.is_empty() {
            self.words(inner, cwd);
        }
    }

    pub(super) fn env(&mut self, args: &[Word], cwd: &Cwd) {
        let (opts, mut i) = self.options("env", args, ENV);
        let mut cwd = cwd.clone();
        if opts.iter().any(|o| matches!(o.name, "-C" | "--chdir")) {
            cwd = Cwd::Unknown;
        }
        while let Some(word) = args.get(i) {
            let Some(value) = word.value.as_deref() else {
                self.concern(Concern::Unknown {
                    construct: "`env` with a word that expands".to_owned(),
                });
                return;
            };
            match value.split_once('=') {
                Some((name, rest)) => {
                    if dangerous_env(name, &Word::literal(rest)) {
                        self.concern(Concern::Environment { name: name.to_owned() });
                    }
                    i += 1;
                }
                None => break,
            }
        }
        self.wrapped(args.get(i..).unwrap_or(&[]), &cwd);
    }

    /// `sudo`, `doas`, `run0`, `pkexec`: privileged; the command runs as the one that runs the commands analysed
    /// next.
    pub(super) fn privileged_wrapper(&mut self, name: &str, words: &[Word], cwd: &Cwd) {
        let args = &words[1..];
        self.out.privileged = true;
        self.concern(Concern::Privileged {
            command: name.to_owned(),
        });
        if kinds::interactive(name, args, self.stdin_terminal) {
            self.out.interactive = true;
        }
        let valued = [
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group",
        ];
        let inner = &args[skip_options(args, &valued)..];
        let outer = self.enter_privileged(words);
        if inner.is_empty() {
            self.concern(Concern::NotReadOnly(format!("`{name}` without a command")));
        } else {
            self.words(inner, cwd);
        }
        self.privileged = outer;
    }

    /// `su`: privileged and interactive; its `-c` script is a nested one.
    pub(super) fn su(&mut self, words: &[Word], cwd: &Cwd) {
        let (name, args) = ("su", &words[1..]);
        self.out.privileged = true;
        self.out.interactive = true;
        self.concern(Concern::Privileged {
            command: "su".to_owned(),
        });
        let outer = self.enter_privileged(words);
        match args
            .iter()
            .position(|w| matches!(w.value.as_deref(), Some("-c" | "--command")))
        {
            Some(i) => self.shell_script(name, args.get(i + 1), cwd),
            None => self.concern(Concern::Interactive {
                command: "su".to_owned(),
            }),
        }
        self.privileged = outer;
    }

    /// The wrappers that only run their command, with options read strictly.
    pub(super) fn wrapper(&mut self, name: &str, args: &[Word], cwd: &Cwd) {
        match name {
            "command" => {
                if args
                    .first()
                    .and_then(|w| w.value.as_deref())
                    .is_some_and(|v| v == "-v" || v == "-V")
                {
                    return;
                }
                let (_, start) = self.options(name, args, COMMAND);
                self.wrapped(&args[start..], cwd);
            }
            "builtin" | "busybox" | "setsid" => {
                let spec = if name == "setsid" { SETSID } else { NONE };
                let (_, start) = self.options(name, args, spec);
                self.wrapped(&args[start..], cwd);
            }
            "nice" => {
                // The old form `nice -5 cmd`.
                let legacy = args
                    .first()
                    .and_then(|w| w.value.as_deref())
                    .is_some_and(|v| v.len() > 1 && v.starts_with('-') && v[1..].bytes().all(|b| b.is_ascii_digit()));
                let args = &args[usize::from(legacy)..];
                let (_, start) = self.options(name, args, NICE);
                self.wrapped(&args[start..], cwd);
            }
            "time" => {
                let (opts, start) = self.options(name, args, TIME);
                if opts.iter().any(|o| matches!(o.name, "-o" | "--output")) {
                    self.concern(Concern::NotReadOnly("`time -o`, which writes a file".to_owned()));
                }
                self.wrapped(&args[start..], cwd);
            }
            "timeout" => {
                let (_, start) = self.options(name, args, TIMEOUT);
                self.wrapped(args.get(start + 1..).unwrap_or(&[]), cwd);
            }
            "stdbuf" => {
                let (_, start) = self.options(name, args, STDBUF);
                self.wrapped(&args[start..], cwd);
            }
            _ => {}
        }
    }

    /// `nohup` and `xargs`: not read-only, their command analysed.
    pub(super) fn runner(&mut self, name: &str, args: &[Word], cwd: &Cwd) {
        let why = if name == "nohup" {
            "writes nohup.out"
        } else {
            "runs commands built from its input"
        };
        self.concern(Concern::NotReadOnly(format!("`{name}`, which {why}")));
        let valued = ["-n", "-I", "-P", "-L", "-d", "-a", "-E", "-s"];
        self.words(&args[skip_options(args, &valued)..], cwd);
    }

    /// `exec`: replaces the hidden shell.
    pub(super) fn exec(&mut self, args: &[Word], cwd: &Cwd) {
        self.concern(Concern::Unknown {
            construct: "`exec`, which replaces the hidden shell".to_owned(),
        });
        self.wrapped(&args[skip_options(args, &["-a"])..], cwd);
    }

    /// `watch`: runs its command, as a nested script, until stopped.
    pub(super) fn watch(&mut self, args: &[Word], cwd: &Cwd) {
        self.concern(Concern::NotReadOnly(
            "`watch`, which runs its command until stopped".to_owned(),
        ));
        let start = skip_options(args, &["-n", "--interval", "-d", "--differences"]);
        let parts: Option<Vec<&str>> = args[start..].iter().map(|w| w.value.as_deref()).collect();
        if let Some(parts) = parts {
            self.nested(&parts.join(" "), cwd);
        }
    }
}
