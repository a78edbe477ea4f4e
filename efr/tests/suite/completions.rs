//! The completions and man pages made from the clap definitions: the completions load in real bash and zsh (bash
//! also completes a word with them), and `man -l` renders every page (efr(1), one per subcommand, efrd(8)) without
//! a warning. bash, zsh and man-db are CI's packages: a missing one fails here, saying which.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{efr, efrd};

fn completions(shell: &str) -> String {
    let out = Command::new(efr()).args(["completions", shell]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env("PAGER", "cat")
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
        .unwrap_or_else(|error| panic!("cannot run {program} ({error}): install it (`cargo xtask ci` does)"))
}

#[test]
fn bash_loads_the_completions_and_completes_a_command() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("efr.bash");
    std::fs::write(&file, completions("bash")).unwrap();
    // As bash-completion calls a completion function: the words, the index of the current one, then the function.
    let script = format!(
        "set -e; source '{}'; complete -p efr; \
         COMP_WORDS=(efr sta); COMP_CWORD=1; COMP_LINE='efr sta'; COMP_POINT=7; _efr efr sta efr; \
         printf 'reply %s\\n' \"${{COMPREPLY[@]}}\"; \
         COMP_WORDS=(efr sandbox ch); COMP_CWORD=2; COMP_LINE='efr sandbox ch'; COMP_POINT=14; \
         _efr efr ch sandbox; printf 'reply %s\\n' \"${{COMPREPLY[@]}}\"",
        file.display()
    );
    let out = run("bash", &["--norc", "--noprofile", "-c", &script]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stderr, "", "no error while loading");
    assert!(stdout.contains(" -F _efr efr\n"), "{stdout}");
    assert!(stdout.contains("reply status\n"), "{stdout}");
    assert!(stdout.contains("reply check\n"), "{stdout}");
}

#[test]
fn zsh_loads_the_completions_with_compinit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("_efr"), completions("zsh")).unwrap();
    let script = format!(
        "fpath=('{dir}' $fpath); autoload -Uz compinit; compinit -u -d '{dir}/zcompdump'; \
         autoload -Uz _efr; print -r -- \"comp=${{_comps[efr]}}\"; whence -w _efr",
        dir = dir.path().display()
    );
    let out = run("zsh", &["-f", "-c", &script]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stderr, "", "no error while loading");
    assert!(stdout.contains("comp=_efr\n"), "{stdout}");
    // The function body parses: zsh -n reads the whole file without running it.
    let parsed = run("zsh", &["-n", &dir.path().join("_efr").display().to_string()]);
    assert!(parsed.status.success(), "{}", String::from_utf8_lossy(&parsed.stderr));
}

#[test]
fn fish_completions_name_the_commands() {
    let text = completions("fish");
    assert!(text.contains("complete -c efr"), "{text}");
    assert!(text.contains("-a \"status\""), "{text}");
}

/// Renders a page with `man -l`, warnings on: it must render, warn of nothing and hold its name.
fn renders(page: &Path, name: &str) {
    let path = page.display().to_string();
    let out = run("man", &["--warnings", "-l", &path]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{path}: {stderr}");
    assert_eq!(stderr, "", "{path}");
    assert!(stdout.contains("NAME") && stdout.contains(name), "{path}: {stdout}");
}

#[test]
fn man_renders_every_page() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(efr()).arg("man-pages").arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for page in [
        "efr.1",
        "efr-status.1",
        "efr-sandbox.1",
        "efr-sandbox-check.1",
        "efr-completions.1",
    ] {
        assert!(pages.iter().any(|p| p == page), "{page} in {pages:?}");
    }
    assert!(
        !pages.iter().any(|p| p.contains("man-pages")),
        "the hidden command has no page: {pages:?}"
    );
    assert!(pages.len() > 30, "one page per subcommand: {pages:?}");
    for page in &pages {
        renders(&dir.path().join(page), page.trim_end_matches(".1"));
    }

    let efrd_page = Command::new(efrd()).arg("--man-page").output().unwrap();
    assert!(efrd_page.status.success());
    let path = dir.path().join("efrd.8");
    std::fs::write(&path, &efrd_page.stdout).unwrap();
    renders(&path, "efrd");
    let text = String::from_utf8_lossy(&efrd_page.stdout);
    assert!(text.starts_with(".ie") || text.contains(".TH efrd 8"), "{text}");
}
