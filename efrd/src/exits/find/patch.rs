//! The exits of a patch (source `edit`): each file outside the writable roots is a `write` (a `delete` for a
//! delete), a floor file a `floor_edit` with the patch as the action's `edit`, and a masked file an `unmask` too.
//! A floor (efr's roots, a raw device) is the policy's refusal, never an exit.

use efr_protocol::wire::{ExitAction, ExitKind, ExitRecord, ExitSource, Grant};

use super::{Exit, ExitContext, Found};
use efr_policy::paths::normalize;
use efr_policy::{ChangeKind, PatchChange, floors};

/// See [`super::patch_exits`].
pub(super) fn exits(changes: &[PatchChange], patch_text: &str, ctx: &ExitContext<'_>) -> Vec<ExitRecord> {
    let mut found = Found::new(ExitAction {
        tool: "apply_patch".to_owned(),
        command: None,
        edit: None,
        ..Default::default()
    });
    let mut floor_edit = false;
    for change in changes {
        let paths = match &change.kind {
            ChangeKind::Move { to } => vec![(&change.path, true), (to, false)],
            ChangeKind::Delete => vec![(&change.path, true)],
            ChangeKind::Add | ChangeKind::Update => vec![(&change.path, false)],
        };
        for (path, delete) in paths {
            let path = normalize(path);
            if !path.is_absolute()
                || ctx.writable(&path)
                || ctx.efr_dirs.write_refusal(&path, false).is_some()
                || floors::raw_device(&path)
            {
                continue;
            }
            if let Some(mask) = ctx.mask_of(&path) {
                let exit = Exit::grants(vec![Grant::Unmask { path: mask }]).targets(vec![ctx.target(&path)]);
                found.add(ExitKind::Unmask, ExitSource::Edit, exit);
            }
            if ctx.floor_file(&path) {
                let mut target = ctx.target(&path);
                target.backup_before_write = true;
                let exit = Exit::grants(vec![Grant::Write { path: path.clone() }]).targets(vec![target]);
                found.add(ExitKind::FloorEdit, ExitSource::Edit, exit);
                floor_edit = true;
                continue;
            }
            let kind = if delete { ExitKind::Delete } else { ExitKind::Write };
            let exit = Exit::grants(vec![Grant::Write {
                path: ctx.write_grant(&path),
            }])
            .targets(vec![ctx.target(&path)]);
            found.add(kind, ExitSource::Edit, exit);
        }
    }
    let mut records = found.into_records();
    if floor_edit {
        let edit = cut(patch_text, ExitAction::MAX_EDIT_BYTES);
        for record in records.iter_mut().filter(|r| r.kind == ExitKind::FloorEdit) {
            record.action.edit = Some(edit.to_owned());
        }
    }
    records
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
