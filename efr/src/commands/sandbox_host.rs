//! `efr sandbox host HOST[:PORT]`: sandbox.explain_host, which network rule decides a host for contained calls
//! (docs/network.md, "Which rule decides a host").
//!
//! ```text
//! github.com:443 denied by the deny list entry "github.com"
//! api.github.com:443 allowed by "**.github.com"
//! github.com:443 denied: ~/.netrc holds a token for it
//! example.org:443 not allowed: no allow entry names it
//! ```
//!
//! The exit status tells scripts the answer: 0 when the host is allowed, 1 when it is refused (with `--json` too) or
//! the question failed. An efrd that does not serve the method yet answers `invalid ... does not serve`; efr says so
//! in its own words.

use std::path::Path;
use std::process::ExitCode;

use efr_protocol::wire::{HostRuleSource, HostVerdict, SandboxExplainHostResult};
use serde_json::json;

use crate::cli::HostArgs;
use crate::report;

/// The method this command calls.
const METHOD: &str = "sandbox.explain_host";

/// Runs `efr sandbox host`; exits 0 when the host is allowed, 1 otherwise (see the module doc).
pub async fn run(args: &HostArgs) -> ExitCode {
    let (host, port) = match split(&args.host) {
        Ok(target) => target,
        Err(message) => {
            report::error(&message);
            return ExitCode::from(report::FAILED);
        }
    };
    let client = match report::connect(None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let params = match port {
        Some(port) => json!({"host": host, "port": port}),
        None => json!({"host": host}),
    };
    let show = |answer: &SandboxExplainHostResult| {
        let home = std::env::var_os("HOME");
        crate::out::println(&render(answer, home.as_deref().map(Path::new)));
    };
    let code = |answer: &SandboxExplainHostResult| {
        if answer.verdict == HostVerdict::Allowed {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(report::FAILED)
        }
    };
    super::judged_on(&client, METHOD, params, args.json, show, code).await
}

/// The host and port of `HOST[:PORT]` as a client writes them: `name`, `name:8443`, `[::1]`, `[::1]:443`, a bare
/// IPv6 address (no port), or a URL (`https://user@host:port/path`: its host and port).
///
/// # Errors
/// A message for an empty host, an unclosed `[`, text after `]` that is not a port, or a port that is not 1 to
/// 65535.
pub fn split(text: &str) -> Result<(String, Option<u16>), String> {
    let text = text.trim();
    let authority = match text.split_once("://") {
        Some((_, rest)) => {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            authority.rsplit_once('@').map_or(authority, |(_, host)| host)
        }
        None => text,
    };
    let (host, port) = if authority.starts_with('[') {
        let Some(end) = authority.find(']') else {
            return Err(format!("{text:?}: `[` without its `]`"));
        };
        let (host, rest) = authority.split_at(end + 1);
        match rest.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if rest.is_empty() => (host, None),
            None => return Err(format!("{text:?}: after `]` only `:PORT` may follow")),
        }
    } else if authority.matches(':').count() == 1 {
        let (host, port) = authority.split_once(':').unwrap_or((authority, ""));
        (host, Some(port))
    } else {
        // No colon, or a bare IPv6 address (more than one).
        (authority, None)
    };
    if host.is_empty() {
        return Err(format!("{text:?}: no host"));
    }
    let port = match port {
        None => None,
        Some(written) => match written.parse::<u16>() {
            Ok(port) if port != 0 && written.bytes().all(|b| b.is_ascii_digit()) => Some(port),
            _ => return Err(format!("{text:?}: the port must be a number from 1 to 65535")),
        },
    };
    Ok((host.to_owned(), port))
}

/// One line: the host and port, then the verdict and the rule that decides, in words. A credential file under
/// `home` is shown as `~/...`.
#[must_use]
pub fn render(answer: &SandboxExplainHostResult, home: Option<&Path>) -> String {
    let target = if answer.host.contains(':') && !answer.host.starts_with('[') {
        format!("[{}]:{}", answer.host, answer.port)
    } else {
        format!("{}:{}", answer.host, answer.port)
    };
    let file = answer.credential_file.as_deref().map(|file| shown(file, home));
    let rule = answer.rule.as_deref();
    let words = match (answer.verdict, answer.source, rule, file) {
        (HostVerdict::Denied, HostRuleSource::ConfigDeny, Some(rule), _) => {
            format!("denied by the deny list entry \"{rule}\"")
        }
        (HostVerdict::Denied, HostRuleSource::Credentials, _, Some(file)) => {
            format!("denied: {file} holds a token for it")
        }
        (HostVerdict::Allowed, HostRuleSource::ConfigAllow, Some(rule), None) => format!("allowed by \"{rule}\""),
        (HostVerdict::Allowed, HostRuleSource::ConfigAllow, Some(rule), Some(file)) => {
            format!("allowed by \"{rule}\", which names it exactly ({file} holds a token for it)")
        }
        (HostVerdict::NotAllowed, _, _, _) => match answer.reason.strip_prefix("not allowed: ") {
            Some(why) => format!("not allowed: {why}"),
            None => format!("not allowed: {}", answer.reason),
        },
        // Addresses, names without a normal form, and what this efr does not know: efrd's own sentence.
        _ => answer.reason.clone(),
    };
    format!("{target} {words}")
}

/// `file` with `home` written as `~`; a file elsewhere (or `git credential helper`) as it is.
fn shown(file: &str, home: Option<&Path>) -> String {
    let path = Path::new(file);
    match home
        .filter(|home| *home != Path::new("/"))
        .and_then(|home| path.strip_prefix(home).ok())
    {
        Some(rest) => format!("~/{}", rest.display()),
        None => file.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> SandboxExplainHostResult {
        let path = format!("{}/../protocol/fixtures/v1/{name}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn host_and_port_split_as_a_client_writes_them() {
        let ok = |text: &str| split(text).unwrap();
        assert_eq!(ok("github.com"), ("github.com".into(), None));
        assert_eq!(
            ok("registry.example.com:8443"),
            ("registry.example.com".into(), Some(8443))
        );
        assert_eq!(ok("[::1]"), ("[::1]".into(), None));
        assert_eq!(ok("[::1]:443"), ("[::1]".into(), Some(443)));
        assert_eq!(ok("::ffff:127.0.0.1"), ("::ffff:127.0.0.1".into(), None));
        assert_eq!(
            ok("https://ada@git.example.org:8443/team/repo.git"),
            ("git.example.org".into(), Some(8443))
        );
        assert_eq!(ok("https://github.com/efr"), ("github.com".into(), None));
        for bad in [
            "",
            ":443",
            "github.com:",
            "github.com:0",
            "github.com:65536",
            "github.com:+1",
            "[::1",
            "[::1]x",
        ] {
            assert!(split(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn each_verdict_reads_as_one_line() {
        let home = Path::new("/home/ada");
        assert_eq!(
            render(&fixture("sandbox_explain_host_result.json"), Some(home)),
            "github.com:443 denied: ~/.netrc holds a token for it"
        );
        // Another home: the path as it is.
        assert_eq!(
            render(
                &fixture("sandbox_explain_host_result.json"),
                Some(Path::new("/home/bob"))
            ),
            "github.com:443 denied: /home/ada/.netrc holds a token for it"
        );
        assert_eq!(
            render(&fixture("sandbox_explain_host_result_not_allowed.json"), Some(home)),
            "example.org:443 not allowed: no allow entry names it"
        );
        let mut answer = fixture("sandbox_explain_host_result.json");
        answer.verdict = HostVerdict::Denied;
        answer.source = HostRuleSource::ConfigDeny;
        answer.credential_file = None;
        assert_eq!(
            render(&answer, Some(home)),
            "github.com:443 denied by the deny list entry \"github.com\""
        );
        answer.verdict = HostVerdict::Allowed;
        answer.source = HostRuleSource::ConfigAllow;
        answer.rule = Some("**.github.com".into());
        assert_eq!(render(&answer, None), "github.com:443 allowed by \"**.github.com\"");
        answer.host = "::1".into();
        answer.verdict = HostVerdict::IpLiteral;
        answer.reason = "refused: it is an IP address, and contained calls reach names only".into();
        assert_eq!(
            render(&answer, None),
            "[::1]:443 refused: it is an IP address, and contained calls reach names only"
        );
        // A verdict this efr does not know: efrd's sentence.
        answer.verdict = HostVerdict::Unknown;
        answer.reason = "quarantined by policy".into();
        assert_eq!(render(&answer, None), "[::1]:443 quarantined by policy");
    }
}
