//! `efr-bus-proxy`: the D-Bus filter of contained calls (docs/bus.md, ADR 0013).
//!
//! Each call with a `bus_filter` grant gets its own listening socket ([`serve`]). A connection to it is
//! authenticated by hand ([`sasl`]), gets its own connection to the real bus as the user, and every message both
//! ways is framed ([`wire`]), parsed with zbus's message types, and checked against the call's [`policy`] by the
//! [`filter`]. Refusals are counted for `bus_refused` ([`report`]).

pub mod address;
pub mod filter;
pub mod policy;
pub mod report;
pub mod sasl;
pub mod serve;
pub mod wire;
