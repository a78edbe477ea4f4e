-- 0002: paired devices (docs/remote.md). Times are INTEGER milliseconds since the Unix epoch; ids are lowercase
-- hyphenated UUID text.
--
-- A device is the phone's P-256 key, bound to the Tailscale node, user and tailnet that paired it. A revoked device
-- keeps its row (device.list shows it) with revoked_at; its key may pair again as a new device.
CREATE TABLE devices (
    id              TEXT    NOT NULL PRIMARY KEY,
    name            TEXT    NOT NULL,
    public_key      BLOB    NOT NULL CHECK (length(public_key) = 65),
    key_fingerprint TEXT    NOT NULL,
    node            TEXT    NOT NULL,
    user_id         INTEGER NOT NULL,
    tailnet         TEXT    NOT NULL,
    scopes          TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    last_seen_at    INTEGER,
    revoked_at      INTEGER
) STRICT;

-- A key is held by at most one device that is not revoked.
CREATE UNIQUE INDEX devices_live_key ON devices (public_key) WHERE revoked_at IS NULL;
