//! Nested shells: a script given to `bash -c`, `su -c` or a static `eval`, analysed as a line of its own (to
//! [`MAX_SHELL_DEPTH`]), and a shell started without one.

use super::Analyser;
use crate::analysis::{Concern, MAX_SHELL_DEPTH};
use crate::shell::{Cwd, Word};

impl Analyser<'_> {
    /// A nested script (`bash -c`, `su -c`, a static `eval`).
    pub(super) fn nested(&mut self, line: &str, cwd: &Cwd) {
        if self.depth >= MAX_SHELL_DEPTH {
            self.concern(Concern::Unknown {
                construct: format!("shells nested more than {MAX_SHELL_DEPTH} deep"),
            });
            return;
        }
        let outer = std::mem::replace(&mut self.outer_piped, !self.stdin_terminal);
        self.depth += 1;
        self.script(line, cwd.clone());
        self.depth -= 1;
        self.outer_piped = outer;
    }

    /// `bash [options] [-c script | file]`.
    pub(super) fn shell(&mut self, name: &str, args: &[Word], cwd: &Cwd) {
        let mut has_c = false;
        let mut i = 0;
        while let Some(value) = args.get(i).and_then(|w| w.value.as_deref()) {
            if value == "--" {
                i += 1;
                break;
            }
            if !(value.starts_with('-') || value.starts_with('+')) || value == "-" {
                break;
            }
            let long = value.starts_with("--");
            // An interactive or login shell reads startup files (`~/.bashrc`, `--rcfile x`) that efr cannot see.
            let startup = if long {
                matches!(value, "--login" | "--interactive" | "--rcfile" | "--init-file")
            } else {
                value.starts_with('-') && value.contains(['i', 'l'])
            };
            if startup {
                self.concern(Concern::NotReadOnly(format!(
                    "`{name} {value}`, which reads startup files efr cannot see"
                )));
            }
            if long {
                i += if matches!(value, "--rcfile" | "--init-file") {
                    2
                } else {
                    1
                };
                continue;
            }
            has_c |= value.contains('c');
            i += if value.ends_with(['o', 'O']) { 2 } else { 1 };
        }
        if has_c {
            self.shell_script(name, args.get(i), cwd);
        } else if let Some(file) = args.get(i) {
            self.concern(Concern::NotReadOnly(format!(
                "`{name} {}`, which runs a script efr cannot see",
                file.source
            )));
        } else if self.stdin_terminal {
            self.out.interactive = true;
            self.concern(Concern::Interactive {
                command: name.to_owned(),
            });
            self.concern(Concern::NotReadOnly(format!("`{name}`, which starts a shell")));
        } else {
            self.concern(Concern::NotReadOnly(format!(
                "`{name}`, which runs the commands it reads"
            )));
        }
    }

    pub(super) fn shell_script(&mut self, name: &str, script: Option<&Word>, cwd: &Cwd) {
        match script.and_then(|w| w.value.as_deref()) {
            Some(text) => self.nested(text, cwd),
            None => self.concern(Concern::Unknown {
                construct: format!("`{name} -c` with a script that expands"),
            }),
        }
    }

    /// `eval`: unknown; a static one is a nested script.
    pub(super) fn eval(&mut self, args: &[Word], cwd: &Cwd) {
        self.concern(Concern::Unknown {
            construct: "`eval`".to_owned(),
        });
        let parts: Option<Vec<&str>> = args.iter().map(|w| w.value.as_deref()).collect();
        if let Some(parts) = parts {
            self.nested(&parts.join(" "), cwd);
        }
    }
}
