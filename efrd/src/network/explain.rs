//! Which rule decides a host for a contained call: the answer of `sandbox.explain_host` (docs/network.md, "Which
//! rule decides a host").
//!
//! It runs the functions a call's proxy plan is made with ([`super::rules`]: the allow list as host grants, the deny
//! list with the credential hosts) and the ones the proxy checks a `CONNECT` with
//! ([`efr_protocol::internal::host::target_host`], [`efr_protocol::internal::proxy::decide`]), so what it says is
//! what the proxy does. The checks made at connect time (the TLS server name, the addresses the name resolves to)
//! are not predicted.

use efr_protocol::internal::host::{HostPattern, TargetRefusal, target_host};
use efr_protocol::internal::proxy::{ListDecision, decide};
use efr_protocol::wire::{HostRuleSource, HostVerdict, SandboxExplainHostResult};

use super::credentials::CredentialHost;
use super::rules::{deny_list, grant_patterns, host_grants};

/// What the rules decide for `written` (a host as a client writes it in a `CONNECT` target, without its port) on
/// `port`, under the config's `allow` and `deny` and the user's `credentials` ([`super::credentials`]).
#[must_use]
pub fn explain_host(
    written: &str,
    port: u16,
    allow: &[HostPattern],
    deny: &[HostPattern],
    credentials: &[CredentialHost],
) -> SandboxExplainHostResult {
    let host = match target_host(written) {
        Ok(host) => host,
        Err(refusal) => return refused_before_the_lists(written, port, &refusal),
    };
    // The lists of a call's plan, made as `CallNetwork::open_plan` makes them from the call's host grants.
    let plan_allow = grant_patterns(&host_grants(allow));
    let plan_deny = deny_list(
        deny,
        &plan_allow,
        credentials.iter().map(|entry| entry.host.clone()).collect(),
    );
    let credential = |entry: &HostPattern| credentials.iter().find(|c| &c.host == entry);
    let answer = |verdict, rule: Option<&HostPattern>, source, credential: Option<&CredentialHost>, reason| {
        SandboxExplainHostResult {
            host: host.clone(),
            port,
            verdict,
            rule: rule.map(ToString::to_string),
            source,
            credential_file: credential.map(|c| c.source.to_string()),
            reason,
        }
    };
    match decide(&plan_allow, &plan_deny, &host, port) {
        ListDecision::Denied(entry) if deny.contains(entry) => answer(
            HostVerdict::Denied,
            Some(entry),
            HostRuleSource::ConfigDeny,
            None,
            format!("denied by the deny list entry \"{entry}\""),
        ),
        ListDecision::Denied(entry) => {
            let found = credential(entry);
            let source = found.map_or_else(|| "a credential file".to_owned(), |c| c.source.to_string());
            answer(
                HostVerdict::Denied,
                Some(entry),
                HostRuleSource::Credentials,
                found,
                format!("denied: {source} holds a token for it, and no allow entry names it exactly"),
            )
        }
        ListDecision::Allowed(entry) => {
            // A credential host reaches here only when an allow entry names it exactly.
            let overridden = credentials.iter().find(|c| c.host.matches(&host, port));
            let reason = match overridden {
                Some(found) => format!(
                    "allowed by \"{entry}\", which names it exactly, so the token that {} holds for it does not \
                     deny it",
                    found.source
                ),
                None => format!("allowed by \"{entry}\""),
            };
            answer(
                HostVerdict::Allowed,
                Some(entry),
                HostRuleSource::ConfigAllow,
                overridden,
                reason,
            )
        }
        ListDecision::NotAllowed => {
            let reason = if allow.is_empty() {
                "not allowed: the config's [network] allow list is empty, so contained calls have no network"
            } else {
                "not allowed: no allow entry names it"
            };
            answer(
                HostVerdict::NotAllowed,
                None,
                HostRuleSource::NoRule,
                None,
                reason.to_owned(),
            )
        }
    }
}

/// The answer for a host that the proxy refuses before it reads a list: an address, or no normal form.
fn refused_before_the_lists(written: &str, port: u16, refusal: &TargetRefusal) -> SandboxExplainHostResult {
    // The host as the proxy counts the refusal: as written, or the normal form of a Unicode spelling of an address.
    let (host, verdict, reason) = match refusal {
        TargetRefusal::IpLiteral(host) => (
            host.clone(),
            HostVerdict::IpLiteral,
            "refused: it is an IP address, and contained calls reach names only".to_owned(),
        ),
        TargetRefusal::NoNormalForm(error) => {
            (written.to_owned(), HostVerdict::BadRequest, format!("refused: {error}"))
        }
    };
    SandboxExplainHostResult {
        host,
        port,
        verdict,
        rule: None,
        source: HostRuleSource::NoRule,
        credential_file: None,
        reason,
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::network::credentials::CredentialSource;

    fn patterns(list: &[&str]) -> Vec<HostPattern> {
        list.iter().map(|p| p.parse().unwrap()).collect()
    }

    fn netrc(hosts: &[&str]) -> Vec<CredentialHost> {
        hosts
            .iter()
            .map(|host| CredentialHost {
                host: host.parse().unwrap(),
                source: CredentialSource::File(PathBuf::from("/home/ada/.netrc")),
            })
            .collect()
    }

    fn verdict(answer: &SandboxExplainHostResult) -> (HostVerdict, Option<&str>, HostRuleSource, Option<&str>) {
        (
            answer.verdict,
            answer.rule.as_deref(),
            answer.source,
            answer.credential_file.as_deref(),
        )
    }

    #[test]
    fn each_rule_is_named_with_its_source() {
        let allow = patterns(&["**.github.com", "registry.npmjs.org", "api.example.com", "*:8443"]);
        let deny = patterns(&["gist.github.com"]);
        let credentials = netrc(&["github.com", "api.example.com"]);
        let explain = |host: &str, port: u16| explain_host(host, port, &allow, &deny, &credentials);

        let answer = explain("GitHub.COM.", 443);
        assert_eq!(answer.host, "github.com");
        assert_eq!(
            verdict(&answer),
            (
                HostVerdict::Denied,
                Some("github.com"),
                HostRuleSource::Credentials,
                Some("/home/ada/.netrc")
            )
        );
        assert_eq!(
            answer.reason,
            "denied: /home/ada/.netrc holds a token for it, and no allow entry names it exactly"
        );
        assert_eq!(
            verdict(&explain("gist.github.com", 443)),
            (
                HostVerdict::Denied,
                Some("gist.github.com"),
                HostRuleSource::ConfigDeny,
                None
            )
        );
        assert_eq!(
            verdict(&explain("api.github.com", 443)),
            (
                HostVerdict::Allowed,
                Some("**.github.com"),
                HostRuleSource::ConfigAllow,
                None
            )
        );
        // An exact allow entry opens a credential host, and the answer says which file it overrides.
        let answer = explain("api.example.com", 443);
        assert_eq!(
            verdict(&answer),
            (
                HostVerdict::Allowed,
                Some("api.example.com"),
                HostRuleSource::ConfigAllow,
                Some("/home/ada/.netrc")
            )
        );
        assert!(answer.reason.contains("names it exactly"), "{}", answer.reason);
        assert_eq!(
            verdict(&explain("example.org", 443)),
            (HostVerdict::NotAllowed, None, HostRuleSource::NoRule, None)
        );
        // The port is part of every pattern.
        assert_eq!(
            verdict(&explain("example.org", 8443)),
            (HostVerdict::Allowed, Some("*:8443"), HostRuleSource::ConfigAllow, None)
        );
        assert_eq!(
            verdict(&explain("registry.npmjs.org", 8080)),
            (HostVerdict::NotAllowed, None, HostRuleSource::NoRule, None)
        );
    }

    #[test]
    fn addresses_and_names_without_a_normal_form_are_refused_before_the_lists() {
        let allow = patterns(&["*"]);
        for address in ["127.1", "0x7f000001", "[::1]", "[::ffff:127.0.0.1]", "１２７.０.０.１"] {
            let answer = explain_host(address, 443, &allow, &[], &[]);
            assert_eq!(
                verdict(&answer),
                (HostVerdict::IpLiteral, None, HostRuleSource::NoRule, None),
                "{address}"
            );
        }
        // The host as the proxy counts it: as written, or the normal form of a Unicode spelling.
        assert_eq!(explain_host("１２７.０.０.１", 443, &allow, &[], &[]).host, "127.0.0.1");
        assert_eq!(explain_host("127.0.0.1.", 443, &allow, &[], &[]).host, "127.0.0.1.");
        let answer = explain_host("exa mple.com", 443, &allow, &[], &[]);
        assert_eq!(answer.verdict, HostVerdict::BadRequest);
        assert_eq!(answer.host, "exa mple.com");
        assert!(answer.reason.contains("not a valid domain name"), "{}", answer.reason);
    }

    #[test]
    fn deny_everything_wins_over_an_allow_entry_and_no_allow_list_is_said() {
        let answer = explain_host("github.com", 443, &patterns(&["github.com"]), &patterns(&["*"]), &[]);
        assert_eq!(
            verdict(&answer),
            (HostVerdict::Denied, Some("*"), HostRuleSource::ConfigDeny, None)
        );
        assert_eq!(answer.reason, "denied by the deny list entry \"*\"");
        // `*` without a port is every port, whatever port allow opens.
        let answer = explain_host("github.com", 22, &patterns(&["*:22"]), &patterns(&["*"]), &[]);
        assert_eq!(
            verdict(&answer),
            (HostVerdict::Denied, Some("*"), HostRuleSource::ConfigDeny, None)
        );
        let answer = explain_host("github.com", 443, &[], &[], &[]);
        assert!(answer.reason.contains("allow list is empty"), "{}", answer.reason);
    }
}
