//! Writing [`LaunchReport`] lines to the plan's report channel, and the launcher's own pid and start time.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Mutex;

use efr_protocol::internal::{LaunchReport, ReportTo, STDERR_PREFIX};

/// Where report lines go. Shared by the outer stage's threads; each line is written whole.
#[derive(Debug)]
pub struct Reporter {
    sink: Mutex<Sink>,
}

#[derive(Debug)]
enum Sink {
    Stderr,
    File(File),
}

impl Reporter {
    /// A reporter on stderr (before a plan names another channel, or when it names stderr).
    pub fn stderr() -> Self {
        Self {
            sink: Mutex::new(Sink::Stderr),
        }
    }

    /// Opens the plan's channel. The descriptor of `fd` is made close-on-exec so no child inherits it.
    ///
    /// # Errors
    ///
    /// The descriptor is not open, or the file cannot be opened (mode 0600, appended to).
    pub fn open(to: &ReportTo) -> io::Result<Self> {
        let sink = match to {
            ReportTo::Stderr => Sink::Stderr,
            ReportTo::Fd { fd } => {
                // SAFETY: F_GETFD only reads the flags; it fails with EBADF when the descriptor is not open.
                if *fd < 3 || unsafe { libc::fcntl(*fd, libc::F_GETFD) } == -1 {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("the report fd {fd} is not open"),
                    ));
                }
                // SAFETY: the plan hands this descriptor to the launcher for its reports alone, and it is open.
                let owned = unsafe { OwnedFd::from_raw_fd(*fd) };
                nix::fcntl::fcntl(&owned, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC))?;
                Sink::File(File::from(owned))
            }
            ReportTo::File { path } => Sink::File(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .mode(0o600)
                    .custom_flags(libc::O_CLOEXEC)
                    .open(path)?,
            ),
        };
        Ok(Self { sink: Mutex::new(sink) })
    }

    /// Writes one line. A channel that fails is reported once on stderr, then the line goes to stderr too, so no
    /// report is lost silently.
    pub fn send(&self, line: &LaunchReport) {
        let Ok(json) = serde_json::to_string(line) else { return };
        let Ok(mut sink) = self.sink.lock() else { return };
        if let Sink::File(file) = &mut *sink {
            match writeln!(file, "{json}").and_then(|()| file.flush()) {
                Ok(()) => return,
                Err(err) => {
                    eprintln!("efr-launcher: cannot write to the report channel ({err}); reporting on stderr");
                    *sink = Sink::Stderr;
                }
            }
        }
        eprintln!("{STDERR_PREFIX}{json}");
    }
}

/// This process's pid and start time (field 22 of `/proc/self/stat`, clock ticks after boot).
///
/// # Errors
///
/// `/proc/self/stat` cannot be read or parsed.
pub fn self_start() -> io::Result<(u32, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    Ok((std::process::id(), start_time(&stat)?))
}

/// Field 22 of a `/proc/<pid>/stat` line. The name (field 2) is in parentheses and may hold spaces and `)`, so
/// the fields are counted after its last `)`.
pub fn start_time(stat: &str) -> io::Result<u64> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc/<pid>/stat format");
    let rest = stat.rsplit_once(')').ok_or_else(bad)?.1;
    // After the name: field 3 (state) is the first; field 22 is the 20th.
    rest.split_whitespace()
        .nth(19)
        .and_then(|field| field.parse().ok())
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_counts_after_the_name() {
        let stat = "4242 (we ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 100 200";
        assert_eq!(start_time(stat).unwrap(), 987654);
        assert!(start_time("4242 (short) S 1").is_err());
        assert!(start_time("no name at all").is_err());
        let (pid, start) = self_start().unwrap();
        assert_eq!(pid, std::process::id());
        assert!(start > 0);
    }

    #[test]
    fn a_report_file_gets_whole_lines_with_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report");
        let reporter = Reporter::open(&ReportTo::File { path: path.clone() }).unwrap();
        reporter.send(&LaunchReport::Launched {
            launcher_pid: 1,
            launcher_start: 2,
        });
        reporter.send(&LaunchReport::Exited {
            exit_code: 0,
            exec_error: None,
        });
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(LaunchReport::parse_lines(&text).unwrap().len(), 2);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn a_closed_report_fd_is_an_error() {
        let err = Reporter::open(&ReportTo::Fd { fd: 999 }).unwrap_err();
        assert!(err.to_string().contains("999"), "{err}");
        assert!(
            Reporter::open(&ReportTo::File {
                path: "/nonexistent/dir/report".into()
            })
            .is_err()
        );
    }
}
