//! efrd, the efr daemon, as a library so that integration tests can drive it in-process too.
//!
//! One module per concern; docs/architecture.md, "The modules of efrd", says what each owns and which way the
//! dependencies go (lower layers never import higher ones; no cycle between these modules):
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | the four roots, `config.toml` (typed sections, errors with line, column and key), reload |
//! | [`listen`] | socket activation, self-bind, the single-instance lock, sd_notify |
//! | [`models`] | the daemon's wiring of efr-model: the active provider, settings, keys, catalog, HTTP client |
//! | [`exits`] | auto mode's exits: finding them (line, patch, report), who may approve each, the judge chain |
//! | [`tools`] | the tool specs and the hidden shell (`apply_patch` is efr-patch's) |
//! | [`jobs`] | background jobs: their processes, cgroups (systemd scopes), output files, watches, stops and notices |
//! | [`helper_process`] | the supervision of efrd's helper processes (`efr-proxy`, `efr-bus-proxy`): start, restart, status |
//! | [`network`] | the network of contained calls: `[network]` rules, credential hosts, efr-proxy's plans, refusals |
//! | [`search`] | search over conversations: what the index holds (secrets replaced), ranges, ranking, the searches, the rebuild |
//! | [`bus`] | the D-Bus of contained calls: `[bus]` and the default policy made into a `bus_filter` grant and a bus plan, the session bus, a closed plan's refusals |
//! | [`sandbox`] | efrd's side of the sandbox: base plans, protected paths, the probe and its cache, explain |
//! | [`undo`] | undo and redo of a turn from its covered snapshots: the plan, the writes, the journal, the trash, the collection |
//! | [`prompt`] | what the model is told: base instructions, mode, project instructions (`AGENTS.md`), the environment block, per-provider tool texts |
//! | [`compact`] | compaction of a conversation's context: the model's copy, its cut, the count, the summary's call |
//! | [`turn`] | the turn loop and the sink its events go to: model stream → events, tool calls decided and run |
//! | [`conversation`] | the per-conversation actor: queue, turns, questions, subscribers, recorder, restart recovery, delete |
//! | [`projects`] | the project registry (`projects.toml`): its reading, its writes with `toml_edit`, the project that holds a folder |
//! | [`routing`] | routing by scope: a terminal's slots, which conversation its prompt goes to and why (the switch) |
//! | [`remote`] | paired devices: pairing, device keys and proofs, the tailnet address, the listener's state |
//! | [`daemon`] | the shared state: the config, stores, model registry, live conversations, running turns and connections |
//! | [`server`] | connections (Unix socket, tailnet WebSocket), hello, scopes, dispatch, streams, cancel, backpressure; thin method handlers |
//! | [`lifecycle`] | the daemon's life from start to graceful stop: build, recover, ready, serve, stop |
//! | [`lean`] | memory given back when quiet: the pages of efrd's own code, the heap's free memory |
//!
//! The lower layers are crates of their own: efr-store (the event log), efr-policy (the permission decision),
//! efr-model (providers), efr-patch (`apply_patch`, changes and diffs), efr-snapshot (snapshots and their store) and
//! efr-git (the git efrd runs outside the sandbox).

pub mod bus;
pub mod compact;
pub mod config;
pub mod conversation;
pub mod daemon;
pub mod exits;
pub mod helper_process;
pub mod jobs;
pub mod lean;
pub mod lifecycle;
pub mod listen;
pub mod models;
pub mod network;
pub mod projects;
pub mod prompt;
pub mod remote;
pub mod routing;
pub mod sandbox;
pub mod search;
pub mod server;
pub mod tools;
pub mod turn;
pub mod undo;
