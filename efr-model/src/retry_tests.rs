//! Unit tests of the retry schedule.

use std::time::Duration;

use super::RetryConfig;
use crate::event::ModelError;

fn config() -> RetryConfig {
    RetryConfig {
        max_attempts: 5,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_millis(500),
        max_retry_after: Duration::from_secs(10),
    }
}

fn server() -> ModelError {
    ModelError::Server {
        status: Some(500),
        message: String::new(),
    }
}

#[test]
fn backoff_doubles_with_jitter_in_the_upper_half_and_is_capped() {
    let c = config();
    assert_eq!(c.delay(1, &server(), 0.0), Some(Duration::from_millis(50)));
    assert_eq!(c.delay(1, &server(), 0.999_999).map(|d| d.as_millis()), Some(99));
    assert_eq!(c.delay(2, &server(), 0.0), Some(Duration::from_millis(100)));
    assert_eq!(c.delay(3, &server(), 0.5), Some(Duration::from_millis(300)));
    // 800 ms capped to 500.
    assert_eq!(c.delay(4, &server(), 1.0), Some(Duration::from_millis(500)));
}

#[test]
fn attempts_are_bounded() {
    assert_eq!(config().delay(5, &server(), 0.5), None);
    let once = RetryConfig {
        max_attempts: 1,
        ..config()
    };
    assert_eq!(once.delay(1, &server(), 0.5), None);
}

#[test]
fn retry_after_is_a_floor_and_too_long_a_wait_fails() {
    let c = config();
    let limited = |secs| ModelError::RateLimited {
        retry_after: Some(Duration::from_secs(secs)),
        message: String::new(),
    };
    assert_eq!(c.delay(1, &limited(2), 0.5), Some(Duration::from_secs(2)));
    assert_eq!(c.delay(1, &limited(11), 0.5), None);
    let overloaded = ModelError::Overloaded {
        retry_after: None,
        message: String::new(),
    };
    assert_eq!(c.delay(1, &overloaded, 0.0), Some(Duration::from_millis(50)));
}

#[test]
fn final_errors_are_not_retried() {
    let c = config();
    for error in [
        ModelError::KeyRefused {
            provider: "openai-api".into(),
            message: String::new(),
        },
        ModelError::MissingKey {
            provider: "openai-api".into(),
        },
        ModelError::ContextOverflow { message: String::new() },
        ModelError::Rejected {
            status: 400,
            message: String::new(),
        },
        ModelError::BadResponse { message: String::new() },
    ] {
        assert_eq!(c.delay(1, &error, 0.5), None, "{error:?}");
    }
    for error in [
        ModelError::StreamEnded,
        ModelError::Transport { message: String::new() },
    ] {
        assert!(c.delay(1, &error, 0.5).is_some(), "{error:?}");
    }
}
