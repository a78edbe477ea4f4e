//! The unified diff against a real `git diff` in a real repository.

use std::path::Path;

use super::testing::{git, git_numstat, init_repo, stat_rows, without_extended_headers};
use super::{Change, DisplayRoots, IgnoreRules, file_changes, unified_diff};

#[test]
fn a_patch_with_a_move_an_add_and_a_delete_diffs_as_git_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let lines: String = (1..=12).map(|n| format!("line {n}\n")).collect();
    std::fs::write(root.join("a.txt"), &lines).expect("write");
    std::fs::write(root.join("d.txt"), "bye\nnow\n").expect("write");
    std::fs::write(root.join("e.txt"), "fn main() {\n    let x = 1;\n}\n").expect("write");
    init_repo(root);

    let text = "*** Begin Patch\n\
                *** Update File: a.txt\n\
                *** Move to: b.txt\n\
                @@\n line 3\n-line 4\n+LINE 4\n line 5\n\
                @@\n line 11\n-line 12\n+line twelve\n\
                *** Add File: c.txt\n+new\n+file\n\
                *** Delete File: d.txt\n\
                *** Update File: e.txt\n\
                @@\n fn main() {\n-    let x = 1;\n+    let x = 2;\n+    println!(\"{x}\");\n }\n\
                *** End Patch\n";
    let results = crate::apply_text(text, root).expect("the patch applies");
    let mut rules = IgnoreRules::new(root);
    let changes: Vec<Change> = results
        .into_iter()
        .map(|result| {
            let ignored = rules.is_ignored(&result.path, false);
            result.into_change(ignored)
        })
        .collect();
    let roots = DisplayRoots {
        project: Some(root),
        ..DisplayRoots::default()
    };

    git(root, &["add", "-N", "b.txt", "c.txt"]);
    let want = without_extended_headers(&git(root, &["diff", "--no-color"]));
    assert_eq!(unified_diff(&changes, &roots, usize::MAX), want);
    assert!(
        want.contains("--- a/a.txt\n+++ b/b.txt\n@@ -1,7 +1,7 @@\n"),
        "git detected the move:\n{want}"
    );

    let stat = file_changes(&changes, &roots);
    assert_eq!(stat_rows(&stat), git_numstat(root));
    assert_eq!(stat.files[0].from.as_deref(), Some(Path::new("a.txt")));
    assert_eq!((stat.added, stat.removed, stat.more), (6, 5, 0));
}
