//! A job's output: read from its pipe (stdout and stderr as they came), kept in a file with a bound, its last
//! lines kept for `tail`, and each line matched against the job's watch.
//!
//! The file keeps the first [`OutputBound::file_bytes`] bytes; past that the output is still read (so the job never
//! blocks on a full pipe), counted and matched, and its last bytes kept in memory for `tail` (`output_truncated`).

use std::io::Write;
use std::path::Path;

use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

/// The most bytes of a watched line that are matched and reported.
pub const MAX_LINE: usize = 500;
/// The bytes of `tail` in job_ended.
pub const TAIL_BYTES: usize = 2048;

/// How much of a job's output the file keeps.
#[derive(Debug, Clone, Copy)]
pub struct OutputBound {
    /// The file's bound in bytes.
    pub file_bytes: u64,
}

/// What the reader saw when the pipe closed.
#[derive(Debug, Default, Clone)]
pub struct OutputEnd {
    /// Every byte read.
    pub bytes: u64,
    /// The file reached its bound.
    pub truncated: bool,
    /// The last bytes, at most [`TAIL_BYTES`], from a line start when one is in them.
    pub tail: String,
}

/// A line the watch matched.
#[derive(Debug, Clone)]
pub struct Matched {
    /// The line (at most [`MAX_LINE`] bytes, lossy UTF-8).
    pub line: String,
}

/// Reads `pipe` to its end into `file`; sends each line that `watch` matches on `matches`, and the running byte count
/// on `progress`.
pub async fn follow(
    mut pipe: tokio::net::unix::pipe::Receiver,
    file: &Path,
    bound: OutputBound,
    watch: Option<regex::Regex>,
    matches: mpsc::UnboundedSender<Matched>,
    progress: tokio::sync::watch::Sender<u64>,
) -> OutputEnd {
    let mut out = match std::fs::OpenOptions::new().create(true).append(true).open(file) {
        Ok(out) => Some(out),
        Err(error) => {
            tracing::warn!(%error, file = %file.display(), "a job's output file cannot be opened");
            None
        }
    };
    let mut end = OutputEnd::default();
    let mut tail: Vec<u8> = Vec::new();
    let mut line: Vec<u8> = Vec::new();
    let mut buf = vec![0_u8; 16 * 1024];
    loop {
        let n = match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let room = usize::try_from(bound.file_bytes.saturating_sub(end.bytes)).unwrap_or(usize::MAX);
        if let Some(file) = out.as_mut() {
            let keep = &chunk[..chunk.len().min(room)];
            if !keep.is_empty() && file.write_all(keep).is_err() {
                out = None;
            }
        }
        if chunk.len() > room {
            end.truncated = true;
        }
        end.bytes += n as u64;
        progress.send_replace(end.bytes);
        tail.extend_from_slice(chunk);
        if tail.len() > 2 * TAIL_BYTES {
            tail.drain(..tail.len() - TAIL_BYTES);
        }
        if let Some(watch) = &watch {
            for &byte in chunk {
                if byte == b'\n' {
                    check_line(watch, &line, &matches);
                    line.clear();
                } else if line.len() < MAX_LINE {
                    line.push(byte);
                }
            }
        }
    }
    if let Some(watch) = &watch
        && !line.is_empty()
    {
        check_line(watch, &line, &matches);
    }
    end.tail = tail_text(&tail);
    end
}

fn check_line(watch: &regex::Regex, line: &[u8], matches: &mpsc::UnboundedSender<Matched>) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\r');
    if watch.is_match(text) {
        let _ = matches.send(Matched { line: text.to_owned() });
    }
}

/// The last [`TAIL_BYTES`] of `bytes`, starting at a line when one starts in them.
fn tail_text(bytes: &[u8]) -> String {
    let from = bytes.len().saturating_sub(TAIL_BYTES);
    let mut slice = &bytes[from..];
    if from > 0
        && let Some(nl) = slice.iter().position(|b| *b == b'\n')
    {
        slice = &slice[nl + 1..];
    }
    String::from_utf8_lossy(slice).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_file_keeps_its_bound_and_the_tail_and_matches_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = tokio::net::unix::pipe::pipe().unwrap();
        let file = dir.path().join("j1.log");
        let (matches, mut matched) = mpsc::unbounded_channel();
        let (progress, _) = tokio::sync::watch::channel(0);
        let watch = regex::Regex::new("ready").unwrap();
        let reader = tokio::spawn({
            let file = file.clone();
            async move {
                follow(
                    rx,
                    &file,
                    OutputBound { file_bytes: 100 },
                    Some(watch),
                    matches,
                    progress,
                )
                .await
            }
        });
        let writer = tokio::task::spawn_blocking(move || {
            let mut tx = tx.into_blocking_fd().map(std::fs::File::from).unwrap();
            for i in 0..50 {
                writeln!(tx, "line {i}").unwrap();
            }
            writeln!(tx, "server ready on 8000").unwrap();
            write!(tx, "last").unwrap();
        });
        writer.await.unwrap();
        let end = reader.await.unwrap();
        assert!(end.truncated);
        assert_eq!(std::fs::read(&file).unwrap().len(), 100);
        assert!(end.tail.ends_with("server ready on 8000\nlast"), "{}", end.tail);
        assert_eq!(matched.recv().await.unwrap().line, "server ready on 8000");
        assert!(end.bytes > 100);
    }
}
