//! bash's arithmetic, as far as the policy trusts it. bash evaluates an arithmetic expression in `$(( ))`, `$[ ]`,
//! an indexed array's subscript, a substring's offset and length (`${x:off:len}`), the operands of `[[ x -eq y ]]`
//! and the name of `-v`; and it evaluates a variable's value as an expression in turn. So an expression can assign
//! a variable that stays set in the hidden shell (`$((PATH=0))`), and an array subscript can run a command, even
//! from a value (`$_` is the last word of the previous command: `echo 'a[$(cmd)]'; [[ _ -eq 0 ]]` runs `cmd`).
//!
//! [`plain`] accepts only what cannot do either: numbers, operators that compare or compute, parentheses, and
//! names of variables other than `_`, each bare or as `$name`.

/// Whether `expr` is plain arithmetic: digits, names (not `_`) bare or after `$`, blanks, and the operators
/// `+ - * / % ( ) < > ! & | ^ ~ ? : ,` and `==`, `!=`, `<=`, `>=`; no assignment (`=`, `+=`, `<<=`, …), no `++` or
/// `--`, no subscript, quote, brace or substitution.
#[must_use]
pub fn plain(expr: &str) -> bool {
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
            | b','
            | b'$' => i += 1,
            b'=' => {
                let before = i.checked_sub(1).and_then(|j| bytes.get(j)).copied();
                let twice = i.checked_sub(2).and_then(|j| bytes.get(j)).copied();
                let comparison = match before {
                    Some(b'=') => true,
                    Some(b'!') => true,
                    Some(c @ (b'<' | b'>')) => twice != Some(c),
                    _ => bytes.get(i + 1) == Some(&b'='),
                };
                if !comparison {
                    return false;
                }
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while bytes.get(i).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                    i += 1;
                }
                if &expr[start..i] == "_" {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// Whether a parameter expansion (`${…}`, its whole text) evaluates nothing but [`plain`] arithmetic: no indirection
/// (`${!x}`), a subscript that is `@`, `*` or plain, and a substring offset and length that are plain.
#[must_use]
pub fn plain_expansion(text: &str) -> bool {
    let Some(inner) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) else {
        return true;
    };
    let inner = inner.strip_prefix('#').unwrap_or(inner);
    if inner.starts_with('!') {
        return false;
    }
    let name_end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(inner.len());
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
        for expr in [
            "1 + 2",
            "n * 3 - 1",
            "$n == 2",
            "a != b",
            "x <= 4",
            "x >= 4",
            "(a > b) ? 1 : 0",
            "-3",
            "1 << 2",
        ] {
            assert!(plain(expr), "{expr}");
        }
    }

    #[test]
    fn assignments_subscripts_and_the_last_argument_are_not_plain() {
        for expr in [
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
        ] {
            assert!(!plain(expr), "{expr}");
        }
    }

    #[test]
    fn expansions_evaluate_their_subscripts_offsets_and_indirection() {
        for text in [
            "${x}",
            "${x:-a[$(y)]}",
            "${#x}",
            "${a[@]}",
            "${a[*]}",
            "${a[1]}",
            "${x:1:2}",
            "${x: -1}",
            "${x%%.*}",
        ] {
            assert!(plain_expansion(text), "{text}");
        }
        for text in [
            "${!x}",
            "${PWD:_}",
            "${a[_]}",
            "${a['$(touch M)']}",
            "${x:PATH=0}",
            "${#a[_]}",
        ] {
            assert!(!plain_expansion(text), "{text}");
        }
    }
}
