use std::path::PathBuf;

use super::*;

fn file(path: &str, text: &str) -> DocFile {
    DocFile {
        path: PathBuf::from(path),
        scope: Scope::Project,
        outcome: Outcome::Read {
            bytes: text.len() as u64,
            total: text.len() as u64,
        },
        text: text.to_owned(),
    }
}

const ENV: &str = "<environment>\nmode: auto\n</environment>\n";

#[test]
fn the_instructions_are_pinned_and_a_mode_change_is_a_note() {
    let mut state = PromptState::default();
    let first = state.turn(Variant::Full, Mode::Auto, vec![file("/p/AGENTS.md", "use tabs\n")], ENV);
    assert!(first.instructions.starts_with(BASE));
    assert!(first.instructions.contains("# Permission mode: auto"));
    assert!(first.instructions.contains("## /p/AGENTS.md\n\nuse tabs\n"));
    assert_eq!(first.preamble, ENV);
    let second = state.turn(
        Variant::Full,
        Mode::Cautious,
        vec![file("/p/AGENTS.md", "use tabs\n")],
        ENV,
    );
    assert_eq!(second.instructions, first.instructions, "byte-stable across turns");
    assert!(
        second.preamble.starts_with(ENV)
            && second
                .preamble
                .contains("<mode_changed>\nThe user changed the permission mode from auto to cautious.")
            && second.preamble.contains("# Permission mode: cautious"),
        "{}",
        second.preamble
    );
    // Told once.
    let third = state.turn(
        Variant::Full,
        Mode::Cautious,
        vec![file("/p/AGENTS.md", "use tabs\n")],
        ENV,
    );
    assert_eq!(third.preamble, ENV);
    assert_eq!(third.instructions, first.instructions);
}

#[test]
fn a_changed_new_or_removed_file_is_a_note_with_its_new_text() {
    let mut state = PromptState::default();
    let first = state.turn(
        Variant::Full,
        Mode::Auto,
        vec![file("/p/AGENTS.md", "use tabs\n"), file("/p/a/AGENTS.md", "a\n")],
        ENV,
    );
    let second = state.turn(
        Variant::Full,
        Mode::Auto,
        vec![file("/p/AGENTS.md", "use spaces\n"), file("/p/b/AGENTS.md", "b\n")],
        ENV,
    );
    assert_eq!(second.instructions, first.instructions);
    assert_eq!(
        second.preamble,
        format!(
            "{ENV}<instructions_changed>\nInstruction files changed since the instructions were written; what \
             follows replaces what they say for these files.\n\n## /p/AGENTS.md (changed)\n\nuse spaces\n\n\
             ## /p/b/AGENTS.md (is new)\n\nb\n\n## /p/a/AGENTS.md (removed)\n\nIts instructions no longer apply.\n\
             </instructions_changed>\n"
        )
    );
    let third = state.turn(
        Variant::Full,
        Mode::Auto,
        vec![file("/p/AGENTS.md", "use spaces\n"), file("/p/b/AGENTS.md", "b\n")],
        ENV,
    );
    assert_eq!(third.preamble, ENV, "a change is told once");
}

#[test]
fn the_short_variant_is_for_openai_compat_only() {
    assert_eq!(Variant::of(ProviderKind::OpenAiCompat, true), Variant::Short);
    assert_eq!(Variant::of(ProviderKind::OpenAiCompat, false), Variant::Full);
    assert_eq!(Variant::of(ProviderKind::AnthropicApi, true), Variant::Full);
    assert_eq!(Variant::of(ProviderKind::OpenAiApi, true), Variant::Full);
    let short = Variant::Short.tools();
    let full = Variant::Full.tools();
    let description = |tools: &[Tool]| match &tools[1] {
        Tool::Freeform { description, .. } => description.len(),
        Tool::Function { .. } => 0,
    };
    assert!(description(&short) < description(&full) / 2);
    assert!(BASE_SHORT.len() < BASE.len() / 2);
}
