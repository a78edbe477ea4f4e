//! The walk over one line's commands: wrappers, environment, redirections, nested shells, the read-only list and
//! the floors, gathered into a [`LineAnalysis`]. The rules are in the [parent module](super); what a line reads
//! (git's repositories, efr's state root) is in [`reads`].

mod nested;
mod reads;
mod wrappers;

use std::path::Path;

use super::{Concern, LineAnalysis, OutsideWrite, Scope, SeenCommand, dangerous_env};
use crate::floors::{self, Place, place};
use crate::paths::{display, is_within};
use crate::readonly::{self, Verdict, kinds};
use crate::shell::{self, Command, Cwd, Redirect, RedirectOp, Visitor, Word, walk};

/// Analyses one line (see [`super::analyse`]).
pub(super) fn analyse(line: &str, scope: &Scope<'_>) -> LineAnalysis {
    let mut analyser = Analyser {
        scope: *scope,
        out: LineAnalysis::default(),
        depth: 0,
        stdin_terminal: true,
        outer_piped: false,
        privileged: None,
    };
    analyser.script(line, Cwd::at(scope.cwd));
    analyser.out
}

struct Analyser<'a> {
    scope: Scope<'a>,
    out: LineAnalysis,
    depth: usize,
    /// The command being analysed reads its standard input from the terminal.
    stdin_terminal: bool,
    /// The nested script being analysed (`bash -c`) reads a pipe or a file, not the terminal.
    outer_piped: bool,
    /// The privileged wrapper's command that runs the commands being analysed, as written.
    privileged: Option<String>,
}

/// Redirect targets that are not files.
fn harmless_sink(word: &Word) -> bool {
    word.value.as_deref().is_some_and(|v| {
        // Linux reopens the file behind `/dev/stdout` and `/dev/fd/N`: only the terminal's own descriptors, 1 and 2,
        // are harmless, and a command may not open a file for reading on them (see `redirects`).
        matches!(
            v,
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/fd/1" | "/dev/fd/2"
        )
    })
}

/// The program a command name runs: its file name for the system's bin folders, `Err` for any other path.
fn program(raw: &str) -> Result<&str, &str> {
    let Some((dir, file)) = raw.rsplit_once('/') else {
        return Ok(raw);
    };
    if matches!(dir, "/bin" | "/usr/bin" | "/usr/local/bin" | "/sbin" | "/usr/sbin") {
        Ok(file)
    } else {
        Err(file)
    }
}

impl Analyser<'_> {
    fn concern(&mut self, concern: Concern) {
        self.out.concerns.push(concern);
    }

    fn refuse(&mut self, refusal: &'static str) {
        self.out.refusal.get_or_insert(refusal);
    }

    fn inside_project(&self, path: &Path) -> bool {
        self.scope.project_roots.iter().any(|root| is_within(path, root))
    }

    fn show(&self, path: &Path) -> String {
        display(path, self.scope.project_roots, self.scope.home)
    }

    fn script(&mut self, line: &str, cwd: Cwd) {
        let script = shell::parse(line);
        if let Some(problem) = script.error.clone() {
            self.concern(Concern::Unparsed { problem });
        }
        let home = self.scope.home;
        walk(&script.body, cwd, home, self);
    }

    /// A simple command's words: a wrapper or a shell is read through to the command it runs ([`wrappers`],
    /// [`nested`]); any other command is a leaf.
    fn words(&mut self, words: &[Word], cwd: &Cwd) {
        let Some(first) = words.first() else { return };
        let Some(raw) = first.value.as_deref().filter(|_| !first.glob) else {
            self.concern(Concern::Unknown {
                construct: format!("a command name that expands (`{}`)", first.source),
            });
            return;
        };
        let name = program(raw).unwrap_or_else(|file| {
            self.concern(Concern::NotReadOnly(format!("`{raw}`, a program efr cannot see")));
            file
        });
        let args = &words[1..];
        match name {
            "sudo" | "doas" | "run0" | "pkexec" => self.privileged_wrapper(name, words, cwd),
            "su" => self.su(words, cwd),
            "env" => self.env(args, cwd),
            "command" | "builtin" | "busybox" | "setsid" | "nice" | "time" | "timeout" | "stdbuf" => {
                self.wrapper(name, args, cwd);
            }
            "nohup" | "xargs" => self.runner(name, args, cwd),
            "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" => self.shell(name, args, cwd),
            "eval" => self.eval(args, cwd),
            "exec" => self.exec(args, cwd),
            "watch" => self.watch(args, cwd),
            "source" | "." => self.concern(Concern::Unknown {
                construct: format!("`{name}`"),
            }),
            _ => self.leaf(name, args, cwd),
        }
    }

    /// A command with its wrappers off.
    fn leaf(&mut self, name: &str, args: &[Word], cwd: &Cwd) {
        self.out.commands.push(SeenCommand {
            name: name.to_owned(),
            args: args.to_vec(),
            cwd: cwd.clone(),
            privileged: self.privileged.clone(),
        });
        if kinds::network(name, args) {
            self.out.network = true;
            let sub = args
                .first()
                .and_then(|w| w.value.as_deref())
                .filter(|v| !v.starts_with('-'));
            let command = sub.map_or_else(|| name.to_owned(), |s| format!("{name} {s}"));
            self.concern(Concern::Network { command });
        }
        if kinds::interactive(name, args, self.stdin_terminal) {
            self.out.interactive = true;
            let command = match (name, readonly::git::subcommand(args)) {
                ("git", Some(sub)) => format!("git {sub}"),
                _ => name.to_owned(),
            };
            self.concern(Concern::Interactive { command });
        }
        if let Verdict::NotReadOnly(text) = readonly::classify(name, args, self.scope.extra_read_only) {
            self.concern(Concern::NotReadOnly(text));
        }
        if name == "git" {
            self.git_places(args, cwd);
        }
        self.recursive_read(name, args, cwd);
        self.floors(name, args, cwd);
    }

    fn floors(&mut self, name: &str, args: &[Word], cwd: &Cwd) {
        let home = self.scope.home;
        if floors::formats_disk(name) {
            self.refuse(floors::FORMAT);
        }
        if let Some(refusal) = crate::kills::kill_floor(name, args) {
            self.refuse(refusal);
        }
        let targets = floors::targets(name, args);
        if targets.no_preserve_root {
            self.refuse(floors::SYSTEM_DELETE);
        }
        for word in &targets.deletes_tree {
            match place(word, cwd, home) {
                Place::At(paths) => {
                    for path in paths {
                        if floors::system_folder(&path, home) {
                            self.refuse(floors::SYSTEM_DELETE);
                        } else if let Some(refusal) = self.scope.efr.write_refusal(&path, true) {
                            self.refuse(refusal);
                        } else if !self.inside_project(&path) {
                            let shown = self.show(&path);
                            self.out.guarded_deletes.push(shown);
                        }
                    }
                }
                Place::Unknown => self.out.guarded_deletes.push(word.source.clone()),
            }
        }
        let delete = matches!(name, "rm" | "rmdir" | "unlink" | "find");
        for word in &targets.writes {
            self.write_target(word, cwd, delete);
        }
        // Any mention of a path in efr's state root, even by a read-only command.
        for word in args {
            let Some(value) = word.value.as_deref() else {
                // `"$HOME/.ssh/id"`, `"$PWD/../x"`: placed when efr can, else a path it cannot resolve.
                self.read_target(word, cwd);
                continue;
            };
            let rhs = value.split_once('=').map(|(_, r)| Word::literal(r));
            for w in std::iter::once(word).chain(rhs.as_ref()) {
                self.read_target(w, cwd);
            }
        }
    }

    /// A path the line writes: floors, then "outside the project".
    fn write_target(&mut self, word: &Word, cwd: &Cwd, delete: bool) {
        let Place::At(paths) = place(word, cwd, self.scope.home) else {
            return;
        };
        for path in paths {
            if floors::raw_device(&path) {
                self.refuse(floors::DEVICE);
            } else if let Some(refusal) = self.scope.efr.write_refusal(&path, false) {
                self.refuse(refusal);
            } else if !self.inside_project(&path) && !harmless_sink(&Word::literal(&path.to_string_lossy())) {
                let shown = self.show(&path);
                self.concern(Concern::WritesOutside { path: shown });
                let write = OutsideWrite { path, delete };
                if !self.out.outside_writes.contains(&write) {
                    self.out.outside_writes.push(write);
                }
            }
        }
    }
}

impl Visitor for Analyser<'_> {
    fn command(&mut self, command: &Command, cwd: &Cwd, piped: bool) {
        let stdin_redirected = command.redirects.iter().any(|r| {
            matches!(
                r.op,
                RedirectOp::Read | RedirectOp::Heredoc | RedirectOp::Herestring | RedirectOp::DupIn
            ) && r.fd.is_none_or(|fd| fd == 0)
        });
        self.stdin_terminal = !(piped || stdin_redirected || self.outer_piped);
        let targets = command.redirects.iter().filter_map(|r| r.target.as_ref());
        let assigned = command.assignments.iter().map(|a| &a.value);
        // `{name}>file` (and `{name[sub]}>`) stores a descriptor's number in `name` (tree-sitter reads `{name}` as a
        // word); a brace expansion has a `,` or `..`.
        if command.words.iter().any(|w| {
            w.source
                .strip_prefix('{')
                .and_then(|r| r.strip_suffix('}'))
                .is_some_and(|inner| !inner.is_empty() && !inner.contains(',') && !inner.contains(".."))
        }) && !command.redirects.is_empty()
        {
            self.concern(Concern::Unknown {
                construct: "a `{name}` redirection, which sets a shell variable".to_owned(),
            });
        }
        for word in command.words.iter().chain(assigned).chain(targets) {
            if let Some(what) = word.unsafe_expansion {
                self.concern(Concern::Unknown {
                    construct: what.to_owned(),
                });
            }
        }
        self.redirects(&command.redirects, cwd);
        if command.words.is_empty() {
            for assignment in &command.assignments {
                let text = format!("setting `{}`, which stays set in the hidden shell", assignment.name);
                self.concern(Concern::NotReadOnly(text));
            }
            return;
        }
        for assignment in &command.assignments {
            if dangerous_env(&assignment.name, &assignment.value) {
                self.concern(Concern::Environment {
                    name: assignment.name.clone(),
                });
            }
        }
        self.words(&command.words, cwd);
    }

    fn redirects(&mut self, redirects: &[Redirect], cwd: &Cwd) {
        for redirect in redirects {
            if let Some(what) = redirect.target.as_ref().and_then(|t| t.unsafe_expansion) {
                self.concern(Concern::Unknown {
                    construct: what.to_owned(),
                });
            }
            // `3<file`, `1<file`: a file opened on another descriptor than input, which `>/dev/fd/3` or
            // `>/dev/stdout` would then write.
            if matches!(redirect.op, RedirectOp::Read | RedirectOp::ReadWrite) && redirect.fd.is_some_and(|fd| fd != 0)
            {
                self.concern(Concern::Unknown {
                    construct: "a file opened for reading on another descriptor than input".to_owned(),
                });
            }
            let Some(target) = &redirect.target else {
                if redirect.writes_file() {
                    self.concern(Concern::WritesFile { target: "?".to_owned() });
                }
                continue;
            };
            if redirect.writes_file() {
                if harmless_sink(target) {
                    continue;
                }
                let before = self.out.concerns.len();
                self.write_target(target, cwd, false);
                if self.out.concerns.len() == before {
                    self.concern(Concern::WritesFile {
                        target: target.source.clone(),
                    });
                }
            } else if matches!(redirect.op, RedirectOp::Read | RedirectOp::ReadWrite) {
                // bash opens a connection for `< /dev/tcp/host/port`; a target that expands may be one.
                match target.value.as_deref() {
                    Some(path) if path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/") => {
                        self.out.network = true;
                        self.concern(Concern::Network {
                            command: format!("a redirection from {path}"),
                        });
                    }
                    None => self.concern(Concern::Unknown {
                        construct: "a redirection from a path that expands".to_owned(),
                    }),
                    Some(_) => self.read_target(target, cwd),
                }
            }
        }
    }

    fn unknown(&mut self, construct: &str, _cwd: &Cwd) {
        self.concern(Concern::Unknown {
            construct: construct.to_owned(),
        });
    }
}
