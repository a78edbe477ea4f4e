//! One module per file of this folder; `tests/all.rs` is the binary that holds them.

mod cli_background;
mod cli_backup;
mod cli_commands;
mod cli_jobs;
mod cli_pipe;
mod cli_projects;
mod cli_pty;
mod cli_resume;
mod cli_sandbox_host;
mod cli_search;
mod cli_steer;
mod completions;
mod mistyped;
mod shell_init;
mod systemd_user;
