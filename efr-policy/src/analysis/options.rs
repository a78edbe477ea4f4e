//! A wrapper's options, read the way GNU getopt reads them, but strictly: a wrapper (`env`, `time`, `timeout`,
//! `nice`, `stdbuf`, `setsid`) runs the command after its options, so efr must know exactly where its options end
//! and what each one does. getopt also takes an abbreviated long option (`--u` for `--unset`), letters in a cluster
//! (`-iu NAME`) and a value attached to a short option (`-Cdir`, `-oL`); an option efr does not list, in any of
//! these forms, is an error, and the line is not read-only.

use super::super::shell::Word;

/// One option read: its name as listed (`-C`, `--chdir`) and its value, for an option that takes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// The name, as listed.
    pub name: &'static str,
    /// The value (static: an option whose value expands is an error).
    pub value: Option<String>,
}

/// The options a wrapper takes: `flags` take no value, `valued` take one.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Options without a value (`-i`, `--ignore-environment`).
    pub flags: &'static [&'static str],
    /// Options with a value (`-u`, `--unset`).
    pub valued: &'static [&'static str],
}

/// Reads the options at the start of `args`: the options read, and the index of the first operand (after `--`
/// when there is one). A word that is not static, a long option not listed exactly (no abbreviations), or a short
/// letter not listed is `Err` with the option as written.
///
/// # Errors
/// The option efr does not know, as written.
pub fn read(args: &[Word], spec: Spec) -> Result<(Vec<Opt>, usize), String> {
    let find = |list: &'static [&'static str], name: &str| list.iter().copied().find(|n| *n == name);
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let Some(value) = word.value.as_deref() else {
            return Err(word.source.clone());
        };
        if value == "--" {
            return Ok((out, i + 1));
        }
        if !value.starts_with('-') || value == "-" {
            break;
        }
        i += 1;
        if let Some(long) = value.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, rest)) => (format!("--{name}"), Some(rest.to_owned())),
                None => (value.to_owned(), None),
            };
            if let (Some(flag), None) = (find(spec.flags, &name), &attached) {
                out.push(Opt {
                    name: flag,
                    value: None,
                });
            } else if let Some(valued) = find(spec.valued, &name) {
                let value = match attached {
                    Some(value) => value,
                    None => next_value(args, &mut i).ok_or_else(|| value.to_owned())?,
                };
                out.push(Opt {
                    name: valued,
                    value: Some(value),
                });
            } else {
                return Err(value.to_owned());
            }
            continue;
        }
        let letters = &value[1..];
        for (at, letter) in letters.char_indices() {
            let name = format!("-{letter}");
            if let Some(flag) = find(spec.flags, &name) {
                out.push(Opt {
                    name: flag,
                    value: None,
                });
            } else if let Some(valued) = find(spec.valued, &name) {
                let rest = &letters[at + letter.len_utf8()..];
                let value = if rest.is_empty() {
                    next_value(args, &mut i).ok_or_else(|| value.to_owned())?
                } else {
                    rest.to_owned()
                };
                out.push(Opt {
                    name: valued,
                    value: Some(value),
                });
                break;
            } else {
                return Err(value.to_owned());
            }
        }
    }
    Ok((out, i))
}

/// The static value in the next word, moving past it.
fn next_value(args: &[Word], i: &mut usize) -> Option<String> {
    let value = args.get(*i)?.value.clone()?;
    *i += 1;
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: Spec = Spec {
        flags: &["-i", "--ignore-environment", "-0", "--null"],
        valued: &["-u", "--unset", "-C", "--chdir"],
    };

    fn w(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    fn names(opts: &[Opt]) -> Vec<(&str, Option<&str>)> {
        opts.iter().map(|o| (o.name, o.value.as_deref())).collect()
    }

    #[test]
    fn getopt_forms_are_read_as_getopt_reads_them() {
        let (opts, at) = read(&w("-i -u HOME --unset=X -Cdir --chdir sub ls -l"), ENV).unwrap();
        assert_eq!(
            names(&opts),
            vec![
                ("-i", None),
                ("-u", Some("HOME")),
                ("--unset", Some("X")),
                ("-C", Some("dir")),
                ("--chdir", Some("sub")),
            ]
        );
        assert_eq!(at, 7);
        // A cluster: flags, then a valued letter that takes the rest or the next word.
        let (opts, at) = read(&w("-iu NAME true"), ENV).unwrap();
        assert_eq!(names(&opts), vec![("-i", None), ("-u", Some("NAME"))]);
        assert_eq!(at, 2);
        let (opts, _) = read(&w("-0C ev git"), ENV).unwrap();
        assert_eq!(names(&opts), vec![("-0", None), ("-C", Some("ev"))]);
        assert_eq!(read(&w("-- -x"), ENV).unwrap().1, 1);
        assert_eq!(read(&w("ls"), ENV).unwrap().1, 0);
        assert_eq!(read(&w("- x"), ENV).unwrap().1, 0);
    }

    #[test]
    fn abbreviations_unknown_letters_and_missing_values_are_errors() {
        for line in [
            "--u true touch M",
            "--sp=x",
            "-S touch",
            "-v true",
            "--ch=ev git",
            "-u",
            "--ignore-environment=1",
        ] {
            assert!(read(&w(line), ENV).is_err(), "{line}");
        }
        let dynamic = vec![Word {
            value: None,
            ..Word::literal("$OPT")
        }];
        assert_eq!(read(&dynamic, ENV), Err("$OPT".to_owned()));
    }
}
