//! How a match scores (README.md, "Search", says the same):
//!
//! `score = weight(kind) × recency(age) × (1 + relevance)`
//!
//! - `weight`: title 4, prompt 2, command 1.5, answer 1.
//! - `recency = 1 / (1 + age_days / 7)`: 1 now, ½ after a week, ⅕ after four weeks.
//! - `relevance = min(1, −bm25 / 10)`, FTS5's bm25 of the entry (0 when the search did not use the index), so it at
//!   most doubles a score.
//!
//! A conversation scores as its best entry. So a title match always beats an answer match of the same age or older
//! (4 × r against at most 1 × r × 2), and a match of today beats the same match of last month.

use efr_protocol::ids::Timestamp;
use efr_protocol::wire::SearchKind;

/// How much a match in `kind` weighs.
#[must_use]
pub fn weight(kind: SearchKind) -> f64 {
    match kind {
        SearchKind::Title => 4.0,
        SearchKind::Prompt => 2.0,
        SearchKind::Command => 1.5,
        SearchKind::Answer | SearchKind::Unknown => 1.0,
    }
}

/// The recency factor of a match made at `at`, seen at `now`.
#[must_use]
pub fn recency(at: Timestamp, now: Timestamp) -> f64 {
    let age_ms = now.as_millis().saturating_sub(at.as_millis()).max(0);
    #[allow(clippy::cast_precision_loss)] // Days need no more than f64's 52 bits.
    let age_days = age_ms as f64 / 86_400_000.0;
    1.0 / (1.0 + age_days / 7.0)
}

/// The score of a match (see the module docs).
#[must_use]
pub fn score(kind: SearchKind, at: Timestamp, now: Timestamp, bm25: f64) -> f64 {
    let relevance = (-bm25 / 10.0).clamp(0.0, 1.0);
    weight(kind) * recency(at, now) * (1.0 + relevance)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn days_ago(now: Timestamp, days: i64) -> Timestamp {
        Timestamp::from_millis(now.as_millis() - days * 86_400_000).unwrap_or(now)
    }

    #[test]
    fn a_recent_title_beats_an_old_answer_and_today_beats_last_month() {
        let now = Timestamp::now();
        let title = score(SearchKind::Title, days_ago(now, 1), now, 0.0);
        let answer = score(SearchKind::Answer, days_ago(now, 30), now, -50.0);
        assert!(title > answer, "{title} > {answer}");
        let same_age_answer = score(SearchKind::Answer, days_ago(now, 1), now, -50.0);
        assert!(title > same_age_answer);
        assert!(score(SearchKind::Prompt, now, now, 0.0) > score(SearchKind::Prompt, days_ago(now, 30), now, 0.0));
        assert!((recency(days_ago(now, 7), now) - 0.5).abs() < 1e-9);
    }
}
