-- 0005: the index follows the log (docs/adr/0025-search-index.md, "The follower").
--
-- An entry's text is still written in the same savepoint as its events (search_entries), but no longer indexed
-- there: the writer thread adds the entries above `indexed` to search_index in batches of its own, within a bounded
-- lag, and a search reads the entries above `indexed` (the tail) directly. A crash between the two leaves the tail,
-- which the writer indexes after the next start.
DROP TRIGGER search_entries_inserted;

-- An entry that is not indexed yet has nothing in search_index to delete (a 'delete' of a row FTS5 never saw would
-- damage the index).
DROP TRIGGER search_entries_deleted;

-- The last search_entries.id that search_index holds; every entry at or below it is indexed, none above it.
CREATE TABLE search_follow (
    one     INTEGER NOT NULL PRIMARY KEY CHECK (one = 1),
    indexed INTEGER NOT NULL
) STRICT;

-- Every entry written so far was indexed by the trigger.
INSERT INTO search_follow (one, indexed) SELECT 1, coalesce(max(id), 0) FROM search_entries;

CREATE TRIGGER search_entries_deleted AFTER DELETE ON search_entries
WHEN old.id <= (SELECT indexed FROM search_follow WHERE one = 1) BEGIN
    INSERT INTO search_index (search_index, rowid, text) VALUES ('delete', old.id, old.text);
END;
