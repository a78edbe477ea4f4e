//! The soak's prose: prompts and answers of a real turn's length, drawn from a seeded vocabulary, so that what the
//! search index costs is measured on texts of the length it indexes.

/// Words of a prose prompt: a request of a few sentences (about 250 characters).
pub const PROMPT_WORDS: usize = 40;

/// Words of a prose answer: a few paragraphs (about 1,600 characters).
pub const ANSWER_WORDS: usize = 250;

/// The words prose is made of: a coding agent's usual vocabulary.
const VOCABULARY: &[&str] = &[
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "it",
    "that",
    "for",
    "this",
    "with",
    "on",
    "we",
    "be",
    "not",
    "can",
    "file",
    "function",
    "test",
    "tests",
    "error",
    "build",
    "cargo",
    "module",
    "crate",
    "struct",
    "trait",
    "impl",
    "config",
    "value",
    "return",
    "result",
    "option",
    "string",
    "path",
    "folder",
    "command",
    "shell",
    "output",
    "input",
    "change",
    "fix",
    "bug",
    "failing",
    "passes",
    "line",
    "lines",
    "call",
    "calls",
    "type",
    "field",
    "method",
    "server",
    "client",
    "request",
    "response",
    "socket",
    "async",
    "await",
    "thread",
    "lock",
    "read",
    "write",
    "parse",
    "json",
    "schema",
    "protocol",
    "event",
    "events",
    "turn",
    "model",
    "token",
    "index",
    "search",
    "query",
    "database",
    "table",
    "column",
    "row",
    "migration",
    "commit",
    "branch",
    "diff",
    "patch",
    "review",
    "docs",
    "readme",
    "example",
    "release",
    "version",
    "dependency",
    "feature",
    "flag",
    "timeout",
    "retry",
    "cache",
    "memory",
    "budget",
    "bench",
    "latency",
    "because",
    "instead",
    "when",
    "then",
    "after",
    "before",
    "first",
    "next",
    "also",
    "only",
    "still",
    "now",
    "here",
    "there",
    "which",
    "what",
    "why",
    "how",
    "where",
    "should",
    "would",
    "could",
    "must",
    "add",
    "remove",
    "rename",
    "move",
    "split",
    "keep",
    "check",
    "run",
    "runs",
    "ran",
    "see",
    "look",
    "found",
    "use",
    "uses",
    "used",
    "new",
    "old",
    "same",
    "other",
    "each",
    "every",
];

/// `words` words of seeded prose for `turn` (`salt` tells a turn's prompt from its answer), with a sentence's
/// punctuation every dozen words.
pub(super) fn prose(turn: usize, salt: u64, words: usize) -> String {
    // SplitMix64: a fixed, well-mixed sequence per seed, no dependency.
    let mut state = (turn as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut text = String::with_capacity(words * 7);
    for n in 0..words {
        let pick = usize::try_from(next() % VOCABULARY.len() as u64).unwrap_or_default();
        let word = VOCABULARY[pick];
        if n > 0 {
            text.push_str(if n % 12 == 0 { ". " } else { " " });
        }
        text.push_str(word);
    }
    text.push('.');
    text
}
