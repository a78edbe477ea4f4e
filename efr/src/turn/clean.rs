//! Text that others control (the model's words, a command's name and output, efrd's messages), made safe to print
//! on a terminal: a control sequence in it could retitle the terminal, colour it, write the clipboard (OSC 52) or
//! overwrite a line shown earlier. Both views clean such text before they add efr's own styling, so that styling
//! still works; `--json` needs nothing (JSON escapes control characters).
//!
//! The rule ([`printable`]): ESC-introduced sequences go whole (CSI `ESC [ ... final`, OSC `ESC ] ... BEL | ESC \`,
//! DCS/SOS/PM/APC `ESC P|X|^|_ ... ESC \`, and `ESC x`); the 8-bit C1 controls (U+0080–U+009F) go, with the
//! parameters of their CSI, OSC and string forms; every other control character goes except `\n` and `\t` (a bare
//! `\r` too: it moves back over what is on the line). The bidi embedding, override and isolate controls (U+202A–U+202E,
//! U+2066–U+2069) go too: they reorder what follows them on the line, so a command or a diff line could show other
//! than what it is ("Trojan Source"). The other invisible format characters stay: the zero-width joiner and
//! non-joiner (U+200C, U+200D) build emoji and the words of some scripts, and the marks U+200E/U+200F only set the
//! direction of the characters next to them.

use std::borrow::Cow;

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';
/// The 8-bit string terminator (ST).
const ST: char = '\u{9c}';

/// Whether `c` is a control character (or a bidi embedding, override or isolate) that does not stay.
fn goes(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// The bidi embeddings and overrides (LRE, RLE, PDF, LRO, RLO: U+202A–U+202E) and isolates (LRI, RLI, FSI, PDI:
/// U+2066–U+2069).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` without terminal control sequences, control characters other than `\n` and `\t`, and bidi embeddings,
/// overrides and isolates (see the module doc); borrowed when there is nothing to remove.
#[must_use]
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(goes) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        rest = match c {
            ESC => after_escape(rest),
            '\u{9b}' => after_csi(rest),
            '\u{9d}' => after_string(rest, true),
            '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => after_string(rest, false),
            c if goes(c) => rest,
            c => {
                out.push(c);
                rest
            }
        };
    }
    Cow::Owned(out)
}

/// What follows the sequence that an ESC (already taken) starts.
fn after_escape(rest: &str) -> &str {
    let mut chars = rest.chars();
    match chars.next() {
        Some('[') => after_csi(chars.as_str()),
        Some(']') => after_string(chars.as_str(), true),
        Some('P' | 'X' | '^' | '_') => after_string(chars.as_str(), false),
        // `ESC x`, with any intermediates before the final byte (`ESC ( B`). An ESC before anything else (a
        // newline, the end) goes alone.
        _ => {
            let body = rest.trim_start_matches(|c| ('\u{20}'..='\u{2f}').contains(&c));
            match body.chars().next() {
                Some('\u{30}'..='\u{7e}') => &body[1..],
                _ => body,
            }
        }
    }
}

/// What follows a CSI's parameters, intermediates and final byte. A character that cannot be in a CSI breaks it
/// off and is judged on its own (a newline stays).
fn after_csi(rest: &str) -> &str {
    let body = rest.trim_start_matches(|c| ('\u{20}'..='\u{3f}').contains(&c));
    match body.chars().next() {
        Some('\u{40}'..='\u{7e}') => &body[1..],
        _ => body,
    }
}

/// What follows a control string (OSC, DCS, SOS, PM, APC): it ends with ST (`ESC \` or U+009C), an OSC also with
/// BEL. Another ESC ends it too and starts its own sequence, as on a terminal; with no end, the rest goes.
fn after_string(rest: &str, bel_ends: bool) -> &str {
    for (i, c) in rest.char_indices() {
        match c {
            BEL if bel_ends => return &rest[i + 1..],
            ST => return &rest[i + ST.len_utf8()..],
            ESC => {
                let tail = &rest[i + 1..];
                return tail.strip_prefix('\\').unwrap_or(&rest[i..]);
            }
            _ => {}
        }
    }
    ""
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_with_tabs_newlines_and_any_script() {
        let text = "größe 🙂\n\tcol\tumn\n";
        assert!(matches!(printable(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn an_osc_title_goes_whole_with_bel_or_st() {
        assert_eq!(printable("a\u{1b}]2;PWNED\u{7}b"), "ab");
        assert_eq!(printable("a\u{1b}]52;c;cm0gLXJmIH4=\u{1b}\\b"), "ab", "OSC 52 with ST");
        assert_eq!(printable("a\u{1b}]0;no end"), "a");
        assert_eq!(printable("a\u{1b}]0;cut\u{1b}[1mb"), "ab", "another ESC ends it");
    }

    #[test]
    fn csi_colours_and_moves_go_whole() {
        assert_eq!(printable("\u{1b}[41mred\u{1b}[0m"), "red");
        assert_eq!(printable("x\u{1b}[2J\u{1b}[?25l\u{1b}[1;1Hy"), "xy");
        assert_eq!(
            printable("cut\u{1b}[12\nnext"),
            "cut\nnext",
            "a newline breaks a CSI off"
        );
    }

    #[test]
    fn c1_controls_go_with_their_parameters() {
        assert_eq!(printable("a\u{9b}41mb"), "ab", "C1 CSI");
        assert_eq!(printable("a\u{9d}2;T\u{9c}b"), "ab", "C1 OSC with C1 ST");
        assert_eq!(printable("a\u{90}q#0\u{1b}\\b\u{85}c"), "abc", "DCS, and NEL alone");
    }

    #[test]
    fn other_escapes_and_controls_go() {
        assert_eq!(printable("done 50%\r100%"), "done 50%100%", "a bare CR");
        assert_eq!(printable("line\r\n"), "line\n");
        assert_eq!(printable("a\u{1b}Pq data\u{1b}\\b\u{1b}_apc\u{1b}\\c"), "abc");
        assert_eq!(
            printable("a\u{1b}7b\u{1b}(Bc\u{1b}"),
            "abc",
            "ESC x, ESC ( B, a lone ESC"
        );
        assert_eq!(printable("bell\u{7} back\u{8} del\u{7f} nul\u{0}"), "bell back del nul");
    }

    #[test]
    fn bidi_embeddings_overrides_and_isolates_go() {
        // The Trojan Source comment: what runs is not what shows.
        assert_eq!(
            printable("/* \u{202e} } \u{2066}if (admin)\u{2069} \u{2066} begin admins only */"),
            "/*  } if (admin)  begin admins only */"
        );
        for c in [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}',
        ] {
            assert_eq!(printable(&format!("a{c}b\u{2069}c")), "abc", "{:04x}", u32::from(c));
        }
    }

    #[test]
    fn joiners_and_other_format_characters_stay() {
        let family = "👩\u{200d}👩\u{200d}👧 می\u{200c}خواهم \u{200e}x\u{200f} a\u{200b}b \u{feff}";
        assert!(matches!(printable(family), Cow::Borrowed(t) if t == family));
        assert_eq!(printable("\u{2028}\u{2029}"), "\u{2028}\u{2029}");
    }
}
