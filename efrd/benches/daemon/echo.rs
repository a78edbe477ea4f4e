//! The noise reference of the hello measure: a plain echo of length-prefixed frames over a Unix socket pair, served
//! by a thread of the bench process. It shows what one round trip through the kernel costs on this machine at this
//! moment, so a hello tail that fails under load can be read against it.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;

/// The noise reference: a thread of this process that echoes length-prefixed frames on one end of a Unix socket
/// pair; the bench holds the other end.
pub struct Echo {
    stream: tokio::net::UnixStream,
    frame: Vec<u8>,
    thread: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Echo {
    /// Starts the echo thread; `frame` is the JSON each round trip sends.
    pub fn start(frame: &Value) -> Result<Self> {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().context("a Unix socket pair")?;
        let thread = std::thread::spawn(move || echo_frames(theirs));
        ours.set_nonblocking(true)?;
        let body = serde_json::to_vec(frame)?;
        let mut framed = u32::try_from(body.len())?.to_be_bytes().to_vec();
        framed.extend_from_slice(&body);
        Ok(Self {
            stream: tokio::net::UnixStream::from_std(ours)?,
            frame: framed,
            thread,
        })
    }

    /// Sends the frame and reads it back; returns the time it took.
    pub async fn round_trip(&mut self) -> Result<Duration> {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let started = Instant::now();
        self.stream.write_all(&self.frame).await?;
        let mut back = vec![0; self.frame.len()];
        self.stream.read_exact(&mut back).await?;
        let elapsed = started.elapsed();
        if back != self.frame {
            bail!("the echo thread sent back other bytes");
        }
        Ok(elapsed)
    }

    /// Closes our end, so the thread sees the end of its input and stops.
    pub fn stop(self) -> Result<()> {
        drop(self.stream);
        self.thread
            .join()
            .map_err(|_| anyhow!("the echo thread panicked"))?
            .context("the echo thread")
    }
}

/// Echoes length-prefixed frames until the peer closes.
fn echo_frames(mut stream: std::os::unix::net::UnixStream) -> std::io::Result<()> {
    use std::io::{ErrorKind, Read, Write};
    let mut len = [0; 4];
    // Bounded by the peer: it sends one frame per round and closes after the last.
    loop {
        match stream.read_exact(&mut len) {
            Err(error) if error.kind() == ErrorKind::UnexpectedEof => return Ok(()),
            other => other?,
        }
        let mut body = vec![0; u32::from_be_bytes(len) as usize];
        stream.read_exact(&mut body)?;
        stream.write_all(&len)?;
        stream.write_all(&body)?;
    }
}
