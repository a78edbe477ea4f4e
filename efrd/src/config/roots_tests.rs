//! Table tests of the root rules, and the folder creation on a real tempdir.

use super::*;
use std::os::unix::fs::PermissionsExt;

fn env(pairs: &[(&str, &str)]) -> HashMap<OsString, OsString> {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

/// (name, env, expected (path, source) for config, data, state, runtime)
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    [(&'static str, RootSource); 4],
);

const CASES: &[Case] = {
    use RootSource::{DirVariable as D, EfrHome as E, RunUser as R, Xdg as X};
    &[
        (
            "xdg defaults from HOME, no runtime dir",
            &[("HOME", "/home/u")],
            [
                ("/home/u/.config/efr", X),
                ("/home/u/.local/share/efr", X),
                ("/home/u/.local/state/efr", X),
                ("/run/user/1000/efr", R),
            ],
        ),
        (
            "xdg variables",
            &[
                ("HOME", "/home/u"),
                ("XDG_CONFIG_HOME", "/c"),
                ("XDG_DATA_HOME", "/d"),
                ("XDG_STATE_HOME", "/s"),
                ("XDG_RUNTIME_DIR", "/r"),
            ],
            [("/c/efr", X), ("/d/efr", X), ("/s/efr", X), ("/r/efr", X)],
        ),
        (
            "relative and empty xdg variables are ignored",
            &[
                ("HOME", "/home/u"),
                ("XDG_CONFIG_HOME", "rel/c"),
                ("XDG_DATA_HOME", ""),
                ("XDG_RUNTIME_DIR", "r"),
            ],
            [
                ("/home/u/.config/efr", X),
                ("/home/u/.local/share/efr", X),
                ("/home/u/.local/state/efr", X),
                ("/run/user/1000/efr", R),
            ],
        ),
        (
            "EFR_HOME puts all four below it and beats XDG",
            &[
                ("HOME", "/home/u"),
                ("XDG_CONFIG_HOME", "/c"),
                ("XDG_RUNTIME_DIR", "/r"),
                ("EFR_HOME", "/e"),
            ],
            [("/e/config", E), ("/e/data", E), ("/e/state", E), ("/e/run", E)],
        ),
        (
            "EFR_HOME needs no HOME",
            &[("EFR_HOME", "/e")],
            [("/e/config", E), ("/e/data", E), ("/e/state", E), ("/e/run", E)],
        ),
        (
            "dir variables override one each, over EFR_HOME",
            &[("EFR_HOME", "/e"), ("EFR_DATA_DIR", "/dd"), ("EFR_RUNTIME_DIR", "/rr")],
            [("/e/config", E), ("/dd", D), ("/e/state", E), ("/rr", D)],
        ),
        (
            "dir variables over XDG",
            &[
                ("HOME", "/home/u"),
                ("XDG_RUNTIME_DIR", "/r"),
                ("EFR_CONFIG_DIR", "/cc"),
                ("EFR_STATE_DIR", "/ss"),
            ],
            [("/cc", D), ("/home/u/.local/share/efr", X), ("/ss", D), ("/r/efr", X)],
        ),
        (
            "an empty EFR variable counts as unset",
            &[("HOME", "/home/u"), ("EFR_HOME", ""), ("EFR_CONFIG_DIR", "")],
            [
                ("/home/u/.config/efr", X),
                ("/home/u/.local/share/efr", X),
                ("/home/u/.local/state/efr", X),
                ("/run/user/1000/efr", R),
            ],
        ),
        (
            "all four dir variables need neither HOME nor XDG",
            &[
                ("EFR_CONFIG_DIR", "/1"),
                ("EFR_DATA_DIR", "/2"),
                ("EFR_STATE_DIR", "/3"),
                ("EFR_RUNTIME_DIR", "/4"),
            ],
            [("/1", D), ("/2", D), ("/3", D), ("/4", D)],
        ),
    ]
};

#[test]
fn roots_table() {
    for (name, vars, expected) in CASES {
        let roots = Roots::from_env_map(&env(vars), 1000).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Vec<(PathBuf, RootSource)> = roots.iter().iter().map(|(_, r)| (r.path.clone(), r.source)).collect();
        let want: Vec<(PathBuf, RootSource)> = expected.iter().map(|(p, s)| (PathBuf::from(p), *s)).collect();
        assert_eq!(got, want, "case: {name}");
    }
}

#[test]
fn relative_efr_variables_are_errors() {
    for var in [
        "EFR_HOME",
        "EFR_CONFIG_DIR",
        "EFR_DATA_DIR",
        "EFR_STATE_DIR",
        "EFR_RUNTIME_DIR",
    ] {
        let err = Roots::from_env_map(&env(&[("HOME", "/h"), (var, "rel/dir")]), 1).unwrap_err();
        assert_eq!(
            err,
            RootsError::Relative {
                var,
                value: "rel/dir".into()
            }
        );
        assert_eq!(
            err.to_string(),
            format!("{var} must be an absolute path, but it is \"rel/dir\"")
        );
    }
}

#[test]
fn no_home_is_an_error_naming_the_root() {
    let err = Roots::from_env_map(&env(&[("XDG_CONFIG_HOME", "/c")]), 1).unwrap_err();
    assert_eq!(
        err,
        RootsError::NoHome {
            root: "data",
            var: "XDG_DATA_HOME"
        }
    );
    let err = Roots::from_env_map(&env(&[("HOME", "relative")]), 1).unwrap_err();
    assert_eq!(
        err,
        RootsError::NoHome {
            root: "config",
            var: "XDG_CONFIG_HOME"
        }
    );
    assert!(err.to_string().contains("XDG_CONFIG_HOME"), "{err}");
}

#[test]
fn home_is_an_absolute_home_variable_or_none() {
    let home = |vars: &[(&str, &str)]| Roots::from_env_map(&env(vars), 1).map(|roots| roots.home);
    assert_eq!(home(&[("HOME", "/home/u")]), Ok(Some(PathBuf::from("/home/u"))));
    // With EFR_HOME no root needs HOME, so a relative or empty one is no error: it is just not a home.
    assert_eq!(home(&[("EFR_HOME", "/e"), ("HOME", "relative")]), Ok(None));
    assert_eq!(home(&[("EFR_HOME", "/e"), ("HOME", "")]), Ok(None));
    assert_eq!(home(&[("EFR_HOME", "/e")]), Ok(None));
    assert_eq!(Roots::under(Path::new("/e")).home, None);
}

#[test]
fn file_paths() {
    let roots = Roots::under(Path::new("/e"));
    assert_eq!(roots.config_file(), PathBuf::from("/e/config/config.toml"));
    assert_eq!(roots.socket_path(), PathBuf::from("/e/run/daemon.sock"));
    assert_eq!(roots.lock_path(), PathBuf::from("/e/run/efrd.lock"));
    assert_eq!(RootSource::DirVariable.to_string(), "dir_variable");
    assert_eq!(RootSource::RunUser.as_str(), "run_user");
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn create_all_makes_private_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = Roots::under(&tmp.path().join("home"));
    roots.create_all().unwrap();
    for (name, root) in roots.iter() {
        assert_eq!(mode(&root.path), 0o700, "{name}");
    }
    assert_eq!(mode(&tmp.path().join("home")), 0o700, "missing parents are 0700 too");
    // A second call is fine: the folders exist.
    roots.create_all().unwrap();
}

#[test]
fn create_all_tightens_only_the_runtime_root() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = Roots::under(tmp.path());
    for (_, root) in roots.iter() {
        fs::create_dir(&root.path).unwrap();
        fs::set_permissions(&root.path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    roots.create_all().unwrap();
    assert_eq!(mode(&roots.runtime.path), 0o700);
    assert_eq!(
        mode(&roots.config.path),
        0o755,
        "the user's own config folder keeps its mode"
    );
}

#[test]
fn a_file_in_the_way_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let roots = Roots::under(tmp.path());
    fs::write(&roots.runtime.path, b"not a folder").unwrap();
    let err = roots.create_all().unwrap_err();
    assert!(
        matches!(err, DirError::Io { .. } | DirError::NotADirectory { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(&roots.runtime.path.display().to_string()),
        "{err}"
    );
    assert_eq!(
        fs::read(&roots.runtime.path).unwrap(),
        b"not a folder",
        "nothing is lost"
    );

    let tmp = tempfile::tempdir().unwrap();
    let roots = Roots::under(tmp.path());
    fs::write(&roots.config.path, b"x").unwrap();
    let err = roots.create_all().unwrap_err();
    assert!(
        err.to_string().contains(&roots.config.path.display().to_string()),
        "{err}"
    );
    assert_eq!(fs::read(&roots.config.path).unwrap(), b"x");
}

#[test]
fn a_folder_of_another_user_is_refused() {
    // Runs as root on the dev machines and CI; as another user, chown is not permitted and the case is built
    // differently: /proc belongs to root.
    let uid = nix::unistd::getuid().as_raw();
    if uid == 0 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        fs::create_dir(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(4242), None).unwrap();
        let err = ensure_private_dir(&dir).unwrap_err();
        assert!(
            matches!(
                err,
                DirError::NotOwned {
                    owner: 4242,
                    uid: 0,
                    ..
                }
            ),
            "{err:?}"
        );
    } else {
        let err = ensure_private_dir(Path::new("/proc")).unwrap_err();
        assert!(matches!(err, DirError::NotOwned { owner: 0, .. }), "{err:?}");
    }
}
