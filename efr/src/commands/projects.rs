//! `efr projects`, `efr projects add PATH [--name N] [--git-root]` and `efr projects remove PATH`: projects.list,
//! admin.project_add and admin.project_remove (README.md, "Projects and routing").
//!
//! ```text
//! ID    NAME  ROOT
//! efr   efr   /home/ada/src/efr
//! (/home/ada/.config/efr/projects.toml)
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use efr_protocol::wire::{AdminProjectAddParams, AdminProjectRemoveParams, ProjectWriteResult, ProjectsListResult};
use serde_json::json;

use super::{read, run_unary};
use crate::clean::printable;
use crate::cli::{JsonArg, ProjectsCommand};
use crate::report;

/// Runs one `efr projects` command.
pub async fn run(command: Option<ProjectsCommand>, args: JsonArg) -> ExitCode {
    match command.unwrap_or(ProjectsCommand::List(args)) {
        ProjectsCommand::List(args) => {
            run_unary("projects.list", json!({}), args.json, None, |value| {
                let result: ProjectsListResult = read("projects.list", value)?;
                crate::out::print_exact(&render_list(&result));
                Ok(())
            })
            .await
        }
        ProjectsCommand::Add {
            path,
            name,
            git_root,
            json,
        } => {
            let Some(path) = absolute(&path) else {
                return ExitCode::from(report::FAILED);
            };
            let params = AdminProjectAddParams { path, name, git_root };
            write("admin.project_add", serde_json::to_value(&params), json, "added").await
        }
        ProjectsCommand::Remove { path, json } => {
            let Some(path) = absolute(&path) else {
                return ExitCode::from(report::FAILED);
            };
            let params = AdminProjectRemoveParams { path };
            write("admin.project_remove", serde_json::to_value(&params), json, "removed").await
        }
    }
}

/// `path` from here; efrd resolves links itself.
fn absolute(path: &Path) -> Option<PathBuf> {
    match std::path::absolute(path) {
        Ok(path) => Some(path),
        Err(error) => {
            report::error(&format!("{}: {error}", printable(&path.display().to_string())));
            None
        }
    }
}

async fn write(
    method: &'static str,
    params: Result<serde_json::Value, serde_json::Error>,
    json: bool,
    done: &'static str,
) -> ExitCode {
    let Ok(params) = params else {
        report::error(&format!("cannot encode the params of {method}"));
        return ExitCode::from(report::FAILED);
    };
    run_unary(method, params, json, None, |value| {
        let result: ProjectWriteResult = read(method, value)?;
        crate::out::print_exact(&render_write(&result, done));
        Ok(())
    })
    .await
}

/// The readable list: one line per project (id, name, root), then the registry file.
#[must_use]
pub fn render_list(result: &ProjectsListResult) -> String {
    let file = printable(&result.file.display().to_string()).into_owned();
    if result.projects.is_empty() {
        return format!("no project is registered (efr projects add PATH; {file})\n");
    }
    let width =
        |f: &dyn Fn(&efr_protocol::wire::ProjectInfo) -> usize| result.projects.iter().map(f).max().unwrap_or(0).max(4);
    let id_w = width(&|p| printable(&p.id).chars().count());
    let name_w = width(&|p| printable(p.name.as_deref().unwrap_or("-")).chars().count());
    let mut text = format!("{:id_w$}  {:name_w$}  ROOT\n", "ID", "NAME");
    for project in &result.projects {
        text.push_str(&format!(
            "{:id_w$}  {:name_w$}  {}\n",
            printable(&project.id),
            printable(project.name.as_deref().unwrap_or("-")),
            printable(&project.root.display().to_string())
        ));
    }
    text.push_str(&format!("({file})\n"));
    text
}

/// What a write says: the project, the file, and a reload that did not apply.
#[must_use]
pub fn render_write(result: &ProjectWriteResult, done: &str) -> String {
    let mut text = format!(
        "{done} the project {} ({}) in {}\n",
        printable(&result.project.id),
        printable(&result.project.root.display().to_string()),
        printable(&result.file.display().to_string())
    );
    if let Some(error) = result.reload.error.as_ref().filter(|_| !result.reload.applied) {
        text.push_str(&format!(
            "the reload that followed failed: {}\n",
            printable(&error.message)
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use efr_protocol::wire::ProjectInfo;

    use super::*;

    #[test]
    fn the_list_aligns_its_columns_and_names_the_file() {
        let result = ProjectsListResult {
            file: PathBuf::from("/home/ada/.config/efr/projects.toml"),
            projects: vec![
                ProjectInfo {
                    id: "größe".into(),
                    root: PathBuf::from("/src/größe"),
                    name: None,
                },
                ProjectInfo {
                    id: "efr".into(),
                    root: PathBuf::from("/src/efr"),
                    name: Some("efr\u{1b}[31m".into()),
                },
            ],
        };
        assert_eq!(
            render_list(&result),
            "ID     NAME      ROOT\ngröße  -         /src/größe\nefr    efr\u{241b}[31m  /src/efr\n(/home/ada/.config/efr/projects.toml)\n",
            "a control character shows as its picture, and the columns count what is shown"
        );
    }
}
