use std::path::Path;

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

struct Tree {
    _dir: tempfile::TempDir,
    config: PathBuf,
    root: PathBuf,
    cwd: PathBuf,
}

fn tree() -> Tree {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let config = base.join("config/efr");
    let root = base.join("project");
    let cwd = root.join("crates/core");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    Tree {
        _dir: dir,
        config,
        root,
        cwd,
    }
}

fn lookup<'a>(tree: &'a Tree, masks: &'a [PathBuf], max_bytes: u64) -> Lookup<'a> {
    Lookup {
        global_dir: Some(&tree.config),
        project_root: Some(&tree.root),
        cwd: &tree.cwd,
        masks,
        max_bytes,
    }
}

#[test]
fn no_file_reads_nothing() {
    let tree = tree();
    assert!(read(&lookup(&tree, &[], 32768)).is_empty());
}

#[test]
fn global_then_root_down_to_the_working_directory_with_fallbacks() {
    let tree = tree();
    write(&tree.config.join("AGENTS.md"), "global\n");
    write(&tree.root.join("AGENTS.md"), "root\n");
    write(&tree.root.join("CLAUDE.md"), "root claude: not read, AGENTS.md wins\n");
    write(&tree.root.join("crates/GEMINI.md"), "crates gemini\n");
    write(&tree.cwd.join("CLAUDE.md"), "core claude\n");
    // A file beside the path, not on it, is not read.
    write(&tree.root.join("other/AGENTS.md"), "other\n");
    let files = read(&lookup(&tree, &[], 32768));
    let seen: Vec<(String, Scope, &str)> = files
        .iter()
        .map(|f| {
            (
                f.path
                    .strip_prefix(tree.root.parent().unwrap())
                    .unwrap()
                    .display()
                    .to_string(),
                f.scope,
                f.text.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("config/efr/AGENTS.md".to_owned(), Scope::Global, "global\n"),
            ("project/AGENTS.md".to_owned(), Scope::Project, "root\n"),
            ("project/crates/GEMINI.md".to_owned(), Scope::Project, "crates gemini\n"),
            (
                "project/crates/core/CLAUDE.md".to_owned(),
                Scope::Project,
                "core claude\n"
            ),
        ]
    );
    assert!(files.iter().all(|f| f.is_read() && !f.is_cut()));
}

#[test]
fn a_one_megabyte_file_is_cut_at_a_line_and_says_so_and_later_files_are_listed_unread() {
    let tree = tree();
    let line = "- a rule of the project, forty bytes ok\n";
    let big = line.repeat(1024 * 1024 / line.len() + 1);
    write(&tree.root.join("AGENTS.md"), &big);
    write(&tree.cwd.join("AGENTS.md"), "core\n");
    let files = read(&lookup(&tree, &[], 32768));
    let Outcome::Read { bytes, total } = files[0].outcome else {
        panic!("{files:?}")
    };
    assert_eq!(total, big.len() as u64);
    assert!(bytes <= 32768 && bytes > 32768 - line.len() as u64, "{bytes}");
    assert!(files[0].is_cut());
    let text = &files[0].text;
    assert!(
        text[..usize::try_from(bytes).unwrap()].ends_with(line),
        "cut at a whole line"
    );
    assert!(
        text.ends_with(&format!(
            "[efr: this file is cut here: {bytes} of its {total} bytes are above ([instructions] max_bytes = 32768 \
             for all files together)]\n"
        )),
        "{}",
        &text[text.len() - 200..]
    );
    assert_eq!(files[1].outcome, Outcome::OverBudget { total: 5 });
    assert!(files[1].text.is_empty());
}

#[test]
fn a_file_in_a_masked_folder_is_not_read() {
    let tree = tree();
    write(&tree.root.join("AGENTS.md"), "root\n");
    write(&tree.root.join("crates/AGENTS.md"), "secret rules\n");
    write(&tree.cwd.join("AGENTS.md"), "core\n");
    let masks = [tree.root.join("crates")];
    let files = read(&lookup(&tree, &masks, 32768));
    let outcomes: Vec<&Outcome> = files.iter().map(|f| &f.outcome).collect();
    assert_eq!(
        outcomes,
        [
            &Outcome::Read { bytes: 5, total: 5 },
            &Outcome::Masked,
            &Outcome::Masked,
        ]
    );
    assert!(
        files
            .iter()
            .all(|f| !f.text.contains("secret") && !f.text.contains("core"))
    );
}

#[test]
fn a_link_outside_the_project_is_refused_and_one_inside_is_read() {
    let tree = tree();
    let outside = tree.root.parent().unwrap().join("secret.txt");
    write(&outside, "a secret outside the project\n");
    std::os::unix::fs::symlink(&outside, tree.root.join("AGENTS.md")).unwrap();
    write(&tree.root.join("docs/rules.md"), "rules inside\n");
    std::os::unix::fs::symlink(tree.root.join("docs/rules.md"), tree.cwd.join("AGENTS.md")).unwrap();
    let files = read(&lookup(&tree, &[], 32768));
    assert_eq!(files[0].outcome, Outcome::LinkOutside { target: outside });
    assert!(files[0].text.is_empty());
    assert_eq!(files[1].text, "rules inside\n");
    // A link inside the project to a masked file is refused too.
    let masks = [tree.root.join("docs")];
    let files = read(&lookup(&tree, &masks, 32768));
    assert!(matches!(files[1].outcome, Outcome::LinkOutside { .. }), "{files:?}");
}

#[test]
fn the_global_file_may_link_anywhere_and_no_project_reads_only_it() {
    let tree = tree();
    let elsewhere = tree.root.parent().unwrap().join("dotfiles/agents.md");
    write(&elsewhere, "mine\n");
    std::os::unix::fs::symlink(&elsewhere, tree.config.join("AGENTS.md")).unwrap();
    write(&tree.root.join("AGENTS.md"), "root\n");
    let lookup = Lookup {
        project_root: None,
        ..lookup(&tree, &[], 32768)
    };
    let files = read(&lookup);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].text, "mine\n");
}
