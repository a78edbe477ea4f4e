//! The actor's part of what the model is told (crate::prompt): the inputs of a turn's prompt, read at its start.

// A part of the actor: its imports and private types.
use super::*;
use crate::prompt::environment::{self, Environment};
use crate::prompt::project::{self, Lookup};
use crate::prompt::{TurnPrompt, Variant};

impl Actor {
    /// The prompt of a turn with `settings` whose tool calls share `tools`: the instruction files and the
    /// environment read now, the notes of what changed since the last turn. Updates what the model knows.
    pub(super) async fn turn_prompt(&mut self, settings: &TurnSettings, tools: &ToolEnv) -> TurnPrompt {
        let (variant, files, environment) = self.prompt_inputs(settings, tools).await;
        self.prompt.turn(variant, settings.mode, files, &environment.block())
    }

    async fn prompt_inputs(
        &self,
        settings: &TurnSettings,
        tools: &ToolEnv,
    ) -> (Variant, Vec<project::DocFile>, Environment) {
        let config = self.deps.models.config();
        let variant = Variant::of(self.deps.models.active(), config.instructions.short);
        let masks: Vec<PathBuf> = tools.layout.masks().into_iter().map(|mask| mask.path).collect();
        let project_root = tools.roots.first().cloned();
        let cwd = crate::policy::paths::resolve(&tools.cwd).unwrap_or_else(|_| tools.cwd.clone());
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
