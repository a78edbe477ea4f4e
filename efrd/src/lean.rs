//! Giving memory back when efrd is quiet (docs/architecture.md, "Budgets"; docs/adr/0033-a-lean-daemon.md).
//!
//! Most of an idle efrd's resident set is not its data but its own code: the kernel maps a file's pages 64 KiB at a
//! time around each page a process touches (fault-around), so start-up, which runs code from all over the 27 MB
//! binary once (the config, the migrations, the sandbox's probe, the catalog), leaves about 13 MiB of it mapped,
//! against about 1.5 MiB of heap. Like the kernel freeing its `__init` code after boot, efrd hands those pages back
//! once it has started and whenever it has been quiet for a while: `madvise(MADV_PAGEOUT)` over the mappings of its
//! own executable (clean pages, mapped by efrd alone, so the kernel drops them; the code a later request runs is read
//! back from the page cache or the disk), SQLite's page caches (`PRAGMA shrink_memory`: they fill again as they are
//! used), and `malloc_trim` for the heap glibc holds free. Nothing else changes; a
//! kernel without `MADV_PAGEOUT` (before 5.4) answers `EINVAL` and efrd stays as it was.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::debug;

/// How long after start-up efrd hands back start-up's pages, when no turn runs then.
pub const AFTER_START: Duration = Duration::from_secs(10);

/// How long efrd runs no turn before it hands back the pages a busy stretch mapped.
pub const QUIET: Duration = Duration::from_secs(60);

/// How often it looks.
const TICK: Duration = Duration::from_secs(2);

/// How much its code mapped since the last release makes a new one worth it, in KiB.
const REGROWTH_KIB: u64 = 1024;

/// What one release gave back, in KiB of resident set, as `/proc/self/status` counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Released {
    /// `VmRSS` before.
    pub before_kib: u64,
    /// `VmRSS` after.
    pub after_kib: u64,
}

/// Hands back the pages of efrd's own executable and the heap's free memory. Returns the resident set before and
/// after; `None` when `/proc/self` cannot be read (nothing was done then).
pub fn release() -> Option<Released> {
    let before_kib = file_kib("VmRSS")?;
    let exe = std::fs::read_link("/proc/self/exe").ok()?;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    for (start, end) in own_mappings(&maps, &exe) {
        // SAFETY: MADV_PAGEOUT only drops the kernel's mapping of pages that are clean (the executable's file pages,
        // read-only or executable, never written); the next access faults them back with the same contents, so no
        // memory the program can observe changes. The range is a whole mapping read from /proc/self/maps.
        let result = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT) };
        if result != 0 {
            debug!(error = %std::io::Error::last_os_error(), "madvise(MADV_PAGEOUT) refused; keeping the pages");
            break;
        }
    }
    // SAFETY: malloc_trim only returns free heap memory to the kernel; glibc's allocator stays consistent.
    unsafe { libc::malloc_trim(0) };
    let after_kib = file_kib("VmRSS")?;
    Some(Released { before_kib, after_kib })
}

/// The address ranges of `maps` (the text of `/proc/<pid>/maps`) that map `exe` without write permission.
fn own_mappings(maps: &str, exe: &std::path::Path) -> Vec<(usize, usize)> {
    let exe = exe.to_string_lossy();
    maps.lines()
        .filter_map(|line| {
            // address, perms, offset, device, inode, then the path (padded before, and it may hold spaces).
            let mut rest = line;
            let mut fields = [""; 5];
            for field in &mut fields {
                let trimmed = rest.trim_start();
                let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
                *field = &trimmed[..end];
                rest = &trimmed[end..];
            }
            let [range, perms, ..] = fields;
            if rest.trim() != exe || perms.contains('w') {
                return None;
            }
            let (start, end) = range.split_once('-')?;
            Some((
                usize::from_str_radix(start, 16).ok()?,
                usize::from_str_radix(end, 16).ok()?,
            ))
        })
        .collect()
}

/// A `kB` field of `/proc/self/status`.
fn file_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// Releases [`AFTER_START`] after start-up, and again each time no turn ran (`turns_running` false) for [`QUIET`]
/// after the mapped code grew by 1 MiB (`REGROWTH_KIB`) since the last release: the event store's page caches first
/// ([`efr_store::Store::release_memory`]), then [`release`]. Ends with `shutdown`.
pub async fn release_when_quiet(
    store: efr_store::Store,
    turns_running: impl Fn() -> bool,
    shutdown: CancellationToken,
) {
    // Start-up counts as quiet from QUIET - AFTER_START ago.
    let mut quiet_since = Instant::now()
        .checked_sub(QUIET - AFTER_START)
        .unwrap_or_else(Instant::now);
    // The file-backed resident set right after the last release; `None` before the first.
    let mut floor: Option<u64> = None;
    loop {
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            () = shutdown.cancelled() => return,
        }
        if turns_running() {
            quiet_since = Instant::now();
            continue;
        }
        if quiet_since.elapsed() < QUIET {
            continue;
        }
        let Some(mapped) = file_kib("RssFile") else { return };
        if floor.is_some_and(|floor| mapped < floor + REGROWTH_KIB) {
            continue;
        }
        if let Err(error) = store.release_memory().await {
            debug!(%error, "quiet: the event store kept its caches");
        }
        if let Some(released) = release() {
            debug!(
                before_kib = released.before_kib,
                after_kib = released.after_kib,
                "quiet: gave back the pages of efrd's code and the heap's free memory"
            );
        }
        floor = file_kib("RssFile");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_executables_unwritable_mappings_are_taken() {
        let maps = "\
55d4f5eac000-55d4f6599000 r--p 00000000 fe:00 6343886                    /usr/bin/efrd
55d4f6599000-55d4f7862000 r-xp 006ec000 fe:00 6343886                    /usr/bin/efrd
55d4f7904000-55d4f790d000 rw-p 01a55000 fe:00 6343886                    /usr/bin/efrd
55d4f790d000-55d4f7910000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000001000 r-xp 00000000 fe:00 77                         /usr/lib/libc.so.6
7f0000001000-7f0000002000 r-xp 00000000 fe:00 78                         /usr/bin/efrd old
";
        assert_eq!(
            own_mappings(maps, std::path::Path::new("/usr/bin/efrd")),
            [
                (0x55d4_f5ea_c000, 0x55d4_f659_9000),
                (0x55d4_f659_9000, 0x55d4_f786_2000)
            ]
        );
        assert_eq!(
            own_mappings(maps, std::path::Path::new("/usr/bin/efrd old")),
            [(0x7f00_0000_1000, 0x7f00_0000_2000)]
        );
    }

    #[test]
    fn a_release_gives_back_the_mapped_code_and_the_code_runs_on() {
        // This test binary's code is mapped (it runs): a release drops what is not needed again right away.
        let before = file_kib("RssFile").unwrap();
        let released = release().unwrap();
        let after = file_kib("RssFile").unwrap();
        assert!(
            after < before,
            "mapped file pages {before} → {after} KiB ({released:?})"
        );
        assert!(released.after_kib < released.before_kib, "{released:?}");
        // The code the release dropped runs again (its pages fault back in).
        assert_eq!(
            own_mappings("", std::path::Path::new("/x")),
            Vec::<(usize, usize)>::new()
        );
        assert!(release().is_some());
    }
}
