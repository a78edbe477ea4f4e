//! The network rules of a plan: the `proxy` socket and the `host` grants (the module docs of
//! [`crate::internal::launch`], "Rules").
//!
//! A call with host grants keeps its own network namespace and reaches `efr-proxy` only through the launcher's
//! bridge (docs/adr/0011-the-proxy-bridge.md), so the plan's `proxy` and its host grants come together, and neither
//! comes with a grant that keeps the host's network.

use crate::internal::launch::LaunchPlan;
use crate::wire::Grant;

use super::{PlanError, check_path};

/// `proxy` is absolute and normal, present exactly when a `host` grant is, and never with `net_view` or
/// `open_network`.
pub(super) fn check_proxy(plan: &LaunchPlan) -> Result<(), PlanError> {
    let hosts = plan.grants.iter().any(|grant| matches!(grant, Grant::Host { .. }));
    let Some(proxy) = &plan.proxy else {
        return if hosts { Err(PlanError::ProxyMissing) } else { Ok(()) };
    };
    check_path("proxy socket", proxy)?;
    if !hosts {
        return Err(PlanError::ProxyUnused);
    }
    for (grant, kind) in [(Grant::NetView, "net_view"), (Grant::OpenNetwork, "open_network")] {
        if plan.grants.contains(&grant) {
            return Err(PlanError::ProxyConflict { kind });
        }
    }
    Ok(())
}

/// A host grant names a host in the normal form the proxy compares (docs/network.md): not empty, lowercase ASCII
/// (IDNA already applied), without `/`, `:`, whitespace or control characters; its port, when given, is 1–65535.
pub(super) fn check_host_grant(host: &str, port: Option<u16>) -> Result<(), PlanError> {
    let reason = if host.is_empty() {
        "the host is empty"
    } else if !host.is_ascii() {
        "the host is not ASCII (its IDNA form is)"
    } else if host.bytes().any(|b| b.is_ascii_uppercase()) {
        "the host is not lowercase"
    } else if host.bytes().any(|b| b == b'/' || b == b':') {
        "the host holds `/` or `:` (a grant names the port apart, and no path)"
    } else if host.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
        "the host holds whitespace or a control character"
    } else if port == Some(0) {
        "the port must be 1 to 65535"
    } else {
        return Ok(());
    };
    Err(PlanError::BadHostGrant {
        host: host.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn host(host: &str, port: Option<u16>) -> Grant {
        Grant::Host {
            host: host.into(),
            port,
        }
    }

    fn plan(grants: Vec<Grant>, proxy: Option<&str>) -> LaunchPlan {
        let mut plan = LaunchPlan::new("/usr/bin/bwrap", vec!["true".into()], "/work");
        plan.grants = grants;
        plan.proxy = proxy.map(PathBuf::from);
        plan
    }

    #[test]
    fn host_grants_pass_with_a_proxy_and_round_trip() {
        let plan = plan(
            vec![host("example.com", None), host("crates.io", Some(8443))],
            Some("/run/user/1000/efr/proxy/7.sock"),
        );
        plan.validate().unwrap();
        let json = serde_json::to_string(&plan).unwrap();
        assert!(json.contains(r#""proxy":"/run/user/1000/efr/proxy/7.sock""#), "{json}");
        assert_eq!(serde_json::from_str::<LaunchPlan>(&json).unwrap(), plan);
        // Without a proxy the member is left out, so older plans read the same.
        let json = serde_json::to_string(&LaunchPlan::new("/b", vec!["x".into()], "/")).unwrap();
        assert!(!json.contains("proxy"), "{json}");
    }

    #[test]
    fn proxy_comes_exactly_with_host_grants() {
        assert_eq!(
            plan(vec![host("example.com", None)], None).validate(),
            Err(PlanError::ProxyMissing)
        );
        assert_eq!(plan(vec![], Some("/p.sock")).validate(), Err(PlanError::ProxyUnused));
        assert_eq!(
            plan(vec![Grant::Write { path: "/w".into() }], Some("/p.sock")).validate(),
            Err(PlanError::ProxyUnused)
        );
        plan(vec![], None).validate().unwrap();
    }

    #[test]
    fn proxy_excludes_the_host_network() {
        for (grant, kind) in [(Grant::NetView, "net_view"), (Grant::OpenNetwork, "open_network")] {
            let err = plan(vec![host("example.com", None), grant], Some("/p.sock"))
                .validate()
                .unwrap_err();
            assert_eq!(err, PlanError::ProxyConflict { kind });
            assert!(err.to_string().contains(kind), "{err}");
        }
    }

    #[test]
    fn the_proxy_path_is_absolute_and_normal() {
        let grants = || vec![host("example.com", None)];
        assert!(matches!(
            plan(grants(), Some("p.sock")).validate(),
            Err(PlanError::NotAbsolute {
                what: "proxy socket",
                ..
            })
        ));
        assert!(matches!(
            plan(grants(), Some("/run/../p.sock")).validate(),
            Err(PlanError::NotNormal {
                what: "proxy socket",
                ..
            })
        ));
        assert_eq!(
            plan(grants(), Some("/p\0.sock")).validate(),
            Err(PlanError::Nul { what: "proxy socket" })
        );
    }

    #[test]
    fn host_grants_name_a_normal_host_and_a_real_port() {
        for good in [
            "example.com",
            "a-b.example.com",
            "xn--bcher-kva.example",
            "localhost",
            "x",
        ] {
            check_host_grant(good, None).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
        check_host_grant("example.com", Some(1)).unwrap();
        check_host_grant("example.com", Some(65535)).unwrap();
        for (bad, port) in [
            ("", None),
            ("Example.com", None),
            ("bücher.example", None),
            ("example.com/x", None),
            ("example.com:443", None),
            ("[::1]", None),
            ("exa mple.com", None),
            ("example.com\t", None),
            ("example.com\n", None),
            ("exa\0mple.com", None),
            ("example.com", Some(0)),
        ] {
            let err = plan(vec![host(bad, port)], Some("/p.sock")).validate().unwrap_err();
            assert!(
                matches!(&err, PlanError::BadHostGrant { host, .. } if host == bad),
                "{bad:?} {port:?}: {err}"
            );
            assert!(err.to_string().starts_with("the host grant "), "{err}");
        }
    }
}
