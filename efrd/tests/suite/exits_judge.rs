//! The judge chain of exits end to end: `[auto]` in a real config file, the catalog fetched from the scripted model
//! server, `Judges::for_turn` with real providers over loopback, and `review` deciding calls — approve, deny, an
//! unreadable answer, a timeout, a reask, an abstain passed on to the turn's model, the pause after denials, kinds
//! that only the user approves, and a classifier that is not in models.list. Each test also checks what the server
//! received: the record's facts, never a floor edit's payload.

// Test helpers outside #[test] functions may panic too (team rule: tests may unwrap).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use efr_model::{EnvKeys, KeyStore};
use efr_protocol::events::{ClassifierPaused, EventBody, ExitJudged, PauseReason};
use efr_protocol::ids::CallId;
use efr_protocol::wire::{
    ChainStep, ExitAction, ExitFacts, ExitKind, ExitRecord, ExitSource, ExitTarget, Grant, HostFact, JudgeKind, Needs,
    TargetClass, Verdict,
};
use efr_test_support::scripted::{HttpError, RecordedRequest, Reply, ReplyEvent, Script, ScriptedModel, Step};
use efrd::config::ConfigState;
use efrd::exits::judge::{ChainOutcome, ChainResult, Judges, Review, TurnDenials, review};
use efrd::models::Models;

const OPENAI_KEY: &str = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789a1b2";
const ANTHROPIC_KEY: &str = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789c3d4";
const CLASSIFIER: &str = "gpt-5-mini";
const TURN_MODEL: &str = "gpt-5";
/// A floor edit's payload (a file's content): it must reach no model.
const PLANTED_EDIT: &str = "PLANTED-FILE-CONTENT-7f3a";
const GOOD_REASON: &str = "crates.io serves the crate the user asked to add";

struct Fixture {
    server: ScriptedModel,
    config: Arc<ConfigState>,
    models: Models,
    config_text: String,
    _dir: tempfile::TempDir,
}

/// A scripted server playing `steps`, listing gpt-5 and gpt-5-mini, and the model layer of a config with `auto`
/// as its `[auto]` section, its catalog fetched from the server.
async fn fixture(steps: Vec<Step>, auto: &str) -> Fixture {
    fixture_of("openai-api", &[TURN_MODEL, CLASSIFIER], steps, auto).await
}

/// As [`fixture`], for `provider` listing `listed`.
async fn fixture_of(provider: &str, listed: &[&str], steps: Vec<Step>, auto: &str) -> Fixture {
    let server = ScriptedModel::start(Script {
        steps,
        models: listed.iter().map(|id| (*id).to_owned()).collect(),
        ..Script::default()
    })
    .await
    .expect("scripted model server");
    let dir = tempfile::tempdir().expect("tempdir");
    let config_text = format!(
        "[model]\nprovider = \"{provider}\"\n\n[providers.{provider}]\nbase_url = \"{}\"\nretry = {{ max_attempts \
         = 1 }}\n\n[auto]\n{auto}\n",
        server.base_url()
    );
    let path = dir.path().join("config.toml");
    std::fs::write(&path, &config_text).unwrap();
    let (config, _) = ConfigState::load(&path).expect("config");
    let env = EnvKeys::new(Some(OPENAI_KEY.into()), Some(ANTHROPIC_KEY.into()));
    let keys = Arc::new(KeyStore::open(dir.path(), env));
    let config = Arc::new(config);
    let models = Models::new(Arc::clone(&config), keys, dir.path()).expect("models");
    models.refresh_catalog().await;
    Fixture {
        server,
        config,
        models,
        config_text,
        _dir: dir,
    }
}

impl Fixture {
    fn judges(&self) -> Judges {
        self.judges_of(TURN_MODEL)
    }

    fn judges_of(&self, turn_model: &str) -> Judges {
        let provider = self.models.provider_for_turn().expect("provider");
        Judges::for_turn(&self.config.current().auto, &self.models, &provider, turn_model)
    }

    /// The model calls the server received (not the model list).
    fn calls(&self) -> Vec<RecordedRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect()
    }
}

fn answer(verdict: &str, reason: &str) -> Step {
    Reply::text(serde_json::json!({"verdict": verdict, "reason": reason}).to_string()).into()
}

fn host_record() -> ExitRecord {
    ExitRecord {
        kind: ExitKind::Host,
        source: ExitSource::Line,
        action: ExitAction {
            tool: "shell".into(),
            command: Some("cargo add serde".into()),
            edit: Some(PLANTED_EDIT.into()),
            ..Default::default()
        },
        needs: Needs {
            grants: vec![Grant::Host {
                host: "index.crates.io".into(),
                port: None,
            }],
            unsandboxed: false,
        },
        targets: Vec::new(),
        facts: ExitFacts {
            hosts: vec![HostFact {
                host: "index.crates.io".into(),
                port: None,
                project_remote: false,
            }],
            ..ExitFacts::default()
        },
        judgement: None,
    }
}

fn unmask_record() -> ExitRecord {
    ExitRecord {
        kind: ExitKind::Unmask,
        source: ExitSource::Report,
        action: ExitAction {
            tool: "shell".into(),
            command: Some("cat ~/.ssh/id_ed25519".into()),
            edit: None,
            ..Default::default()
        },
        needs: Needs {
            grants: vec![Grant::Unmask {
                path: "/home/ada/.ssh".into(),
            }],
            unsandboxed: false,
        },
        targets: vec![ExitTarget {
            path: PathBuf::from("/home/ada/.ssh/id_ed25519"),
            class: TargetClass::Home,
            masked: true,
            backup_before_write: false,
        }],
        facts: ExitFacts::default(),
        judgement: None,
    }
}

async fn decide(judges: &Judges, denials: &mut TurnDenials, records: &[ExitRecord]) -> ChainResult {
    let call_id = CallId::from("call_7");
    let recent = vec!["cargo build".to_owned(), "cargo test -p app".to_owned()];
    review(
        judges,
        denials,
        Review {
            call_id: &call_id,
            records,
            user_prompt: "add serde to the app crate",
            recent_calls: &recent,
            previous_exits: &[],
        },
    )
    .await
}

fn judged(result: &ChainResult) -> Vec<ExitJudged> {
    result
        .events
        .iter()
        .filter_map(|e| match e {
            EventBody::ExitJudged(j) => Some(j.clone()),
            _ => None,
        })
        .collect()
}

fn paused(result: &ChainResult) -> Vec<ClassifierPaused> {
    result
        .events
        .iter()
        .filter_map(|e| match e {
            EventBody::ClassifierPaused(p) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_classifier_approves_from_the_facts_it_was_sent() {
    let f = fixture(vec![answer("approve", GOOD_REASON)], "").await;
    let judges = f.judges();
    assert_eq!(judges.classifier.as_ref().unwrap().name(), "openai-api/gpt-5-mini");
    assert_eq!(judges.turn_model.as_ref().unwrap().name(), "openai-api/gpt-5");
    let mut denials = TurnDenials {
        in_a_row: 2,
        ..TurnDenials::default()
    };
    let result = decide(&judges, &mut denials, &[host_record()]).await;

    assert_eq!(result.outcome, ChainOutcome::Approved);
    assert!(matches!(&result.events[0], EventBody::ExitReviewStarted(s) if s.kinds == [ExitKind::Host]));
    let judged = judged(&result);
    assert_eq!(judged.len(), 1);
    assert_eq!(
        (
            judged[0].judge,
            judged[0].verdict,
            judged[0].chain_step,
            judged[0].reasked
        ),
        (
            JudgeKind::Classifier,
            Verdict::Approve,
            Some(ChainStep::ClassifierModel),
            false
        )
    );
    assert_eq!(judged[0].reason, GOOD_REASON);
    assert_eq!(judged[0].exit_kind, ExitKind::Host);
    assert_eq!(denials.in_a_row, 0, "an approve ends the run of denials");

    let calls = f.calls();
    assert_eq!(calls.len(), 1);
    let body = &calls[0].body;
    assert_eq!(body["model"], CLASSIFIER);
    assert_eq!(body["reasoning"]["effort"], "minimal");
    assert!(
        body.get("tools").is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)),
        "{body}"
    );
    assert!(body["instructions"].as_str().unwrap().contains("You judge exits"));
    let sent = body.to_string();
    for fact in [
        "index.crates.io",
        "cargo add serde",
        "add serde to the app crate",
        "cargo test -p app",
        "\\\"host\\\"",
    ] {
        assert!(sent.contains(fact), "{fact} not in {sent}");
    }
    assert!(
        !sent.contains(PLANTED_EDIT),
        "a floor edit's payload reached the classifier: {sent}"
    );
}

#[tokio::test]
async fn a_deny_ends_the_chain_and_counts() {
    let f = fixture(vec![answer("deny", "the user did not ask to reach this host")], "").await;
    let mut denials = TurnDenials::default();
    let result = decide(&f.judges(), &mut denials, &[host_record(), host_record()]).await;
    assert_eq!(
        result.outcome,
        ChainOutcome::Denied {
            reason: "the user did not ask to reach this host".into()
        }
    );
    let judged = judged(&result);
    assert_eq!(judged.len(), 2, "one exit_judged per record");
    assert!(
        judged
            .iter()
            .all(|j| j.verdict == Verdict::Deny && j.judge == JudgeKind::Classifier)
    );
    assert_eq!((denials.in_a_row, denials.this_turn, denials.paused), (2, 2, false));
    assert_eq!(f.calls().len(), 1, "the turn's model is not asked after a deny");
}

#[tokio::test]
async fn an_unreadable_answer_an_error_and_a_tool_call_deny() {
    let garbage = Reply::text(format!(
        "Sure! {{\"verdict\":\"approve\",\"reason\":\"{GOOD_REASON}\"}}"
    ))
    .into();
    let error = Step::HttpError(HttpError {
        status: 500,
        ..HttpError::default()
    });
    let tool = Reply::tool_call("call_x", "shell", false, vec!["{}".into()]).into();
    let f = fixture(vec![garbage, error, tool], "").await;
    let judges = f.judges();
    for expected in ["could not be read", "could not judge", "called the tool"] {
        let mut denials = TurnDenials::default();
        let result = decide(&judges, &mut denials, &[host_record()]).await;
        let ChainOutcome::Denied { reason } = &result.outcome else {
            panic!("{expected}: {:?}", result.outcome)
        };
        assert!(reason.contains(expected) && reason.contains("denied"), "{reason}");
        assert_eq!(judged(&result)[0].verdict, Verdict::Deny);
        assert_eq!(denials.this_turn, 1);
    }
    assert_eq!(f.calls().len(), 3);
}

#[tokio::test]
async fn a_classifier_that_does_not_answer_in_time_denies() {
    let slow = Reply::of(vec![
        ReplyEvent::DelayMs(5_000),
        ReplyEvent::Text(r#"{"verdict":"approve","reason":"late but approving"}"#.into()),
    ])
    .into();
    let f = fixture(vec![slow], "").await;
    let mut judges = f.judges();
    judges.timeout = Duration::from_millis(300);
    let started = Instant::now();
    let result = decide(&judges, &mut TurnDenials::default(), &[host_record()]).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert_eq!(
        result.outcome,
        ChainOutcome::Denied {
            reason: "the classifier did not answer within 0.3 s; denied".into()
        }
    );
}

#[tokio::test]
async fn a_placeholder_reason_is_asked_once_more() {
    let f = fixture(
        vec![
            answer("approve", "ok"),
            answer("approve", GOOD_REASON),
            answer("deny", "n/a"),
            answer("deny", ""),
        ],
        "",
    )
    .await;
    let judges = f.judges();
    let result = decide(&judges, &mut TurnDenials::default(), &[host_record()]).await;
    assert_eq!(result.outcome, ChainOutcome::Approved);
    let judged1 = judged(&result);
    assert!(judged1[0].reasked);
    assert_eq!(judged1[0].reason, GOOD_REASON);
    let calls = f.calls();
    assert!(!calls[0].body.to_string().contains("no real reason"));
    assert!(
        calls[1]
            .body
            .to_string()
            .contains("Your previous answer gave no real reason")
    );

    // A second reason that says nothing is a deny.
    let result = decide(&judges, &mut TurnDenials::default(), &[host_record()]).await;
    let ChainOutcome::Denied { reason } = &result.outcome else {
        panic!("{:?}", result.outcome)
    };
    assert!(reason.contains("no real reason, twice"), "{reason}");
    assert!(judged(&result)[0].reasked);
    assert_eq!(f.calls().len(), 4);
}

#[tokio::test]
async fn an_abstain_passes_the_exit_to_the_turns_model_then_to_the_user() {
    let f = fixture(
        vec![
            answer("abstain", "cannot tell whether this host is wanted"),
            answer("approve", GOOD_REASON),
            answer("abstain", "cannot tell whether this host is wanted"),
            answer("abstain", "the turn's model cannot tell either"),
        ],
        "",
    )
    .await;
    let judges = f.judges();
    let result = decide(&judges, &mut TurnDenials::default(), &[host_record()]).await;
    assert_eq!(result.outcome, ChainOutcome::Approved);
    let judged1 = judged(&result);
    assert_eq!(
        (judged1[0].judge, judged1[0].chain_step),
        (JudgeKind::TurnModel, Some(ChainStep::TurnModel))
    );
    let models: Vec<_> = f.calls().iter().map(|c| c.body["model"].clone()).collect();
    assert_eq!(models, [CLASSIFIER, TURN_MODEL]);

    let result = decide(&judges, &mut TurnDenials::default(), &[host_record()]).await;
    assert_eq!(
        result.outcome,
        ChainOutcome::AskUser {
            passed_on_by: Some(ChainStep::TurnModel),
            reason: "the turn's model cannot tell either".into()
        }
    );
    assert!(judged(&result).is_empty(), "an abstain decides nothing");
}

#[tokio::test]
async fn denials_pause_the_model_judges_and_the_user_decides() {
    let f = fixture(
        vec![
            answer("deny", "the user did not ask for this host"),
            answer("deny", "the user did not ask for this host"),
        ],
        "pause_after_denials_in_a_row = 2",
    )
    .await;
    let judges = f.judges();
    assert_eq!(judges.pause_in_a_row, 2);
    let mut denials = TurnDenials::default();
    let first = decide(&judges, &mut denials, &[host_record()]).await;
    assert!(paused(&first).is_empty());
    let second = decide(&judges, &mut denials, &[host_record()]).await;
    assert_eq!(
        paused(&second),
        [ClassifierPaused {
            reason: PauseReason::InARow,
            denials: 2
        }]
    );
    assert!(matches!(second.events.last(), Some(EventBody::ClassifierPaused(_))));
    assert!(denials.paused);

    let third = decide(&judges, &mut denials, &[host_record()]).await;
    let ChainOutcome::AskUser { passed_on_by, reason } = &third.outcome else {
        panic!("{:?}", third.outcome)
    };
    assert_eq!(*passed_on_by, None);
    assert!(reason.contains("paused"), "{reason}");
    assert_eq!(third.skipped, ["openai-api/gpt-5-mini", "openai-api/gpt-5"]);
    assert!(paused(&third).is_empty(), "classifier_paused is recorded once");
    assert_eq!(f.calls().len(), 2, "no model is asked while paused");
}

#[tokio::test]
async fn a_kind_only_the_user_approves_never_reaches_a_model() {
    let f = fixture(vec![answer("approve", GOOD_REASON)], "").await;
    let result = decide(
        &f.judges(),
        &mut TurnDenials::default(),
        &[host_record(), unmask_record()],
    )
    .await;
    assert_eq!(
        result.outcome,
        ChainOutcome::AskUser {
            passed_on_by: None,
            reason: "only you may approve this unmask exit".into()
        }
    );
    assert!(
        matches!(&result.events[..], [EventBody::ExitReviewStarted(s)] if s.kinds == [ExitKind::Host, ExitKind::Unmask])
    );
    assert!(f.calls().is_empty());
    assert_eq!(f.server.steps_left(), 1);
}

#[tokio::test]
async fn a_classifier_that_is_not_listed_is_a_config_error_and_skipped() {
    let f = fixture(
        vec![answer("deny", "the user did not ask for this host")],
        "judge_timeout_secs = 5\nclassifier_model = \"gpt-9-nano\"",
    )
    .await;
    let error = f.config.recheck().unwrap_err();
    let line = f
        .config_text
        .lines()
        .position(|l| l.starts_with("classifier_model"))
        .unwrap()
        + 1;
    assert_eq!(
        (error.line, error.column, error.key.as_deref()),
        (
            Some(u32::try_from(line).unwrap()),
            Some(20),
            Some("auto.classifier_model")
        ),
        "{error}"
    );
    assert!(error.message.contains("gpt-9-nano"), "{error}");

    // At run time the turn's model judges, and its exit_judged says what was skipped.
    let judges = f.judges();
    assert!(judges.classifier.is_none());
    assert_eq!(judges.timeout, Duration::from_secs(5));
    let result = decide(&judges, &mut TurnDenials::default(), &[host_record()]).await;
    let judged = judged(&result);
    assert_eq!(
        (judged[0].judge, judged[0].verdict),
        (JudgeKind::TurnModel, Verdict::Deny)
    );
    assert_eq!(judged[0].skipped, ["openai-api/gpt-9-nano"]);
    assert_eq!(f.calls()[0].body["model"], TURN_MODEL);

    // A listed one passes the check.
    let ok = fixture(Vec::new(), "classifier_model = \"gpt-5-mini\"").await;
    assert_eq!(ok.config.recheck(), Ok(()));

    // admin.config_reload refuses a file whose classifier is not listed, at its place, and keeps the config.
    let state = &ok.config;
    let text = ok.config_text.replace("gpt-5-mini", "gpt-4o-mini");
    std::fs::write(state.path(), &text).unwrap();
    let outcome = state.reload();
    assert!(!outcome.applied);
    let error = outcome.error.unwrap();
    let line = text.lines().position(|l| l.starts_with("classifier_model")).unwrap() + 1;
    assert_eq!(
        (error.line, error.key.as_deref()),
        (Some(u32::try_from(line).unwrap()), Some("auto.classifier_model"))
    );
    assert!(error.message.contains("\"gpt-4o-mini\" is not in"), "{error}");
    std::fs::write(
        state.path(),
        ok.config_text.replace("gpt-5-mini", "anthropic-api/claude-haiku-4-5"),
    )
    .unwrap();
    assert!(
        state.reload().applied,
        "another provider without a list cannot be checked"
    );
}

#[tokio::test]
async fn anthropics_classifier_is_its_haiku_model_asked_without_thinking() {
    let listed = ["claude-sonnet-4-5", "claude-haiku-4-5"];
    let f = fixture_of("anthropic-api", &listed, vec![answer("approve", GOOD_REASON)], "").await;
    let judges = f.judges_of("claude-sonnet-4-5");
    assert_eq!(
        judges.classifier.as_ref().unwrap().name(),
        "anthropic-api/claude-haiku-4-5"
    );
    let result = decide(&judges, &mut TurnDenials::default(), &[host_record()]).await;
    assert_eq!(result.outcome, ChainOutcome::Approved);
    let calls = f.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].path, "/v1/messages");
    let body = &calls[0].body;
    assert_eq!(body["model"], "claude-haiku-4-5");
    assert_eq!(body["max_tokens"], 4096);
    assert!(body.get("thinking").is_none() && body.get("tools").is_none(), "{body}");
    assert!(body["system"][0]["text"].as_str().unwrap().contains("You judge exits"));
    let sent = body.to_string();
    assert!(
        sent.contains("index.crates.io") && !sent.contains(PLANTED_EDIT),
        "{sent}"
    );
}

#[tokio::test]
async fn without_a_classifier_the_turns_model_judges_on_a_compat_server() {
    let steps = vec![answer("deny", "the user asked for no network access at all")];
    let f = fixture_of("openai-compat", &["qwen3-coder"], steps, "").await;
    let judges = f.judges_of("qwen3-coder");
    assert!(judges.classifier.is_none() && judges.unavailable.is_empty());
    let result = decide(&judges, &mut TurnDenials::default(), &[host_record()]).await;
    let judged = judged(&result);
    assert_eq!(
        (judged[0].judge, judged[0].chain_step, judged[0].verdict),
        (JudgeKind::TurnModel, Some(ChainStep::TurnModel), Verdict::Deny)
    );
    assert!(judged[0].skipped.is_empty());
    let calls = f.calls();
    assert_eq!(calls[0].path, "/v1/chat/completions");
    assert_eq!(calls[0].body["model"], "qwen3-coder");
}
