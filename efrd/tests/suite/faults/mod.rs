//! The fault matrix: each row is a fault efrd must outlive, with the outcome that the protocol page and
//! docs/operations.md promise. Every row checks the same three things where they apply: nothing committed is lost
//! (the events a client saw are in the log, seqs stay contiguous), the daemon still serves (a new prompt runs to its
//! end), and the user is told (the turn ends with a reason that names the fault, or a request gets a clear error).
//!
//! | Row                                                   | Test                                   |
//! |-------------------------------------------------------|----------------------------------------|
//! | SIGKILL of efrd during a commit batch                 | `kill::efrd_during_a_commit_batch`     |
//! | SIGKILL of efrd during a model stream                 | `kill::efrd_during_a_model_stream`     |
//! | SIGKILL of efrd during a shell call                   | `kill::efrd_during_a_shell_call`       |
//! | SIGKILL of efrd during a question                     | `kill::efrd_during_a_question`         |
//! | SIGKILL of efrd during a patch write                  | `kill::efrd_during_a_patch_write`      |
//! | SIGKILL of the hidden shell                           | `kill::the_hidden_shell`               |
//! | SIGKILL of efr-launcher                               | `kill::efr_launcher`                   |
//! | the data disk full during a turn                      | `storage::the_data_disk_fills`         |
//! | the database file made read-only                      | `storage::a_read_only_database`        |
//! | a malformed event row                                 | `storage::a_malformed_event_row`       |
//! | the provider hanging mid-stream                       | `provider::a_provider_that_hangs`      |
//! | the provider answering 500, then 200                  | `provider::a_500_then_a_200`           |
//! | a client that never reads while 5 MB stream           | `clients::a_client_that_never_reads`   |
//! | 1,000 clients connecting at once                      | `clients::a_thousand_clients_at_once`  |

mod clients;
mod kill;
mod procs;
mod provider;
mod storage;
