//! The actor's part of what the model is told (crate::prompt): the inputs of a turn's prompt, read at its start.

// A part of the actor: its imports and private types.
use super::*;
use crate::prompt::environment::{self, Environment};
use crate::prompt::project::{self, Lookup};
use crate::prompt::{TurnPrompt, Variant};

/// Where a turn's instruction files are looked for.
struct Place {
    /// The working directory.
    cwd: PathBuf,
    /// The project root, when there is one.
    project_root: Option<PathBuf>,
    /// The paths the sandbox masks.
    masks: Vec<PathBuf>,
}

impl Actor {
    /// The prompt of a turn with `settings` whose tool calls share `tools`: the instruction files and the
    /// environment read now, the notes of what changed since the last turn. Updates what the model knows.
    pub(super) async fn turn_prompt(&mut self, settings: &TurnSettings, tools: &ToolEnv) -> TurnPrompt {
        let place = Place {
            cwd: tools.cwd.clone(),
            project_root: tools.roots.first().cloned(),
            masks: tools.layout.masks().into_iter().map(|mask| mask.path).collect(),
        };
        let (variant, files, environment) = self.prompt_inputs(settings, place).await;
        self.prompt.turn(variant, settings.mode, files, &environment.block())
    }

    /// The prompt that the next turn with `settings` would get now, without recording anything: what
    /// conversation.context measures.
    pub(super) async fn next_prompt(&self, settings: &TurnSettings) -> TurnPrompt {
        let (cwd, project_root) = self.place();
        let layout = Layout::new(
            self.deps.sandbox.options(),
            &self.deps.roots,
            &self.deps.config().sandbox.extra_masks,
        );
        let place = Place {
            cwd,
            project_root,
            masks: layout.masks().into_iter().map(|mask| mask.path).collect(),
        };
        let (variant, files, environment) = self.prompt_inputs(settings, place).await;
        self.prompt
            .clone()
            .turn(variant, settings.mode, files, &environment.block())
    }

    async fn prompt_inputs(
        &self,
        settings: &TurnSettings,
        place: Place,
    ) -> (Variant, Vec<project::DocFile>, Environment) {
        let config = self.deps.config();
        let variant = Variant::of(self.deps.models.active(), config.instructions.short);
        let Place {
            cwd,
            project_root,
            masks,
        } = place;
        let cwd = efr_policy::paths::resolve(&cwd).unwrap_or(cwd);
        let lookup = Lookup {
            global_dir: Some(&self.deps.roots.config.path),
            project_root: project_root.as_deref(),
            cwd: &cwd,
            masks: &masks,
            max_bytes: config.instructions.max_bytes,
        };
        let files = project::read(&lookup);
        let git = match &project_root {
            Some(root) => environment::git_state(root).await,
            None => None,
        };
        let model = match &settings.effort {
            Some(effort) => format!("{}, effort {effort}", settings.model),
            None => settings.model.clone(),
        };
        let environment = Environment {
            os: environment::os_name(),
            shell: match config.shell.program {
                crate::config::ShellProgram::Bash => "bash".to_owned(),
                crate::config::ShellProgram::Zsh => "zsh".to_owned(),
            },
            cwd,
            project_root,
            git,
            date: environment::today(),
            model,
            mode: crate::prompt::mode_name(settings.mode).to_owned(),
        };
        (variant, files, environment)
    }
}
