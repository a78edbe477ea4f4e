//! Text that others control (the model's words, a command's name and output, efrd's messages), made safe to print
//! on a terminal: a control sequence in it could retitle the terminal, colour it, write the clipboard (OSC 52),
//! overwrite a line shown earlier, or hide part of a command that a question asks the user to allow. Both views
//! clean such text before they add efr's own styling, so that styling still works; `--json` escapes it instead
//! (see below).
//!
//! The rule ([`printable`]): every control character is shown as a visible mark and nothing else changes, so no
//! text can be hidden and none is dropped (an earlier rule removed whole escape sequences, and with them the text
//! between `ESC ]` and `BEL`: a question could then show less than the command it allowed). `\n` and `\t` stay; a
//! `\r` right before `\n` goes (a CRLF line end); ESC shows as `␛`, the other C0 controls and DEL as their Unicode
//! control pictures (`␇`, `␍`, `␡`), and the 8-bit C1 controls (U+0080–U+009F) and the bidi embedding, override and
//! isolate controls (U+202A–U+202E, U+2066–U+2069: they reorder what follows them, "Trojan Source") as `<U+202E>`.
//! The other invisible format characters stay: the zero-width joiner and non-joiner (U+200C, U+200D) build emoji and
//! the words of some scripts, and the marks U+200E/U+200F only set the direction of the characters next to them.
//!
//! `--json` keeps the text as it came but must not carry these characters raw either: a terminal that shows the JSON
//! would act on them. serde_json escapes the C0 controls only; [`json_text`] writes the others (DEL, C1, bidi) as
//! `\u` escapes, which a JSON parser reads back as the same characters.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` is shown as a mark (see the module doc).
fn marked(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// The bidi embeddings and overrides (LRE, RLE, PDF, LRO, RLO: U+202A–U+202E) and isolates (LRI, RLI, FSI, PDI:
/// U+2066–U+2069).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every control character (and bidi embedding, override or isolate) shown as a visible mark (see the
/// module doc); borrowed when there is none.
#[must_use]
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(marked) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\u{1b}' => out.push('␛'),
            '\u{7f}' => out.push('\u{2421}'),
            c if u32::from(c) < 0x20 && marked(c) => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'));
            }
            c if marked(c) => {
                let _ = write!(out, "<U+{:04X}>", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// JSON text (as serde_json writes it) with every character [`printable`] would mark and JSON leaves raw (DEL, the C1
/// controls, the bidi embeddings, overrides and isolates) written as a `\uXXXX` escape; borrowed when there is none.
///
/// Such a character can only stand inside a JSON string (outside one, JSON allows only ASCII), where `\uXXXX` means
/// the same character (RFC 8259, section 7), so the value parses back unchanged. All of them are in the Basic
/// Multilingual Plane: one escape each, no surrogate pair.
#[must_use]
pub fn json_text(json: &str) -> Cow<'_, str> {
    let escaped = |c: char| u32::from(c) >= 0x7f && marked(c);
    if !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has_controls(text: &str) -> bool {
        text.chars().any(marked)
    }

    #[test]
    fn plain_text_is_borrowed_with_tabs_newlines_and_any_script() {
        let text = "größe 🙂\tok\nשלום\n";
        assert!(matches!(printable(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn escape_sequences_show_as_text_and_hide_nothing() {
        assert_eq!(printable("a\u{1b}]2;PWNED\u{7}b"), "a␛]2;PWNED␇b");
        assert_eq!(printable("\u{1b}[41mred\u{1b}[0m"), "␛[41mred␛[0m");
        // What a question shows is the whole command: nothing between ESC ] and BEL disappears.
        let command = "ls; printf '\u{1b}]' >/dev/null; touch /x/hidden; printf '\u{7}' >/dev/null";
        let shown = printable(command);
        assert!(shown.contains("touch /x/hidden"), "{shown}");
        assert!(!has_controls(&shown), "{shown:?}");
    }

    #[test]
    fn c0_c1_and_del_show_as_marks_and_crlf_ends_a_line() {
        assert_eq!(
            printable("bell\u{7} back\u{8} del\u{7f} nul\u{0}"),
            "bell␇ back␈ del␡ nul␀"
        );
        assert_eq!(printable("done 50%\r100%"), "done 50%␍100%", "a bare CR");
        assert_eq!(printable("line\r\n"), "line\n");
        assert_eq!(printable("a\u{9b}41mb\u{85}c"), "a<U+009B>41mb<U+0085>c");
    }

    #[test]
    fn bidi_embeddings_overrides_and_isolates_show_as_marks() {
        let trojan = "access = \"user\u{202e} \u{2066}// admin\u{2069} \u{2066}\"";
        let shown = printable(trojan);
        assert!(!has_controls(&shown), "{shown}");
        assert!(shown.contains("<U+202E>") && shown.contains("<U+2066>") && shown.contains("<U+2069>"));
        for c in ['\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{2067}', '\u{2068}'] {
            assert_eq!(printable(&format!("a{c}b")), format!("a<U+{:04X}>b", u32::from(c)));
        }
    }

    #[test]
    fn joiners_and_other_format_characters_stay() {
        let family = "👨\u{200d}👩\u{200d}👧 \u{200c}\u{200e}\u{200f}\u{feff}\u{200b}";
        assert!(matches!(printable(family), Cow::Borrowed(t) if t == family));
        assert_eq!(printable("\u{2028}\u{2029}"), "\u{2028}\u{2029}");
    }

    #[test]
    fn json_text_escapes_what_json_leaves_raw_and_parses_back() {
        let text = "a\u{1b}]52;c;eA==\u{7} \u{9b}2J \u{85} \u{7f} \u{202e}exe \u{2066}i\u{2069} ok ש 🙂 \u{200d}";
        let json = serde_json::to_string(&serde_json::json!({ "text": text })).unwrap();
        let escaped = json_text(&json);
        assert!(!escaped.chars().any(marked), "{escaped}");
        assert!(
            escaped.contains(r"\u009b") && escaped.contains(r"\u202e") && escaped.contains(r"\u007f"),
            "{escaped}"
        );
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back["text"], text);
        let plain = r#"{"text":"größe 🙂 \u001b"}"#;
        assert!(matches!(json_text(plain), Cow::Borrowed(t) if t == plain));
    }
}
