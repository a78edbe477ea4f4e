//! bash's arithmetic, as far as the policy trusts it. bash evaluates an arithmetic expression in `$(( ))`, `$[ ]`,
//! an indexed array's subscript, a substring's offset and length (`${x:off:len}`), the operands of `[[ x -eq y ]]`
//! and the name of `-v`; and it evaluates a variable's value as an expression in turn. So an expression can assign
//! a variable that stays set in the hidden shell (`$((PATH=0))`), and an array subscript can run a command, even
//! from a value (`$_` is the last word of the previous command: `echo 'a[$(cmd)]'; [[ _ -eq 0 ]]` runs `cmd`).
//!
//! Which variables an attacker fills is hard to bound (`$_`, and `BASH_REMATCH` after a `[[ x =~ y ]]`), so
//! [`plain`] accepts only what cannot do either: numbers, operators that compare or compute, parentheses, and the
//! special parameters that are always numbers (`$#`, `$?`, `$$`, `$!`) or lengths (`${#name}`). No variable.

/// Whether `expr` is plain arithmetic: digits (and `16#ff`, `0x1f`), blanks, `$#`, `$?`, `$$`, `$!`, `${#name}`, and
/// the operators `+ - * / % ( ) < > ! & | ^ ~ ? : ,` and `==`, `!=`, `<=`, `>=`; no assignment (`=`, `+=`, `<<=`,
/// …), no `++` or `--`, no variable, subscript, quote or substitution.
#[must_use]
pub fn plain(expr: &str) -> bool {
    let expr = numbers_only(expr);
    let bytes = expr.as_bytes();
    if expr.contains("++") || expr.contains("--") {
        return false;
    }
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'0'..=b'9'
            | b' '
            | b'\t'
            | b'\n'
            | b'+'
            | b'-'
            | b'*'
            | b'/'
            | b'%'
            | b'('
            | b')'
            | b'<'
            | b'>'
            | b'!'
            | b'&'
            | b'|'
            | b'^'
            | b'~'
            | b'?'
            | b':'
            | b',' => i += 1,
            b'=' => {
                let before = i.checked_sub(1).and_then(|j| bytes.get(j)).copied();
                let twice = i.checked_sub(2).and_then(|j| bytes.get(j)).copied();
                let comparison = match before {
                    Some(b'=' | b'!') => true,
                    Some(c @ (b'<' | b'>')) => twice != Some(c),
                    _ => bytes.get(i + 1) == Some(&b'='),
                };
                if !comparison {
                    return false;
                }
                i += 1;
            }
            // A number in another base: `16#ff`, `0x1f` (the digits after `#` or `x` are letters too).
            b'#' | b'x' | b'X' if i > 0 && bytes[i - 1].is_ascii_digit() => {
                i += 1;
                while bytes
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'@' || *c == b'_')
                {
                    i += 1;
                }
            }
            _ => return false,
        }
    }
    true
}

/// `expr` with the parameters that are always numbers replaced by `0`: `$#`, `$?`, `$$`, `$!` and `${#name}`.
fn numbers_only(expr: &str) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut rest = expr;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let length = after.strip_prefix("{#").and_then(|r| {
            let end = r.find('}')?;
            let name = &r[..end];
            (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(end + 3)
        });
        if let Some(taken) = length {
            out.push('0');
            rest = &after[taken..];
        } else if after.starts_with(['#', '?', '$', '!']) {
            out.push('0');
            rest = &after[1..];
        } else {
            // Any other `$`: not plain, and kept so that `plain` says so.
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Whether `text` (a word, a string, a heredoc body, as written) holds a subscript right after an unbraced
/// parameter that is not [`plain`]: zsh reads `$path[…]` and `$#path[…]` as an array subscript and evaluates it,
/// running a `$(…)` inside it even in quotes (bash reads the `[…]` as text, so a plain one changes nothing).
/// Single-quoted text outside such a subscript is skipped.
#[must_use]
pub fn unbraced_subscript(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let (mut i, mut single, mut double) = (0, false, false);
    while let Some(&c) = chars.get(i) {
        i += 1;
        match c {
            '\\' if !single => i += 1,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '$' if !single => {
                if chars.get(i) == Some(&'#') {
                    i += 1;
                }
                let start = i;
                while chars.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    i += 1;
                }
                if i == start || chars.get(i) != Some(&'[') {
                    continue;
                }
                let mut depth = 0;
                let open = i;
                while let Some(&d) = chars.get(i) {
                    i += 1;
                    if d == '[' {
                        depth += 1;
                    } else if d == ']' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
                let subscript: String = chars[open + 1..i.saturating_sub(1).max(open + 1)].iter().collect();
                if !plain(&subscript) && !matches!(subscript.as_str(), "@" | "*") {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// Whether a parameter expansion (`${…}`, its whole text) evaluates nothing but [`plain`] arithmetic: no indirection
/// (`${!x}`), a subscript that is `@`, `*` or plain, and a substring offset and length that are plain.
#[must_use]
pub fn plain_expansion(text: &str) -> bool {
    let Some(inner) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) else {
        return true;
    };
    // `${#x}` is a length; `${#}` alone the count of parameters.
    let inner = match inner.strip_prefix('#') {
        Some(rest) if !rest.is_empty() => rest,
        _ => inner,
    };
    if inner.starts_with('!') && inner.len() > 1 {
        return false;
    }
    // A special parameter (`@`, `*`, `#`, `?`, `$`, `!`, `-`, `0`) is one character; a name runs on.
    let name_end = if inner.starts_with(['@', '*', '#', '?', '$', '!', '-']) {
        1
    } else {
        inner
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inner.len())
    };
    let mut rest = &inner[name_end..];
    if let Some(after) = rest.strip_prefix('[') {
        let Some(close) = after.find(']') else { return false };
        let subscript = &after[..close];
        if !matches!(subscript, "@" | "*") && !plain(subscript) {
            return false;
        }
        rest = &after[close + 1..];
    }
    match rest.strip_prefix(':') {
        // `${x:-w}`, `${x:=w}`, `${x:?w}`, `${x:+w}`: a word, not arithmetic.
        Some(r) if r.starts_with(['-', '=', '?', '+']) => true,
        Some(r) => r.split(':').all(plain),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_arithmetic_computes_and_compares() {
        let plain_ones = [
            "1 + 2",
            "2 * 3 - 1",
            "$# == 0",
            "$? != 0",
            "1 <= 4",
            "${#PATH} > 0",
            "(1 > 2) ? 1 : 0",
            "-3",
            "1 << 2",
            "16#ff",
            "0x1F + 1",
        ];
        for expr in plain_ones {
            assert!(plain(expr), "{expr}");
        }
    }

    #[test]
    fn assignments_subscripts_and_variables_are_not_plain() {
        let not_plain = [
            "PATH=0",
            "x += 1",
            "x <<= 2",
            "x >>= 2",
            "x++",
            "--x",
            "a[$(touch M)]",
            "a[1]",
            "_",
            "$_",
            "1 + _",
            "'1'",
            "\"1\"",
            "${x}",
            "`id`",
            "n",
            "$n",
            "BASH_REMATCH",
            "$BASH_REMATCH",
            "16#ff + x",
        ];
        for expr in not_plain {
            assert!(!plain(expr), "{expr}");
        }
    }

    #[test]
    fn zsh_reads_a_subscript_after_an_unbraced_parameter() {
        for text in [
            "$path['$(touch M)']",
            "$HOME['$(touch M)']",
            "\"$PWD[_]\"",
            "$#path['x']",
            "$path[1,'$(touch M)']",
            "a$argv[$(id)]b",
        ] {
            assert!(unbraced_subscript(text), "{text}");
        }
        for text in [
            "$path[1]",
            "'$path[$(x)]'",
            "$HOME",
            "[$x]",
            "$path[@]",
            "x[1]",
            "\\$p[_]",
        ] {
            assert!(!unbraced_subscript(text), "{text}");
        }
    }

    #[test]
    fn expansions_evaluate_their_subscripts_offsets_and_indirection() {
        let plain_ones = [
            "${x}",
            "${x:-a[$(y)]}",
            "${#x}",
            "${#}",
            "${a[@]}",
            "${a[*]}",
            "${a[1]}",
            "${x:1:2}",
            "${x: -1}",
            "${x%%.*}",
            "${@:2}",
            "${!}",
        ];
        for text in plain_ones {
            assert!(plain_expansion(text), "{text}");
        }
        let not_plain = [
            "${!x}",
            "${PWD:_}",
            "${a[_]}",
            "${a['$(touch M)']}",
            "${x:PATH=0}",
            "${#a[_]}",
            "${@:_}",
            "${*:_}",
            "${$:_}",
            "${@:BASH_REMATCH}",
            "${x:n}",
        ];
        for text in not_plain {
            assert!(!plain_expansion(text), "{text}");
        }
    }
}
