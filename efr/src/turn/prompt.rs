//! The prompt's text: the words of the command line joined by spaces, or all of stdin for `efr -`.
//!
//! `-` reads stdin only when it is the sole word. First or last among other words (`efr - explain`,
//! `cat log | efr explain -`) it is refused rather than sent as the text "- explain": the user meant stdin, and
//! would get a prompt without it. A `-` between words (`efr what is 3 - 2`) is a word of the prompt.

/// The most bytes `efr -` reads: a prompt is a frame's text, and frames are at most 16 MiB.
const MAX_STDIN_PROMPT: u64 = 8 * 1024 * 1024;

/// Why `-` with other words is refused.
pub const DASH_WITH_WORDS: &str = "`-` reads the prompt from stdin and takes no other words; put them in the text on \
                                   stdin, or quote a prompt that starts or ends with `-`";

/// Where the prompt's text comes from.
#[derive(Debug, PartialEq, Eq)]
enum Source {
    /// `efr -`: stdin.
    Stdin,
    /// The words, joined by spaces.
    Words(String),
}

/// Where the text of `words` comes from; [`DASH_WITH_WORDS`] for a `-` first or last among other words.
fn source(words: &[String]) -> Result<Source, &'static str> {
    match words {
        [only] if only == "-" => Ok(Source::Stdin),
        [first, .., last] if first == "-" || last == "-" => Err(DASH_WITH_WORDS),
        _ => Ok(Source::Words(words.join(" "))),
    }
}

/// The prompt of the command line's `words` (see the module doc).
///
/// # Errors
/// A message (without `efr: `) for a `-` among other words, or stdin that cannot be read, is too long or is not
/// UTF-8.
pub fn text(words: &[String]) -> Result<String, String> {
    match source(words)? {
        Source::Stdin => read_stdin(),
        Source::Words(text) => Ok(text),
    }
}

/// All of stdin, UTF-8, at most [`MAX_STDIN_PROMPT`] bytes.
fn read_stdin() -> Result<String, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_STDIN_PROMPT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
    if bytes.len() as u64 > MAX_STDIN_PROMPT {
        return Err(format!(
            "the prompt on stdin is over {} MiB",
            MAX_STDIN_PROMPT / (1024 * 1024)
        ));
    }
    String::from_utf8(bytes).map_err(|_| "the prompt on stdin is not UTF-8 text".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn a_dash_alone_reads_stdin_and_with_words_around_it_is_refused() {
        assert_eq!(source(&words(&["-"])), Ok(Source::Stdin));
        assert_eq!(source(&words(&["-", "extra", "words"])), Err(DASH_WITH_WORDS));
        assert_eq!(source(&words(&["explain", "-"])), Err(DASH_WITH_WORDS));
        assert_eq!(
            source(&words(&["what", "is", "3", "-", "2"])),
            Ok(Source::Words("what is 3 - 2".to_owned()))
        );
        assert_eq!(
            source(&words(&["- a list item"])),
            Ok(Source::Words("- a list item".to_owned()))
        );
    }
}
