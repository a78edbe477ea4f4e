//! efr-bus-proxy's integration tests, in one test binary: each file of `suite/` is a module. Every test starts a
//! real `dbus-daemon` of its own (a session bus or a system-like bus) and talks to it through the filter with real
//! clients.

mod suite;
