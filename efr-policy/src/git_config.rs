//! What a repository can make git run: the check behind cautious's read-only git commands.
//!
//! git runs programs that a repository's own config names, even for a command that only reads: `core.fsmonitor`
//! on `git status`, a filter's `clean` command, a diff driver's `textconv` on `git diff` or `git blame`,
//! `core.pager`, `diff.external`, a `gpg.program` with `log.showSignature`, and more; `git status` also runs the
//! `post-index-change` hook when it refreshes the index, and recurses into submodules, which have configs and hooks
//! of their own. A contained call in auto mode may write all of these in a repository it makes or in a submodule's
//! git folder, and a later cautious `git status` would run them as the user, outside the sandbox.
//!
//! So cautious runs a read-only line with git in it only after efrd has looked at every repository the line's git
//! commands use ([`GitPlace`]: the directory git starts in and the options that choose the repository), with their
//! populated submodules, and found them plain ([`GitTrust::Plain`]):
//! - every key of the repository's own config (scopes `local` and `worktree`, included files too) is on an
//!   allowlist of keys that never name a program ([`allowed`]); an unknown key counts as one that may;
//! - there is no `post-index-change` hook.
//!
//! The user's global and system config are the user's own and are not judged. The check itself (running
//! `git config --list`, `git rev-parse` and `git ls-files`, none of which runs a program from config) is the turn's
//! (`turn/git_check.rs`); this module holds the rules and stays pure.
//!
//! The check and the run are two moments: a command left running in the sandbox could still change a repository
//! between them. That window is a few milliseconds, and the run only reads.

use std::path::PathBuf;

/// Where one git command of a line looks for its repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GitPlace {
    /// The directory git starts in (absolute), `None` when the analysis cannot place it.
    pub dir: Option<PathBuf>,
    /// git's global options that choose the repository, as [`super::readonly::git::location`] gives them.
    pub location: Vec<String>,
}

/// What efrd found at a [`GitPlace`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitTrust {
    /// Nothing there can make git run a program (or there is no repository).
    Plain,
    /// Something can: a config key (`core.fsmonitor`) or a hook (`hooks/post-index-change`), and the repository
    /// it is in.
    Runs {
        /// The key or the hook.
        what: String,
        /// The repository's top folder or git folder.
        repository: PathBuf,
    },
    /// efrd could not tell: the reason, in a few words.
    Unchecked(String),
}

/// The keys of a repository's own config that never make git run a program, by their full name as
/// `git config --list` prints it (section and key in lower case). `*` stands for one subsection.
const ALLOWED: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.worktree",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.splitindex",
    "core.untrackedcache",
    "core.quotepath",
    "core.checkstat",
    "core.trustctime",
    "core.abbrev",
    "core.commitgraph",
    "core.multipackindex",
    "core.compression",
    "core.longpaths",
    // Where hooks live (husky sets it): the one hook a read runs is looked for there (`rev-parse --git-path`
    // follows it), so a planted `post-index-change` is still found.
    "core.hookspath",
    "commit.gpgsign",
    "tag.gpgsign",
    "gpg.format",
    "rerere.enabled",
    "push.followtags",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.prunetags",
    "remote.*.mirror",
    "branch.*.remote",
    "branch.*.pushremote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.description",
    "submodule.*.url",
    "submodule.*.active",
    "submodule.*.branch",
    "user.name",
    "user.email",
    "user.signingkey",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "rebase.autostash",
    "rebase.autosquash",
    "merge.ff",
    "merge.conflictstyle",
    "status.showuntrackedfiles",
    "diff.renames",
    "diff.algorithm",
    "diff.colormoved",
    "log.date",
    "log.decorate",
    "gc.auto",
    "gc.autodetach",
    "maintenance.auto",
    "maintenance.strategy",
    "lfs.repositoryformatversion",
    "lfs.url",
    "lfs.locksverify",
    // Not `extensions.partialclone` nor `remote.*.promisor`: a partial clone fetches what it lacks while it reads
    // (the network, and `gc --auto` with its hook, without a question).
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "extensions.refstorage",
    "extensions.preciousobjects",
];

/// git-lfs's own filter, as `git lfs install --local` writes it: allowed with exactly these values.
const LFS_FILTER: &[(&str, &str)] = &[
    ("filter.lfs.clean", "git-lfs clean -- %f"),
    ("filter.lfs.smudge", "git-lfs smudge -- %f"),
    ("filter.lfs.process", "git-lfs filter-process"),
    ("filter.lfs.required", "true"),
];

/// Whether a key of a repository's own config, with its value (`None` for a key written without `=`), never makes
/// git run a program. Sections `color.*` and `advice.*` are allowed whole (colours and hints); anything not listed
/// is not.
#[must_use]
pub fn allowed(key: &str, value: Option<&str>) -> bool {
    if let Some((_, want)) = LFS_FILTER.iter().find(|(k, _)| *k == key) {
        return value == Some(*want);
    }
    let parts: Vec<&str> = key.split('.').collect();
    if matches!(parts.first(), Some(&("color" | "advice"))) {
        return true;
    }
    ALLOWED.iter().any(|pattern| {
        let want: Vec<&str> = pattern.split('.').collect();
        match (want.as_slice(), parts.as_slice()) {
            ([section, "*", name], [first, .., last]) if parts.len() >= 3 => section == first && name == last,
            _ => want == parts,
        }
    })
}

/// The first key of a repository's own config that may make git run a program, from the output of
/// `git config --list --show-scope -z` (records of `scope NUL key [LF value] NUL`). Keys of the scopes `local` and
/// `worktree` are judged; the user's (`global`, `system`) and the command line's are not.
///
/// # Errors
/// A listing that does not have this shape, in a few words.
pub fn first_unplain_key(listing: &[u8]) -> Result<Option<String>, String> {
    let text = std::str::from_utf8(listing).map_err(|_| "git's config listing is not UTF-8".to_owned())?;
    let mut fields = text.split('\0');
    loop {
        let Some(scope) = fields.next() else { return Ok(None) };
        if scope.is_empty() {
            return Ok(None);
        }
        let entry = fields
            .next()
            .ok_or_else(|| "git's config listing ends inside an entry".to_owned())?;
        let (key, value) = match entry.split_once('\n') {
            Some((key, value)) => (key, Some(value)),
            None => (entry, None),
        };
        if matches!(scope, "local" | "worktree") && !allowed(key, value) {
            return Ok(Some(key.to_owned()));
        }
    }
}

/// The gitlinks (submodules) of an index, from the output of `git ls-files --stage -z` (records of
/// `mode SP object SP stage TAB path NUL`): the paths of the entries of mode 160000.
#[must_use]
pub fn gitlinks(listing: &[u8]) -> Vec<String> {
    listing
        .split(|b| *b == 0)
        .filter_map(|record| {
            let record = std::str::from_utf8(record).ok()?;
            let (meta, path) = record.split_once('\t')?;
            meta.starts_with("160000 ").then(|| path.to_owned())
        })
        .collect()
}

/// The question's reason when a line's git commands are not all [`GitTrust::Plain`], or `None` when cautious may
/// run it. A place that `checks` does not hold counts as unchecked, so a caller that forgets the check gets a
/// question, not a silent run.
#[must_use]
pub fn cautious_reason(
    places: &[GitPlace],
    checks: &[(GitPlace, GitTrust)],
    show: impl Fn(&std::path::Path) -> String,
) -> Option<String> {
    for place in places {
        if place.dir.is_none() {
            return Some(
                "cautious asks before git in a folder efr cannot place, whose repository it cannot check".to_owned(),
            );
        }
        match checks.iter().find(|(p, _)| p == place).map(|(_, trust)| trust) {
            Some(GitTrust::Plain) => {}
            Some(GitTrust::Runs { what, repository }) => {
                return Some(format!(
                    "cautious asks before git in {}, whose own {what} can make git run a program",
                    show(repository)
                ));
            }
            Some(GitTrust::Unchecked(why)) => {
                return Some(format!(
                    "cautious asks before git where efr could not check what the repository runs ({why})"
                ));
            }
            None => {
                return Some("cautious asks before git where efr did not check what the repository runs".to_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (scope, entry) in entries {
            out.extend_from_slice(scope.as_bytes());
            out.push(0);
            out.extend_from_slice(entry.as_bytes());
            out.push(0);
        }
        out
    }

    #[test]
    fn a_fresh_repository_is_plain() {
        let fresh = listing(&[
            ("global", "user.name\nA"),
            ("global", "core.pager\nless"),
            ("local", "core.repositoryformatversion\n0"),
            ("local", "core.filemode\ntrue"),
            ("local", "core.bare\nfalse"),
            ("local", "core.logallrefupdates\ntrue"),
            ("local", "remote.origin.url\nhttps://example.com/a.git"),
            ("local", "remote.origin.fetch\n+refs/heads/*:refs/remotes/origin/*"),
            ("local", "branch.main.remote\norigin"),
            ("local", "branch.feat.x.merge\nrefs/heads/feat.x"),
            ("local", "color.ui\nauto"),
            ("local", "filter.lfs.clean\ngit-lfs clean -- %f"),
            ("local", "filter.lfs.required\ntrue"),
            ("local", "core.sparsecheckout"),
        ]);
        assert_eq!(first_unplain_key(&fresh), Ok(None));
        assert_eq!(first_unplain_key(b""), Ok(None));
    }

    #[test]
    fn keys_that_name_programs_are_found_in_any_own_scope() {
        for (scope, entry, key) in [
            ("local", "core.fsmonitor\ntouch /tmp/x", "core.fsmonitor"),
            ("worktree", "core.pager\nsh -c x", "core.pager"),
            ("local", "diff.x.textconv\nevil", "diff.x.textconv"),
            ("local", "filter.evil.clean\nevil", "filter.evil.clean"),
            ("local", "filter.lfs.clean\nevil %f", "filter.lfs.clean"),
            ("local", "include.path\n../extra", "include.path"),
            ("local", "includeif.gitdir:/x.path\ny", "includeif.gitdir:/x.path"),
            ("local", "remote.origin.uploadpack\nevil", "remote.origin.uploadpack"),
            ("local", "submodule.s.update\n!evil", "submodule.s.update"),
            ("local", "log.showsignature\ntrue", "log.showsignature"),
            ("local", "alias.st\n!evil", "alias.st"),
            ("local", "some.new.key\nx", "some.new.key"),
            ("local", "extensions.partialclone\norigin", "extensions.partialclone"),
            ("local", "remote.origin.promisor\ntrue", "remote.origin.promisor"),
        ] {
            let found = first_unplain_key(&listing(&[("local", "core.bare\nfalse"), (scope, entry)]));
            assert_eq!(found, Ok(Some(key.to_owned())), "{entry}");
        }
        // The user's own config is not judged.
        let global = listing(&[("global", "core.fsmonitor\nx"), ("system", "diff.x.textconv\ny")]);
        assert_eq!(first_unplain_key(&global), Ok(None));
    }

    #[test]
    fn a_broken_listing_is_an_error() {
        assert!(first_unplain_key(b"local").is_err());
        assert!(first_unplain_key(&[b'l', 0xff, 0]).is_err());
    }

    #[test]
    fn a_subsection_pattern_needs_a_subsection() {
        assert!(allowed("remote.o.url", None));
        assert!(allowed("remote.a.b.url", None));
        assert!(!allowed("remote.url", None));
        assert!(!allowed("core.fsmonitor", Some("false")));
    }

    #[test]
    fn gitlinks_are_the_entries_of_mode_160000() {
        let index =
            b"100644 aaaa 0\tsrc/main.rs\x00160000 bbbb 0\tvendor/lib\x00120000 cccc 0\tlink\x00160000 dddd 0\ta b\x00";
        assert_eq!(gitlinks(index), vec!["vendor/lib".to_owned(), "a b".to_owned()]);
        assert!(gitlinks(b"").is_empty());
    }

    #[test]
    fn the_reason_names_what_runs_and_an_unchecked_place_asks() {
        let place = |dir: Option<&str>| GitPlace {
            dir: dir.map(PathBuf::from),
            location: Vec::new(),
        };
        let show = |p: &std::path::Path| p.display().to_string();
        let plain = (place(Some("/p")), GitTrust::Plain);
        assert_eq!(
            cautious_reason(&[place(Some("/p"))], std::slice::from_ref(&plain), show),
            None
        );
        assert_eq!(cautious_reason(&[], &[], show), None);
        let runs = (
            place(Some("/p/sub")),
            GitTrust::Runs {
                what: "config key `core.fsmonitor`".to_owned(),
                repository: PathBuf::from("/p/sub"),
            },
        );
        let reason = cautious_reason(
            &[place(Some("/p")), place(Some("/p/sub"))],
            &[plain.clone(), runs],
            show,
        );
        assert_eq!(
            reason.as_deref(),
            Some(
                "cautious asks before git in /p/sub, whose own config key `core.fsmonitor` can make git run a program"
            )
        );
        let missing = cautious_reason(&[place(Some("/q"))], std::slice::from_ref(&plain), show);
        assert!(missing.is_some_and(|r| r.contains("did not check")));
        let unplaced = cautious_reason(&[place(None)], &[], show);
        assert!(unplaced.is_some_and(|r| r.contains("cannot place")));
        let unchecked = cautious_reason(
            &[place(Some("/r"))],
            &[(place(Some("/r")), GitTrust::Unchecked("git timed out".to_owned()))],
            show,
        );
        assert!(unchecked.is_some_and(|r| r.contains("(git timed out)")));
    }
}
