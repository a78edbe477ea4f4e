//! The paired devices (`devices`, migration 0002): one row per pairing, kept after a revoke.
//!
//! Writes go through the writer thread ([`Store::write`]) like every other write; reads use the reader pool.

use efr_protocol::ids::{DeviceId, Timestamp};
use efr_protocol::methods::Scope;
use rusqlite::{Connection, OptionalExtension, params};

use super::error::{Result, StoreError};
use super::{Store, writer};

/// One stored device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRow {
    /// Its id.
    pub id: DeviceId,
    /// Its name.
    pub name: String,
    /// The 65-byte uncompressed P-256 point.
    pub public_key: Vec<u8>,
    /// `SHA256:` and 16 hex digits.
    pub key_fingerprint: String,
    /// The Tailscale stable node id that paired it.
    pub node: String,
    /// The Tailscale user id that paired it.
    pub user_id: i64,
    /// The tailnet it paired on.
    pub tailnet: String,
    /// The scopes it holds.
    pub scopes: Vec<Scope>,
    /// When it paired.
    pub created_at: Timestamp,
    /// When it last proved.
    pub last_seen_at: Option<Timestamp>,
    /// When it was revoked.
    pub revoked_at: Option<Timestamp>,
}

/// What inserting a device did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inserted {
    /// The device is stored.
    Stored,
    /// A device that is not revoked holds the key already; nothing was written.
    KeyHeld,
}

const COLUMNS: &str = "id, name, public_key, key_fingerprint, node, user_id, tailnet, scopes, created_at, \
                       last_seen_at, revoked_at";

fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(DeviceRowRaw, ())> {
    Ok((
        DeviceRowRaw {
            id: row.get(0)?,
            name: row.get(1)?,
            public_key: row.get(2)?,
            key_fingerprint: row.get(3)?,
            node: row.get(4)?,
            user_id: row.get(5)?,
            tailnet: row.get(6)?,
            scopes: row.get(7)?,
            created_at: row.get(8)?,
            last_seen_at: row.get(9)?,
            revoked_at: row.get(10)?,
        },
        (),
    ))
}

/// A row as SQLite gives it.
struct DeviceRowRaw {
    id: String,
    name: String,
    public_key: Vec<u8>,
    key_fingerprint: String,
    node: String,
    user_id: i64,
    tailnet: String,
    scopes: String,
    created_at: i64,
    last_seen_at: Option<i64>,
    revoked_at: Option<i64>,
}

fn time(millis: i64) -> Result<Timestamp> {
    Timestamp::from_millis(millis).ok_or_else(|| StoreError::corrupt(format!("device time {millis} is out of range")))
}

impl DeviceRowRaw {
    fn parse(self) -> Result<DeviceRow> {
        Ok(DeviceRow {
            id: self
                .id
                .parse()
                .map_err(|_| StoreError::corrupt(format!("device id {:?} is not a UUID", self.id)))?,
            name: self.name,
            public_key: self.public_key,
            key_fingerprint: self.key_fingerprint,
            node: self.node,
            user_id: self.user_id,
            tailnet: self.tailnet,
            scopes: serde_json::from_str(&self.scopes)
                .map_err(|e| StoreError::corrupt(format!("device scopes: {e}")))?,
            created_at: time(self.created_at)?,
            last_seen_at: self.last_seen_at.map(time).transpose()?,
            revoked_at: self.revoked_at.map(time).transpose()?,
        })
    }
}

fn query_devices(conn: &Connection, filter: &str, args: &[&dyn rusqlite::ToSql]) -> Result<Vec<DeviceRow>> {
    let mut statement = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM devices {filter} ORDER BY created_at, id"
    ))?;
    let rows = statement.query_map(args, from_row)?;
    rows.map(|row| row.map_err(StoreError::from).and_then(|(raw, ())| raw.parse()))
        .collect()
}

impl Store {
    /// Runs `write` on the writer thread's connection, in a transaction of its own.
    pub(crate) async fn write<T, F>(&self, write: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction<'_>) -> Result<T> + Send + 'static,
    {
        self.request(|reply| {
            writer::Request::Write(writer::WriteJob(Box::new(move |conn: &Connection| {
                let outcome = conn.unchecked_transaction().map_err(StoreError::from).and_then(|tx| {
                    let value = write(&tx)?;
                    tx.commit()?;
                    Ok(value)
                });
                let _ = reply.send(outcome);
            })))
        })
        .await
    }

    /// Stores a new device, unless a device that is not revoked holds its key.
    ///
    /// # Errors
    /// [`StoreError::Closed`], SQLite errors.
    pub async fn insert_device(&self, device: DeviceRow) -> Result<Inserted> {
        self.write(move |tx| {
            let held: Option<String> = tx
                .query_row(
                    "SELECT id FROM devices WHERE public_key = ?1 AND revoked_at IS NULL",
                    params![device.public_key],
                    |row| row.get(0),
                )
                .optional()?;
            if held.is_some() {
                return Ok(Inserted::KeyHeld);
            }
            let scopes = serde_json::to_string(&device.scopes).map_err(|e| StoreError::corrupt(e.to_string()))?;
            tx.execute(
                &format!("INSERT INTO devices ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"),
                params![
                    device.id.to_string(),
                    device.name,
                    device.public_key,
                    device.key_fingerprint,
                    device.node,
                    device.user_id,
                    device.tailnet,
                    scopes,
                    device.created_at.as_millis(),
                    device.last_seen_at.map(|t| t.as_millis()),
                    device.revoked_at.map(|t| t.as_millis()),
                ],
            )?;
            Ok(Inserted::Stored)
        })
        .await
    }

    /// Whether a device that is not revoked holds `public_key`.
    ///
    /// # Errors
    /// [`StoreError::Closed`], SQLite errors.
    pub async fn device_key_held(&self, public_key: Vec<u8>) -> Result<bool> {
        self.read(move |conn| {
            let held: Option<i64> = conn
                .query_row(
                    "SELECT 1 FROM devices WHERE public_key = ?1 AND revoked_at IS NULL",
                    params![public_key],
                    |row| row.get(0),
                )
                .optional()?;
            Ok(held.is_some())
        })
        .await
    }

    /// One device, revoked or not.
    ///
    /// # Errors
    /// [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite errors.
    pub async fn device(&self, id: DeviceId) -> Result<Option<DeviceRow>> {
        self.read(move |conn| {
            Ok(query_devices(conn, "WHERE id = ?1", &[&id.to_string()])?
                .into_iter()
                .next())
        })
        .await
    }

    /// Every device, oldest first.
    ///
    /// # Errors
    /// [`StoreError::Closed`], [`StoreError::Corrupt`], SQLite errors.
    pub async fn devices(&self) -> Result<Vec<DeviceRow>> {
        self.read(|conn| query_devices(conn, "", &[])).await
    }

    /// Revokes a device at `at`; a device revoked before keeps its first time. `None` for an unknown device.
    ///
    /// # Errors
    /// [`StoreError::Closed`], SQLite errors.
    pub async fn revoke_device(&self, id: DeviceId, at: Timestamp) -> Result<Option<Timestamp>> {
        self.write(move |tx| {
            tx.execute(
                "UPDATE devices SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
                params![id.to_string(), at.as_millis()],
            )?;
            let revoked: Option<Option<i64>> = tx
                .query_row(
                    "SELECT revoked_at FROM devices WHERE id = ?1",
                    params![id.to_string()],
                    |row| row.get(0),
                )
                .optional()?;
            revoked.flatten().map(time).transpose()
        })
        .await
    }

    /// Records a proof of the device at `at`.
    ///
    /// # Errors
    /// [`StoreError::Closed`], SQLite errors.
    pub async fn touch_device(&self, id: DeviceId, at: Timestamp) -> Result<()> {
        self.write(move |tx| {
            tx.execute(
                "UPDATE devices SET last_seen_at = ?2 WHERE id = ?1",
                params![id.to_string(), at.as_millis()],
            )?;
            Ok(())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(key: u8) -> DeviceRow {
        let mut public_key = vec![key; 65];
        public_key[0] = 4;
        DeviceRow {
            id: DeviceId(uuid::Uuid::new_v4()),
            name: "Ada's phone".into(),
            public_key,
            key_fingerprint: "SHA256:0011223344556677".into(),
            node: "nKq3wPhone11CNTRL".into(),
            user_id: 1,
            tailnet: "ada.github".into(),
            scopes: vec![Scope::Read, Scope::Operate],
            created_at: Timestamp::from_millis(1_000).unwrap(),
            last_seen_at: None,
            revoked_at: None,
        }
    }

    #[tokio::test]
    async fn a_key_is_held_once_until_its_device_is_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("efr.db")).await.unwrap();
        let first = device(7);
        assert_eq!(store.insert_device(first.clone()).await.unwrap(), Inserted::Stored);
        assert_eq!(store.device(first.id).await.unwrap(), Some(first.clone()));
        assert!(store.device_key_held(first.public_key.clone()).await.unwrap());
        let again = DeviceRow {
            created_at: Timestamp::from_millis(2_000).unwrap(),
            ..device(7)
        };
        assert_eq!(store.insert_device(again.clone()).await.unwrap(), Inserted::KeyHeld);
        assert_eq!(store.device(again.id).await.unwrap(), None);

        let at = Timestamp::from_millis(5_000).unwrap();
        assert_eq!(store.revoke_device(first.id, at).await.unwrap(), Some(at));
        let later = Timestamp::from_millis(9_000).unwrap();
        assert_eq!(
            store.revoke_device(first.id, later).await.unwrap(),
            Some(at),
            "the first revoke stays"
        );
        assert_eq!(store.revoke_device(again.id, later).await.unwrap(), None);
        assert!(!store.device_key_held(first.public_key.clone()).await.unwrap());
        assert_eq!(store.insert_device(again.clone()).await.unwrap(), Inserted::Stored);
        store.touch_device(again.id, later).await.unwrap();
        let listed = store.devices().await.unwrap();
        assert_eq!(listed.len(), 2);
        assert_eq!(listed[0].revoked_at, Some(at));
        assert_eq!(listed[1].last_seen_at, Some(later));
    }
}
