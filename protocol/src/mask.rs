//! Secrets in free text: the one detector that replaces them before text is stored where it is shown or searched
//! (titles, the search index).
//!
//! [`mask_secrets`] replaces each secret it finds with [`SECRET_MARK`]: API keys of the providers efr knows (`sk-ant-`,
//! `sk-proj-`, `sk-`), GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), AWS access key ids
//! (`AKIA`, `ASIA`), Slack tokens (`xox?-`), the bearer of an `Authorization` header, the password of a URL
//! (`scheme://user:password@host`, the user stays), the value of an assignment to a name that says secret
//! (`PASSWORD=`, `API_KEY:`, `token=` ...), and PEM private key blocks (an unterminated block to the end of the text).
//!
//! It errs on the side of replacing: a masked word costs a title a little, a leaked key costs the user the key. It is
//! not a security boundary (the sandbox and the proxies are): it keeps secrets out of what efr shows and indexes.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// What a secret becomes: `[secret]` (the spec's example title "Rename the deploy key \[secret\]").
pub const SECRET_MARK: &str = "[secret]";

/// The patterns, each with an optional group `keep` (text before the secret that stays) — the rest of the match is
/// the secret.
static PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
    let parts = [
        // PEM private keys; a block cut off (a truncated paste) is masked to the end.
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY-----(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY-----|\z)",
        // Provider keys: sk-ant-..., sk-proj-..., sk-... (at least 16 characters after sk-).
        r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{8,}",
        // GitHub tokens.
        r"\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,})",
        // AWS access key ids.
        r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
        // Slack tokens.
        r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        // The bearer of an Authorization header.
        r"(?i)(?P<keep1>\bbearer\s+)[A-Za-z0-9_\-\.=:/+]{8,}",
        // The password of a URL: scheme://user:password@
        r"(?P<keep2>\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+(?:@)",
        // An assignment to a name that says secret: PASSWORD=..., api_key: ..., "token": "..."
        r#"(?i)(?P<keep3>\b[a-z0-9_\-]*(?:password|passwd|secret|token|api[_\-]?key|access[_\-]?key)[a-z0-9_\-]*["']?\s*[:=]\s*["']?)[^\s"',;]{4,}"#,
    ];
    #[allow(clippy::unwrap_used)] // Fixed patterns, checked by the tests.
    Regex::new(&parts.join("|")).unwrap()
});

/// `text` with every secret that the detector finds replaced by [`SECRET_MARK`]; borrowed when it has none.
///
/// The replacement keeps what tells the reader what was there: the user of a URL (`https://ada:[secret]@host`), the
/// name of an assignment (`API_KEY=[secret]`), the word `Bearer`.
#[must_use]
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    PATTERNS.replace_all(text, |caps: &Captures<'_>| {
        let keep = ["keep1", "keep2", "keep3"]
            .iter()
            .find_map(|name| caps.name(name))
            .map_or("", |m| m.as_str());
        // A URL's password ends at its `@`, which stays.
        let tail = if caps.name("keep2").is_some() { "@" } else { "" };
        format!("{keep}{SECRET_MARK}{tail}")
    })
}

/// Whether `text` holds a secret that [`mask_secrets`] would replace.
#[must_use]
pub fn has_secret(text: &str) -> bool {
    PATTERNS.is_match(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_secret_is_replaced_and_what_names_it_stays() {
        let cases = [
            ("key sk-ant-api03-AbCdEf0123456789xyz done", "key [secret] done"),
            ("sk-proj-abcdefgh12345678", "[secret]"),
            ("token ghp_0123456789abcdefABCDEF0123456789abcd", "token [secret]"),
            ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[secret]"),
            ("aws AKIAIOSFODNN7EXAMPLE key", "aws [secret] key"),
            (
                "curl https://ada:hunter2pass@example.com/x",
                "curl https://ada:[secret]@example.com/x",
            ),
            (
                "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30",
                "Authorization: Bearer [secret]",
            ),
            ("export API_KEY=abcd1234efgh", "export API_KEY=[secret]"),
            ("DB_PASSWORD: 's3cr3t!x'", "DB_PASSWORD: '[secret]'"),
            (
                "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1r\n-----END OPENSSH PRIVATE KEY-----\nz",
                "a\n[secret]\nz",
            ),
            ("cut -----BEGIN RSA PRIVATE KEY-----\nMIIEow", "cut [secret]"),
            ("xoxb-1234567890-abcdefghij", "[secret]"),
        ];
        for (text, masked) in cases {
            assert_eq!(mask_secrets(text), masked, "{text}");
            assert!(has_secret(text), "{text}");
        }
    }

    #[test]
    fn ordinary_text_is_left_as_it_is() {
        for text in [
            "Fix the größe of the 🙂 button in 中文",
            "pip install scikit-learn; sk-learn is not a key",
            "https://example.com/a:b@c is a path, https://host/x",
            "the token budget is large",
            "password reset flow",
        ] {
            assert!(
                matches!(mask_secrets(text), Cow::Borrowed(_)),
                "{text} -> {}",
                mask_secrets(text)
            );
            assert!(!has_secret(text), "{text}");
        }
    }
}
