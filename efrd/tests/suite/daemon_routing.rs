//! Routing by scope through the real socket: terminals are real pseudo-terminals with a real process as their
//! shell, projects are registered with admin.project_add, and each prompt.send names no conversation. Every switch
//! that a prompt can cause is here, `moved` after a conversation.resume with take.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::os::fd::AsRawFd as _;
use std::path::Path;

use efr_test_support::client::Client;
use serde_json::{Value, json};

use common::{command_id, events_until, model, subscribe, text_reply};

/// A terminal: a pseudo-terminal held open and a process that stands for its shell.
struct Terminal {
    tty: String,
    pty: Option<nix::pty::OpenptyResult>,
    shell: std::process::Child,
}

impl Terminal {
    fn open() -> Self {
        let pty = nix::pty::openpty(None, None).unwrap();
        let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
        let shell = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .expect("sleep runs");
        Self {
            tty: path.to_str().unwrap().to_owned(),
            pty: Some(pty),
            shell,
        }
    }

    /// Closes the terminal: its pty goes (so does `/dev/pts/N`) and its shell ends.
    fn close(&mut self) {
        self.pty = None;
        let _ = self.shell.kill();
        let _ = self.shell.wait();
    }

    /// prompt.send from this terminal in `cwd`, with `extra` members; waits for its turn to end; returns the result.
    async fn prompt(&self, client: &mut Client, cwd: &Path, text: &str, extra: Value) -> Value {
        let mut params = json!({
            "command_id": command_id(),
            "text": text,
            "context": {"cwd": cwd, "tty": self.tty, "shell_context": {"shell": "bash", "pid": self.shell.id()}},
        });
        for (key, value) in extra.as_object().unwrap() {
            params[key] = value.clone();
        }
        let sent = client.ok("prompt.send", params).await.unwrap();
        let conversation = sent["conversation_id"].as_str().unwrap();
        let (id, _) = subscribe(client, conversation, Some(sent["seq"].as_u64().unwrap() - 1)).await;
        events_until(client, id, "turn_completed").await;
        client.cancel(id).await.unwrap();
        sent
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        self.close();
    }
}

fn id_of(sent: &Value) -> &str {
    sent["conversation_id"].as_str().unwrap()
}

/// The events of `conversation` after `after_seq` to the first of kind `until`, within one turn.
async fn events_of(client: &mut Client, conversation: &str, after_seq: u64, until: &str) -> Vec<Value> {
    let (id, _) = subscribe(client, conversation, Some(after_seq)).await;
    let events = events_until(client, id, until).await;
    client.cancel(id).await.unwrap();
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_terminals_two_projects_and_outside_cd_new_and_a_terminal_that_closes() {
    let home = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let (a, b, outside) = (src.path().join("a"), src.path().join("b"), src.path().join("scratch"));
    for dir in [a.join("deep"), b.clone(), outside.clone()] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let server = model((0..12).map(|_| text_reply("ok", 8, 0)).collect()).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    client
        .ok("admin.project_add", json!({"path": a, "name": "Alpha"}))
        .await
        .unwrap();
    client.ok("admin.project_add", json!({"path": b})).await.unwrap();
    let (one, mut two) = (Terminal::open(), Terminal::open());
    let alpha = json!({"kind": "project", "value": "alpha"});

    // A terminal's first prompt: a new conversation of its project, no switch.
    let first = one.prompt(&mut client, &a, "first in a", json!({})).await;
    assert_eq!(first["route"], json!({"scope": alpha, "name": "Alpha", "dir": a}));
    let c1 = id_of(&first).to_owned();
    let created = &events_of(&mut client, &c1, 0, "prompt_queued").await[0];
    assert_eq!(created["kind"], "conversation_created");
    assert_eq!(created["route"], alpha);
    // A folder below the root: the same conversation, no switch.
    let again = one.prompt(&mut client, &a.join("deep"), "again in a", json!({})).await;
    assert_eq!(id_of(&again), c1);
    assert!(again["route"].get("switch").is_none(), "{again}");

    // `cd` to the other project: a new conversation, reason scope.
    let in_b = one.prompt(&mut client, &b, "now in b", json!({})).await;
    let c2 = id_of(&in_b).to_owned();
    assert_ne!(c2, c1);
    assert_eq!(in_b["route"]["scope"], json!({"kind": "project", "value": "b"}));
    assert_eq!(in_b["route"]["name"], "b", "a project without a name shows its id");
    assert_eq!(
        in_b["route"]["switch"],
        json!({"kind": "new", "from": c1, "reason": {"kind": "scope"}})
    );
    // And back: the earlier conversation of that project.
    let back = one.prompt(&mut client, &a, "back in a", json!({})).await;
    assert_eq!(id_of(&back), c1);
    assert_eq!(back["route"]["switch"]["kind"], "back");
    assert_eq!(back["route"]["switch"]["title"], "first in a");
    assert!(back["route"]["switch"]["updated_at"].is_string());

    // The second terminal, outside every project: its own conversation, the scope outside with its folder.
    let out = two.prompt(&mut client, &outside, "outside", json!({})).await;
    let c3 = id_of(&out).to_owned();
    assert_eq!(out["route"], json!({"scope": {"kind": "outside"}, "dir": outside}));
    // In b, whose conversation the first terminal holds: not picked up, a new one.
    let two_b = two.prompt(&mut client, &b, "two in b", json!({})).await;
    assert!(
        ![c1.as_str(), c2.as_str(), c3.as_str()].contains(&id_of(&two_b)),
        "{two_b}"
    );
    assert_eq!(
        two_b["route"]["switch"],
        json!({"kind": "new", "from": c3, "reason": {"kind": "scope"}})
    );

    // `,new` in a: a new conversation with no switch, which the next prompt continues.
    let fresh = one.prompt(&mut client, &a, "start over", json!({"new": true})).await;
    let c5 = id_of(&fresh).to_owned();
    assert_ne!(c5, c1);
    assert!(fresh["route"].get("switch").is_none(), "{fresh}");
    let next = one.prompt(&mut client, &a, "go on", json!({})).await;
    assert_eq!(id_of(&next), c5);
    assert!(next["route"].get("switch").is_none(), "{next}");
    let listed = client.ok("conversations.list", json!({"tty": one.tty})).await.unwrap();
    assert_eq!(
        listed["conversations"][0]["conversation_id"],
        c5.as_str(),
        "the current one first"
    );

    // The first terminal closes: its slots are free, and the second picks its conversation of a up.
    let shell_pid = two.shell.id();
    drop(one);
    let picked = two.prompt(&mut client, &a, "two in a", json!({})).await;
    assert_eq!(id_of(&picked), c5);
    assert_eq!(picked["route"]["switch"]["kind"], "picked_up");
    assert_eq!(picked["route"]["switch"]["title"], "start over");
    // terminal_attached comes right before the prompt's prompt_queued.
    let before = picked["seq"].as_u64().unwrap() - 2;
    let events = events_of(&mut client, &c5, before, "prompt_queued").await;
    assert_eq!(events[0]["kind"], "terminal_attached", "{events:?}");
    let attached: Vec<&Value> = events.iter().filter(|e| e["kind"] == "terminal_attached").collect();
    assert_eq!(attached.len(), 1, "{events:?}");
    assert_eq!(attached[0]["tty"], two.tty.as_str());
    assert_eq!(attached[0]["route"], alpha);
    assert_eq!(attached[0]["shell_pid"], shell_pid);
    assert_eq!(attached[0]["how"], "picked_up");
    assert!(attached[0].get("turn_id").is_none());
    // conversations.recent sees the registry and the slots.
    let recent = client
        .ok("conversations.recent", json!({"tty": two.tty, "pwd": a.join("deep")}))
        .await
        .unwrap();
    assert_eq!(recent["scope"], alpha);
    assert_eq!(recent["current"], c5.as_str());
    let row = &recent["conversations"][0];
    assert_eq!(
        (row["summary"]["conversation_id"].as_str(), row["project"].as_str()),
        (Some(c5.as_str()), Some("Alpha"))
    );
    assert_eq!(row["here"], true);
    assert_eq!(
        row["summary"]["tty"],
        two.tty.as_str(),
        "the row names the terminal that holds it"
    );
    two.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_idle_past_the_gap_is_left_for_a_new_one() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = model((0..3).map(|_| text_reply("ok", 8, 0)).collect()).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let config = home.path().join("config/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[routing]\nidle_after_secs = 1\n")).unwrap();
    let reload = client.ok("admin.config_reload", json!(null)).await.unwrap();
    assert_eq!(reload["applied"], true, "{reload}");
    let terminal = Terminal::open();

    let first = terminal
        .prompt(&mut client, work.path(), "before the gap", json!({}))
        .await;
    let soon = terminal.prompt(&mut client, work.path(), "within it", json!({})).await;
    assert_eq!(id_of(&soon), id_of(&first));
    tokio::time::sleep(std::time::Duration::from_millis(2_200)).await;
    let later = terminal
        .prompt(&mut client, work.path(), "after the gap", json!({}))
        .await;
    assert_ne!(id_of(&later), id_of(&first));
    assert_eq!(
        later["route"]["switch"],
        json!({"kind": "new", "from": id_of(&first), "reason": {"kind": "idle", "hours": 0}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompts_without_a_terminal_or_with_an_id_are_not_routed_and_new_with_an_id_is_invalid() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = model((0..3).map(|_| text_reply("ok", 8, 0)).collect()).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let plain = json!({"command_id": command_id(), "text": "no terminal", "context": {"cwd": work.path()}});
    let one = client.ok("prompt.send", plain).await.unwrap();
    assert!(one.get("route").is_none(), "{one}");
    let named = json!({"command_id": command_id(), "text": "named", "conversation_id": id_of(&one)});
    let two = client.ok("prompt.send", named).await.unwrap();
    assert!(two.get("route").is_none(), "{two}");
    let both = json!({"command_id": command_id(), "text": "x", "conversation_id": id_of(&one), "new": true});
    let error = client.call("prompt.send", both).await.unwrap().unwrap_err();
    assert_eq!(error.code, efr_protocol::ErrorCode::Invalid);
    assert!(error.message.contains("new"), "{}", error.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edit_of_the_registry_counts_at_the_next_prompt_and_a_broken_one_keeps_the_last() {
    let home = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let app = src.path().join("app");
    std::fs::create_dir_all(&app).unwrap();
    let server = model((0..3).map(|_| text_reply("ok", 8, 0)).collect()).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let terminal = Terminal::open();

    let before = terminal.prompt(&mut client, &app, "not a project yet", json!({})).await;
    assert_eq!(before["route"]["scope"], json!({"kind": "outside"}));
    let file = home.path().join("config/projects.toml");
    let hand = format!("# by hand\n[[project]]\nid = \"app\"\nroot = \"{}\"\n", app.display());
    std::fs::write(&file, &hand).unwrap();
    let after = terminal.prompt(&mut client, &app, "a project now", json!({})).await;
    assert_eq!(after["route"]["scope"], json!({"kind": "project", "value": "app"}));
    assert_eq!(after["route"]["switch"]["reason"], json!({"kind": "scope"}));

    // A broken file: routing keeps the registry read before it; projects.list says where the file is wrong.
    std::fs::write(&file, format!("{hand}[[project]\n")).unwrap();
    let broken = terminal.prompt(&mut client, &app, "still the project", json!({})).await;
    assert_eq!(id_of(&broken), id_of(&after));
    assert_eq!(broken["route"]["scope"], json!({"kind": "project", "value": "app"}));
    let error = client.call("projects.list", json!({})).await.unwrap().unwrap_err();
    assert_eq!(error.code, efr_protocol::ErrorCode::Invalid);
    assert_eq!(error.data.unwrap()["line"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_a_terminal_picks_its_conversation_up_again() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let server = model((0..2).map(|_| text_reply("ok", 8, 0)).collect()).await;
    let mut efrd = common::daemon(home.path(), &server);
    let terminal = Terminal::open();
    let mut client = efrd.client().await.unwrap();
    let first = terminal
        .prompt(&mut client, work.path(), "before the restart", json!({}))
        .await;
    drop(client);

    // The slots live in memory: the restart empties them, and the store's rows bring the conversation back.
    efrd.stop(std::time::Duration::from_secs(10)).unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let after = terminal.prompt(&mut client, work.path(), "after it", json!({})).await;
    assert_eq!(id_of(&after), id_of(&first));
    assert_eq!(after["route"]["switch"]["kind"], "picked_up", "{after}");
    assert_eq!(after["route"]["switch"]["title"], "before the restart");
}

/// conversation.resume from `terminal` in `cwd`.
async fn resume(
    client: &mut Client,
    terminal: &Terminal,
    cwd: &Path,
    conversation: &str,
    take: bool,
) -> Result<Value, efr_protocol::ErrorBody> {
    let params = json!({
        "command_id": command_id(),
        "conversation_id": conversation,
        "context": {"cwd": cwd, "tty": terminal.tty, "shell_context": {"shell": "bash", "pid": terminal.shell.id()}},
        "take": take,
    });
    client.call("conversation.resume", params).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_is_held_by_an_open_terminal_takes_with_take_and_the_loser_moves_on() {
    let home = tempfile::tempdir().unwrap();
    let src = tempfile::tempdir().unwrap();
    let (a, outside) = (src.path().join("a"), src.path().join("elsewhere"));
    for dir in [&a, &outside] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let server = model((0..6).map(|_| text_reply("ok", 8, 0)).collect()).await;
    let efrd = common::daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    client
        .ok("admin.project_add", json!({"path": a, "name": "Alpha"}))
        .await
        .unwrap();
    let (one, two) = (Terminal::open(), Terminal::open());
    let alpha = json!({"kind": "project", "value": "alpha"});
    let first = one.prompt(&mut client, &a, "fix the parser", json!({})).await;
    let c1 = id_of(&first).to_owned();

    // The first terminal holds it: held, and nothing moved.
    let held = resume(&mut client, &two, &outside, &c1, false).await.unwrap();
    assert_eq!(held, json!({"kind": "held", "tty": one.tty, "title": "fix the parser"}));
    let again = one.prompt(&mut client, &a, "still mine", json!({})).await;
    assert_eq!(id_of(&again), c1, "a held conversation stays with its terminal");

    // With take, from a folder outside its project: resumed, not here, with the folder to go to.
    let taken = resume(&mut client, &two, &outside, &c1, true).await.unwrap();
    assert_eq!(taken["kind"], "resumed", "{taken}");
    assert_eq!(taken["conversation_id"], c1.as_str());
    assert_eq!(taken["scope"], alpha);
    assert_eq!(taken["title"], "fix the parser");
    assert_eq!(taken["shell_dir"], json!(a));
    assert!(
        taken.get("here").is_none() && taken.get("continues_here").is_none(),
        "{taken}"
    );
    let log = common::whole_log(&mut client, &c1).await;
    let attached = log.last().unwrap();
    assert_eq!(attached["kind"], "terminal_attached", "{log:?}");
    assert_eq!(
        (&attached["tty"], &attached["how"], &attached["route"]),
        (&json!(two.tty), &json!("resumed"), &alpha)
    );

    // The second terminal's next prompt in the project continues it; the first one's starts a new one: moved.
    let there = two.prompt(&mut client, &a, "go on here", json!({})).await;
    assert_eq!(id_of(&there), c1);
    let moved = one.prompt(&mut client, &a, "and me?", json!({})).await;
    assert_ne!(id_of(&moved), c1);
    assert_eq!(
        moved["route"]["switch"],
        json!({"kind": "new", "from": c1, "reason": {"kind": "moved", "tty": two.tty, "title": "fix the parser"}})
    );
    let here = resume(&mut client, &one, &a, id_of(&moved), false).await.unwrap();
    assert_eq!(
        (here["here"].clone(), here["continues_here"].clone()),
        (json!(true), json!(true)),
        "{here}"
    );

    // Bad input: no tty, a conversation that does not exist.
    let no_tty = client
        .call(
            "conversation.resume",
            json!({"command_id": command_id(), "conversation_id": c1, "context": {"cwd": a}}),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(no_tty.code, efr_protocol::ErrorCode::Invalid, "{no_tty:?}");
    let missing = resume(&mut client, &one, &a, "0f8fad5b-d9cb-469f-a165-70867728950e", false)
        .await
        .unwrap_err();
    assert_eq!(missing.code, efr_protocol::ErrorCode::NotFound, "{missing:?}");
}
