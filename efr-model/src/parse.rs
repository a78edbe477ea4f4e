//! From bytes to [`ModelEvent`]s: the SSE layer (eventsource-stream) and the pieces every provider's parser shares.
//!
//! A provider's parser is a pure state machine ([`StreamParser`]): it takes one SSE event at a time and appends
//! `ModelEvent`s, with no I/O, so tests and the benchmark feed it bytes directly ([`parse_chunks`]). [`events`] runs
//! it over any byte stream (a reqwest body in production) and enforces the stream rules of the issue: an error ends
//! the stream, and a stream that closes before its completion event ends with [`ModelError::StreamEnded`].

use std::collections::VecDeque;

use bytes::{Bytes, BytesMut};
use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};

use super::event::{ModelError, ModelEvent, StopReason, Usage};
use super::request::unwrap_freeform_input;

/// A provider's stream parser: one SSE event in, zero or more [`ModelEvent`]s out.
pub trait StreamParser {
    /// Reads one SSE event: `name` is its `event:` field (`message` when the event had none), `data` its data lines
    /// joined with `\n`. Appends what it yields to `out`. Returns `Ok(true)` once the provider's completion event was
    /// read (the last event of `out` is then [`ModelEvent::Stop`]); nothing after it is read. An error ends the
    /// stream; events already in `out` are delivered before it.
    ///
    /// # Errors
    /// The provider's error event mapped to a [`ModelError`], or [`ModelError::BadResponse`] for data that breaks
    /// the provider's format.
    fn event(&mut self, name: &str, data: &str, out: &mut Vec<ModelEvent>) -> Result<bool, ModelError>;
}

/// The size of the pieces of a body that eventsource-stream gets: whole lines, about this many bytes of them.
const SSE_PIECE: usize = 512;

/// Cuts a body into pieces of whole lines for eventsource-stream, whose cost otherwise grows with the square of a
/// line: it moves the rest of its buffer after each line it reads, and it parses a partial line in its buffer again
/// from its start each time it is polled, once for every read that wakes the stream (a 5 MiB answer, which the
/// Responses API repeats whole in its done events, parsed at 17 MiB/s in 1 MiB pieces; benches/model_parse.rs).
/// A line ends at `\n`, `\r\n` or a lone `\r` (the SSE grammar); a piece ends only where the next byte is known, so a
/// CRLF pair is never split. Complete lines are slices of the read; only a line that spans reads is copied, once.
#[derive(Debug, Default)]
struct LinePieces {
    partial: BytesMut,
}

impl LinePieces {
    /// The longest line held back while waiting for its end: past it, the bytes go on as they are (and cost
    /// eventsource-stream the square of their length). Far above any event a provider sends; what is held here
    /// eventsource-stream would hold anyway.
    const HOLD_LIMIT: usize = 16 << 20;

    fn push(&mut self, mut chunk: Bytes, out: &mut Vec<Bytes>) {
        if chunk.is_empty() {
            return;
        }
        if !self.partial.is_empty() {
            let end = if self.partial.ends_with(b"\r") {
                // The held line's last byte is a CR: the chunk's first byte says whether an LF belongs to it.
                Some(usize::from(chunk[0] == b'\n'))
            } else {
                first_cut(&chunk)
            };
            match end {
                Some(end) => {
                    self.partial.extend_from_slice(&chunk.split_to(end));
                    out.push(self.partial.split().freeze());
                }
                None => {
                    self.partial.extend_from_slice(&chunk);
                    if self.partial.len() > Self::HOLD_LIMIT {
                        // A last CR stays held: its LF may be the next read's first byte.
                        let at = self.partial.len() - usize::from(self.partial.ends_with(b"\r"));
                        out.push(self.partial.split_to(at).freeze());
                    }
                    return;
                }
            }
        }
        let Some(last) = last_cut(&chunk) else {
            self.partial.extend_from_slice(&chunk);
            return;
        };
        let rest = chunk.split_off(last);
        while chunk.len() > SSE_PIECE {
            // `chunk` ends at a cut, so one is found at its end at the latest.
            let cut = first_cut(&chunk[SSE_PIECE..]).map_or(chunk.len(), |i| SSE_PIECE + i);
            out.push(chunk.split_to(cut));
        }
        if !chunk.is_empty() {
            out.push(chunk);
        }
        self.partial.extend_from_slice(&rest);
    }

    /// What is held at the end of the body. A last CR ends its line: it becomes CRLF, since eventsource-stream
    /// would wait for an LF after it that never comes, and drop the stream's last event.
    fn finish(&mut self) -> Option<Bytes> {
        if self.partial.ends_with(b"\r") {
            self.partial.extend_from_slice(b"\n");
        }
        (!self.partial.is_empty()).then(|| self.partial.split().freeze())
    }
}

/// The index just past the first line end of `bytes` where a piece may end: after an LF, or after a CR whose next
/// byte is here (after the LF when it is one). `None` when there is none, or only a CR at the very end.
fn first_cut(bytes: &[u8]) -> Option<usize> {
    let i = bytes.iter().position(|b| matches!(b, b'\n' | b'\r'))?;
    match (bytes[i], bytes.get(i + 1)) {
        (b'\n', _) => Some(i + 1),
        (_, Some(b'\n')) => Some(i + 2),
        (_, Some(_)) => Some(i + 1),
        (_, None) => None,
    }
}

/// The index just past the last line end of `bytes` where a piece may end (see [`first_cut`]).
fn last_cut(bytes: &[u8]) -> Option<usize> {
    let mut end = bytes.len();
    while let Some(i) = bytes[..end].iter().rposition(|b| matches!(b, b'\n' | b'\r')) {
        // Scanning back, an LF is met before the CR of its pair; a CR is a cut unless it is the last byte.
        if bytes[i] == b'\n' || i + 1 < bytes.len() {
            return Some(i + 1);
        }
        end = i;
    }
    None
}

/// Runs `parser` over a byte stream: SSE framing by eventsource-stream (which also joins a UTF-8 character split
/// across chunks), then the parser. Yields every event, then ends after `Stop`, or with one error: the transport's,
/// the parser's, or [`ModelError::StreamEnded`] when the bytes end before the completion event.
pub fn events<S, B, E, P>(bytes: S, parser: P) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send
where
    S: Stream<Item = Result<B, E>> + Send + Unpin,
    B: Into<Bytes> + Send,
    E: Into<ModelError> + Send,
    P: StreamParser + Send,
{
    // The pieces, then what is held of a last line without its end.
    let pieces = futures::stream::unfold(
        (bytes, LinePieces::default(), false),
        |(mut bytes, mut lines, ended)| async move {
            if ended {
                return None;
            }
            let mut out = Vec::new();
            while out.is_empty() {
                match bytes.next().await {
                    Some(Ok(chunk)) => lines.push(chunk.into(), &mut out),
                    Some(Err(error)) => {
                        let pieces: Vec<Result<Bytes, E>> = vec![Err(error)];
                        return Some((futures::stream::iter(pieces), (bytes, lines, true)));
                    }
                    None => {
                        let pieces: Vec<Result<Bytes, E>> = lines.finish().into_iter().map(Ok).collect();
                        return Some((futures::stream::iter(pieces), (bytes, lines, true)));
                    }
                }
            }
            let pieces: Vec<Result<Bytes, E>> = out.into_iter().map(Ok).collect();
            Some((futures::stream::iter(pieces), (bytes, lines, false)))
        },
    )
    .flatten();
    let pieces = Box::pin(pieces);
    struct State<T, P> {
        sse: T,
        parser: P,
        pending: VecDeque<ModelEvent>,
        out: Vec<ModelEvent>,
        tail: Option<ModelError>,
        finished: bool,
    }
    let state = State {
        sse: pieces.eventsource(),
        parser,
        pending: VecDeque::new(),
        out: Vec::new(),
        tail: None,
        finished: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.pending.pop_front() {
                return Some((Ok(event), state));
            }
            if let Some(error) = state.tail.take() {
                return Some((Err(error), state));
            }
            if state.finished {
                return None;
            }
            match state.sse.next().await {
                Some(Ok(sse)) => {
                    let result = state.parser.event(&sse.event, &sse.data, &mut state.out);
                    state.pending.extend(state.out.drain(..));
                    match result {
                        Ok(done) => state.finished = done,
                        Err(error) => {
                            state.tail = Some(error);
                            state.finished = true;
                        }
                    }
                }
                Some(Err(error)) => {
                    state.tail = Some(sse_error(error));
                    state.finished = true;
                }
                None => {
                    state.tail = Some(ModelError::StreamEnded);
                    state.finished = true;
                }
            }
        }
    })
}

/// Parses a whole body given as chunks (split anywhere, even inside a UTF-8 character) with `parser`, as [`events`]
/// would: for tests and the benchmark, with no socket.
pub fn parse_chunks<P: StreamParser + Send>(parser: P, chunks: Vec<Bytes>) -> Vec<Result<ModelEvent, ModelError>> {
    let bytes = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
    futures::executor::block_on(events(bytes, parser).collect())
}

fn sse_error<E: Into<ModelError>>(error: EventStreamError<E>) -> ModelError {
    match error {
        EventStreamError::Transport(error) => error.into(),
        EventStreamError::Utf8(error) => ModelError::bad(format!("the stream is not UTF-8: {error}")),
        EventStreamError::Parser(error) => ModelError::bad(format!("the stream is not SSE: {error}")),
    }
}

impl From<std::io::Error> for ModelError {
    fn from(error: std::io::Error) -> Self {
        Self::Transport {
            message: error.to_string(),
        }
    }
}

/// Decodes one event's JSON data into its typed shape.
pub(crate) fn decode<'a, T: serde::Deserialize<'a>>(
    provider: &str,
    name: &str,
    data: &'a str,
) -> Result<T, ModelError> {
    serde_json::from_str(data).map_err(|error| ModelError::bad(format!("{provider} event {name}: {error}")))
}

/// Logs an event that the parser does not know. It is skipped, never taken for success: only the completion event
/// ends a stream well.
pub(crate) fn unknown_event(provider: &str, name: &str) {
    tracing::debug!(provider, event = name, "unknown model stream event skipped");
}

/// The message indexes of one call: a message gets the next index with its first non-empty text.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    next_index: u32,
    /// Whether the call gave text (for `Stop.empty`).
    pub(crate) text: bool,
    /// Whether the call gave a tool call (for `Stop.empty`).
    pub(crate) tool: bool,
    /// Whether the call gave a refusal (Responses and Chat send it as a part of their own).
    pub(crate) refusal: bool,
}

impl Answer {
    /// The last two events of a successful call: usage (when reported) and the stop.
    pub(crate) fn finish(&self, usage: Option<Usage>, reason: StopReason, out: &mut Vec<ModelEvent>) {
        if let Some(usage) = usage {
            out.push(ModelEvent::Usage(usage));
        }
        let reason = if self.refusal && reason == StopReason::EndTurn {
            StopReason::Refusal
        } else {
            reason
        };
        out.push(ModelEvent::Stop {
            reason,
            empty: !self.text && !self.tool,
        });
    }
}

/// The text of one assistant message: its index (once it has text) and its length in bytes so far.
#[derive(Debug, Default)]
pub(crate) struct TextMessage {
    index: Option<u32>,
    offset: u64,
}

impl TextMessage {
    /// Yields a [`ModelEvent::TextDelta`] for `delta`, giving the message its index on its first text.
    pub(crate) fn push(&mut self, answer: &mut Answer, delta: &str, out: &mut Vec<ModelEvent>) {
        if delta.is_empty() {
            return;
        }
        let index = *self.index.get_or_insert_with(|| {
            let index = answer.next_index;
            answer.next_index += 1;
            index
        });
        answer.text = true;
        out.push(ModelEvent::TextDelta {
            index,
            offset: self.offset,
            delta: delta.to_owned(),
        });
        self.offset += delta.len() as u64;
    }
}

/// One tool call being streamed.
#[derive(Debug)]
pub(crate) struct ToolCall {
    call_id: String,
    tool: String,
    freeform: bool,
    /// A freeform tool sent through the JSON-string fallback: the wire input is `{"input": "..."}`.
    fallback: bool,
    input: String,
}

impl ToolCall {
    /// Starts a call and yields [`ModelEvent::ToolCallStarted`]. `fallback` marks a freeform tool that this provider
    /// received as a function tool with one string member.
    pub(crate) fn start(
        answer: &mut Answer,
        call_id: String,
        tool: String,
        freeform: bool,
        fallback: bool,
        out: &mut Vec<ModelEvent>,
    ) -> Self {
        answer.tool = true;
        out.push(ModelEvent::ToolCallStarted {
            call_id: call_id.clone(),
            tool: tool.clone(),
            freeform,
        });
        Self {
            call_id,
            tool,
            freeform,
            fallback: fallback && freeform,
            input: String::new(),
        }
    }

    /// Adds input and yields [`ModelEvent::ToolInputDelta`] (nothing for an empty delta).
    pub(crate) fn push(&mut self, delta: &str, out: &mut Vec<ModelEvent>) {
        if delta.is_empty() {
            return;
        }
        self.input.push_str(delta);
        out.push(ModelEvent::ToolInputDelta {
            call_id: self.call_id.clone(),
            delta: delta.to_owned(),
            bytes: self.input.len() as u64,
        });
    }

    /// Bytes of input received so far.
    pub(crate) fn bytes(&self) -> usize {
        self.input.len()
    }

    /// Ends the call with [`ModelEvent::ToolCallDone`]; `input` is the provider's final input when it sends one
    /// (it wins over the deltas), else the deltas joined.
    pub(crate) fn done(self, input: Option<String>, out: &mut Vec<ModelEvent>) {
        let input = input.unwrap_or(self.input);
        let input = if self.fallback {
            unwrap_freeform_input(&input)
        } else {
            input
        };
        out.push(ModelEvent::ToolCallDone {
            call_id: self.call_id,
            tool: self.tool,
            freeform: self.freeform,
            input,
        });
    }
}

/// The heading of an OpenAI reasoning summary part: `**Title**` at its start, trimmed; `None` when the text does not
/// open with one (yet).
pub(crate) fn bold_title(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("**")?;
    let end = rest.find("**")?;
    let title = rest[..end].trim();
    (!title.is_empty() && !title.contains('\n')).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces of `body` read in `size`-byte reads, the held rest included.
    fn pieces(body: &[u8], size: usize) -> Vec<Bytes> {
        let mut lines = LinePieces::default();
        let mut out = Vec::new();
        for read in body.chunks(size) {
            lines.push(Bytes::copy_from_slice(read), &mut out);
        }
        out.extend(lines.finish());
        out
    }

    #[test]
    fn pieces_end_at_line_ends_and_never_between_cr_and_lf() {
        let mut body = b"event: a\r\ndata: 1\r\rdata: 2\n\nevent: b\rdata: 3\r\n\r\n".repeat(40);
        body.extend_from_slice(b"event: c\rdata: 4\r\r");
        let ended = [&body[..], b"\n"].concat();
        for size in [1, 2, 3, 7, 64, 600, body.len()] {
            let pieces = pieces(&body, size);
            assert_eq!(pieces.concat(), ended, "reads of {size}: the last CR becomes CRLF");
            let mut at = 0;
            for piece in &pieces {
                at += piece.len();
                let (last, next) = (ended[at - 1], ended.get(at));
                assert!(
                    last == b'\n' || (last == b'\r' && next != Some(&b'\n')),
                    "reads of {size}: a piece ends inside a line at {at}"
                );
            }
        }
    }

    #[test]
    fn a_line_longer_than_many_reads_is_passed_on_whole() {
        let line = format!("data: {}\n", "x".repeat(5 << 20));
        let body = format!("event: e\n{line}\n");
        let pieces = pieces(body.as_bytes(), 16 << 10);
        assert!(
            pieces.iter().any(|piece| piece == line.as_bytes()),
            "the 5 MiB line is one piece: {:?}",
            pieces.iter().map(Bytes::len).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_line_past_the_hold_limit_goes_on_but_not_between_its_cr_and_lf() {
        // The CR is the last byte of the read that takes the held line past the limit; its LF opens the next read.
        let cr_end = LinePieces::HOLD_LIMIT + (64 << 10);
        let mut body = b"data: ".to_vec();
        body.resize(cr_end - 1, b'x');
        body.extend_from_slice(b"\r\n\n");
        let pieces = pieces(&body, 64 << 10);
        assert_eq!(pieces.concat(), body);
        assert!(pieces.len() > 1, "the line was not held whole");
        let mut at = 0;
        for piece in &pieces {
            at += piece.len();
            assert_ne!(at, cr_end, "a piece ends between the CR and its LF");
        }
    }

    #[test]
    fn cuts_wait_for_the_byte_after_a_cr() {
        assert_eq!(first_cut(b"ab\r"), None);
        assert_eq!(first_cut(b"ab\r\n"), Some(4));
        assert_eq!(first_cut(b"ab\rc"), Some(3));
        assert_eq!(first_cut(b"ab\nc"), Some(3));
        assert_eq!(last_cut(b"a\nb\r"), Some(2));
        assert_eq!(last_cut(b"a\rb\r\n"), Some(5));
        assert_eq!(last_cut(b"a\rb"), Some(2));
        assert_eq!(last_cut(b"\r"), None);
        assert_eq!(last_cut(b"abc"), None);
    }
}
