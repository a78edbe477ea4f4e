//! Always rules through the real efrd, bubblewrap, `efr-launcher` and `efr-proxy`, with the scripted model server as
//! the turn's model and the classifier: a question the judges pass on offers the rule in words, allow_always saves it
//! into the commented `config.toml` (every byte of the user's kept) and records always_rule_saved, and the ten
//! identical exits after it run with no judge and no question; a question that no rule may cover refuses
//! allow_always; a rule that a floor disables is named once in admin.config_reload's warnings.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a failed unwrap is a failed test.

use crate::common;

use std::path::Path;

use efr_protocol::ErrorCode;
use efr_test_support::daemon::{TestDaemon, config_for};
use efr_test_support::scripted::{Reply, Script, ScriptedModel, Step};
use serde_json::{Value, json};

use common::auto::{bounded, launcher, proxy, tempdir};
use common::tools::{event_of, shell_call, start, text};
use common::{command_id, events_until};

const CLASSIFIER: &str = "gpt-5-mini";
const HOST: &str = "rule.efr-test.invalid";

async fn server(steps: Vec<Step>) -> ScriptedModel {
    ScriptedModel::start(Script {
        steps,
        models: vec!["gpt-5".into(), CLASSIFIER.into()],
        ..Script::default()
    })
    .await
    .expect("scripted model server")
}

/// The config the test starts with: the user's comments around the scripted providers.
fn config(server: &ScriptedModel) -> String {
    format!(
        "# my efr settings, kept by hand\n{}\n[auto]\n# the judges\njudge_timeout_secs = 20 # seconds\n",
        config_for(&server.base_url())
    )
}

fn daemon(home: &Path, config: &str) -> TestDaemon {
    launcher();
    proxy();
    TestDaemon::start(
        common::efrd_binary(),
        home,
        Some(config),
        &[("OPENAI_API_KEY", "sk-proj-testkey0000000000000000a1b2")],
    )
    .expect("efrd starts")
}

fn abstain(reason: &str) -> Step {
    Reply::text(json!({"verdict": "abstain", "reason": reason}).to_string()).into()
}

fn curl() -> String {
    format!("curl -sS --max-time 5 -o /dev/null https://{HOST}/ 2>&1 | head -c 200; echo ran")
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_saves_the_rule_and_the_next_ten_identical_exits_run_without_a_question() {
    let (home, project) = (tempdir(), tempdir());
    let mut steps = vec![
        Step::Reply(shell_call("call_0", &curl())),
        abstain("the prompt does not say whether this host is wanted"),
        abstain("the user should decide about this host"),
    ];
    for i in 1..=10 {
        steps.push(Step::Reply(shell_call(&format!("call_{i}"), &curl())));
    }
    steps.push(Step::Reply(text("done")));
    let server = server(steps).await;
    let written = config(&server);
    let efrd = daemon(home.path(), &written);
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "poll the rule host").await;
    let mut events = bounded("the question", events_until(&mut client, id, "approval_requested")).await;
    let question = events.last().unwrap().clone();
    let project_name = project.path().file_name().unwrap().to_str().unwrap();
    assert_eq!(
        question["exit"]["always"],
        json!(format!("host {HOST} in the project {project_name}")),
        "the question offers the rule in words: {question}"
    );
    let respond = json!({"command_id": command_id(), "conversation_id": conversation, "call_id": "call_0",
        "decision": "allow_always"});
    client.ok("approval.respond", respond).await.unwrap();
    events.extend(bounded("the turn", events_until(&mut client, id, "turn_completed")).await);

    let saved = of_kind(&events, "always_rule_saved");
    assert_eq!(saved.len(), 1, "{events:#?}");
    assert_eq!(saved[0]["call_id"], "call_0");
    assert_eq!(
        saved[0]["outcome"],
        json!({"kind": "saved", "index": 0, "rule": format!("host {HOST} in the project {project_name}")})
    );
    let file = std::fs::read_to_string(home.path().join("config/config.toml")).unwrap();
    assert!(file.starts_with(&written), "every byte the user wrote stays:\n{file}");
    assert!(
        file[written.len()..].starts_with("\n[[auto.always]]\nkind = \"host\"\n"),
        "{file}"
    );

    assert_eq!(of_kind(&events, "approval_requested").len(), 1, "one question only");
    for i in 1..=10 {
        let call = format!("call_{i}");
        let judged = event_of(&events, "exit_judged", &call);
        assert_eq!(
            (&judged["judge"], &judged["verdict"]),
            (&json!("always_rule"), &json!("approve")),
            "{judged}"
        );
        assert!(judged.get("chain_step").is_none(), "{judged}");
        let done = event_of(&events, "tool_call_completed", &call);
        assert!(done["output"].as_str().unwrap().contains("ran"), "{done}");
    }
    let asked = server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.body["model"] == CLASSIFIER)
        .count();
    assert_eq!(asked, 1, "the classifier was asked about the first exit only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_no_rule_may_cover_refuses_allow_always() {
    let (home, project) = (tempdir(), tempdir());
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(home.path().join(".ssh/config"), "Host x\n").unwrap();
    let server = server(vec![
        Step::Reply(shell_call("call_key", "cat ~/.ssh/config")),
        Step::Reply(text("done")),
    ])
    .await;
    let efrd = daemon(home.path(), &config(&server));
    let mut client = efrd.client().await.unwrap();
    let (_, conversation, id) = start(&mut client, project.path(), "auto", "show my ssh config").await;
    let events = bounded("the question", events_until(&mut client, id, "approval_requested")).await;
    let question = events.last().unwrap();
    assert_eq!(question["exit"]["kind"], "unmask", "{question}");
    assert!(question["exit"].get("always").is_none(), "{question}");
    let respond = |decision: &str| {
        json!({"command_id": command_id(), "conversation_id": conversation,
        "call_id": "call_key", "decision": decision})
    };
    let refused = client.call("approval.respond", respond("allow_always")).await.unwrap();
    assert_eq!(refused.unwrap_err().code, ErrorCode::Invalid);
    client.ok("approval.respond", respond("deny")).await.unwrap();
    let rest = bounded("the turn", events_until(&mut client, id, "turn_completed")).await;
    assert!(of_kind(&rest, "always_rule_saved").is_empty());
    let before = std::fs::read_to_string(home.path().join("config/config.toml")).unwrap();
    assert!(!before.contains("always"), "nothing was saved: {before}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_a_floor_disables_is_named_once_by_the_reload() {
    let home = tempdir();
    let server = server(Vec::new()).await;
    let efrd = daemon(home.path(), &config(&server));
    let mut client = efrd.client().await.unwrap();
    let units = home.path().join(".config/systemd/user");
    let rule = format!(
        "{}\n[[auto.always]]\nkind = \"write\"\nproject = \"/srv/app\"\ngrants = [{{ kind = \"write\", path = \"{}\" }}]\nrule = \"write my units\"\n",
        config(&server),
        units.display()
    );
    std::fs::write(home.path().join("config/config.toml"), rule).unwrap();
    let reload = client.ok("admin.config_reload", json!(null)).await.unwrap();
    assert_eq!(reload["applied"], true, "{reload}");
    let warnings = reload["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{reload}");
    assert_eq!(
        warnings[0],
        "auto.always[0] (write my units) is disabled: it would write the floor file ~/.config/systemd/user/; efr \
         asks for that exit each time."
    );
    let again = client.ok("admin.config_reload", json!(null)).await.unwrap();
    assert!(again.get("warnings").is_none(), "each warning comes once: {again}");
}
