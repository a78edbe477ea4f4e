//! The actor's commits: events numbered, committed with the summary row and a write's outcome, then broadcast
//! (the rules in the actor's module docs), and the stored outcome of a command id read back.

// A part of the actor: its imports and private types.
use super::*;

impl Actor {
    pub(super) async fn stored_outcome<T: DeserializeOwned>(
        &self,
        command_id: CommandId,
    ) -> Result<Option<T>, ErrorBody> {
        match self
            .deps
            .store
            .command_outcome(command_id)
            .await
            .map_err(ErrorBody::from)?
        {
            Some(record) => decode_outcome(&record).map(Some),
            None => Ok(None),
        }
    }

    pub(super) fn command_record<T: Serialize>(
        &self,
        command_id: CommandId,
        method: &str,
        result: &T,
    ) -> Result<CommandRecord, ErrorBody> {
        Ok(CommandRecord {
            command_id,
            method: method.to_owned(),
            conversation_id: Some(self.id),
            result: serde_json::to_string(result)
                .map_err(|e| ErrorBody::internal(format!("cannot serialize an outcome: {e}")))?,
            at: Timestamp::now(),
        })
    }

    /// Numbers, commits and broadcasts `bodies` (with the summary row and an optional command outcome).
    pub(super) async fn commit(
        &mut self,
        bodies: Vec<(Option<TurnId>, EventBody)>,
        command: Option<CommandRecord>,
    ) -> Result<Vec<Arc<Event>>, CommitRefused> {
        self.commit_as(bodies, command, false).await
    }

    /// [`Actor::commit`], as the store's delete of the conversation when `deletes` ([`Commit::deletes`]): then
    /// the row is not sent to conversations.watch as changed (the delete tells it removed).
    pub(super) async fn commit_as(
        &mut self,
        bodies: Vec<(Option<TurnId>, EventBody)>,
        command: Option<CommandRecord>,
        deletes: bool,
    ) -> Result<Vec<Arc<Event>>, CommitRefused> {
        let (staged, commit) = self.stage(bodies, command, deletes)?;
        let outcome = self.deps.store.commit(commit).await;
        self.landed(staged, outcome)
    }

    /// Queues `bodies` (as [`Actor::commit`]) with the store's writer and returns while it writes them: the caller
    /// does other work, then passes the wait to [`Actor::landed`] before anything else commits.
    pub(super) async fn send(
        &mut self,
        bodies: Vec<(Option<TurnId>, EventBody)>,
        command: Option<CommandRecord>,
    ) -> Result<(Staged, efr_store::Committing), CommitRefused> {
        let (staged, commit) = self.stage(bodies, command, false)?;
        match self.deps.store.send_commit(commit).await {
            Ok(committing) => Ok((staged, committing)),
            Err(error) => Err(self.refused(error)),
        }
    }

    /// Numbers `bodies` after the last committed seq and makes the store's commit of them, with the summary row and
    /// `command`.
    fn stage(
        &mut self,
        bodies: Vec<(Option<TurnId>, EventBody)>,
        command: Option<CommandRecord>,
        deletes: bool,
    ) -> Result<(Staged, Commit), CommitRefused> {
        let at = Timestamp::now();
        let events: Vec<Event> = bodies
            .into_iter()
            .zip(self.last_seq + 1..)
            .map(|((turn_id, body), seq)| Event {
                seq,
                at,
                conversation_id: self.id,
                turn_id,
                body,
            })
            .collect();
        let mut rows = Vec::with_capacity(events.len());
        for event in &events {
            let body = serde_json::to_string(event)
                .map_err(|e| CommitRefused::Failed(ErrorBody::internal(format!("cannot serialize an event: {e}"))))?;
            rows.push(EventRow {
                conversation_id: self.id,
                seq: event.seq,
                kind: event.body.kind().to_owned(),
                turn_id: event.turn_id,
                at,
                body,
            });
        }
        let sizes: Vec<u64> = rows.iter().map(|row| row.body.len() as u64).collect();
        let title = self.summary.as_ref().and_then(|s| s.title.as_deref());
        let mut commit = Commit::events(rows).with_index(crate::search::extract::entries_of(&events, title));
        let last_seq = self.last_seq + events.len() as u64;
        if let Some(summary) = self.summary.as_mut() {
            summary.updated_at = at;
            // Kept in the row so that a list of conversations needs no query per row.
            summary.extra.insert("last_seq".to_owned(), last_seq.into());
            commit = commit.with_conversation(summary.clone());
        }
        if let Some(command) = command {
            commit = commit.with_command(command);
        }
        if deletes {
            commit = commit.deleting(self.id);
        }
        let staged = Staged {
            events,
            sizes,
            last_seq,
            deletes,
        };
        Ok((staged, commit))
    }

    /// The store's outcome of a staged commit: committed, its events are numbered for good and broadcast; refused,
    /// nothing changed but the store's failure, which subscribers hear of.
    pub(super) fn landed(
        &mut self,
        staged: Staged,
        outcome: Result<(), StoreError>,
    ) -> Result<Vec<Arc<Event>>, CommitRefused> {
        let Staged {
            events,
            sizes,
            last_seq,
            deletes,
        } = staged;
        if let Err(error) = outcome {
            return Err(self.refused(error));
        }
        self.last_seq = last_seq;
        self.drafts.set_seq(last_seq);
        for event in &events {
            self.open_calls.observe(event);
            self.context_log.observe(event);
        }
        let events: Vec<Arc<Event>> = events.into_iter().map(Arc::new).collect();
        for (event, bytes) in events.iter().zip(sizes) {
            // No receiver is not an error: nobody watches right now.
            let _ = self.events.send(Live::Event(Committed {
                event: Arc::clone(event),
                bytes,
            }));
        }
        if let Some(summary) = self.summary.as_ref().filter(|_| !deletes) {
            self.deps.rows.committed(&mut self.row_facts, summary);
        }
        Ok(events)
    }
}

impl Actor {
    /// Why the store refused a commit; subscribers hear of a failure of the store (not of a repeated command id).
    fn refused(&mut self, error: StoreError) -> CommitRefused {
        if let StoreError::DuplicateCommand { stored, .. } = error {
            return CommitRefused::Duplicate(*stored);
        }
        let error = ErrorBody::from(error);
        let _ = self.events.send(Live::StoreFailed(error.clone()));
        self.store_failure = Some(error.clone());
        CommitRefused::Failed(error)
    }
}

/// A commit's events, numbered but not yet committed ([`Actor::send`], [`Actor::landed`]).
pub(super) struct Staged {
    events: Vec<Event>,
    /// Each event's serialized size, in bytes.
    sizes: Vec<u64>,
    /// The seq of the last event.
    last_seq: u64,
    deletes: bool,
}

/// Why a commit did not happen.
pub(super) enum CommitRefused {
    /// The command id was stored before: here is its first outcome.
    Duplicate(CommandRecord),
    /// The store refused it; nothing changed.
    Failed(ErrorBody),
}

impl CommitRefused {
    pub(super) fn body(&self) -> ErrorBody {
        match self {
            Self::Duplicate(_) => ErrorBody::new(ErrorCode::Conflict, "the command id was used before"),
            Self::Failed(error) => error.clone(),
        }
    }
}

impl From<CommitRefused> for ErrorBody {
    fn from(committed: CommitRefused) -> Self {
        committed.body()
    }
}

pub(in crate::conversation) fn decode_outcome<T: DeserializeOwned>(record: &CommandRecord) -> Result<T, ErrorBody> {
    serde_json::from_str(&record.result).map_err(|_| {
        ErrorBody::new(
            ErrorCode::Conflict,
            format!(
                "the command id {} was used before by `{}`",
                record.command_id, record.method
            ),
        )
    })
}
