//! The project registry: projects.list, admin.project_add and admin.project_remove.
//!
//! Source: docs/protocol.md, "The contract": "the project registry" (project_info with id, root and an optional name;
//! projects.list's result with the registry file and its projects; admin.project_add with path, an optional name and
//! git_root, false when absent; admin.project_remove with path; their results carry the project, the file written
//! and the reload that followed, in the form of the admin.config_reload result). The registry file is
//! `projects.toml` in the config root (docs/adr/0030-projects-and-routing.md).

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::AdminConfigReloadResult;
use crate::macros::is_false;

/// One registered project (`project_info`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectInfo {
    /// Its id: the `value` of its `route_scope`; stable while the project stays registered.
    pub id: String,
    /// Its root folder, absolute: a prompt whose working directory is this folder or one below it is in the project.
    pub root: PathBuf,
    /// The name the user gave it; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// projects.list params (scope read): none, so `{}` or absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectsListParams {}

/// projects.list result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectsListResult {
    /// The registry file (it need not exist: then no project is registered).
    pub file: PathBuf,
    /// The registered projects, in the file's order.
    pub projects: Vec<ProjectInfo>,
}

/// admin.project_add params (scope admin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminProjectAddParams {
    /// The folder, absolute. A path that is not a folder is `invalid`.
    pub path: PathBuf,
    /// A name to show for it; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Register the root of the git repository that holds `path` instead of `path`; false when absent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub git_root: bool,
}

/// admin.project_remove params (scope admin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdminProjectRemoveParams {
    /// The root of the project, absolute. A root that no project has is `not_found`.
    pub path: PathBuf,
}

/// The result of admin.project_add and admin.project_remove.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProjectWriteResult {
    /// The project added or removed.
    pub project: ProjectInfo,
    /// The registry file that was written.
    pub file: PathBuf,
    /// The reload of the registry that followed the write.
    pub reload: AdminConfigReloadResult,
}

/// admin.project_add result.
pub type AdminProjectAddResult = ProjectWriteResult;
/// admin.project_remove result.
pub type AdminProjectRemoveResult = ProjectWriteResult;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_root_is_false_when_absent_and_the_path_is_required() {
        let params: AdminProjectAddParams = serde_json::from_str(r#"{"path":"/src/efr"}"#).unwrap();
        assert!(!params.git_root);
        assert_eq!(params.name, None);
        assert_eq!(serde_json::to_string(&params).unwrap(), r#"{"path":"/src/efr"}"#);
        assert!(serde_json::from_str::<AdminProjectAddParams>("{}").is_err());
        assert!(serde_json::from_str::<AdminProjectRemoveParams>(r#"{"name":"x"}"#).is_err());
    }
}
