-- 0004: the delete of a conversation (docs/architecture.md, "The event log": "Delete and the space it frees").
--
-- A deleted conversation keeps its summary row, emptied (no title, no cwd, `extra` with only `last_seq`), with the
-- time of its delete: its one event left, conversation_deleted, needs the row (the foreign key of `events`), and the
-- reads of summaries leave such a row out, so the conversation is not found.
ALTER TABLE conversations ADD COLUMN deleted_at INTEGER;

-- A delete removes the index's entries for the words of its texts too, not only marks them deleted: a deleted
-- conversation's words must not stay in the file (FTS5's secure-delete option, SQLite 3.44 and later).
INSERT INTO search_index (search_index, rank) VALUES ('secure-delete', 1);
