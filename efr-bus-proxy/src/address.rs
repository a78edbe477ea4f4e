//! Bus addresses (D-Bus specification, "Server Addresses"): the proxy connects to Unix sockets by path only.

use std::path::PathBuf;

/// The socket path of the first `unix:path=` entry of a bus address such as `DBUS_SESSION_BUS_ADDRESS`.
///
/// # Errors
/// A sentence when no entry is a `unix:path=` one (abstract sockets, TCP and launchd are not served: a contained
/// call reaches the bus through a socket file bound into its sandbox).
pub fn unix_path(address: &str) -> Result<PathBuf, String> {
    for entry in address.split(';') {
        let Some(params) = entry.strip_prefix("unix:") else {
            continue;
        };
        for param in params.split(',') {
            if let Some(path) = param.strip_prefix("path=") {
                return Ok(PathBuf::from(unescape(path)?));
            }
        }
    }
    Err(format!("the bus address {address:?} has no unix:path= entry"))
}

/// Undoes the address's %XX escapes.
fn unescape(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .ok_or_else(|| format!("a cut escape in {text:?}"))?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("a bad escape %{hex} in {text:?}"))?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the path in {text:?} is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::unix_path;

    #[test]
    fn the_path_entry_is_found_and_unescaped() {
        assert_eq!(
            unix_path("unix:path=/run/user/1000/bus").ok(),
            Some("/run/user/1000/bus".into())
        );
        assert_eq!(
            unix_path("tcp:host=x;unix:guid=ab,path=/tmp/a%20b").ok(),
            Some("/tmp/a b".into())
        );
        assert!(unix_path("unix:abstract=/tmp/x").is_err());
    }
}
