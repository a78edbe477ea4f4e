//! A call's bus policy: which names it may see, talk to and own, which methods it may call on names it may not talk
//! to, which signals it may receive from them, and to which names descriptors may pass (docs/bus.md, "Policy").
//!
//! The rule forms follow xdg-dbus-proxy's, so they read the same to anyone who wrote a Flatpak manifest:
//! - a name is `org.foo.Bar`, or `org.foo.*` for `org.foo` and every name under it;
//! - a call or broadcast rule is `NAME=INTERFACE.MEMBER@PATH`, where `INTERFACE.MEMBER` may be `*` or
//!   `INTERFACE.*`, `@PATH` may be left out (any path), and `PATH` may end in `/*` (that path and every path under
//!   it).

use std::fmt;

/// How far a call may go with a name. Each level includes the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Nothing: the name does not exist for the call.
    None,
    /// The name and its owner are visible (ListNames, GetNameOwner, NameOwnerChanged).
    See,
    /// Method calls to it, and its signals and replies, pass.
    Talk,
    /// The call may also own it (RequestName).
    Own,
}

/// A bus name or a prefix of names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern {
    name: String,
    prefix: bool,
}

impl NamePattern {
    /// Parses `org.foo.Bar` or `org.foo.*`.
    ///
    /// # Errors
    /// A [`RuleError`] at the byte where the name goes wrong.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let (name, prefix) = match text.strip_suffix(".*") {
            Some(name) => (name, true),
            None => (text, false),
        };
        check_dotted(name, 0, "a bus name")?;
        if name.starts_with(':') {
            return Err(RuleError::new(
                0,
                "a rule names well-known names, not unique ones (:1.42)",
            ));
        }
        Ok(Self {
            name: name.to_owned(),
            prefix,
        })
    }

    /// Whether `name` is this name or, for a prefix, under it.
    #[must_use]
    pub fn matches(&self, name: &str) -> bool {
        if self.prefix {
            name == self.name || (name.starts_with(&self.name) && name.as_bytes().get(self.name.len()) == Some(&b'.'))
        } else {
            name == self.name
        }
    }
}

impl fmt::Display for NamePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if self.prefix {
            f.write_str(".*")?;
        }
        Ok(())
    }
}

/// A call or broadcast rule: `NAME=INTERFACE.MEMBER@PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    name: NamePattern,
    /// `None` for any interface.
    interface: Option<String>,
    /// `None` for any member.
    member: Option<String>,
    /// `None` for any path; `(path, true)` for that path and every path under it.
    path: Option<(String, bool)>,
}

impl Rule {
    /// Parses a rule.
    ///
    /// # Errors
    /// A [`RuleError`] with the byte offset in `text` where the rule goes wrong.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let Some((name, rest)) = text.split_once('=') else {
            return Err(RuleError::new(
                text.len(),
                "a rule is NAME=INTERFACE.MEMBER@PATH (the = is missing)",
            ));
        };
        let name = NamePattern::parse(name)?;
        let base = name_len(text);
        let (method, path) = match rest.split_once('@') {
            Some((method, path)) => (method, Some(path)),
            None => (rest, None),
        };
        let (interface, member) = match method {
            "*" | "" => (None, None),
            _ => {
                let Some((interface, member)) = method.rsplit_once('.') else {
                    return Err(RuleError::new(base, "INTERFACE.MEMBER needs a dot (or is `*`)"));
                };
                check_dotted(interface, base, "an interface")?;
                let member = match member {
                    "*" => None,
                    member if is_member(member) => Some(member.to_owned()),
                    _ => {
                        return Err(RuleError::new(
                            base + interface.len() + 1,
                            "a member is letters, digits and _, not starting with a digit",
                        ));
                    }
                };
                (Some(interface.to_owned()), member)
            }
        };
        let path = match path {
            None => None,
            Some(path) => {
                let at = base + method.len() + 1;
                let (path, prefix) = match path.strip_suffix("/*") {
                    Some("") => ("/", true),
                    Some(path) => (path, true),
                    None => (path, false),
                };
                if !is_object_path(path) {
                    return Err(RuleError::new(at, "a path is /, or /a/b with letters, digits and _"));
                }
                Some((path.to_owned(), prefix))
            }
        };
        Ok(Self {
            name,
            interface,
            member,
            path,
        })
    }

    /// Whether a message to or from `name` with this interface, member and path is under the rule.
    #[must_use]
    pub fn matches(&self, name: &str, interface: Option<&str>, member: Option<&str>, path: Option<&str>) -> bool {
        self.name.matches(name)
            && self.interface.as_deref().is_none_or(|want| interface == Some(want))
            && self.member.as_deref().is_none_or(|want| member == Some(want))
            && self.path.as_ref().is_none_or(|(want, prefix)| {
                path.is_some_and(|path| {
                    path == want
                        || (*prefix
                            && (want == "/"
                                || (path.starts_with(want.as_str()) && path.as_bytes().get(want.len()) == Some(&b'/'))))
                })
            })
    }
}

fn name_len(text: &str) -> usize {
    text.find('=').map_or(text.len(), |at| at + 1)
}

/// A rule that does not parse: where (a byte offset in the rule) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The byte offset in the rule's text.
    pub at: usize,
    /// What is wrong, in words.
    pub message: String,
}

impl RuleError {
    fn new(at: usize, message: &str) -> Self {
        Self {
            at,
            message: message.to_owned(),
        }
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.at, self.message)
    }
}

impl std::error::Error for RuleError {}

/// The names a `bus_filter` grant on the session bus may talk to by default (docs/bus.md, "The default policy").
pub const SESSION_DEFAULT_TALK: &[&str] = &["org.freedesktop.Notifications", "org.freedesktop.portal.*"];

/// The names to and from which descriptors pass by default on the session bus: the portals take files as
/// descriptors.
pub const SESSION_DEFAULT_FDS: &[&str] = &["org.freedesktop.portal.*"];

/// A call's whole policy on one bus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Names and how far the call may go with each; the highest matching level counts.
    pub names: Vec<(NamePattern, Level)>,
    /// Methods the call may call on names it may only see (or not even see).
    pub calls: Vec<Rule>,
    /// Signals the call may receive from names it may not talk to.
    pub broadcasts: Vec<Rule>,
    /// Names to and from which descriptors may pass.
    pub fds: Vec<NamePattern>,
}

impl Policy {
    /// The default policy of a `bus_filter` grant on the session bus: talk to the notification daemon and the
    /// desktop portals, which may pass descriptors (docs/bus.md, "The default policy"): [`SESSION_DEFAULT_TALK`]
    /// and [`SESSION_DEFAULT_FDS`].
    #[must_use]
    pub fn session_default() -> Self {
        let name = |text: &&str| NamePattern {
            name: text.trim_end_matches(".*").to_owned(),
            prefix: text.ends_with(".*"),
        };
        Self {
            names: SESSION_DEFAULT_TALK
                .iter()
                .map(|text| (name(text), Level::Talk))
                .collect(),
            calls: Vec::new(),
            broadcasts: Vec::new(),
            fds: SESSION_DEFAULT_FDS.iter().map(name).collect(),
        }
    }

    /// How far the call may go with a well-known name.
    #[must_use]
    pub fn level(&self, name: &str) -> Level {
        self.names
            .iter()
            .filter(|(pattern, _)| pattern.matches(name))
            .map(|(_, level)| *level)
            .max()
            .unwrap_or(Level::None)
    }

    /// Whether a method call rule lets the call call this method of `name`.
    #[must_use]
    pub fn may_call(&self, name: &str, interface: Option<&str>, member: Option<&str>, path: Option<&str>) -> bool {
        self.calls
            .iter()
            .any(|rule| rule.matches(name, interface, member, path))
    }

    /// Whether a broadcast rule lets the call receive this signal from `name`.
    #[must_use]
    pub fn may_receive(&self, name: &str, interface: Option<&str>, member: Option<&str>, path: Option<&str>) -> bool {
        self.broadcasts
            .iter()
            .any(|rule| rule.matches(name, interface, member, path))
    }

    /// Whether descriptors may pass to or from `name`.
    #[must_use]
    pub fn fds_allowed(&self, name: &str) -> bool {
        self.fds.iter().any(|pattern| pattern.matches(name))
    }

    /// Whether any rule names `name` (so that it is visible, as with SEE).
    #[must_use]
    pub fn mentions(&self, name: &str) -> bool {
        self.level(name) >= Level::See
            || self.calls.iter().any(|rule| rule.name.matches(name))
            || self.broadcasts.iter().any(|rule| rule.name.matches(name))
    }
}

fn check_dotted(text: &str, at: usize, what: &str) -> Result<(), RuleError> {
    let elements: Vec<&str> = text.split('.').collect();
    if text.is_empty() || text.len() > 255 {
        return Err(RuleError::new(at, &format!("{what} is 1 to 255 bytes")));
    }
    if elements.len() < 2 {
        return Err(RuleError::new(
            at,
            &format!("{what} has at least two elements (org.foo)"),
        ));
    }
    let mut offset = at;
    for element in elements {
        let ok = !element.is_empty()
            && !element.starts_with(|c: char| c.is_ascii_digit())
            && element
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(RuleError::new(
                offset,
                &format!("{what} is elements of letters, digits, _ and -, not starting with a digit"),
            ));
        }
        offset += element.len() + 1;
    }
    Ok(())
}

fn is_member(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 255
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn is_object_path(path: &str) -> bool {
    path == "/"
        || (path.starts_with('/')
            && path[1..]
                .split('/')
                .all(|element| !element.is_empty() && element.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_matches_the_name_and_names_under_it() {
        let pattern = NamePattern::parse("org.foo.*").ok();
        let Some(pattern) = pattern else { panic!("parses") };
        assert!(pattern.matches("org.foo"));
        assert!(pattern.matches("org.foo.Bar"));
        assert!(pattern.matches("org.foo.Bar.Baz"));
        assert!(!pattern.matches("org.foobar"));
        assert!(!pattern.matches("org"));
    }

    #[test]
    fn call_rules_match_interface_member_and_path() {
        let Ok(rule) = Rule::parse("org.foo=org.foo.Iface.Get@/org/foo/*") else {
            panic!("parses")
        };
        assert!(rule.matches("org.foo", Some("org.foo.Iface"), Some("Get"), Some("/org/foo")));
        assert!(rule.matches("org.foo", Some("org.foo.Iface"), Some("Get"), Some("/org/foo/a/b")));
        assert!(!rule.matches("org.foo", Some("org.foo.Iface"), Some("Get"), Some("/org/foobar")));
        assert!(!rule.matches("org.foo", Some("org.foo.Iface"), Some("Set"), Some("/org/foo")));
        assert!(!rule.matches("org.foo", None, Some("Get"), Some("/org/foo")));
        let Ok(any) = Rule::parse("org.foo.*=*") else {
            panic!("parses")
        };
        assert!(any.matches("org.foo.X", None, Some("M"), Some("/")));
        let Ok(member) = Rule::parse("org.foo=org.foo.Iface.*@/") else {
            panic!("parses")
        };
        assert!(member.matches("org.foo", Some("org.foo.Iface"), Some("Any"), Some("/")));
        assert!(!member.matches("org.foo", Some("org.foo.Iface"), Some("Any"), Some("/x")));
    }

    #[test]
    fn bad_rules_say_where() {
        let error = |text: &str| Rule::parse(text).err().map(|e| e.at);
        assert_eq!(error("org.foo"), Some(7));
        assert_eq!(error("org..foo=*"), Some(4));
        assert_eq!(error("org.foo=Iface"), Some(8));
        assert_eq!(error("org.foo=a.b.9x"), Some(12));
        assert_eq!(error("org.foo=a.b.M@x"), Some(14));
        assert!(NamePattern::parse(":1.2").is_err());
        assert!(NamePattern::parse("org").is_err());
    }

    #[test]
    fn the_default_talks_to_notifications_and_portals_only() {
        let policy = Policy::session_default();
        assert_eq!(policy.level("org.freedesktop.Notifications"), Level::Talk);
        assert_eq!(policy.level("org.freedesktop.portal.Desktop"), Level::Talk);
        assert_eq!(policy.level("org.freedesktop.secrets"), Level::None);
        assert!(policy.fds_allowed("org.freedesktop.portal.Desktop"));
        assert!(!policy.fds_allowed("org.freedesktop.Notifications"));
    }
}
