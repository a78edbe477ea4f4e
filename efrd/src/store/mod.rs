//! The SQLite event log, conversations table and command ids.
