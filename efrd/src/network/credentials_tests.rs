//! The credential hosts of real files in a temporary home, and git's real config reading of them.

use std::path::Path;

use super::*;

fn write(home: &Path, path: &str, text: &str) {
    let path = home.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn written(home: &Path) -> Vec<String> {
    credential_hosts(home).iter().map(ToString::to_string).collect()
}

#[test]
fn every_source_gives_its_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    write(
        home,
        ".netrc",
        "machine api.heroku.com login ada password machine-not-a-host\n\
         machine Example.NET. login x\n\
         macdef init\nmachine in.a.macro.example\n\n\
         default login anonymous password guest\n",
    );
    write(
        home,
        ".git-credentials",
        "https://ada:ghp_secret@github.com\nhttps://ada:tok@git.example.org:8443/team/repo.git\n\n",
    );
    write(
        home,
        ".gitconfig",
        "[credential]\n\thelper = store --file=~/creds-extra\n\
         [credential \"https://*.corp.example\"]\n\tusername = ada\n",
    );
    write(home, "creds-extra", "https://ada:glpat@gitlab.example.com\n");
    write(
        home,
        ".npmrc",
        "//registry.npmjs.org/:_authToken=npm_secret\n\
         //npm.corp.example:8443/path/:_auth=eHl6\n\
         //public.example/:always-auth=false\n\
         registry=https://npm.top.example/\n_authToken=top\n",
    );
    write(
        home,
        ".cargo/credentials.toml",
        "[registry]\ntoken = \"cio_secret\"\n[registries.corp]\ntoken = \"corp_secret\"\n",
    );
    write(
        home,
        ".cargo/config.toml",
        "[registries.corp]\nindex = \"sparse+https://cargo.corp.example/index/\"\n",
    );
    write(
        home,
        ".pypirc",
        "[distutils]\nindex-servers =\n    pypi\n    corp\n\n\
         [pypi]\nusername = __token__\npassword = pypi-secret\n\n\
         [corp]\nrepository: https://pypi.corp.example/legacy/\nusername = ada\npassword = secret\n",
    );
    write(
        home,
        ".docker/config.json",
        r#"{"auths": {"https://index.docker.io/v1/": {"auth": "c2VjcmV0"}, "ghcr.io": {}},
            "credHelpers": {"123.dkr.ecr.us-east-1.amazonaws.com": "ecr-login"}}"#,
    );
    assert_eq!(
        written(home),
        [
            "*.corp.example",
            "123.dkr.ecr.us-east-1.amazonaws.com",
            "api.heroku.com",
            "auth.docker.io",
            "cargo.corp.example",
            "crates.io",
            "example.net",
            "ghcr.io",
            "git.example.org:8443",
            "github.com",
            "gitlab.example.com",
            "index.docker.io",
            "npm.corp.example:8443",
            "npm.top.example",
            "pypi.corp.example",
            "registry-1.docker.io",
            "registry.npmjs.org",
            "upload.pypi.org",
        ]
    );
}

#[test]
fn an_empty_home_has_none() {
    let dir = tempfile::tempdir().unwrap();
    assert!(credential_hosts(dir.path()).is_empty());
}

#[test]
fn a_file_that_does_not_parse_is_skipped_and_the_others_still_count() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    write(home, ".cargo/credentials.toml", "[registry\ntoken = \"cio_secret\"\n");
    write(home, ".docker/config.json", "{\"auths\": {\"ghcr.io\": ");
    write(home, ".netrc", "machine api.heroku.com password x\n");
    std::fs::write(home.join(".npmrc"), b"//bad.example/:_authToken=\xff\xfe\n").unwrap();
    assert_eq!(written(home), ["api.heroku.com"]);
}

#[test]
fn an_empty_helper_value_clears_the_store_helpers_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    write(
        home,
        ".gitconfig",
        "[credential]\n\thelper = store --file=/nonexistent/ignored\n\thelper =\n\thelper = store --file creds\n",
    );
    // A relative --file is git's working directory's; efrd runs git in `/`, so it is read from there: nothing.
    write(home, "creds", "https://ada:x@relative.example\n");
    assert!(written(home).is_empty(), "{:?}", written(home));
    let ignored = home.join("ignored");
    write(home, "ignored", "https://ada:x@ignored.example\n");
    write(home, "kept", "https://ada:x@kept.example\n");
    write(
        home,
        ".gitconfig",
        &format!(
            "[credential]\n\thelper = store --file={}\n\thelper =\n\thelper = cache\n\thelper = store --file=~/kept\n",
            ignored.display()
        ),
    );
    assert_eq!(written(home), ["kept.example"]);
}

#[test]
fn each_host_names_the_first_source_that_gave_it() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    write(home, ".netrc", "machine github.com login ada password ghp_secret\n");
    write(
        home,
        ".git-credentials",
        "https://ada:ghp_secret@github.com\nhttps://ada:tok@git.example.org\n",
    );
    write(
        home,
        ".gitconfig",
        "[credential]\n\thelper = store --file=~/creds-extra\n\
         [credential \"https://corp.example\"]\n\tusername = ada\n",
    );
    write(home, "creds-extra", "https://ada:glpat@gitlab.example.com\n");
    let entries: Vec<(String, CredentialSource)> = credential_entries(home)
        .into_iter()
        .map(|entry| (entry.host.to_string(), entry.source))
        .collect();
    assert_eq!(
        entries,
        [
            ("corp.example".to_owned(), CredentialSource::GitConfig),
            (
                "git.example.org".to_owned(),
                CredentialSource::File(home.join(".git-credentials"))
            ),
            ("github.com".to_owned(), CredentialSource::File(home.join(".netrc"))),
            (
                "gitlab.example.com".to_owned(),
                CredentialSource::File(home.join("creds-extra"))
            ),
        ]
    );
    assert_eq!(CredentialSource::GitConfig.to_string(), "git credential helper");
    // What is reported is the path, never what the file holds.
    let shown = CredentialSource::File(home.join(".netrc")).to_string();
    assert!(shown.ends_with("/.netrc") && !shown.contains("secret"), "{shown}");
}
