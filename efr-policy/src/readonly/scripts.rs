//! `sed` and `awk`: read-only only when their scripts cannot write files or run programs.
//!
//! A sed script is read ahead command by command (GNU syntax): `w`, `W` and `e`, and the `w` and `e` flags of `s`,
//! write files or run commands; any command this reader does not know counts as unsafe. An awk program is judged by
//! its text, conservatively: `system`, `|`, `>`, `getline` and `@` (gawk's `@load`, `@include` and indirect calls)
//! make it not read-only, even where `>` only compares (`awk '$3 > 1'` asks). `gawk --sandbox`, which turns off
//! `system`, redirections and pipes, is read-only whatever its program.

use super::{Arg, Verdict, long_matches, parse_args, unreadable};
use crate::shell::Word;

/// `sed [options] [script] [file…]`.
pub(super) fn sed(args: &[Word]) -> Verdict {
    let parsed = parse_args(args);
    let mut scripts: Vec<&str> = Vec::new();
    let mut operands: Vec<&str> = Vec::new();
    let mut iter = parsed.iter();
    while let Some(arg) = iter.next() {
        match *arg {
            Arg::Long(opt) => {
                if long_matches(opt, "--in-place") {
                    return not("`sed --in-place`, which changes files");
                }
                if long_matches(opt, "--file") {
                    return not("`sed --file`, whose script efr cannot see");
                }
                if long_matches(opt, "--expression") {
                    match opt.split_once('=') {
                        Some((_, script)) => scripts.push(script),
                        None => match iter.next() {
                            Some(Arg::Positional(s) | Arg::Long(s) | Arg::Short(s) | Arg::LeadingGlob(s)) => {
                                scripts.push(s);
                            }
                            _ => return unreadable("sed"),
                        },
                    }
                } else if long_matches(opt, "--line-length") {
                    // It takes a value: `--line-length 1 'e cmd'` has the script second.
                    if !opt.contains('=') && iter.next().is_none() {
                        return unreadable("sed");
                    }
                } else if !SED_LONG.iter().any(|known| long_matches(opt, known)) {
                    return not(&format!("`sed {opt}`, an option efr does not know"));
                }
            }
            Arg::Short(letters) => {
                for (i, c) in letters.char_indices() {
                    match c {
                        'n' | 'E' | 'r' | 's' | 'z' | 'u' | 'b' => {}
                        'i' => return not("`sed -i`, which changes files"),
                        'f' => return not("`sed -f`, whose script efr cannot see"),
                        'e' | 'l' => {
                            let rest = &letters[i + c.len_utf8()..];
                            let value = if rest.is_empty() {
                                match iter.next() {
                                    Some(Arg::Positional(s) | Arg::Long(s) | Arg::Short(s) | Arg::LeadingGlob(s)) => *s,
                                    _ => return unreadable("sed"),
                                }
                            } else {
                                rest
                            };
                            if c == 'e' {
                                scripts.push(value);
                            }
                            break;
                        }
                        other => return not(&format!("`sed -{other}`, an option efr does not know")),
                    }
                }
            }
            Arg::Positional(value) => operands.push(value),
            Arg::Dynamic | Arg::LeadingGlob(_) => return unreadable("sed"),
            Arg::DynamicOperand => operands.push(""),
        }
    }
    if scripts.is_empty() {
        if operands.is_empty() {
            return unreadable("sed");
        }
        scripts.push(operands.remove(0));
    }
    for script in scripts {
        if let Err(command) = sed_script(script) {
            return not(&format!(
                "`sed` with a `{command}` command, which writes a file, runs a program or reads a file efr does not place"
            ));
        }
    }
    Verdict::ReadOnly
}

const SED_LONG: &[&str] = &[
    "--quiet",
    "--silent",
    "--regexp-extended",
    "--separate",
    "--null-data",
    "--unbuffered",
    "--line-length",
    "--posix",
    "--debug",
    "--sandbox",
    "--binary",
    "--follow-symlinks",
    "--help",
    "--version",
];

fn not(text: &str) -> Verdict {
    Verdict::NotReadOnly(text.to_owned())
}

/// Reads a sed script ahead. `Err` names the first command that writes, runs a program, or is not known.
fn sed_script(script: &str) -> Result<(), String> {
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied();
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == ';' || c == '{' || c == '}' || c == '!' {
            i += 1;
            continue;
        }
        if c == '#' {
            i = skip_line(&chars, i);
            continue;
        }
        // An address: numbers, `$`, `first~step`, `+N`, `/re/` or `\cREc`, then flags `I`/`M`, and `,`.
        if c.is_ascii_digit() || matches!(c, '$' | '~' | '+' | ',') {
            i += 1;
            continue;
        }
        if c == '/' || c == '\\' {
            let delim = if c == '\\' {
                i += 1;
                at(i).ok_or("\\")?
            } else {
                '/'
            };
            i = skip_delimited(&chars, i + 1, delim, true);
            while matches!(at(i), Some('I' | 'M')) {
                i += 1;
            }
            continue;
        }
        i += 1;
        match c {
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' | 'l' | 'q' | 'Q' => {
                while at(i).is_some_and(|d| d.is_ascii_digit() || d == ' ') {
                    i += 1;
                }
            }
            // A label (or `v`'s version) ends at whitespace as well as at `;` (GNU sed 4.9: `:a e cmd` is the label
            // `a`, then `e cmd`), so what follows is read as commands.
            'b' | 't' | 'T' | ':' | 'v' => {
                while at(i).is_some_and(|d| d == ' ' || d == '\t') {
                    i += 1;
                }
                while at(i).is_some_and(|d| d != ';' && !d.is_whitespace()) {
                    i += 1;
                }
            }
            // Text to the end of the line.
            'a' | 'i' | 'c' => i = skip_line(&chars, i),
            // A file named inside the script, which the floors (efr's state root) do not see.
            'r' | 'R' => return Err(c.to_string()),
            's' => {
                let delim = at(i).ok_or("s")?;
                i = skip_delimited(&chars, i + 1, delim, true);
                i = skip_delimited(&chars, i, delim, false);
                while let Some(flag) = at(i) {
                    match flag {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' => i += 1,
                        d if d.is_ascii_digit() => i += 1,
                        'w' | 'e' => return Err(format!("s///{flag}")),
                        ';' | '\n' | '}' | ' ' | '\t' => break,
                        other => return Err(format!("s///{other}")),
                    }
                }
            }
            'y' => {
                let delim = at(i).ok_or("y")?;
                i = skip_delimited(&chars, i + 1, delim, false);
                i = skip_delimited(&chars, i, delim, false);
            }
            other => return Err(other.to_string()),
        }
    }
    Ok(())
}

/// The index after the next unescaped `delim` from `i` (or the end). In a regular expression (`regex`), GNU sed
/// does not end it at a delimiter inside a bracket expression (`/[/]/` is one address): see [`skip_bracket`].
fn skip_delimited(chars: &[char], mut i: usize, delim: char, regex: bool) -> usize {
    while let Some(&c) = chars.get(i) {
        i += 1;
        if c == '\\' {
            i += 1;
        } else if c == delim {
            break;
        } else if c == '[' && regex {
            i = skip_bracket(chars, i);
        }
    }
    i.min(chars.len())
}

/// The index after a bracket expression whose `[` is just before `i`: it runs to the first `]` after its first
/// character (`[]x]`, `[^]x]`) and holds `[:class:]`, `[.c.]` and `[=c=]` whole.
fn skip_bracket(chars: &[char], mut i: usize) -> usize {
    if chars.get(i) == Some(&'^') {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    while let Some(&d) = chars.get(i) {
        i += 1;
        if d == '[' && matches!(chars.get(i), Some(':' | '.' | '=')) {
            let kind = chars[i];
            i += 1;
            while i < chars.len() && !(chars[i] == kind && chars.get(i + 1) == Some(&']')) {
                i += 1;
            }
            i += 2;
        } else if d == ']' {
            break;
        }
    }
    i
}

/// The index after the end of the line at `i`, following backslash-newline continuations.
fn skip_line(chars: &[char], mut i: usize) -> usize {
    while let Some(&c) = chars.get(i) {
        i += 1;
        if c == '\\' {
            i += 1;
        } else if c == '\n' {
            break;
        }
    }
    i
}

/// An option's value: the next word, whatever it looks like.
fn value<'a>(arg: Option<&Arg<'a>>) -> Option<&'a str> {
    match arg {
        Some(Arg::Positional(v) | Arg::Long(v) | Arg::Short(v) | Arg::LeadingGlob(v)) => Some(*v),
        _ => None,
    }
}

/// `awk [options] 'program' [file…]`, read strictly: the options are those every awk shares, and gawk's long forms
/// of them, each in full (`-F fs`, `-v a=b`, `-e`/`--source` programs, every one of which is read), and no other:
/// `-f`/`--file`, `-i`, `-l`, `-E`, `-W` and `--exec` run programs efr cannot see, gawk's `-d`, `-o`, `-p` write
/// files, and an unknown option may be one of these in another awk. `--sandbox` is not trusted: BWK awk ignores
/// options it does not know, so its `system()` would still run.
pub(super) fn awk(name: &str, args: &[Word]) -> Verdict {
    let parsed = parse_args(args);
    let mut programs: Vec<&str> = Vec::new();
    let mut iter = parsed.iter();
    while let Some(arg) = iter.next() {
        match *arg {
            Arg::Long(opt) => {
                let (option, attached) = match opt.split_once('=') {
                    Some((option, text)) => (option, Some(text)),
                    None => (opt, None),
                };
                match option {
                    "--field-separator" | "--assign" => {
                        if attached.is_none() && value(iter.next()).is_none() {
                            return unreadable(name);
                        }
                    }
                    "--source" => match attached.or_else(|| value(iter.next())) {
                        Some(text) => programs.push(text),
                        None => return unreadable(name),
                    },
                    "--posix" | "--traditional" | "--characters-as-bytes" | "--re-interval" => {}
                    _ => {
                        return Verdict::NotReadOnly(format!(
                            "`{name} {}`, an option that may run a program or write a file",
                            super::opt_name(opt)
                        ));
                    }
                }
            }
            Arg::Short(letters) => {
                for (i, c) in letters.char_indices() {
                    let rest = &letters[i + c.len_utf8()..];
                    match c {
                        'F' | 'v' | 'e' => {
                            let text = if rest.is_empty() {
                                value(iter.next())
                            } else {
                                Some(rest)
                            };
                            let Some(text) = text else { return unreadable(name) };
                            if c == 'e' {
                                programs.push(text);
                            }
                            break;
                        }
                        'b' | 'c' | 'P' | 'r' | 'S' => {}
                        other => {
                            return Verdict::NotReadOnly(format!(
                                "`{name} -{other}`, an option that may run a program or write a file"
                            ));
                        }
                    }
                }
            }
            Arg::Positional(text) => {
                if programs.is_empty() {
                    programs.push(text);
                }
                // The rest are files (and `a=b` assignments, which only set awk's variables).
                break;
            }
            Arg::Dynamic | Arg::LeadingGlob(_) => return unreadable(name),
            Arg::DynamicOperand => {}
        }
    }
    if programs.is_empty() {
        return unreadable(name);
    }
    for program in programs {
        for token in ["system", "|", ">", "getline", "@"] {
            if program.contains(token) {
                return Verdict::NotReadOnly(format!(
                    "`{name}` with `{token}` in its program, which may write a file or run a program"
                ));
            }
        }
    }
    Verdict::ReadOnly
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: fn(&[Word]) -> Verdict, line: &str) -> Verdict {
        let words: Vec<Word> = line.split(' ').map(Word::literal).collect();
        f(&words)
    }

    #[test]
    fn sed_scripts_that_only_print_are_read_only() {
        for script in [
            "s/a/b/g",
            "-n 1,5p",
            "-e s/x/y/ -e /re/d",
            "$!N;P;D",
            "/a/,/b/{s|x|y|2;p}",
            "y/abc/xyz/",
            "1~2d",
            "-E s/(a|b)/c/I",
        ] {
            assert_eq!(run(sed, script), Verdict::ReadOnly, "{script}");
        }
    }

    #[test]
    fn sed_scripts_that_write_or_run_are_not() {
        for script in [
            "w out",
            "s/a/b/w out",
            "1e date",
            "s/a/b/e",
            "-i s/a/b/ f",
            "-i.bak s/a/b/ f",
            "--in-place s/a/b/ f",
            "-f script.sed f",
            "-n /x/W out",
            "s/a/b/gw out",
        ] {
            assert!(matches!(run(sed, script), Verdict::NotReadOnly(_)), "{script}");
        }
    }

    #[test]
    fn a_label_ends_at_whitespace_as_gnu_sed_reads_it() {
        for script in [":a;s/x/y/;ta", ": a;s/x/z/", ":a\nN;ba", "v 4.2;p", "b end;p;:end"] {
            assert_eq!(sed_script(script), Ok(()), "{script}");
        }
        // A delimiter inside a bracket expression does not end the regular expression.
        assert_eq!(sed_script("s/[^/]*$//"), Ok(()));
        assert_eq!(sed_script("/[[:space:]/]/p"), Ok(()));
        for script in [
            ":a e touch M",
            "v 4 e touch M",
            ":a;t a e touch M",
            "b x w out",
            "/[/a]/e touch M",
            "s/[/]/ r x;touch M/e",
            "s/[]/]/x/w out",
        ] {
            assert!(sed_script(script).is_err(), "{script}");
        }
    }

    #[test]
    fn sed_line_length_takes_its_value() {
        let words = |parts: &[&str]| parts.iter().map(|p| Word::literal(p)).collect::<Vec<_>>();
        assert!(matches!(
            sed(&words(&["--line-length", "1", "1e touch M", "f"])),
            Verdict::NotReadOnly(_)
        ));
        assert!(matches!(
            sed(&words(&["--l", "1", "1e touch M", "f"])),
            Verdict::NotReadOnly(_)
        ));
        assert_eq!(sed(&words(&["--line-length=1", "p", "f"])), Verdict::ReadOnly);
    }

    #[test]
    fn sed_without_a_script_or_with_an_unknown_option_is_not() {
        assert!(matches!(run(sed, "-Q x"), Verdict::NotReadOnly(t) if t.contains("does not know")));
        assert!(matches!(sed(&[]), Verdict::NotReadOnly(_)));
    }

    fn awk_run(line: &str) -> Verdict {
        let words: Vec<Word> = line.split(' ').map(Word::literal).collect();
        awk("awk", &words)
    }

    #[test]
    fn awk_is_conservative() {
        assert_eq!(awk_run("-F: {print$1} /etc/passwd"), Verdict::ReadOnly);
        assert_eq!(awk_run("-v x=1 {print}"), Verdict::ReadOnly);
        assert!(matches!(awk_run("{system(\"rm\")}"), Verdict::NotReadOnly(t) if t.contains("system")));
        assert!(matches!(awk_run("{print>\"f\"}"), Verdict::NotReadOnly(_)));
        assert!(matches!(awk_run("-f prog.awk"), Verdict::NotReadOnly(_)));
        assert!(matches!(awk_run("-W exec prog.awk"), Verdict::NotReadOnly(_)));
        assert!(matches!(awk_run("-Wexec=prog.awk"), Verdict::NotReadOnly(_)));
        assert!(matches!(awk_run("--sandbox {print>\"f\"}"), Verdict::NotReadOnly(_)));
        assert!(matches!(
            awk_run("--sandbox BEGIN{system(\"x\")}"),
            Verdict::NotReadOnly(_)
        ));
        // Every program is read, and values are taken as values.
        assert!(matches!(
            awk_run("-e BEGIN{system(\"x\")} -e 1"),
            Verdict::NotReadOnly(_)
        ));
        assert!(matches!(
            awk_run("--field-separator x BEGIN{system(\"x\")}"),
            Verdict::NotReadOnly(_)
        ));
        assert!(matches!(awk_run("-bF x BEGIN{system(\"x\")}"), Verdict::NotReadOnly(_)));
        for line in [
            "-d out {print}",
            "-o {print}",
            "-p {print}",
            "--dump-variables {print}",
            "-Wexec=p",
        ] {
            assert!(matches!(awk_run(line), Verdict::NotReadOnly(_)), "{line}");
        }
        assert_eq!(awk_run("-F , -v n=1 {print$n} data.csv"), Verdict::ReadOnly);
        assert_eq!(awk_run("--field-separator=, {print$1} f"), Verdict::ReadOnly);
    }
}
