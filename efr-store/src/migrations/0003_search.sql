-- 0003: the search index (docs/adr/0025-search-index.md).
--
-- search_entries holds the searchable texts of the log — titles, prompts, answers and command lines — with their
-- secrets already replaced by the caller; search_index is the FTS5 index over them (external content: the text is
-- stored once, here). The trigram tokenizer matches any part of a word in every script (CJK has no spaces), case
-- insensitive. Entries are written in the same transaction as their events, so the index never lags the log.
CREATE TABLE search_entries (
    id              INTEGER PRIMARY KEY,
    conversation_id TEXT    NOT NULL REFERENCES conversations (id),
    -- 0 for the title, which belongs to no event.
    seq             INTEGER NOT NULL CHECK (seq >= 0),
    kind            TEXT    NOT NULL,
    turn_id         TEXT,
    at              INTEGER NOT NULL,
    text            TEXT    NOT NULL
) STRICT;

-- conversation.search, the title's replacement and the delete of a conversation.
CREATE INDEX search_entries_by_conversation ON search_entries (conversation_id, seq);

CREATE VIRTUAL TABLE search_index USING fts5 (
    text,
    content = 'search_entries',
    content_rowid = 'id',
    tokenize = 'trigram'
);

CREATE TRIGGER search_entries_inserted AFTER INSERT ON search_entries BEGIN
    INSERT INTO search_index (rowid, text) VALUES (new.id, new.text);
END;

CREATE TRIGGER search_entries_deleted AFTER DELETE ON search_entries BEGIN
    INSERT INTO search_index (search_index, rowid, text) VALUES ('delete', old.id, old.text);
END;

-- The rebuild of the index for the events written before it existed: the events up to rowid `target` are indexed
-- by efrd in the background, and `done` is the last rowid it indexed. Equal means complete.
CREATE TABLE search_rebuild (
    one    INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
    done   INTEGER NOT NULL,
    target INTEGER NOT NULL
) STRICT;

INSERT INTO search_rebuild (one, done, target) SELECT 1, 0, coalesce(max(rowid), 0) FROM events;
