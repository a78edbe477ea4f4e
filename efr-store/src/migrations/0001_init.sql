-- 0001: the event log, the conversation summaries and the command outcomes.
--
-- Times are INTEGER milliseconds since the Unix epoch (UTC); ids are lowercase hyphenated UUID text. Tables are
-- STRICT so that a value of the wrong type is an error rather than a silent coercion.

-- One summary row per conversation: what conversations.list shows without reading the log.
-- `extra` is a JSON object for summary members that later versions add, so they need no migration.
CREATE TABLE conversations (
    id          TEXT    NOT NULL PRIMARY KEY,
    title       TEXT,
    status      TEXT    NOT NULL,
    cwd         TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    turn_count  INTEGER NOT NULL DEFAULT 0 CHECK (turn_count >= 0),
    extra       TEXT    NOT NULL DEFAULT '{}'
) STRICT;

-- conversations.list: newest first, paged by (updated_at, id).
CREATE INDEX conversations_by_updated ON conversations (updated_at, id);

-- The event log. `body` is the whole event JSON as the protocol sends it; kind, turn_id and at are copied out of it
-- so that the store can answer queries without parsing bodies. A rowid table (not WITHOUT ROWID) because bodies can
-- be large (tool output), and the primary key gives each conversation's seqs in order.
CREATE TABLE events (
    conversation_id TEXT    NOT NULL REFERENCES conversations (id),
    seq             INTEGER NOT NULL CHECK (seq >= 1),
    kind            TEXT    NOT NULL,
    turn_id         TEXT,
    at              INTEGER NOT NULL,
    body            TEXT    NOT NULL,
    PRIMARY KEY (conversation_id, seq)
) STRICT;

-- Restart recovery: the events of a kind (prompt_queued, turn_completed, ...). Keyed by kind alone, so that within a
-- kind new entries append in rowid order: a busy log dirties one or two pages of this index per commit, where a
-- key such as (turn_id, kind) would dirty one page per active turn. Recovery costs O(turns), not O(events).
CREATE INDEX events_by_kind ON events (kind) WHERE turn_id IS NOT NULL;

-- Idempotent writes: the stored outcome of each command_id. No foreign key on conversation_id: a write that failed
-- (not_found) still stores its outcome, for a conversation that does not exist.
CREATE TABLE commands (
    command_id      TEXT    NOT NULL PRIMARY KEY,
    method          TEXT    NOT NULL,
    conversation_id TEXT,
    result          TEXT    NOT NULL,
    at              INTEGER NOT NULL
) STRICT;
