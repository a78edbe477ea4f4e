//! The read-only commands, and the network, privileged and interactive ones.
//!
//! [`classify`] answers for one command (its wrappers such as `sudo` or `env` already taken off by
//! [`super::analysis`]) whether it is read-only: it reads files and the system and changes nothing, so cautious mode
//! runs it without a question. [`kinds`] says whether a command uses the network, runs as another user, or may wait
//! for input at the terminal.
//!
//! # The read-only list
//!
//! Read-only with any arguments: `ls`, `cat`, `head`, `tail`, `wc`, `grep` (`egrep`, `fgrep`), `pwd`, `echo`,
//! `stat`, `which`, `type`, `du`, `df`, `uname`, `whoami`, `id`, `groups`, `cut`, `tr`, `jq`, `nl`, `diff`, `cmp`,
//! `realpath`, `readlink`, `dirname`, `basename`, `test`, `[`, `true`, `false`, `:`, `cd`, `pushd`, `popd`, `sleep`,
//! `seq`, `rev`, `tac`, `printenv`, `md5sum`, `sha1sum`, `sha256sum`, `sha512sum`, `b2sum`, `cksum`, `base64`,
//! `column`, `fold`, `paste`, `join`, `comm`, `expand`, `unexpand`, `whereis`, `locale`, `nproc`, `arch`, `uptime`,
//! `tty`. (`cd`, `pushd` and `popd` change the hidden shell's directory, which changes no file.)
//!
//! Read-only with some flags only:
//!
//! | command | not read-only with |
//! |---|---|
//! | `find` | `-exec`, `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint`, `-fprint0`, `-fprintf`, `-fls` |
//! | `sort` | `-o`, `--output`, `--compress-program` |
//! | `rg` | `--pre` (runs a program on each file) |
//! | `sed` | `-i`/`--in-place`, `-f` (a script efr cannot see), or a script with `w`, `W`, `e`, or an `s` flag `w`/`e` |
//! | `awk` (`gawk`, `mawk`, `nawk`) | `-f`, `-i`, `-l`, `-E`, or a program with `system`, `\|`, `>`, `getline`, `@` (conservative: `awk '$3 > 1'` asks) |
//! | `git` | see [`git`]: `status`, `log`, `diff`, `show`, `blame`, `rev-parse`, `ls-files`, `describe`, `show-ref`, `grep` (no `-O`), `branch` (listing only), `tag` (listing only), `remote` (`-v` only), `config` (`--get`, `--list`); never `-c` or `--output` |
//! | `printf` | `-v` (sets a shell variable) |
//! | `date` | `-s`, `--set` |
//! | `uniq` | a second file name (the output file) |
//! | `tree` | `-o` |
//! | `file` | `-C`, `--compile` |
//! | `env` | a command: that command is checked instead (see [`super::analysis`]) |
//!
//! A long option counts by its unique prefix too, as getopt reads it (`sort --out=f` is `--output`). For the
//! commands whose options can write or run programs (`find`, `sort`, `rg`, `sed`, `awk`, `git`, `tree`, `file`,
//! `date`), an argument efr cannot read ahead (one that expands, or starts with an unquoted glob, such as `*` that a
//! file named `--pre=sh` would turn into an option) is not read-only unless it follows `--`.
//!
//! Not read-only although they only read: `less`, `more`, `most` and `man` wait for keys at the terminal (and `less`
//! can run commands), so cautious asks before them.
//!
//! The config may name more commands (`extra_read_only`); each is read-only with any arguments.

pub mod git;
pub mod kinds;
mod scripts;

use super::shell::Word;

/// Whether one command is read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It changes nothing.
    ReadOnly,
    /// It is not read-only; the text completes "cautious asks before …", such as "`sort -o`, which writes a file".
    NotReadOnly(String),
}

/// Commands read-only with any arguments.
const PLAIN: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "pwd",
    "echo",
    "stat",
    "which",
    "type",
    "du",
    "df",
    "uname",
    "whoami",
    "id",
    "groups",
    "cut",
    "tr",
    "jq",
    "nl",
    "diff",
    "cmp",
    "realpath",
    "readlink",
    "dirname",
    "basename",
    "test",
    "[",
    "true",
    "false",
    ":",
    "cd",
    "pushd",
    "popd",
    "sleep",
    "seq",
    "rev",
    "tac",
    "printenv",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "base64",
    "column",
    "fold",
    "paste",
    "join",
    "comm",
    "expand",
    "unexpand",
    "whereis",
    "locale",
    "nproc",
    "arch",
    "uptime",
    "tty",
];

/// Pagers: they only read, but wait for keys.
const PAGERS: &[&str] = &["less", "more", "most", "man"];

/// Options that make an otherwise read-only command not read-only.
struct Rules {
    /// Long options (matched with their `=value` form and by unique prefix).
    long: &'static [&'static str],
    /// Short option letters, anywhere in a cluster such as `-uo`.
    short: &'static str,
    /// What the denied options do, after "which".
    does: &'static str,
    /// The command's options can write or run programs, so an argument efr cannot read ahead is not read-only.
    strict: bool,
}

fn rules(name: &str) -> Option<Rules> {
    let r = |long, short, does, strict| {
        Some(Rules {
            long,
            short,
            does,
            strict,
        })
    };
    match name {
        "sort" => r(
            &["--output", "--compress-program"],
            "o",
            "writes a file or runs a program",
            true,
        ),
        "rg" => r(&["--pre", "--hostname-bin"], "", "runs a program", true),
        "date" => r(&["--set"], "s", "sets the clock", true),
        // `-R` runs tree again with `-o 00Tree.html` in each folder.
        "tree" => r(&[], "oR", "writes a file", true),
        "file" => r(&["--compile"], "C", "writes a file", true),
        _ => None,
    }
}

/// Whether `name args…` is read-only. `name` is the program's name (a path already reduced to its file name);
/// `extra` is the config's `extra_read_only`.
#[must_use]
pub fn classify(name: &str, args: &[Word], extra: &[String]) -> Verdict {
    // `test -v 'a[$(…)]'` evaluates the subscript, which runs the substitution even inside single quotes, and
    // `test -v "$_"` a name from the last command's words.
    if matches!(name, "test" | "[") {
        let evaluated = args.iter().any(|a| {
            let text = a.value.as_deref().unwrap_or(&a.source);
            text.contains('[') && crate::shell::hides_substitution(text)
        });
        let plain_v = args.windows(2).all(|pair| {
            pair[0].value.as_deref() != Some("-v") || pair[1].value.as_deref().is_some_and(crate::shell::plain_name)
        });
        // A word that expands or holds a glob may become `-v` (`echo -v; test $_ …`, a file named `-v`).
        let hidden = args.iter().any(|a| a.value.is_none() || a.glob);
        if evaluated || !plain_v || hidden {
            return Verdict::NotReadOnly(format!("`{name} -v` with a name bash evaluates"));
        }
    }
    if PLAIN.contains(&name) || extra.iter().any(|e| e == name) {
        return Verdict::ReadOnly;
    }
    if PAGERS.contains(&name) {
        return Verdict::NotReadOnly(format!("`{name}`, which waits for keys at the terminal"));
    }
    match name {
        "find" => return find(args),
        "sed" => return scripts::sed(args),
        "awk" | "gawk" | "mawk" | "nawk" => return scripts::awk(name, args),
        "git" => return git::classify(args),
        "printf" => return printf(args),
        "uniq" => {
            // Its second operand is the output file: only static, plain words can be counted.
            let parsed = parse_args_with_words(args);
            if parsed
                .iter()
                .any(|(arg, word)| word.glob || matches!(arg, Arg::Dynamic | Arg::DynamicOperand | Arg::LeadingGlob(_)))
            {
                return unreadable("uniq");
            }
            // With POSIXLY_CORRECT (which a line may have exported) options end at the first operand, so every word
            // from there on counts, `-x/../../.bashrc` too.
            let first = parsed.iter().position(|(a, _)| matches!(a, Arg::Positional(_)));
            let files = first.map_or(0, |at| parsed.len() - at);
            return if files > 1 {
                Verdict::NotReadOnly("`uniq` with an output file".to_owned())
            } else {
                Verdict::ReadOnly
            };
        }
        _ => {}
    }
    let Some(rules) = rules(name) else {
        return Verdict::NotReadOnly(format!("`{name}`, which is not on its read-only list"));
    };
    for arg in parse_args(args) {
        match arg {
            Arg::Long(opt) if rules.long.iter().any(|denied| long_matches(opt, denied)) => {
                return Verdict::NotReadOnly(format!("`{name} {}`, which {}", opt_name(opt), rules.does));
            }
            Arg::Short(letters) => {
                if let Some(c) = letters.chars().find(|c| rules.short.contains(*c)) {
                    return Verdict::NotReadOnly(format!("`{name} -{c}`, which {}", rules.does));
                }
            }
            Arg::Dynamic | Arg::LeadingGlob(_) if rules.strict => return unreadable(name),
            _ => {}
        }
    }
    Verdict::ReadOnly
}

/// `find` is read-only without its predicates that run, delete or write.
fn find(args: &[Word]) -> Verdict {
    const DENIED: &[&str] = &[
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    for word in args {
        let Some(value) = word.value.as_deref() else {
            return unreadable("find");
        };
        if word.leading_glob || (word.glob && value.starts_with('-')) {
            return unreadable("find");
        }
        if DENIED.contains(&value) {
            let does = if value == "-delete" {
                "deletes files"
            } else if value.starts_with("-f") {
                "writes a file"
            } else {
                "runs a command"
            };
            return Verdict::NotReadOnly(format!("`find {value}`, which {does}"));
        }
    }
    Verdict::ReadOnly
}

/// `printf`: its options come before the format, and `-v` sets a shell variable. A word before the format that
/// expands or holds a glob (`$'-v'` is static, `{-v,x}` is not) may be `-v`.
///
/// zsh's `printf` evaluates the argument of a numeric conversion (`%d`, `%f`, a `*` width) as arithmetic, which
/// can run a command through a subscript: with such a conversion, every argument must be a plain number.
fn printf(args: &[Word]) -> Verdict {
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(value) = word.value.as_deref().filter(|_| !word.glob) else {
            return unreadable("printf");
        };
        if value == "--" {
            i += 1;
            break;
        }
        if !value.starts_with('-') || value == "-" {
            break;
        }
        if value.contains('v') {
            return Verdict::NotReadOnly("`printf -v`, which sets a shell variable".to_owned());
        }
        i += 1;
    }
    let Some(format) = args.get(i).and_then(|w| w.value.as_deref()) else {
        return Verdict::ReadOnly;
    };
    // What each argument is for, in order (the format is used again while arguments are left): `true` for a number.
    let mut numbers = Vec::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        if chars.next_if_eq(&'%').is_some() {
            continue;
        }
        for d in chars.by_ref() {
            if d == '*' {
                numbers.push(true);
            } else if d.is_ascii_alphabetic() {
                numbers.push("diouxXeEfFgGaA".contains(d));
                break;
            }
        }
    }
    let number = |v: &str| {
        let v = v.strip_prefix(['+', '-']).unwrap_or(v);
        !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')
    };
    let plain = args[i + 1..].iter().enumerate().all(|(j, w)| {
        let wants_number = !numbers.is_empty() && numbers[j % numbers.len()];
        !wants_number || w.value.as_deref().is_some_and(number)
    });
    if !plain {
        return Verdict::NotReadOnly("`printf` with a number that is not plain (zsh evaluates it)".to_owned());
    }
    Verdict::ReadOnly
}

fn unreadable(name: &str) -> Verdict {
    Verdict::NotReadOnly(format!("`{name}` with an argument efr cannot read ahead"))
}

/// One argument, as option checks see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arg<'a> {
    /// `--name` or `--name=value` (the whole text).
    Long(&'a str),
    /// The letters of `-abc`.
    Short(&'a str),
    /// A static operand, or any word after `--`.
    Positional(&'a str),
    /// A static word starting with an unquoted glob, before `--`: it may expand to an option.
    LeadingGlob(&'a str),
    /// A word that expands, before `--`: it may become an option.
    Dynamic,
    /// A word that expands after `--`.
    DynamicOperand,
}

/// Splits words into options and operands; everything after `--` is an operand.
pub(crate) fn parse_args(words: &[Word]) -> Vec<Arg<'_>> {
    parse_args_with_words(words).into_iter().map(|(arg, _)| arg).collect()
}

/// [`parse_args`], each with its word (the `--` that ends the options has none and is left out).
pub(crate) fn parse_args_with_words(words: &[Word]) -> Vec<(Arg<'_>, &Word)> {
    let mut out = Vec::with_capacity(words.len());
    let mut operands_only = false;
    for word in words {
        let Some(value) = word.value.as_deref() else {
            out.push((
                if operands_only {
                    Arg::DynamicOperand
                } else {
                    Arg::Dynamic
                },
                word,
            ));
            continue;
        };
        let arg = if operands_only {
            Arg::Positional(value)
        } else if value == "--" {
            operands_only = true;
            continue;
        } else if word.leading_glob || (word.glob && value.starts_with('-')) {
            // `{-v,x}`, or `-delet{e,e}` and `-delet?` (bash expands them into options efr never saw).
            Arg::LeadingGlob(value)
        } else if value.starts_with("--") {
            Arg::Long(value)
        } else if let Some(letters) = value.strip_prefix('-').filter(|l| !l.is_empty()) {
            Arg::Short(letters)
        } else {
            Arg::Positional(value)
        };
        out.push((arg, word));
    }
    out
}

/// Whether `--given[=v]` names `denied`, exactly or as the unique prefix getopt accepts (at least one letter).
pub(crate) fn long_matches(given: &str, denied: &str) -> bool {
    let name = opt_name(given);
    name.len() > 2 && denied.starts_with(name)
}

/// `--name` of `--name=value`.
pub(crate) fn opt_name(given: &str) -> &str {
    given.split_once('=').map_or(given, |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    fn verdict(line: &str) -> Verdict {
        let w = words(line);
        let name = w[0].value.clone().unwrap();
        classify(&name, &w[1..], &[])
    }

    #[test]
    fn plain_commands_are_read_only() {
        assert_eq!(verdict("ls -la /"), Verdict::ReadOnly);
        assert_eq!(verdict("grep -rn foo ."), Verdict::ReadOnly);
    }

    #[test]
    fn unknown_commands_and_pagers_are_not() {
        assert!(matches!(verdict("rm x"), Verdict::NotReadOnly(t) if t.contains("`rm`")));
        assert!(matches!(verdict("less f"), Verdict::NotReadOnly(t) if t.contains("keys")));
    }

    #[test]
    fn long_options_match_by_prefix_and_value() {
        assert!(matches!(verdict("sort --out=x f"), Verdict::NotReadOnly(t) if t.contains("--out")));
        assert!(matches!(verdict("sort --output x f"), Verdict::NotReadOnly(_)));
        assert!(matches!(verdict("sort -rno x f"), Verdict::NotReadOnly(t) if t.contains("-o")));
        assert_eq!(verdict("sort -rn f"), Verdict::ReadOnly);
        assert_eq!(verdict("rg --pretty x"), Verdict::ReadOnly);
        assert!(matches!(verdict("rg --pre=cat x"), Verdict::NotReadOnly(_)));
        assert!(matches!(verdict("rg --hostname-bin=./evil x"), Verdict::NotReadOnly(_)));
    }

    #[test]
    fn strict_commands_refuse_words_they_cannot_read_ahead() {
        let mut w = words("rg foo");
        w.push(Word {
            source: "*".into(),
            value: Some("*".into()),
            glob: true,
            leading_glob: true,
            ..Word::default()
        });
        assert!(matches!(classify("rg", &w[1..], &[]), Verdict::NotReadOnly(t) if t.contains("read ahead")));
        // After `--` a glob is only ever a file name.
        let mut w = words("rg foo --");
        w.push(Word {
            source: "*".into(),
            value: Some("*".into()),
            glob: true,
            leading_glob: true,
            ..Word::default()
        });
        assert_eq!(classify("rg", &w[1..], &[]), Verdict::ReadOnly);
    }

    #[test]
    fn find_predicates() {
        assert_eq!(verdict("find . -name x -print"), Verdict::ReadOnly);
        assert!(matches!(verdict("find . -delete"), Verdict::NotReadOnly(t) if t.contains("deletes")));
        assert!(matches!(verdict("find . -fprint f"), Verdict::NotReadOnly(t) if t.contains("writes")));
        assert!(matches!(verdict("find . -execdir ls ;"), Verdict::NotReadOnly(t) if t.contains("runs")));
    }

    #[test]
    fn uniq_with_an_output_file() {
        assert_eq!(verdict("uniq -c in"), Verdict::ReadOnly);
        assert!(matches!(verdict("uniq in out"), Verdict::NotReadOnly(_)));
    }

    #[test]
    fn extra_read_only_from_config() {
        let extra = vec!["mytool".to_owned()];
        assert_eq!(classify("mytool", &words("--anything"), &extra), Verdict::ReadOnly);
        assert!(matches!(classify("mytool", &[], &[]), Verdict::NotReadOnly(_)));
    }
}
