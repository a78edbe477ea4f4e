//! One module per file of this folder; `tests/all.rs` is the binary that holds them.

mod conversation_context;
mod daemon_activation;
mod daemon_admin;
mod daemon_auto;
mod daemon_auto_reach;
mod daemon_backup;
mod daemon_cautious;
mod daemon_crash;
mod daemon_left_running;
mod daemon_network;
mod daemon_protocol;
mod daemon_restart;
mod daemon_tools;
mod daemon_turns;
mod daemon_watch;
mod faults;
mod hidden_shell_memory;
mod model_catalog;
mod model_keys;
mod model_parse;
mod model_provider;
mod network_clients;
mod prompt_golden;
mod sandbox_explain_host;
mod sandbox_methods;
mod sandbox_probe;
