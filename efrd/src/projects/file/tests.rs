use super::*;

const HEAD: &str =
    "# My projects. efrd keeps this comment.\n\n[[project]]   # the first\nid = \"old\"\nroot = \"/nowhere/old\"\n";

fn setup(text: Option<&str>) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("projects.toml");
    if let Some(text) = text {
        std::fs::write(&file, text).unwrap();
    }
    let folder = dir.path().join("src").join("größe");
    std::fs::create_dir_all(&folder).unwrap();
    (dir, file, folder)
}

fn add<'a>(path: &'a Path, name: Option<&'a str>) -> Change<'a> {
    Change::Add {
        path,
        name,
        git_root: false,
    }
}

#[test]
fn an_add_keeps_every_byte_before_it_and_a_remove_gives_them_back() {
    let (_dir, file, folder) = setup(Some(HEAD));
    let draft = prepare(&file, &add(&folder, Some("Größe Fix"))).unwrap();
    assert_eq!(draft.project().id, "größe-fix");
    assert_eq!(draft.project().name.as_deref(), Some("Größe Fix"));
    draft.commit().unwrap();
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with(HEAD), "{written}");
    let (_, registry) = read(&file).unwrap();
    assert_eq!(registry.projects.len(), 2);
    assert_eq!(registry.holding(&folder.join("sub")).unwrap().id, "größe-fix");

    prepare(&file, &Change::Remove { path: &folder })
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), HEAD);
}

#[test]
fn a_file_that_changed_during_the_write_is_a_conflict_and_keeps_the_other_edit() {
    let (_dir, file, folder) = setup(Some(HEAD));
    let draft = prepare(&file, &add(&folder, None)).unwrap();
    let edit = format!("{HEAD}# the user saved meanwhile\n");
    std::fs::write(&file, &edit).unwrap();
    let error = draft.commit().unwrap_err();
    assert!(matches!(error, RegistryError::Conflict(_)), "{error:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edit);
    // No temporary file stays behind.
    assert_eq!(std::fs::read_dir(file.parent().unwrap()).unwrap().count(), 2);
}

#[test]
fn a_file_made_meanwhile_is_a_conflict_too() {
    let (_dir, file, folder) = setup(None);
    let draft = prepare(&file, &add(&folder, None)).unwrap();
    std::fs::write(&file, "# made by hand\n").unwrap();
    assert!(matches!(draft.commit(), Err(RegistryError::Conflict(_))));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# made by hand\n");
}

#[test]
fn bad_inputs_are_refused_and_the_file_stays() {
    let (dir, file, folder) = setup(Some(HEAD));
    let a_file = dir.path().join("notes.txt");
    std::fs::write(&a_file, "x").unwrap();
    for (path, want) in [
        (a_file.as_path(), "is not a folder"),
        (Path::new("relative/dir"), "is not an absolute path"),
        (Path::new("/nowhere/at/all"), "does not exist"),
    ] {
        match prepare(&file, &add(path, None)) {
            Err(RegistryError::Invalid { message, .. }) => assert!(message.contains(want), "{message}"),
            other => panic!("{path:?}: {other:?}"),
        }
    }
    prepare(&file, &add(&folder, None)).unwrap().commit().unwrap();
    let before = std::fs::read(&file).unwrap();
    // The same folder again, also by another spelling of it.
    let again = folder.join("..").join("größe");
    for path in [folder.as_path(), again.as_path()] {
        assert!(
            matches!(prepare(&file, &add(path, None)), Err(RegistryError::Conflict(_))),
            "{path:?}"
        );
    }
    assert!(matches!(
        prepare(
            &file,
            &Change::Remove {
                path: Path::new("/nowhere/else")
            }
        ),
        Err(RegistryError::NotFound(_))
    ));
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn a_broken_file_is_invalid_with_its_line() {
    let (_dir, file, folder) = setup(Some("# ok\n[[project]]\nid = \"a\"\nroot = \n"));
    match prepare(&file, &add(&folder, None)) {
        Err(RegistryError::Invalid { line, .. }) => assert_eq!(line, Some(4)),
        other => panic!("{other:?}"),
    }
    std::fs::write(&file, "[[project]]\nid = \"a\"\nroot = \"relative\"\n").unwrap();
    assert!(matches!(read(&file), Err(RegistryError::Invalid { .. })));
    std::fs::write(
        &file,
        "[[project]]\nid = \"a\"\nroot = \"/a\"\n[[project]]\nid = \"a\"\nroot = \"/b\"\n",
    )
    .unwrap();
    assert!(matches!(read(&file), Err(RegistryError::Invalid { .. })));
}

#[test]
fn ids_are_unique_and_the_deepest_root_holds_a_folder() {
    let (dir, file, folder) = setup(None);
    let inner = folder.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    let other = dir.path().join("other").join("größe");
    std::fs::create_dir_all(&other).unwrap();
    for path in [&folder, &inner, &other] {
        prepare(&file, &add(path, None)).unwrap().commit().unwrap();
    }
    let (_, registry) = read(&file).unwrap();
    let ids: Vec<&str> = registry.projects.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["größe", "inner", "größe-2"]);
    assert_eq!(registry.holding(&inner.join("a")).unwrap().id, "inner");
    assert_eq!(registry.holding(&folder).unwrap().id, "größe");
    assert_eq!(registry.holding(dir.path()), None);
}

#[test]
fn comments_only_and_comments_at_the_end_stay_where_they_were() {
    let only = "# My projects.\n\n# They matter.\n";
    let (_dir, file, folder) = setup(Some(only));
    prepare(&file, &add(&folder, None)).unwrap().commit().unwrap();
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with(only), "{written}");
    prepare(&file, &Change::Remove { path: &folder })
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), only);

    let tail = format!("{HEAD}# the end\n");
    std::fs::write(&file, &tail).unwrap();
    prepare(&file, &add(&folder, None)).unwrap().commit().unwrap();
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with(&tail), "{written}");
    prepare(
        &file,
        &Change::Remove {
            path: Path::new("/nowhere/old"),
        },
    )
    .unwrap()
    .commit()
    .unwrap();
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.starts_with("# My projects. efrd keeps this comment.\n\n"),
        "{written}"
    );
    assert!(written.contains("# the first") || !written.contains("old"), "{written}");
    assert!(written.contains("# the end\n"), "{written}");
    prepare(&file, &Change::Remove { path: &folder })
        .unwrap()
        .commit()
        .unwrap();
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains("# My projects. efrd keeps this comment.") && written.contains("# the end"),
        "{written}"
    );
    assert!(read(&file).unwrap().1.projects.is_empty());
}
