//! The base plan of a contained call: what every call of auto mode starts from before its grants
//! (docs/architecture.md, "The sandbox"), and what `sandbox.explain` reads.
//!
//! - writable: the call's project root ([`project_root`]: the nearest git root of its working directory, or the
//!   directory itself) and `$SCRATCH` (one folder per conversation under [`Layout::scratch_root`], `$state/scratch`);
//!   the private `/tmp` and `/dev/shm` come with every plan ([`LaunchPlan::mounts`]);
//! - masked: the default credential stores under the home, the runtime folder `/run/user/$UID`, efr's own four roots
//!   (keys, the event log, config), then the paths the config adds ([`Layout::masks`]);
//! - protected inside the writable roots: git's folder, config and hooks, and the folder that holds efr's roots when
//!   a writable root holds them ([`super::protect`]);
//! - everything else under `/` read-only, no network.
//!
//! [`Layout`] holds the folders the plan needs and reads no file; [`project_root`] looks for `.git` up the tree, and
//! [`base_plan`] reads the writable roots' `.git`.

use std::path::{Path, PathBuf};

use efr_protocol::ids::ConversationId;
use efr_protocol::internal::{LaunchPlan, Mask, Writable, WritableSource, default_masks};

use super::probe::ProbeOptions;
use super::protect::protect;
use crate::config::Roots;

/// The folders the base plan is made of. Built once per daemon from the probe's options and the roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The user's home (the default masks sit under it).
    pub home: PathBuf,
    /// The user's runtime folder, `/run/user/$UID` (masked).
    pub runtime_dir: PathBuf,
    /// efr's own roots: config, data, state and runtime (masked; `$SCRATCH` inside the state root stays writable,
    /// because the deeper rule decides).
    pub efr_roots: Vec<PathBuf>,
    /// The folder of the conversations' `$SCRATCH` folders: `$state/scratch`.
    pub scratch_root: PathBuf,
    /// The masks the config adds (`[sandbox] extra_masks`, absolute paths), after the defaults.
    pub config_masks: Vec<PathBuf>,
}

impl Layout {
    /// The layout of this daemon: home and runtime folder from the probe's `options`, efr's roots from `roots`, and
    /// the config's masks (`[sandbox] extra_masks`, absolute paths).
    #[must_use]
    pub fn new(options: &ProbeOptions, roots: &Roots, config_masks: &[PathBuf]) -> Self {
        Self {
            home: options.home.clone(),
            runtime_dir: options.runtime_dir.clone(),
            efr_roots: vec![
                roots.config.path.clone(),
                roots.data.path.clone(),
                roots.state.path.clone(),
                roots.runtime.path.clone(),
            ],
            scratch_root: roots.state.path.join(efr_policy::floors::SCRATCH_FOLDER),
            config_masks: config_masks.to_vec(),
        }
    }

    /// The masks of every contained call, in the plan's order, without repeats ([`default_masks`]).
    #[must_use]
    pub fn masks(&self) -> Vec<Mask> {
        default_masks(&self.home, &self.runtime_dir, &self.efr_roots, &self.config_masks)
    }

    /// `$SCRATCH` of one conversation: `$state/scratch/<conversation_id>`.
    #[must_use]
    pub fn scratch_of(&self, conversation: ConversationId) -> PathBuf {
        self.scratch_root.join(conversation.to_string())
    }
}

/// The project root of a working directory: the nearest folder at or above `cwd` that holds `.git` (a folder, or
/// the file of a worktree or submodule), else `cwd` itself. Never `/`, the home folder or a folder above it: a
/// prompt typed in `~` must not make the dotfiles (`.bashrc`, `.config/systemd/user`, ...) the project, writable
/// without a question and from inside the sandbox; a dotfiles repository at `~/.git` is not a project either. `cwd` is
/// taken as given (made absolute-normal by the caller; links are not followed, like `sandbox.explain`).
#[must_use]
pub fn project_root(cwd: &Path, home: Option<&Path>) -> Option<PathBuf> {
    let below_home = |folder: &Path| folder != Path::new("/") && !home.is_some_and(|home| home.starts_with(folder));
    let root = cwd
        .ancestors()
        .take_while(|folder| below_home(folder))
        .find(|folder| folder.join(".git").exists())
        .unwrap_or(cwd);
    below_home(root).then(|| root.to_path_buf())
}

/// The base plan of a call that runs `argv` in `cwd` (absolute) with `bwrap`: the project root (when there is one)
/// and `scratch` writable, the layout's masks, their protected paths ([`protect`]), no grants and no network. `PATH`
/// is the only variable.
#[must_use]
pub fn base_plan(
    layout: &Layout,
    bwrap: &Path,
    argv: Vec<String>,
    cwd: &Path,
    project: Option<&Path>,
    scratch: &Path,
) -> LaunchPlan {
    let mut plan = LaunchPlan::new(bwrap, argv, cwd);
    plan.env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    if let Some(project) = project {
        plan.writable.push(Writable {
            path: project.to_path_buf(),
            source: WritableSource::Project,
        });
    }
    plan.writable.push(Writable {
        path: scratch.to_path_buf(),
        source: WritableSource::Scratch,
    });
    plan.masks = layout.masks();
    protect(&mut plan, &layout.efr_roots);
    plan
}

#[cfg(test)]
mod tests {
    use efr_protocol::internal::MaskSource;

    use super::*;

    fn layout() -> Layout {
        Layout {
            home: "/home/u".into(),
            runtime_dir: "/run/user/1000".into(),
            efr_roots: vec![
                "/home/u/.config/efr".into(),
                "/home/u/.local/share/efr".into(),
                "/home/u/.local/state/efr".into(),
                "/run/user/1000/efr".into(),
            ],
            scratch_root: "/home/u/.local/state/efr/scratch".into(),
            config_masks: vec!["/home/u/.vault-token".into()],
        }
    }

    #[test]
    fn the_project_is_the_nearest_git_root_or_the_folder_itself() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let deep = repo.join("src/bin");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        assert_eq!(project_root(&deep, None), Some(repo.clone()));
        assert_eq!(project_root(&repo, None), Some(repo.clone()));
        // A worktree's .git is a file.
        let worktree = dir.path().join("worktree");
        std::fs::create_dir_all(worktree.join("a")).unwrap();
        std::fs::write(worktree.join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert_eq!(project_root(&worktree.join("a"), None), Some(worktree));
        let plain = dir.path().join("plain");
        std::fs::create_dir(&plain).unwrap();
        assert_eq!(project_root(&plain, None), Some(plain.clone()));
        // A folder that does not exist is its own project.
        assert_eq!(project_root(&plain.join("new"), None), Some(plain.join("new")));
        assert_eq!(project_root(Path::new("/"), None), None);
    }

    #[test]
    fn the_home_folder_and_the_folders_above_it_are_never_a_project() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/ada");
        let project = home.join("code/app");
        std::fs::create_dir_all(project.join("src")).unwrap();
        // A dotfiles repository at ~/.git.
        std::fs::create_dir(home.join(".git")).unwrap();
        let home_path = home.as_path();
        let home = Some(home_path);
        assert_eq!(project_root(home_path, home), None);
        assert_eq!(project_root(&dir.path().join("home"), home), None);
        assert_eq!(project_root(dir.path(), home), None);
        // Below home, the dotfiles repository is not the project: the folder is.
        assert_eq!(project_root(&project.join("src"), home), Some(project.join("src")));
        std::fs::create_dir(project.join(".git")).unwrap();
        assert_eq!(project_root(&project.join("src"), home), Some(project.clone()));
        // Outside home, as before.
        let elsewhere = dir.path().join("srv/site");
        assert_eq!(project_root(&elsewhere, home), Some(elsewhere.clone()));
    }

    #[test]
    fn the_base_plan_holds_the_project_scratch_and_every_mask() {
        let layout = layout();
        let scratch = layout.scratch_of(ConversationId::new());
        let plan = base_plan(
            &layout,
            Path::new("/usr/bin/bwrap"),
            vec!["true".into()],
            Path::new("/home/u/src/efr/efrd"),
            Some(Path::new("/home/u/src/efr")),
            &scratch,
        );
        plan.validate().unwrap();
        let writable: Vec<_> = plan.writable.iter().map(|w| (w.path.clone(), w.source)).collect();
        assert_eq!(
            writable,
            vec![
                (PathBuf::from("/home/u/src/efr"), WritableSource::Project),
                (scratch.clone(), WritableSource::Scratch),
            ]
        );
        assert!(scratch.starts_with("/home/u/.local/state/efr/scratch/"));
        let last = plan.masks.last().unwrap();
        assert_eq!(
            (last.path.as_path(), last.source),
            (Path::new("/home/u/.vault-token"), MaskSource::Config)
        );
        assert!(plan.masks.iter().any(|m| m.path == Path::new("/home/u/.ssh")));
        assert!(
            plan.masks
                .iter()
                .any(|m| m.path == Path::new("/home/u/.local/state/efr") && m.source == MaskSource::EfrRoot)
        );
        assert!(plan.grants.is_empty());
        // Without a project, only $SCRATCH is writable.
        let plan = base_plan(
            &layout,
            Path::new("/usr/bin/bwrap"),
            vec!["true".into()],
            Path::new("/"),
            None,
            &scratch,
        );
        assert_eq!(plan.writable.len(), 1);
    }
}
