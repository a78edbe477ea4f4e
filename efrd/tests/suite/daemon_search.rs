//! conversations.search and conversation.search through the real socket of a real efrd on a real SQLite file:
//! secrets that are never found and titles that show them replaced, Unicode ranges checked against Python's string
//! indexing, bad queries, a log older than the index indexed in the background after a restart, and an efrd that
//! keeps no index.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use efr_protocol::ErrorCode;
use efr_test_support::client::Client;
use serde_json::{Value, json};

use common::tools::{shell_call, text};
use common::{daemon, events_through, model, project, prompt, subscribe, text_reply};

/// Sends `text` as the first prompt of a new conversation and waits for its turn to end; returns the conversation.
async fn converse(client: &mut Client, cwd: &std::path::Path, text: &str) -> String {
    let sent = prompt(client, cwd, None, text).await;
    let conversation = sent["conversation_id"].as_str().unwrap().to_owned();
    let (id, _) = subscribe(client, &conversation, Some(0)).await;
    events_through(client, id, "turn_completed").await;
    conversation
}

async fn search(client: &mut Client, query: &str) -> Value {
    client
        .ok("conversations.search", json!({"query": query, "stats": true}))
        .await
        .unwrap()
}

fn rows(result: &Value) -> &Vec<Value> {
    result["rows"].as_array().unwrap()
}

const ANT: &str = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-a1b2";
const GITHUB: &str = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf0123";
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
const URL_PASSWORD: &str = "hunter2pass";
const PEM_BODY: &str = "MIIEowIBAAKCAQEAzq3Examp1eKeyB0dy";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_never_found_and_titles_show_them_replaced() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let server = model(vec![text_reply("Rotated; the deploy works again.", 8, 0)]).await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let mut raw = Client::connect_raw(&efrd.socket()).await.unwrap();
    let hello = raw
        .ok(
            "hello",
            json!({"protocol": efr_protocol::PROTOCOL_VERSION, "client": {"name": "t", "version": "0"}}),
        )
        .await
        .unwrap();
    assert_eq!(hello["capabilities"]["search"], true, "{hello}");

    let text = format!(
        "deploy with {ANT} and {GITHUB} and {AWS} via https://ada:{URL_PASSWORD}@git.example.com/x.git\n\
         -----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\nthanks"
    );
    let conversation = converse(&mut client, cwd.path(), &text).await;

    for secret in [
        ANT,
        GITHUB,
        AWS,
        URL_PASSWORD,
        PEM_BODY,
        "Zx9Yw8Vu7Ts6",
        "R4nd0mT0k3n",
        "IOSFODNN7",
        "hunter2",
    ] {
        let found = search(&mut client, secret).await;
        assert!(rows(&found).is_empty(), "{secret} was found: {found}");
        let inside = client
            .ok(
                "conversation.search",
                json!({"conversation_id": conversation, "query": secret}),
            )
            .await
            .unwrap();
        assert!(inside["hits"].as_array().unwrap().is_empty(), "{secret}: {inside}");
    }

    let found = search(&mut client, "deploy").await;
    assert_eq!(rows(&found).len(), 1, "{found}");
    let row = &rows(&found)[0];
    let title = row["conversation"]["summary"]["title"].as_str().unwrap();
    assert_eq!(
        title, "deploy with [secret] and [secret] and [secret] via https://ada:[secret]@git.exam…",
        "masked before the title is cut to 80 characters"
    );
    assert_eq!(row["title_ranges"], json!([{"start": 0, "end": 6}]));
    assert_eq!(row["short_id"], conversation[..8]);
    let shown = found.to_string();
    for secret in [ANT, GITHUB, AWS, URL_PASSWORD, PEM_BODY] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    // The same title in conversations.recent and in the result of conversation.search.
    let recent = client.ok("conversations.recent", json!({})).await.unwrap();
    assert_eq!(recent["conversations"][0]["summary"]["title"], title);
    let inside = client
        .ok(
            "conversation.search",
            json!({"conversation_id": conversation, "query": "deploy"}),
        )
        .await
        .unwrap();
    assert_eq!(inside["title"], title);
    let kinds: Vec<&str> = inside["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["title", "answer", "prompt"],
        "the title first, then newest first: {inside}"
    );
    assert!(!inside.to_string().contains(PEM_BODY));
}

/// `text[start:end]` in Python for each `(text, start, end)`.
fn python_slices(slices: &[(String, u32, u32)]) -> Vec<String> {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import json,sys\nprint(json.dumps([t[s:e] for t, s, e in json.load(sys.stdin)]))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs (apt-get install python3)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(slices).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A range's bound.
fn point(value: &Value) -> u32 {
    u32::try_from(value.as_u64().unwrap()).unwrap()
}

/// Every `(text, start, end)` of a result's titles and hit lines.
fn slices_of(result: &Value) -> Vec<(String, u32, u32)> {
    let mut slices = Vec::new();
    for row in rows(result) {
        let title = row["conversation"]["summary"]["title"].as_str().unwrap_or("");
        for range in row["title_ranges"].as_array().into_iter().flatten() {
            slices.push((title.to_owned(), point(&range["start"]), point(&range["end"])));
        }
        for line in row["hit"]["lines"].as_array().into_iter().flatten() {
            for range in line["ranges"].as_array().unwrap() {
                slices.push((
                    line["text"].as_str().unwrap().to_owned(),
                    point(&range["start"]),
                    point(&range["end"]),
                ));
            }
        }
    }
    slices
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unicode_ranges_agree_with_pythons_string_indexing() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let server = model(vec![
        text("Die 🙂🙂 Größe passt; größe bleibt."),
        text("👩‍💻 caf\u{0065}\u{0301} au lait, cafe\u{0301} noir"),
        text("已修复中文文档的标题"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    converse(&mut client, cwd.path(), "🙂 Fenstergröße ändern").await;
    converse(&mut client, cwd.path(), "order a cafe\u{0301}").await;
    converse(&mut client, cwd.path(), "修复中文文档").await;

    let mut conversations = Vec::new();
    for (query, rows_expected) in [
        ("größe", 1),
        ("🙂", 1),
        ("cafe\u{0301}", 1),
        ("中文文档", 1),
        ("文档的标", 1),
    ] {
        let found = search(&mut client, query).await;
        assert_eq!(rows(&found).len(), rows_expected, "{query}: {found}");
        let slices = slices_of(&found);
        assert!(!slices.is_empty(), "{query}: {found}");
        for (slice, (text, start, end)) in python_slices(&slices).iter().zip(&slices) {
            assert_eq!(
                slice.to_lowercase(),
                query.to_lowercase(),
                "{text:?}[{start}:{end}] for {query}"
            );
        }
        let conversation = rows(&found)[0]["conversation"]["summary"]["conversation_id"].clone();
        conversations.push((conversation, query));
    }
    // Every hit of each conversation: the answers' lines hold emoji (a ZWJ sequence too) before their matches.
    let mut slices = Vec::new();
    for (conversation, query) in &conversations {
        let inside = client
            .ok(
                "conversation.search",
                json!({"conversation_id": conversation, "query": query}),
            )
            .await
            .unwrap();
        let hits = inside["hits"].as_array().unwrap();
        assert!(!hits.is_empty(), "{query}: {inside}");
        for line in hits.iter().flat_map(|h| h["lines"].as_array().unwrap()) {
            for range in line["ranges"].as_array().unwrap() {
                let text = line["text"].as_str().unwrap().to_owned();
                slices.push((text, point(&range["start"]), point(&range["end"]), query));
            }
        }
    }
    let plain: Vec<(String, u32, u32)> = slices.iter().map(|(t, s, e, _)| (t.clone(), *s, *e)).collect();
    for (slice, (text, start, end, query)) in python_slices(&plain).iter().zip(&slices) {
        assert_eq!(slice.to_lowercase(), query.to_lowercase(), "{text:?}[{start}:{end}]");
    }
    assert!(slices.iter().any(|(t, ..)| t.starts_with("Die 🙂🙂")), "{slices:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_queries_get_clear_answers_and_syntax_is_literal() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let server = model(vec![
        text(r#"Run it with the -x flag: say "hi" NEAR * and a-b"#),
        // A command whose output is not UTF-8.
        shell_call("call_bytes", r"printf 'bytes \377\376 here\n'"),
        text("done"),
    ])
    .await;
    let efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    let syntax = converse(&mut client, cwd.path(), "how do I use the flag").await;
    let bytes = converse(&mut client, cwd.path(), "print some bytes").await;

    // An empty query lists the recent conversations, newest first, with no hit.
    let all = search(&mut client, "  ").await;
    let ids: Vec<&str> = rows(&all)
        .iter()
        .map(|r| r["conversation"]["summary"]["conversation_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [bytes.as_str(), syntax.as_str()]);
    assert!(rows(&all).iter().all(|r| r.get("hit").is_none()));

    for query in [
        r#"""#,
        "*",
        "NEAR",
        "-",
        "-x",
        r#""hi""#,
        "NEAR(say hi)",
        "a OR b",
        "text:flag",
        "a-b",
        "^",
    ] {
        let found = client.ok("conversations.search", json!({"query": query})).await;
        let found = found.unwrap_or_else(|e| panic!("{query}: {e:?}"));
        for row in rows(&found) {
            assert_eq!(
                row["conversation"]["summary"]["conversation_id"], syntax,
                "{query}: {found}"
            );
        }
    }
    assert_eq!(rows(&search(&mut client, r#""hi""#).await).len(), 1);
    assert_eq!(rows(&search(&mut client, "-x").await).len(), 1);
    assert!(rows(&search(&mut client, "NEAR(say hi)").await).is_empty());

    let long = "a".repeat(10 * 1024);
    for params in [
        json!({"query": long}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "limit": 201}),
        json!({"query": "x", "pwd": "relative/dir"}),
        json!({}),
    ] {
        let error = client
            .call("conversations.search", params.clone())
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(error.code, ErrorCode::Invalid, "{params}: {error:?}");
    }
    let error = client
        .call("conversation.search", json!({"conversation_id": syntax, "query": ""}))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::Invalid);
    let error = client
        .call(
            "conversation.search",
            json!({"conversation_id": uuid::Uuid::new_v4(), "query": "x"}),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::NotFound);

    // The conversation whose command printed bytes that are not UTF-8 is found by its command.
    let found = search(&mut client, "printf").await;
    assert_eq!(rows(&found).len(), 1, "{found}");
    assert_eq!(rows(&found)[0]["hit"]["kind"], "command");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_older_than_the_index_is_indexed_in_the_background_after_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let server = model(vec![text("the answer about zeppelins"), text("another answer")]).await;
    let mut efrd = daemon(home.path(), &server);
    let mut client = efrd.client().await.unwrap();
    converse(&mut client, cwd.path(), "tell me about airships").await;
    converse(&mut client, cwd.path(), "and balloons").await;
    drop(client);
    efrd.stop(Duration::from_secs(20)).unwrap();
    // The database as an efrd before search left it: no entry, every event waiting for the rebuild.
    let db = rusqlite::Connection::open(home.path().join("data/efr.db")).unwrap();
    db.execute_batch(
        "DELETE FROM search_entries; \
         UPDATE search_rebuild SET done = 0, target = (SELECT max(rowid) FROM events);",
    )
    .unwrap();
    drop(db);
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let found = search(&mut client, "zeppelin").await;
        if found.get("index").is_none() && rows(&found).len() == 1 {
            let title = search(&mut client, "airships").await;
            assert_eq!(
                rows(&title)[0]["title_ranges"],
                json!([{"start": 14, "end": 22}]),
                "{title}"
            );
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the rebuild did not end: {found}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// How many rows of the FTS5 index hold `phrase`, read from the database file itself.
fn indexed_rows(home: &std::path::Path, phrase: &str) -> i64 {
    let db = rusqlite::Connection::open(home.join("data/efr.db")).unwrap();
    db.query_row(
        "SELECT count(*) FROM search_index WHERE search_index MATCH ?1",
        [format!("\"{phrase}\"")],
        |row| row.get(0),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_index_search_finds_the_same_and_the_index_catches_up_when_it_is_back() {
    let home = tempfile::tempdir().unwrap();
    let cwd = project();
    let server = model(vec![text("the answer about zeppelins"), text("another answer")]).await;
    let config = |index: bool| {
        efr_test_support::daemon::config_for(&server.base_url()) + &format!("\n[daemon]\nsearch_index = {index}\n")
    };
    let key = [("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")];
    let mut efrd =
        efr_test_support::daemon::TestDaemon::start(common::efrd_binary(), home.path(), Some(&config(false)), &key)
            .unwrap();
    let mut client = efrd.client().await.unwrap();
    converse(&mut client, cwd.path(), "tell me about airships").await;
    converse(&mut client, cwd.path(), "and balloons").await;
    // Past the follower's lag (1 s): an efrd with the index would have indexed both turns by now.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let found = search(&mut client, "zeppelin").await;
    assert_eq!(rows(&found).len(), 1, "{found}");
    let title = search(&mut client, "airships").await;
    assert_eq!(
        rows(&title)[0]["title_ranges"],
        json!([{"start": 14, "end": 22}]),
        "{title}"
    );
    drop(client);
    efrd.stop(Duration::from_secs(20)).unwrap();
    assert_eq!(indexed_rows(home.path(), "zeppelin"), 0, "no index was kept");
    // With the index back on (the default), efrd indexes what was stored meanwhile.
    std::fs::write(home.path().join("config/config.toml"), config(true)).unwrap();
    efrd.restart().unwrap();
    let mut client = efrd.client().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while indexed_rows(home.path(), "zeppelin") == 0 {
        assert!(std::time::Instant::now() < deadline, "the index did not catch up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(rows(&search(&mut client, "zeppelin").await).len(), 1);
}
