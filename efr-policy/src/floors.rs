//! The floors: what efr refuses in every mode, full mode included, and the deletes that full mode asks about.
//!
//! Full mode runs every call as the user with no question, "and efr still reads each line for a small set of floors"
//! (docs/protocol.md, "The contract": "full mode"). The floors are deliberately few, so that each one is a clear rule:
//!
//! | floor | refusal |
//! |---|---|
//! | a recursive delete (`rm -r`, `find … -delete`) of `/`, a folder right under `/`, the home folder or one of its ancestors, or a glob right in them (`rm -rf /*`, `rm -rf ~/*`); `rm --no-preserve-root` | [`SYSTEM_DELETE`] |
//! | formatting a disk: `mkfs`, `mkfs.*`, `mke2fs`, `mkswap`, `wipefs`, `blkdiscard` | [`FORMAT`] |
//! | writing a raw device: a write redirection, `dd of=`, or a writing command's target under `/dev/` other than `null`, `zero`, `full`, `random`, `urandom`, `stdin`, `stdout`, `stderr`, `tty`, `fd/*`, `shm/*`, `pts/*` | [`DEVICE`] |
//! | writing efr's config root (`config.toml`), by patch, redirection or a writing command, or deleting a folder that holds it | [`CONFIG`] |
//! | writing efr's data or runtime roots (the event store, the socket), the same ways | [`OWN_FILES`] |
//! | any mention of a path in efr's state root, where the provider keys are, even by a read-only command | [`STATE`] |
//!
//! Floors refuse in every mode: a call that hits one never runs and never asks (tool_call_completed carries the
//! refusal). The guarded delete is not a floor but a question: in full mode, a recursive delete whose target is
//! outside every project root, or that efr cannot place (`rm -rf "$d"`, a relative path after `cd "$x"`), asks with
//! [`GUARDED_DELETE_SECS`] to answer, as the spec's `expires_in_secs` entry describes ("such as 120 for a delete that
//! full mode guards"). Other modes ask before such a line anyway, or contain it.
//!
//! The floors read what the parser can read: a line efr cannot parse is checked on the commands tree-sitter
//! recovered, and a command built at run time (`eval "$x"`, `bash -c "$x"`) is not seen. They are a seat belt for
//! honest mistakes, not a sandbox; auto mode's sandbox is the boundary against a hostile line.

use std::path::{Path, PathBuf};

use super::paths::is_within;
use super::readonly::{Arg, parse_args_with_words};
use super::shell::{Cwd, Word};

/// The refusal for a delete of a system or home folder.
pub const SYSTEM_DELETE: &str = "deletes a system or home folder (floor)";
/// The refusal for formatting a disk.
pub const FORMAT: &str = "formats a disk (floor)";
/// The refusal for writing a raw device.
pub const DEVICE: &str = "writes a raw device (floor)";
/// The refusal for writing efr's config root.
pub const CONFIG: &str = "efr's config (floor)";
/// The refusal for writing efr's data or runtime roots.
pub const OWN_FILES: &str = "efr's own files (floor)";
/// The refusal for any use of efr's state root.
pub const STATE: &str = "efr's keys and state (floor)";
/// Seconds full mode gives the user to answer a guarded delete (spec: "such as 120 for a delete that full mode
/// guards").
pub const GUARDED_DELETE_SECS: u32 = 120;

/// The folder of the state root that holds the conversations' `$SCRATCH` folders.
pub const SCRATCH_FOLDER: &str = "scratch";

/// efr's own roots (docs/architecture.md, "Configuration and roots"), for the floors. A root that is `None` is not
/// guarded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EfrDirs {
    /// The config root (`config.toml`).
    pub config: Option<PathBuf>,
    /// The data root (the event store).
    pub data: Option<PathBuf>,
    /// The state root (provider keys, mode 0600).
    pub state: Option<PathBuf>,
    /// The runtime root (the socket, the lock).
    pub runtime: Option<PathBuf>,
    /// The conversations' `$SCRATCH` folders (`$state/scratch`): inside the state root, yet the calls' own, so no
    /// floor covers them.
    pub scratch: Option<PathBuf>,
}

impl EfrDirs {
    fn in_scratch(&self, path: &Path) -> bool {
        self.scratch.as_deref().is_some_and(|scratch| is_within(path, scratch))
    }

    fn each(&self) -> [(Option<&Path>, &'static str); 4] {
        [
            (self.state.as_deref(), STATE),
            (self.config.as_deref(), CONFIG),
            (self.data.as_deref(), OWN_FILES),
            (self.runtime.as_deref(), OWN_FILES),
        ]
    }

    /// The refusal for writing `path`: inside one of the roots, or, for a recursive delete, also an ancestor of one.
    #[must_use]
    pub fn write_refusal(&self, path: &Path, recursive_delete: bool) -> Option<&'static str> {
        if self.in_scratch(path) {
            return None;
        }
        self.each().into_iter().find_map(|(root, refusal)| {
            let root = root?;
            (is_within(path, root) || (recursive_delete && is_within(root, path))).then_some(refusal)
        })
    }

    /// Whether `path` is efr's state root or a folder above it, so that reading everything below it (a recursive
    /// `grep`, a glob that goes on past it) reads efr's keys and state too.
    #[must_use]
    pub fn above_state(&self, path: &Path) -> bool {
        self.state.as_deref().is_some_and(|state| is_within(state, path))
    }

    /// The refusal for naming `path` at all: inside the state root.
    #[must_use]
    pub fn read_refusal(&self, path: &Path) -> Option<&'static str> {
        if self.in_scratch(path) {
            return None;
        }
        self.state
            .as_deref()
            .filter(|state| is_within(path, state))
            .map(|_| STATE)
    }
}

/// Where a word points, as far as efr can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// One of these absolute paths (several when the directory is one of several). A glob is placed at the folder it
    /// expands in (`build/*` at `build`, `/*` at `/`).
    At(Vec<PathBuf>),
    /// A word that expands, or a relative path in a directory the walk cannot know.
    Unknown,
}

/// Places a word as a path, with `cwd` for a relative one and `home` for `~` and `$HOME`.
#[must_use]
pub fn place(word: &Word, cwd: &Cwd, home: Option<&Path>) -> Place {
    let (text, glob) = match (&word.home_relative, home) {
        (Some(rest), Some(home)) => (format!("{}{rest}", home.display()), word.glob),
        (Some(_), None) => return Place::Unknown,
        (None, _) => match &word.value {
            // `~-`, `~+`, `~user`: a folder bash knows and efr does not.
            Some(value) if value.starts_with('~') => return Place::Unknown,
            Some(value) => (value.clone(), word.glob),
            None => return Place::Unknown,
        },
    };
    let text = if glob {
        let stem = text.find(['*', '?', '[', '{']).map_or(text.as_str(), |i| &text[..i]);
        match stem.rfind('/') {
            Some(0) => "/".to_owned(),
            Some(i) => stem[..i].to_owned(),
            None => ".".to_owned(),
        }
    } else if text.is_empty() {
        return Place::Unknown;
    } else {
        text
    };
    cwd.place(&text).map_or(Place::Unknown, Place::At)
}

/// What a command writes and deletes, by its operands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Targets {
    /// Paths it writes, creates, changes or removes.
    pub writes: Vec<Word>,
    /// Paths it deletes with everything below them (`rm -r`, the start folders of `find -delete`).
    pub deletes_tree: Vec<Word>,
    /// `rm --no-preserve-root`.
    pub no_preserve_root: bool,
}

/// The targets of the writing commands efr knows: `rm`, `rmdir`, `unlink`, `touch`, `mkdir`, `truncate`, `shred`,
/// `chmod`, `chown`, `chgrp`, `tee`, `mv`, `cp`, `ln`, `install`, `dd of=`, `sed -i`, `find … -delete`. Other commands have
/// none (which does not make them read-only).
#[must_use]
pub fn targets(name: &str, args: &[Word]) -> Targets {
    let mut out = Targets::default();
    // Short options that take a value, per command, so the value is not read as an operand.
    let valued = match name {
        "touch" => "dtr",
        "mkdir" => "m",
        "install" => "mogtS",
        "cp" | "mv" | "ln" => "tS",
        "truncate" => "sr",
        "shred" => "ns",
        "sed" => "efl",
        _ => "",
    };
    let parsed = parse_args_with_words(args);
    let mut operands: Vec<Word> = Vec::new();
    let mut target_dir: Option<Word> = None;
    let mut recursive = false;
    let mut in_place = false;
    let mut script_option = false;
    let mut skip_next = false;
    for (arg, word) in parsed {
        if skip_next {
            skip_next = false;
            if matches!(name, "cp" | "mv" | "ln" | "install") && target_dir.is_none() {
                target_dir = Some(word.clone());
            }
            continue;
        }
        match arg {
            Arg::Short(letters) => {
                recursive |= letters.contains(['r', 'R']);
                in_place |= letters.contains('i');
                script_option |= letters.contains(['e', 'f']);
                if let Some(last) = letters.chars().last()
                    && valued.contains(last)
                {
                    skip_next = true;
                }
            }
            Arg::Long(opt) => {
                recursive |= opt == "--recursive";
                in_place |= opt.starts_with("--in-place");
                script_option |= opt.starts_with("--expression") || opt.starts_with("--file");
                out.no_preserve_root |= opt == "--no-preserve-root";
                if let Some(dir) = opt.strip_prefix("--target-directory=") {
                    target_dir = Some(Word::literal(dir));
                }
            }
            Arg::Positional(_) | Arg::LeadingGlob(_) | Arg::Dynamic | Arg::DynamicOperand => {
                operands.push(word.clone());
            }
        }
    }
    match name {
        "rm" => {
            if recursive {
                out.deletes_tree.clone_from(&operands);
            }
            out.writes = operands;
        }
        "rmdir" | "unlink" | "touch" | "mkdir" | "truncate" | "shred" | "tee" | "mv" => out.writes = operands,
        "chmod" | "chown" | "chgrp" => out.writes = operands.into_iter().skip(1).collect(),
        "cp" | "ln" | "install" => out.writes = target_dir.or_else(|| operands.pop()).into_iter().collect(),
        "sed" if in_place => out.writes = operands.into_iter().skip(usize::from(!script_option)).collect(),
        "dd" => {
            out.writes = args
                .iter()
                .filter_map(|w| w.value.as_deref()?.strip_prefix("of="))
                .map(Word::literal)
                .collect();
        }
        "find" if args.iter().any(|w| w.value.as_deref() == Some("-delete")) => {
            let starts: Vec<Word> = args
                .iter()
                .take_while(|w| {
                    !w.value
                        .as_deref()
                        .is_some_and(|v| v.starts_with('-') || v == "(" || v == "!")
                })
                .cloned()
                .collect();
            out.deletes_tree = if starts.is_empty() {
                vec![Word::literal(".")]
            } else {
                starts
            };
            out.writes.clone_from(&out.deletes_tree);
        }
        _ => {}
    }
    out
}

/// Whether a command formats a disk.
#[must_use]
pub fn formats_disk(name: &str) -> bool {
    name.starts_with("mkfs") || matches!(name, "mke2fs" | "mkswap" | "wipefs" | "blkdiscard")
}

/// Whether writing `path` writes a raw device.
#[must_use]
pub fn raw_device(path: &Path) -> bool {
    let Ok(rest) = path.strip_prefix("/dev") else {
        return false;
    };
    let rest = rest.to_string_lossy();
    if rest.is_empty() {
        return false;
    }
    let harmless = [
        "null", "zero", "full", "random", "urandom", "stdin", "stdout", "stderr", "tty",
    ];
    !(harmless.contains(&rest.as_ref()) || ["fd/", "shm/", "pts/"].iter().any(|p| rest.starts_with(p)))
}

/// Whether a recursive delete of `path` would take a system or home folder: `/`, a folder right under `/`, or the
/// home folder or one of its ancestors.
#[must_use]
pub fn system_folder(path: &Path, home: Option<&Path>) -> bool {
    path.parent().is_none_or(|p| p == Path::new("/")) || home.is_some_and(|home| is_within(home, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    fn values(words: &[Word]) -> Vec<&str> {
        words.iter().filter_map(|w| w.value.as_deref()).collect()
    }

    #[test]
    fn targets_of_writing_commands() {
        let t = targets("rm", &w("-rf build dist"));
        assert_eq!(values(&t.deletes_tree), ["build", "dist"]);
        assert_eq!(values(&targets("rm", &w("-f a")).deletes_tree), Vec::<&str>::new());
        assert_eq!(values(&targets("cp", &w("-r a b dest")).writes), ["dest"]);
        assert_eq!(values(&targets("cp", &w("-t dest a b")).writes), ["dest"]);
        assert_eq!(values(&targets("touch", &w("-d yesterday f")).writes), ["f"]);
        assert_eq!(values(&targets("chmod", &w("-R 755 dir")).writes), ["dir"]);
        assert_eq!(
            values(&targets("dd", &w("if=x of=/dev/sda bs=1M")).writes),
            ["/dev/sda"]
        );
        assert_eq!(
            values(&targets("find", &w("/tmp/x -name y -delete")).deletes_tree),
            ["/tmp/x"]
        );
        assert_eq!(values(&targets("find", &w("-delete")).deletes_tree), ["."]);
        assert!(targets("rm", &w("--no-preserve-root -r /")).no_preserve_root);
        assert_eq!(values(&targets("sed", &w("-i s/a/b/ f g")).writes), ["f", "g"]);
        assert_eq!(values(&targets("sed", &w("-i -e s/a/b/ f")).writes), ["f"]);
        assert_eq!(values(&targets("sed", &w("s/a/b/ f")).writes), Vec::<&str>::new());
    }

    #[test]
    fn placing_words() {
        let cwd = Cwd::at(Path::new("/p"));
        let home = Some(Path::new("/home/u"));
        let glob = |s: &str| Word {
            glob: true,
            ..Word::literal(s)
        };
        assert_eq!(
            place(&Word::literal("a/../b"), &cwd, home),
            Place::At(vec!["/p/b".into()])
        );
        assert_eq!(place(&glob("/*"), &cwd, home), Place::At(vec!["/".into()]));
        assert_eq!(place(&glob("*.o"), &cwd, home), Place::At(vec!["/p".into()]));
        let tilde = Word {
            home_relative: Some("/x".into()),
            ..Word::literal("~/x")
        };
        assert_eq!(place(&tilde, &cwd, home), Place::At(vec!["/home/u/x".into()]));
        assert_eq!(
            place(
                &Word {
                    value: None,
                    ..Word::default()
                },
                &cwd,
                home
            ),
            Place::Unknown
        );
        assert_eq!(place(&Word::literal("x"), &Cwd::Unknown, home), Place::Unknown);
    }

    #[test]
    fn system_folders_devices_and_efr_dirs() {
        let home = Some(Path::new("/home/u"));
        assert!(system_folder(Path::new("/"), home));
        assert!(system_folder(Path::new("/usr"), home));
        assert!(system_folder(Path::new("/home"), home));
        assert!(system_folder(Path::new("/home/u"), home));
        assert!(!system_folder(Path::new("/home/u/proj"), home));
        assert!(raw_device(Path::new("/dev/sda")));
        assert!(!raw_device(Path::new("/dev/null")));
        assert!(!raw_device(Path::new("/dev/fd/3")));
        let dirs = EfrDirs {
            config: Some("/home/u/.config/efr".into()),
            state: Some("/home/u/.local/state/efr".into()),
            ..EfrDirs::default()
        };
        assert_eq!(
            dirs.write_refusal(Path::new("/home/u/.config/efr/config.toml"), false),
            Some(CONFIG)
        );
        assert_eq!(dirs.write_refusal(Path::new("/home/u/.config"), false), None);
        assert_eq!(dirs.write_refusal(Path::new("/home/u/.config"), true), Some(CONFIG));
        assert_eq!(
            dirs.read_refusal(Path::new("/home/u/.local/state/efr/keys/openai")),
            Some(STATE)
        );
    }
}
