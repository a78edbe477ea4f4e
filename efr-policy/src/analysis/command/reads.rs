//! What a line reads: where its git commands look for their repository, and the reads that reach efr's state root
//! or a credential store (a path inside the state root is a floor; the rest are [`LineAnalysis::store_reads`], which
//! cautious asks about only when efr's read-only sandbox, which masks them, is not available).
//!
//! [`LineAnalysis::store_reads`]: crate::LineAnalysis::store_reads

use std::path::{Path, PathBuf};

use efr_protocol::internal::DEFAULT_HOME_MASKS;

use super::Analyser;
use crate::floors::{Place, place};
use crate::git_config::GitPlace;
use crate::readonly;
use crate::shell::{Cwd, Word};

impl Analyser<'_> {
    /// Where a git command looks for its repository: one place per directory it may start in, or one unplaced.
    pub(super) fn git_places(&mut self, args: &[Word], cwd: &Cwd) {
        let location = readonly::git::location(args, self.scope.home);
        let places: Vec<GitPlace> = match (cwd, location) {
            (Cwd::Known(dirs), Some(location)) => dirs
                .iter()
                .map(|dir| GitPlace {
                    dir: Some(dir.clone()),
                    location: location.clone(),
                })
                .collect(),
            _ => vec![GitPlace {
                dir: None,
                location: Vec::new(),
            }],
        };
        for place in places {
            if !self.out.git.contains(&place) {
                self.out.git.push(place);
            }
        }
    }

    pub(super) fn read_target(&mut self, word: &Word, cwd: &Cwd) {
        if let Place::At(paths) = place(word, cwd, self.scope.home) {
            for path in &paths {
                if let Some(refusal) = self.scope.efr.read_refusal(path) {
                    self.refuse(refusal);
                }
                if !self.out.paths.contains(path) {
                    self.out.paths.push(path.clone());
                }
            }
            // A glob placed above efr's state root that goes on deeper (`~/.local/*/efr/keys/*`) may read it; one
            // name of a folder (`~/*`) does not match `.local`.
            let deeper = word.glob && {
                let text = word.value.as_deref().unwrap_or(&word.source);
                let pattern = text.find(['*', '?', '[', '{']).map_or("", |at| &text[at..]);
                pattern.contains('/') || text.rsplit('/').next().is_some_and(|last| last.starts_with('.'))
            };
            if deeper && paths.iter().any(|p| self.scope.efr.above_state(p)) {
                self.store_read(format!("`{}`, a glob that may reach efr's keys and state", word.source));
            }
            for path in &paths {
                if let Some(store) = self.store_of(path) {
                    self.store_read(format!("`{}`, in the credential store {store}", word.source));
                } else if let Some(mask) = self.extra_mask_of(path) {
                    self.store_read(format!(
                        "`{}`, in {mask}, which [sandbox] extra_masks masks",
                        word.source
                    ));
                } else if deeper && self.above_store(path) {
                    self.store_read(format!("`{}`, a glob that may reach a credential store", word.source));
                }
            }
        } else if word.value.is_none() && word.home_relative.is_none() && word.source.contains('/') {
            // A path built from a variable efr cannot resolve (`"$PWD/../.ssh/id_ed25519"`) may name any file.
            self.store_read(format!(
                "`{}`, a path that expands to what efr cannot resolve",
                word.source
            ));
        }
    }

    /// Records a read that efr's read-only sandbox would mask.
    fn store_read(&mut self, what: String) {
        if !self.out.store_reads.contains(&what) {
            self.out.store_reads.push(what);
        }
    }

    /// The default credential stores under the home folder ([`DEFAULT_HOME_MASKS`]).
    fn stores(&self) -> Vec<PathBuf> {
        self.scope
            .home
            .map(|home| DEFAULT_HOME_MASKS.iter().map(|store| home.join(store)).collect())
            .unwrap_or_default()
    }

    /// The store (as a question shows it) that holds `path`, if one does.
    fn store_of(&self, path: &Path) -> Option<String> {
        self.stores()
            .into_iter()
            .find(|store| crate::paths::is_within(path, store))
            .map(|store| self.show(&store))
    }

    /// The path of the config's `extra_masks` (as a question shows it) that holds `path`, if one does.
    fn extra_mask_of(&self, path: &Path) -> Option<String> {
        self.scope
            .extra_masks
            .iter()
            .find(|mask| crate::paths::is_within(path, mask))
            .map(|mask| self.show(mask))
    }

    /// Whether `path` is a folder above a credential store or a path of `extra_masks` (a recursive read or a deep
    /// glob there reaches it).
    fn above_store(&self, path: &Path) -> bool {
        self.stores()
            .iter()
            .chain(self.scope.extra_masks)
            .any(|store| crate::paths::is_within(store, path) && store != path)
    }

    /// A recursive read (`grep -r`, `rg`, `diff -r`) of efr's state root or a folder above it reads efr's keys.
    pub(super) fn recursive_read(&mut self, name: &str, args: &[Word], cwd: &Cwd) {
        let option = |short: char, long: &[&str]| {
            args.iter().filter_map(|w| w.value.as_deref()).any(|v| {
                (v.starts_with('-') && !v.starts_with("--") && v.contains(short))
                    || long.iter().any(|l| v == *l || v.starts_with(&format!("{l}=")))
            })
        };
        let recursive = match name {
            "grep" | "egrep" | "fgrep" => {
                option('r', &["--recursive", "--dereference-recursive"])
                    || option('R', &[])
                    || args.iter().any(|w| w.value.as_deref() == Some("--directories=recurse"))
            }
            "rg" => true,
            "diff" => option('r', &["--recursive"]),
            _ => false,
        };
        if !recursive {
            return;
        }
        let operands: Vec<&Word> = args
            .iter()
            .filter(|w| !w.value.as_deref().is_some_and(|v| v.starts_with('-')))
            .collect();
        // grep's and rg's first operand is the pattern; with no path they read the folder they run in.
        let searches_cwd = matches!(name, "grep" | "egrep" | "fgrep" | "rg") && operands.len() <= 1;
        let mut places: Vec<PathBuf> = Vec::new();
        for word in operands {
            if let Place::At(paths) = place(word, cwd, self.scope.home) {
                places.extend(paths);
            }
        }
        if searches_cwd && let Cwd::Known(dirs) = cwd {
            places.extend(dirs.iter().cloned());
        }
        if places.iter().any(|p| self.scope.efr.above_state(p)) {
            self.store_read(format!("`{name}` reading a folder that holds efr's keys and state"));
        } else if places.iter().any(|p| self.above_store(p)) {
            self.store_read(format!("`{name}` reading a folder that holds a credential store"));
        }
    }
}
