//! Retries of a model call that failed before it produced any output.
//!
//! Only errors a new attempt may cure are retried ([`ModelError::is_retryable`]: 429, 5xx, 529, transport errors and
//! a stream cut before its first event), and only while nothing has reached the caller: once an event went out, a
//! retry would repeat it, so a later error ends the stream. The wait grows exponentially with jitter and is never
//! shorter than the provider's `Retry-After`; a 401 is never retried (it is [`ModelError::KeyRefused`]).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};
use rand::Rng;

use super::event::{ModelError, ModelEvent};

/// How a model call is retried. Durations are wall-clock time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryConfig {
    /// Attempts in all, the first one included; 1 turns retries off.
    pub max_attempts: u32,
    /// The wait before the second attempt, before jitter; it doubles for each attempt after.
    pub base_delay: Duration,
    /// The longest backoff, before the provider's `Retry-After` is applied.
    pub max_delay: Duration,
    /// The longest `Retry-After` that efr waits for; a provider that asks for more fails the call at once, since a
    /// turn should not hang that long without a word.
    pub max_retry_after: Duration,
}

impl Default for RetryConfig {
    /// 4 attempts; waits of about 1 s, 2 s and 4 s; at most 30 s of backoff and 60 s of `Retry-After`.
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryConfig {
    /// The wait before the next attempt after `attempt` (1 for the first) failed with `error`, or `None` when the
    /// call must fail now: the error is final, the attempts are spent, or the provider asks for too long a wait.
    /// `jitter` in `[0, 1)` picks the backoff in its upper half: `d/2 + jitter * d/2` for `d = base * 2^(attempt-1)`.
    #[must_use]
    pub fn delay(&self, attempt: u32, error: &ModelError, jitter: f64) -> Option<Duration> {
        if !error.is_retryable() || attempt >= self.max_attempts {
            return None;
        }
        let asked = error.retry_after();
        if asked.is_some_and(|asked| asked > self.max_retry_after) {
            return None;
        }
        let exponent = attempt.saturating_sub(1).min(30);
        let full = self.base_delay.saturating_mul(1 << exponent).min(self.max_delay);
        let backoff = full / 2 + full.mul_f64(jitter.clamp(0.0, 1.0) / 2.0);
        Some(asked.map_or(backoff, |asked| asked.max(backoff)))
    }
}

/// Runs `attempt` until one yields an event or fails with a final error, waiting between attempts as `config` says.
/// `attempt` makes one whole try (request and stream); its errors come as stream items.
pub fn with_retry<F, Fut, S>(
    config: RetryConfig,
    attempt: F,
) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send
where
    F: FnMut() -> Fut + Send,
    Fut: Future<Output = S> + Send,
    S: Stream<Item = Result<ModelEvent, ModelError>> + Send + 'static,
{
    enum Phase<S> {
        Open,
        Stream(Pin<Box<S>>),
        Done,
    }
    futures::stream::unfold(
        (config, attempt, Phase::<S>::Open),
        |(config, mut attempt, phase)| async move {
            match phase {
                Phase::Done => None,
                Phase::Stream(mut stream) => match stream.next().await {
                    Some(Ok(event)) => Some((Ok(event), (config, attempt, Phase::Stream(stream)))),
                    Some(Err(error)) => Some((Err(error), (config, attempt, Phase::Done))),
                    None => None,
                },
                Phase::Open => {
                    let mut number = 1;
                    loop {
                        let mut stream = Box::pin(attempt().await);
                        let error = match stream.next().await {
                            Some(Ok(event)) => return Some((Ok(event), (config, attempt, Phase::Stream(stream)))),
                            Some(Err(error)) => error,
                            None => ModelError::StreamEnded,
                        };
                        let jitter = rand::rng().random::<f64>();
                        let Some(wait) = config.delay(number, &error, jitter) else {
                            return Some((Err(error), (config, attempt, Phase::Done)));
                        };
                        tracing::warn!(attempt = number, wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), %error, "model call failed, retrying");
                        tokio::time::sleep(wait).await;
                        number += 1;
                    }
                }
            }
        },
    )
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
