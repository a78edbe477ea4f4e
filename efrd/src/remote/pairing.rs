//! The open pairings of device.pair_start, in memory only (docs/protocol.md, "Remote devices": rules of efrd for a
//! pairing).
//!
//! - The token has 144 random bits; efrd keeps only its SHA-256, and only here: a restart ends every pairing. It is
//!   good for one device.enroll and for its lifetime (`[remote] token_lifetime_secs`, at most the spec's
//!   [`TOKEN_LIFETIME`]). At most [`MAX_OPEN`] pairings are open at one time.
//! - While a pairing waits for a phone, wrong tokens are counted; after [`WRONG_TOKENS`] of them, the next one ends
//!   each pairing that waits for a phone with `attempts`. A pairing that opens while none waits starts the count anew.
//! - After the phone enrolled, the terminal has until the token expires to answer, but at least [`MIN_ANSWER`].
//! - The pairing's stream (device.pair_start) owns it: its end (a cancel, a closed connection) removes it, and a phone
//!   that waits for the answer then gets `forbidden`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use efr_protocol::ids::{DeviceId, PairingId};
use efr_protocol::wire::PairEnd;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::admission::PeerFacts;

/// How long a token is good at most, and by default (docs/protocol.md, "Remote devices").
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// The least time the terminal has to answer after the phone enrolled.
pub const MIN_ANSWER: Duration = Duration::from_secs(2 * 60);

/// At most this many pairings are open at one time.
pub const MAX_OPEN: usize = 4;

/// Wrong tokens counted before the next one ends the waiting pairings.
pub const WRONG_TOKENS: u32 = 5;

/// What a pairing's stream hears.
#[derive(Debug)]
pub enum StreamEvent {
    /// A phone enrolled: show its facts and ask.
    Pending(Enrollment),
    /// The user said yes.
    Paired(DeviceId),
    /// The pairing ended without a device.
    Ended(PairEnd),
}

/// A phone's enrollment, waiting for the terminal's answer.
#[derive(Debug, Clone)]
pub struct Enrollment {
    /// The device's name (the terminal's, else the phone's).
    pub name: String,
    /// The 65-byte P-256 point.
    pub public_key: Vec<u8>,
    /// Its fingerprint.
    pub key_fingerprint: String,
    /// Who the phone is on the tailnet.
    pub peer: PeerFacts,
    /// The tailnet it enrolled on.
    pub tailnet: String,
}

/// What the phone's device.enroll hears.
#[derive(Debug)]
pub enum EnrollOutcome {
    /// Paired.
    Paired(DeviceId),
    /// The user said no.
    Refused,
}

enum Stage {
    /// The QR code is shown; no phone has enrolled.
    WaitingForPhone,
    /// A phone enrolled; the terminal is asked.
    Enrolled {
        enrollment: Box<Enrollment>,
        answer: oneshot::Sender<EnrollOutcome>,
    },
    /// The answer is being written.
    Answered,
}

struct Pairing {
    token_hash: [u8; 32],
    name: Option<String>,
    expires_at: Instant,
    stream: mpsc::UnboundedSender<StreamEvent>,
    stage: Stage,
}

#[derive(Default)]
struct Inner {
    open: HashMap<PairingId, Pairing>,
    wrong_tokens: u32,
}

/// Every open pairing.
#[derive(Default)]
pub struct Pairings {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Pairings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pairings")
            .field("open", &self.lock().open.len())
            .finish()
    }
}

/// Why a pairing could not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooMany;

/// Why an enrollment was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnrollRefusal {
    /// No pairing waits for a phone with this token (or it expired).
    WrongToken,
}

/// A pairing that took a phone's enrollment: the phone waits on `outcome` until `deadline`.
#[derive(Debug)]
pub struct Waiting {
    /// The pairing.
    pub pairing_id: PairingId,
    /// The answer.
    pub outcome: oneshot::Receiver<EnrollOutcome>,
    /// When the terminal's time to answer ends.
    pub deadline: Instant,
}

fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Pairings {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens a pairing for `token`, good for `lifetime`; its stream hears on `stream`. Returns when it expires.
    ///
    /// # Errors
    /// [`TooMany`] when [`MAX_OPEN`] are open.
    pub fn open(
        &self,
        id: PairingId,
        token: &str,
        name: Option<String>,
        lifetime: Duration,
        stream: mpsc::UnboundedSender<StreamEvent>,
    ) -> Result<Instant, TooMany> {
        let mut inner = self.lock();
        if inner.open.len() >= MAX_OPEN {
            return Err(TooMany);
        }
        if !inner.open.values().any(|p| matches!(p.stage, Stage::WaitingForPhone)) {
            inner.wrong_tokens = 0;
        }
        let expires_at = Instant::now() + lifetime;
        inner.open.insert(
            id,
            Pairing {
                token_hash: hash(token),
                name,
                expires_at,
                stream,
                stage: Stage::WaitingForPhone,
            },
        );
        Ok(expires_at)
    }

    /// Removes a pairing (its stream ended). A phone that waits for the answer then hears nothing: `forbidden`.
    pub fn close(&self, id: PairingId) {
        self.lock().open.remove(&id);
    }

    /// The pairing that waits for a phone with `token` and has not expired, if any.
    ///
    /// # Errors
    /// [`EnrollRefusal::WrongToken`], after counting it; the fifth wrong token before it ends the waiting pairings.
    pub fn find(&self, token: &str) -> Result<(PairingId, Option<String>), EnrollRefusal> {
        let wanted = hash(token);
        let now = Instant::now();
        let mut inner = self.lock();
        let found = inner
            .open
            .iter()
            .find(|(_, p)| matches!(p.stage, Stage::WaitingForPhone) && p.expires_at > now && p.token_hash == wanted);
        if let Some((id, pairing)) = found {
            return Ok((*id, pairing.name.clone()));
        }
        if inner.wrong_tokens >= WRONG_TOKENS {
            inner.wrong_tokens = 0;
            inner.open.retain(|_, p| {
                if matches!(p.stage, Stage::WaitingForPhone) {
                    let _ = p.stream.send(StreamEvent::Ended(PairEnd::Attempts));
                    false
                } else {
                    true
                }
            });
        } else if inner.open.values().any(|p| matches!(p.stage, Stage::WaitingForPhone)) {
            inner.wrong_tokens += 1;
        }
        Err(EnrollRefusal::WrongToken)
    }

    /// Takes a phone's enrollment for pairing `id`: the stream hears `pending`, and the phone waits on the result.
    /// `None` when the pairing no longer waits for a phone (another phone was first, or it ended).
    pub fn enroll(&self, id: PairingId, enrollment: Enrollment) -> Option<Waiting> {
        let mut inner = self.lock();
        let pairing = inner.open.get_mut(&id)?;
        if !matches!(pairing.stage, Stage::WaitingForPhone) {
            return None;
        }
        let (answer, outcome) = oneshot::channel();
        let deadline = pairing.expires_at.max(Instant::now() + MIN_ANSWER);
        let _ = pairing.stream.send(StreamEvent::Pending(enrollment.clone()));
        pairing.stage = Stage::Enrolled {
            enrollment: Box::new(enrollment),
            answer,
        };
        Some(Waiting {
            pairing_id: id,
            outcome,
            deadline,
        })
    }

    /// Takes the enrollment of pairing `id` for the terminal's answer; `None` when no phone has enrolled there.
    pub fn take_enrollment(&self, id: PairingId) -> Option<(Enrollment, Answer)> {
        let mut inner = self.lock();
        let pairing = inner.open.get_mut(&id)?;
        match std::mem::replace(&mut pairing.stage, Stage::Answered) {
            Stage::Enrolled { enrollment, answer } => Some((
                *enrollment,
                Answer {
                    phone: answer,
                    stream: pairing.stream.clone(),
                },
            )),
            other => {
                pairing.stage = other;
                None
            }
        }
    }

    /// Ends pairing `id` with `reason` (the phone gave up, or the terminal's time ran out).
    pub fn end(&self, id: PairingId, reason: PairEnd) {
        if let Some(pairing) = self.lock().open.remove(&id) {
            let _ = pairing.stream.send(StreamEvent::Ended(reason));
        }
    }

    /// When pairing `id` expires while it waits for a phone; `None` once a phone enrolled or it ended.
    pub fn expiry(&self, id: PairingId) -> Option<Instant> {
        let inner = self.lock();
        let pairing = inner.open.get(&id)?;
        matches!(pairing.stage, Stage::WaitingForPhone).then_some(pairing.expires_at)
    }
}

/// The channels that carry the terminal's answer to the phone and to the stream.
#[derive(Debug)]
pub struct Answer {
    phone: oneshot::Sender<EnrollOutcome>,
    stream: mpsc::UnboundedSender<StreamEvent>,
}

impl Answer {
    /// Tells both sides.
    pub fn send(self, outcome: EnrollOutcome) {
        let event = match outcome {
            EnrollOutcome::Paired(device_id) => StreamEvent::Paired(device_id),
            EnrollOutcome::Refused => StreamEvent::Ended(PairEnd::Refused),
        };
        let _ = self.stream.send(event);
        let _ = self.phone.send(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> PeerFacts {
        PeerFacts {
            node: "nPhone".into(),
            node_name: "pixel".into(),
            user_login: "ada@github".into(),
            user_id: 1,
            os: None,
        }
    }

    fn enrollment() -> Enrollment {
        Enrollment {
            name: "phone".into(),
            public_key: vec![4; 65],
            key_fingerprint: "SHA256:00".into(),
            peer: facts(),
            tailnet: "ada.github".into(),
        }
    }

    fn id() -> PairingId {
        PairingId(uuid::Uuid::new_v4())
    }

    #[tokio::test]
    async fn at_most_four_open_and_the_sixth_wrong_token_ends_the_waiting_ones() {
        let pairings = Pairings::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        for n in 0..MAX_OPEN {
            pairings
                .open(id(), &format!("token{n}"), None, TOKEN_LIFETIME, tx.clone())
                .unwrap();
        }
        assert_eq!(
            pairings.open(id(), "token5", None, TOKEN_LIFETIME, tx.clone()),
            Err(TooMany)
        );
        for _ in 0..WRONG_TOKENS {
            assert_eq!(pairings.find("nope"), Err(EnrollRefusal::WrongToken));
        }
        assert!(rx.try_recv().is_err(), "five wrong tokens end nothing");
        assert!(pairings.find("token1").is_ok(), "a good token still works");
        assert_eq!(pairings.find("nope"), Err(EnrollRefusal::WrongToken));
        for _ in 0..MAX_OPEN {
            assert!(matches!(rx.try_recv(), Ok(StreamEvent::Ended(PairEnd::Attempts))));
        }
        assert!(pairings.find("token1").is_err());
    }

    #[tokio::test]
    async fn a_token_is_good_for_one_enrollment_and_the_answer_reaches_both_sides() {
        let pairings = Pairings::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let pairing = id();
        pairings
            .open(pairing, "secret", Some("Ada's".into()), TOKEN_LIFETIME, tx)
            .unwrap();
        let (found, name) = pairings.find("secret").unwrap();
        assert_eq!((found, name.as_deref()), (pairing, Some("Ada's")));
        let waiting = pairings.enroll(pairing, enrollment()).unwrap();
        assert!(waiting.deadline >= Instant::now() + MIN_ANSWER - Duration::from_secs(1));
        assert!(matches!(rx.try_recv(), Ok(StreamEvent::Pending(_))));
        assert!(pairings.find("secret").is_err(), "used once");
        assert!(pairings.enroll(pairing, enrollment()).is_none());
        let (_, answer) = pairings.take_enrollment(pairing).unwrap();
        let device = DeviceId(uuid::Uuid::new_v4());
        answer.send(EnrollOutcome::Paired(device));
        assert!(matches!(rx.try_recv(), Ok(StreamEvent::Paired(d)) if d == device));
        assert!(matches!(waiting.outcome.await, Ok(EnrollOutcome::Paired(d)) if d == device));
    }

    #[test]
    fn a_pairing_opened_while_none_waits_counts_from_zero() {
        let pairings = Pairings::default();
        let (tx, _rx) = mpsc::unbounded_channel();
        let first = id();
        pairings.open(first, "a", None, TOKEN_LIFETIME, tx.clone()).unwrap();
        for _ in 0..3 {
            let _ = pairings.find("wrong");
        }
        pairings.close(first);
        pairings.open(id(), "b", None, TOKEN_LIFETIME, tx).unwrap();
        for _ in 0..WRONG_TOKENS {
            let _ = pairings.find("wrong");
        }
        assert!(pairings.find("b").is_ok(), "the count started from zero");
    }
}
