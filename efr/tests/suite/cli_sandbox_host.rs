//! `efr sandbox host HOST[:PORT]` against the real efrd, with a config `[network]` and a real `.netrc` in efrd's
//! home: one readable line per verdict, exit 0 only when allowed, `--json` that parses, a bad port refused before
//! efrd is asked (docs/network.md, "Which rule decides a host").

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use common::{efr_run, efrd, texts};
use efr_protocol::wire::{HostRuleSource, HostVerdict, SandboxExplainHostResult};
use efr_test_support::daemon::TestDaemon;

const NETWORK: &str = "[network]\nallow = [\"**.github.com\", \"registry.example.com:8443\"]\n\
                       deny = [\"gist.github.com\"]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_verdict_is_one_line_and_only_allowed_exits_0() {
    let home = tempfile::tempdir().unwrap();
    let netrc = home.path().join(".netrc");
    std::fs::write(&netrc, "machine github.com login ada password NETRC-SECRET-PW\n").unwrap();
    let _efrd = TestDaemon::start(efrd(), home.path(), Some(NETWORK), &[]).expect("efrd starts");
    let host = |args: &'static [&'static str]| {
        let home = home.path().to_owned();
        async move {
            let mut all = vec!["sandbox", "host"];
            all.extend_from_slice(args);
            let output = efr_run(&home, &home, &all, None).await;
            let (stdout, stderr) = texts(&output);
            (output.status.code(), stdout, stderr)
        }
    };

    let (code, stdout, stderr) = host(&["API.GitHub.com"]).await;
    assert_eq!(
        (code, stdout.as_str()),
        (Some(0), "api.github.com:443 allowed by \"**.github.com\"\n"),
        "{stderr}"
    );
    let (code, stdout, _) = host(&["gist.github.com"]).await;
    assert_eq!(
        (code, stdout.as_str()),
        (
            Some(1),
            "gist.github.com:443 denied by the deny list entry \"gist.github.com\"\n"
        )
    );
    // efr's HOME is not efrd's here, so the file shows as its full path.
    let (code, stdout, stderr) = host(&["github.com:443"]).await;
    assert_eq!(code, Some(1));
    assert_eq!(
        stdout,
        format!("github.com:443 denied: {} holds a token for it\n", netrc.display())
    );
    assert!(!stdout.contains("NETRC-SECRET") && !stderr.contains("NETRC-SECRET"));
    let (code, stdout, _) = host(&["example.org"]).await;
    assert_eq!(
        (code, stdout.as_str()),
        (Some(1), "example.org:443 not allowed: no allow entry names it\n")
    );
    let (code, stdout, _) = host(&["https://registry.example.com:8443/index/"]).await;
    assert_eq!(
        (code, stdout.as_str()),
        (
            Some(0),
            "registry.example.com:8443 allowed by \"registry.example.com:8443\"\n"
        )
    );
    let (code, stdout, _) = host(&["[::1]:443"]).await;
    assert_eq!(code, Some(1));
    assert!(stdout.starts_with("[::1]:443 refused: it is an IP address"), "{stdout}");

    // --json is efrd's answer, and it reads as the protocol's type.
    let (code, stdout, _) = host(&["github.com", "--json"]).await;
    assert_eq!(code, Some(1));
    let answer: SandboxExplainHostResult = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (answer.verdict, answer.source, answer.rule.as_deref()),
        (HostVerdict::Denied, HostRuleSource::Credentials, Some("github.com"))
    );
    assert_eq!(answer.credential_file, Some(netrc.display().to_string()));

    // A bad port is refused by efr itself, with why.
    let (code, stdout, stderr) = host(&["github.com:99999"]).await;
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stderr.contains("the port must be a number from 1 to 65535"), "{stderr}");
}
