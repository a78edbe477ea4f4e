//! The model catalog: fetched from the scripted server's `GET /v1/models` (both list shapes), cached on disk, the
//! cache and the built-in list when the fetch fails, `missing` for Anthropic, config models, a refused key, and the
//! check of a prompt's model and effort.

// Test helpers outside #[test] functions may panic too (team rule: tests may unwrap).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use efr_model::{
    Auth, Catalog, CatalogCache, CatalogConfig, CatalogOrigin, ConfigModel, EnvKeys, KeyStore, ModelError, ModelSource,
    Provider, ProviderConfig, ProviderKind, SettingsError,
};
use efr_test_support::scripted::{HttpError, ModelsStep, Script, ScriptedModel};
use serde_json::json;

struct Fixture {
    server: ScriptedModel,
    keys: Arc<KeyStore>,
    cache: CatalogCache,
    state: tempfile::TempDir,
}

async fn fixture(script: Script) -> Fixture {
    let server = ScriptedModel::start(script).await.expect("server");
    let state = tempfile::tempdir().expect("tempdir");
    let env = EnvKeys::new(
        Some("sk-proj-catalogtestcatalogtest-1234".into()),
        Some("sk-ant-catalogtestcatalog-5678".into()),
    );
    let keys = Arc::new(KeyStore::open(state.path(), env));
    let cache = CatalogCache::new(state.path());
    Fixture {
        server,
        keys,
        cache,
        state,
    }
}

impl Fixture {
    fn provider(&self, kind: ProviderKind) -> Provider {
        Provider::new(
            ProviderConfig::new(kind, self.server.base_url()),
            Auth::Store(Arc::clone(&self.keys)),
        )
        .expect("provider")
    }
}

fn failing(count: usize) -> Vec<ModelsStep> {
    vec![
        ModelsStep::HttpError(HttpError {
            status: 500,
            ..HttpError::default()
        });
        count
    ]
}

#[tokio::test]
async fn openai_list_is_fetched_filtered_cached_then_served_from_cache_and_builtin() {
    let listed = [
        "whisper-1",
        "gpt-5-mini",
        "text-embedding-3-small",
        "gpt-5",
        "gpt-4o-realtime-preview",
        "o3",
        "gpt-4.1",
    ];
    let f = fixture(Script {
        model_steps: failing(0),
        models: listed.map(String::from).to_vec(),
        ..Script::default()
    })
    .await;
    let provider = f.provider(ProviderKind::OpenAiApi);
    let load = Catalog::load(&provider, &f.cache, &CatalogConfig::default()).await;
    assert_eq!(load.fetch_error, None);
    let catalog = load.catalog;
    assert_eq!(catalog.origin, CatalogOrigin::Backend);
    assert_eq!(catalog.provider, ProviderKind::OpenAiApi);
    let ids: Vec<&str> = catalog.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["gpt-5-mini", "gpt-5", "o3", "gpt-4.1"]);
    let gpt5 = &catalog.models[1];
    assert!(gpt5.default, "gpt-5 is the default when listed");
    assert_eq!(gpt5.efforts, ["minimal", "low", "medium", "high"]);
    assert_eq!(gpt5.default_effort.as_deref(), Some("medium"));
    assert_eq!(gpt5.context_window, Some(400_000));
    assert_eq!(gpt5.source, ModelSource::Builtin);
    assert!(catalog.models[3].efforts.is_empty(), "gpt-4.1 has no efforts");
    assert_eq!(catalog.models.iter().filter(|m| m.default).count(), 1);
    let fetched_at = catalog.fetched_at.expect("fetched_at");
    let request = &f.server.requests()[0];
    assert_eq!(request.path, "/v1/models");
    assert_eq!(request.header("authorization"), Some("Bearer sk-proj-...1234"));
    assert!(f.state.path().join("catalog/openai-api.json").exists());

    // The next fetch fails: the cache serves, with the time of its fetch.
    f.server.push_models(ModelsStep::HttpError(HttpError {
        status: 503,
        ..HttpError::default()
    }));
    let load = Catalog::load(&provider, &f.cache, &CatalogConfig::default()).await;
    assert!(matches!(
        load.fetch_error,
        Some(ModelError::Server { status: Some(503), .. })
    ));
    assert_eq!(load.catalog.origin, CatalogOrigin::Cache);
    assert_eq!(load.catalog.fetched_at, Some(fetched_at));
    assert_eq!(load.catalog.models, catalog.models);

    // No cache and no fetch: the built-in list.
    std::fs::remove_file(f.state.path().join("catalog/openai-api.json")).expect("remove");
    f.server.push_models(ModelsStep::HttpError(HttpError {
        status: 500,
        ..HttpError::default()
    }));
    let load = Catalog::load(&provider, &f.cache, &CatalogConfig::default()).await;
    assert_eq!(load.catalog.origin, CatalogOrigin::Builtin);
    assert_eq!(load.catalog.fetched_at, None);
    assert_eq!(load.catalog.default_model().map(|m| m.id.as_str()), Some("gpt-5"));
}

#[tokio::test]
async fn anthropic_list_uses_its_headers_and_is_missing_without_fetch_or_cache() {
    let f = fixture(Script {
        model_steps: failing(1),
        models: vec!["claude-sonnet-4-5-20250929".into(), "claude-3-5-haiku-20241022".into()],
        ..Script::default()
    })
    .await;
    let provider = f.provider(ProviderKind::AnthropicApi);
    let missing = Catalog::load(&provider, &f.cache, &CatalogConfig::default()).await;
    assert_eq!(missing.catalog.origin, CatalogOrigin::Missing);
    assert!(missing.catalog.models.is_empty());
    assert_eq!(missing.catalog.default_model(), None);

    let load = Catalog::load(&provider, &f.cache, &CatalogConfig::default()).await;
    assert_eq!(load.catalog.origin, CatalogOrigin::Backend);
    let request = &f.server.requests()[1];
    assert_eq!(request.query.as_deref(), Some("limit=1000"));
    assert_eq!(request.header("x-api-key"), Some("sk-ant-...5678"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    let models = &load.catalog.models;
    assert_eq!(models[0].id, "claude-sonnet-4-5-20250929");
    assert!(models[0].default);
    assert_eq!(models[0].efforts, ["low", "medium", "high"]);
    assert!(models[1].efforts.is_empty(), "Claude 3.5 does not think");
    assert_eq!(models[1].context_window, Some(200_000));
}

#[tokio::test]
async fn a_refused_key_on_the_model_list_is_marked() {
    let f = fixture(Script {
        model_steps: vec![ModelsStep::HttpError(HttpError {
            status: 401,
            ..HttpError::default()
        })],
        ..Script::default()
    })
    .await;
    let load = Catalog::load(
        &f.provider(ProviderKind::AnthropicApi),
        &f.cache,
        &CatalogConfig::default(),
    )
    .await;
    assert!(
        matches!(load.fetch_error, Some(ModelError::KeyRefused { .. })),
        "{:?}",
        load.fetch_error
    );
    assert_eq!(load.catalog.origin, CatalogOrigin::Missing);
    assert!(f.keys.status(ProviderKind::AnthropicApi).refused_at.is_some());
}

#[tokio::test]
async fn config_models_add_and_replace_and_name_the_default() {
    let f = fixture(Script {
        models: vec!["qwen3:8b".into(), "llama3.2".into()],
        ..Script::default()
    })
    .await;
    let config = CatalogConfig {
        models: vec![
            ConfigModel {
                id: "llama3.2".into(),
                efforts: Vec::new(),
                default_effort: None,
                context_window: Some(131_072),
            },
            ConfigModel {
                id: "gpt-oss:20b".into(),
                efforts: vec!["low".into(), "medium".into(), "high".into()],
                default_effort: Some("low".into()),
                context_window: None,
            },
        ],
        default_model: Some("gpt-oss:20b".into()),
    };
    let provider = Provider::new(
        ProviderConfig::new(ProviderKind::OpenAiCompat, f.server.base_url()),
        Auth::None,
    )
    .expect("provider");
    let catalog = Catalog::load(&provider, &f.cache, &config).await.catalog;
    assert_eq!(catalog.origin, CatalogOrigin::Backend);
    let summary: Vec<(&str, ModelSource, bool)> = catalog
        .models
        .iter()
        .map(|m| (m.id.as_str(), m.source, m.default))
        .collect();
    assert_eq!(
        summary,
        [
            ("qwen3:8b", ModelSource::Builtin, false),
            ("llama3.2", ModelSource::Config, false),
            ("gpt-oss:20b", ModelSource::Config, true)
        ]
    );
    assert_eq!(catalog.models[1].context_window, Some(131_072));
    assert_eq!(catalog.models[2].default_effort.as_deref(), Some("low"));
    // The compat server got no key.
    assert_eq!(f.server.requests()[0].header("authorization"), None);
}

#[test]
fn validate_names_the_setting_value_and_choices() {
    let catalog = Catalog::resolve(ProviderKind::OpenAiApi, None, None, &CatalogConfig::default());
    assert_eq!(
        catalog.validate("gpt-5", Some("high")).map(|m| m.id.as_str()),
        Ok("gpt-5")
    );
    assert_eq!(catalog.validate("gpt-4.1", None).map(|m| m.id.as_str()), Ok("gpt-4.1"));

    let unknown = catalog.validate("gpt-9", None).expect_err("unknown model");
    assert_eq!(
        unknown,
        SettingsError {
            setting: "model",
            value: "gpt-9".into(),
            choices: vec!["gpt-5".into(), "gpt-5-mini".into(), "gpt-4.1".into()],
            model: None
        }
    );
    assert_eq!(
        unknown.data(),
        json!({"setting": "model", "value": "gpt-9", "choices": ["gpt-5", "gpt-5-mini", "gpt-4.1"]})
    );

    let effort = catalog.validate("gpt-5", Some("extreme")).expect_err("unknown effort");
    assert_eq!(
        effort.data(),
        json!({"setting": "effort", "value": "extreme", "choices": ["minimal", "low", "medium", "high"], "model": "gpt-5"})
    );
    assert!(effort.to_string().contains("minimal, low, medium, high"), "{effort}");
    let none = catalog.validate("gpt-4.1", Some("low")).expect_err("no efforts");
    assert_eq!(none.choices, Vec::<String>::new());
    assert_eq!(none.model.as_deref(), Some("gpt-4.1"));

    let missing = Catalog::resolve(ProviderKind::AnthropicApi, None, None, &CatalogConfig::default());
    assert_eq!(missing.origin, CatalogOrigin::Missing);
    assert_eq!(
        missing.validate("claude-sonnet-4-5", None).expect_err("empty").choices,
        Vec::<String>::new()
    );
}

#[test]
fn a_damaged_cache_is_ignored() {
    let state = tempfile::tempdir().expect("tempdir");
    let cache = CatalogCache::new(state.path());
    std::fs::create_dir_all(state.path().join("catalog")).expect("dir");
    std::fs::write(
        state.path().join("catalog/anthropic-api.json"),
        "{\"provider\": \"anthropic-api\", \"fetch",
    )
    .expect("write");
    assert_eq!(cache.read(ProviderKind::AnthropicApi), None);
    // A cache of another provider under this name is not used either.
    cache
        .write(ProviderKind::OpenAiApi, chrono::Utc::now(), &[])
        .expect("write");
    std::fs::copy(
        state.path().join("catalog/openai-api.json"),
        state.path().join("catalog/anthropic-api.json"),
    )
    .expect("copy");
    assert_eq!(cache.read(ProviderKind::AnthropicApi), None);
    assert!(cache.read(ProviderKind::OpenAiApi).is_some());
}
