//! The default masks: what a contained call never sees unless a grant unmasks it (docs/architecture.md, "The sandbox").
//!
//! Credential stores under the user's home ([`DEFAULT_HOME_MASKS`]), efr's own roots (keys, the event log, config),
//! and the user's runtime folder `/run/user/$UID` (the session bus, ssh and gpg agents, the keyring daemon). The
//! user's config can add paths (`MaskSource::Config`); efrd puts them all in the plan with [`default_masks`].

use std::path::{Path, PathBuf};

use crate::internal::launch::{Mask, MaskSource};

/// Credential stores, relative to the user's home: keys (ssh, gpg), cloud and forge tokens, `.netrc`, the docker
/// login, browser profiles (cookies, saved passwords) and desktop keyrings.
pub const DEFAULT_HOME_MASKS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".git-credentials",
    ".kube",
    ".netrc",
    ".docker/config.json",
    ".password-store",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".local/share/keyrings",
];

/// The masks of a plan: [`DEFAULT_HOME_MASKS`] under `home`, the runtime folder (`/run/user/$UID`, or the user's
/// `$XDG_RUNTIME_DIR` when it differs), efr's own roots, then the config's additions, in that order and without
/// repeats.
pub fn default_masks(home: &Path, runtime_dir: &Path, efr_roots: &[PathBuf], config: &[PathBuf]) -> Vec<Mask> {
    let mut masks: Vec<Mask> = Vec::new();
    let mut push = |path: PathBuf, source: MaskSource| {
        if !masks.iter().any(|mask| mask.path == path) {
            masks.push(Mask { path, source });
        }
    };
    for relative in DEFAULT_HOME_MASKS {
        push(home.join(relative), MaskSource::Default);
    }
    push(runtime_dir.to_path_buf(), MaskSource::RunUser);
    for root in efr_roots {
        push(root.clone(), MaskSource::EfrRoot);
    }
    for path in config {
        push(path.clone(), MaskSource::Config);
    }
    masks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_come_first_and_repeats_go() {
        let masks = default_masks(
            Path::new("/home/u"),
            Path::new("/run/user/1000"),
            &["/home/u/.local/state/efr".into(), "/run/user/1000".into()],
            &["/home/u/.ssh".into(), "/home/u/.vault-token".into()],
        );
        assert_eq!(masks.len(), DEFAULT_HOME_MASKS.len() + 3);
        assert_eq!(
            masks[0],
            Mask {
                path: "/home/u/.ssh".into(),
                source: MaskSource::Default
            }
        );
        let tail: Vec<_> = masks[DEFAULT_HOME_MASKS.len()..]
            .iter()
            .map(|m| (m.path.clone(), m.source))
            .collect();
        assert_eq!(
            tail,
            vec![
                ("/run/user/1000".into(), MaskSource::RunUser),
                ("/home/u/.local/state/efr".into(), MaskSource::EfrRoot),
                ("/home/u/.vault-token".into(), MaskSource::Config),
            ]
        );
    }
}
