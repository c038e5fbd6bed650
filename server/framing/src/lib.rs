//! The LSP base protocol's framing: every JSON-RPC message is one frame,
//! `Content-Length: N\r\n\r\n` followed by N bytes of UTF-8 JSON.
//!
//! This is the one place that reads and writes those frames, for the server
//! and for everything that talks to it (the terminal client, the end-to-end
//! harness, the benchmarks, the fuzz target). [`FrameCodec`] is a
//! `tokio_util` [`Decoder`]/[`Encoder`], so async readers use it through
//! `FramedRead`/`FramedWrite`; [`BlockingFrameReader`] drives the same
//! decoder over a `std::io::Read` for blocking code.
//!
//! A decoding problem is never an error of the stream: it is a
//! [`Frame::Malformed`] item naming what is wrong, and the decoder has
//! already resynchronised on the next header. (`FramedRead` ends the stream
//! for good at the first decoder error, and the server promises to answer
//! malformed input and keep serving.) Only I/O fails.

use std::io;

use bytes::{Buf, BufMut, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Headers longer than this without a blank line are garbage.
pub const MAX_HEADER: usize = 8 * 1024;
/// Bodies above this are refused (and skipped).
pub const MAX_BODY: usize = 64 * 1024 * 1024;

const CONTENT_LENGTH: &[u8] = b"Content-Length";

/// What the decoder made of the next bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Body(Vec<u8>),
    /// Bytes that are not a frame; the decoder has skipped them. The text
    /// says what was wrong (the server answers it in a `-32700` error).
    Malformed(String),
}

/// Reads and writes `Content-Length` frames, resynchronising after garbage.
///
/// Memory is bounded by what arrives, never by what a header claims: a body
/// is buffered as its bytes come in (no room is reserved for it), and a
/// `Content-Length` above [`MAX_BODY`] is reported at once and its bytes are
/// dropped as they arrive until the next header, so a lying length cannot
/// stall or swallow the stream.
#[derive(Debug, Default)]
pub struct FrameCodec {
    /// After an oversized length or a bad line break: input is dropped up to the next header.
    discarding: bool,
    /// The header was read; its body (this many bytes) is still arriving.
    body_length: Option<usize>,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn rfind(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).rposition(|w| w == needle)
}

impl FrameCodec {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next frame in `buf`, or `None` when more input is needed (or,
    /// with `eof`, when the input has ended).
    fn next_frame(&mut self, buf: &mut BytesMut, eof: bool) -> Option<Frame> {
        loop {
            if self.discarding {
                match find(buf, CONTENT_LENGTH) {
                    Some(start) => {
                        buf.advance(start);
                        self.discarding = false;
                    }
                    None => {
                        // Keep a tail that may be the start of the next header.
                        let keep = buf.len().min(CONTENT_LENGTH.len() - 1);
                        buf.advance(buf.len() - keep);
                        return None;
                    }
                }
            }
            if let Some(length) = self.body_length {
                if buf.len() < length {
                    if !eof {
                        return None;
                    }
                    let got = buf.len();
                    buf.clear();
                    self.body_length = None;
                    return Some(Frame::Malformed(format!("input ended inside a frame ({got} of {length} bytes)")));
                }
                self.body_length = None;
                return Some(Frame::Body(buf.split_to(length).to_vec()));
            }
            let header_end = find(buf, b"\r\n\r\n");
            if let Some(bare) = lone_line_break(&buf[..header_end.unwrap_or(buf.len())]) {
                // A header line ended with a lone `\n` or `\r` (a bare
                // `\n\n`, `\r\r`, a mixed `\n\r\n`): waiting for `\r\n\r\n`
                // would leave the request unanswered until unrelated bytes
                // arrive, and then read two frames as one. Refuse it now and
                // drop its body up to the next header, so the body is not
                // answered as garbage too.
                let which = if buf[bare] == b'\n' { r"\n" } else { r"\r" };
                let header = String::from_utf8_lossy(&buf[..bare]).trim().to_string();
                buf.advance(bare + 1);
                self.discarding = true;
                return Some(Frame::Malformed(format!(
                    "headers must end with \\r\\n\\r\\n and each header line with \\r\\n, not a lone {which} \
                     (after {header:?}); the frame is skipped"
                )));
            }
            if let Some(end) = header_end {
                let header = String::from_utf8_lossy(&buf[..end]).into_owned();
                let length = match content_length(&header) {
                    Ok(length) => {
                        buf.advance(end + 4);
                        length
                    }
                    Err(why) => {
                        // Garbage before what looks like a header: skip to
                        // it, so the frame that follows is still read. The
                        // last candidate: garbage (a bad frame's body) may
                        // itself mention "Content-Length".
                        let resync = rfind(&buf[..end], CONTENT_LENGTH).filter(|&p| p > 0 && buf[p - 1] != b'\n');
                        match resync {
                            Some(start) => buf.advance(start),
                            None => buf.advance(end + 4),
                        }
                        return Some(Frame::Malformed(why));
                    }
                };
                if length > MAX_BODY {
                    self.discarding = true;
                    return Some(Frame::Malformed(format!(
                        "Content-Length {length} exceeds {MAX_BODY} bytes; its body is skipped up to the next header"
                    )));
                }
                self.body_length = Some(length);
                continue;
            }
            if buf.len() > MAX_HEADER {
                // Keep a possible header start; drop the rest.
                let keep = find(buf, CONTENT_LENGTH).filter(|&p| p > 0).unwrap_or(buf.len() - 3);
                let skipped = buf.len().min(keep);
                buf.advance(skipped);
                return Some(Frame::Malformed(format!("{skipped} bytes without a frame header")));
            }
            if !eof || buf.iter().all(u8::is_ascii_whitespace) {
                return None;
            }
            let rest = String::from_utf8_lossy(buf).into_owned();
            buf.clear();
            return Some(Frame::Malformed(format!("input ended inside a header: {rest:?}")));
        }
    }
}

/// Where the header block that starts `header` (leading blank lines between
/// frames are tolerated) has a line break other than `\r\n`: a `\n` not
/// after `\r`, or a `\r` followed by anything but `\n`. A `\r` at the very
/// end may still be followed by its `\n`.
fn lone_line_break(header: &[u8]) -> Option<usize> {
    let start = header.iter().position(|b| !b.is_ascii_whitespace())?;
    (start..header.len()).find(|&i| match header[i] {
        b'\n' => header[i - 1] != b'\r',
        b'\r' => header.get(i + 1).is_some_and(|&next| next != b'\n'),
        _ => false,
    })
}

/// The body length a header block announces; any `Content-Type` must be UTF-8.
fn content_length(header: &str) -> Result<usize, String> {
    let mut length = None;
    for line in header.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("not a header line: {line:?}"));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("Content-Length") {
            length = Some(value.parse::<usize>().map_err(|e| format!("bad Content-Length {value:?}: {e}"))?);
        } else if name.eq_ignore_ascii_case("Content-Type") {
            // Media type parameters are case-insensitive (RFC 9110 §8.3.1), and a value may be quoted.
            let charset = value.split(';').skip(1).find_map(|param| {
                let (name, value) = param.split_once('=')?;
                name.trim().eq_ignore_ascii_case("charset").then(|| value.trim().trim_matches('"').to_ascii_lowercase())
            });
            if !matches!(charset.as_deref(), None | Some("utf-8" | "utf8")) {
                return Err(format!("unsupported Content-Type {value:?}: only utf-8 is understood"));
            }
        }
    }
    length.ok_or_else(|| "a header without Content-Length".to_string())
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<Frame>> {
        Ok(self.next_frame(src, false))
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> io::Result<Option<Frame>> {
        Ok(self.next_frame(src, true))
    }
}

impl<T: AsRef<[u8]>> Encoder<T> for FrameCodec {
    type Error = io::Error;

    fn encode(&mut self, body: T, dst: &mut BytesMut) -> io::Result<()> {
        let body = body.as_ref();
        dst.reserve(32 + body.len());
        dst.put_slice(header(body.len()).as_bytes());
        dst.put_slice(body);
        Ok(())
    }
}

fn header(length: usize) -> String {
    format!("Content-Length: {length}\r\n\r\n")
}

/// Appends `body` to `out` as one frame (for writers that batch frames themselves).
pub fn append_frame(out: &mut Vec<u8>, body: &[u8]) {
    out.reserve(32 + body.len());
    out.extend_from_slice(header(body.len()).as_bytes());
    out.extend_from_slice(body);
}

/// `body` as one frame.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    append_frame(&mut out, body);
    out
}

const READ_CHUNK: usize = 64 * 1024;

/// [`FrameCodec`] over a blocking reader: the same decoding for code without
/// an async runtime (a reader thread).
pub struct BlockingFrameReader<R> {
    input: R,
    codec: FrameCodec,
    buf: BytesMut,
    /// What one read fills, allocated once (a benchmark reads through this).
    chunk: Box<[u8]>,
    eof: bool,
}

impl<R: io::Read> BlockingFrameReader<R> {
    pub fn new(input: R) -> Self {
        Self {
            input,
            codec: FrameCodec::new(),
            buf: BytesMut::with_capacity(READ_CHUNK),
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            eof: false,
        }
    }

    /// The next frame, or `None` once the input has ended.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        loop {
            if let Some(frame) = self.codec.next_frame(&mut self.buf, self.eof) {
                return Ok(Some(frame));
            }
            if self.eof {
                return Ok(None);
            }
            let n = match self.input.read(&mut self.chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if n == 0 {
                self.eof = true;
            }
            self.buf.extend_from_slice(&self.chunk[..n]);
        }
    }
}

impl<R: io::Read> Iterator for BlockingFrameReader<R> {
    type Item = io::Result<Frame>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_frame().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio_util::codec::FramedRead;

    /// Every frame of `input`, read through `FramedRead` the way the server reads.
    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = FramedRead::new(input, FrameCodec::new());
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await {
            out.push(frame.expect("reading a slice cannot fail"));
        }
        out
    }

    /// Every frame of `input` fed to the decoder `step` bytes at a time.
    fn frames_in_pieces(input: &[u8], step: usize) -> Vec<Frame> {
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            buf.extend_from_slice(piece);
            while let Some(frame) = codec.decode(&mut buf).expect("decoding never fails") {
                out.push(frame);
            }
        }
        while let Some(frame) = codec.decode_eof(&mut buf).expect("decoding never fails") {
            out.push(frame);
        }
        out
    }

    fn blocking(input: &[u8]) -> Vec<Frame> {
        BlockingFrameReader::new(input).collect::<io::Result<_>>().expect("reading a slice cannot fail")
    }

    #[tokio::test]
    async fn written_frames_read_back() {
        let mut input = frame(br#"{"jsonrpc":"2.0","method":"x"}"#);
        let mut codec = FrameCodec::new();
        let mut encoded = BytesMut::new();
        codec.encode("{\"s\":\"é\"}", &mut encoded).expect("encoding into memory");
        input.extend_from_slice(&encoded);
        let expected =
            vec![Frame::Body(br#"{"jsonrpc":"2.0","method":"x"}"#.to_vec()), Frame::Body("{\"s\":\"é\"}".into())];
        assert_eq!(frames(&input).await, expected);
        assert_eq!(blocking(&input), expected);
        assert_eq!(&input[..22], b"Content-Length: 30\r\n\r\n");
    }

    #[test]
    fn partial_frames_wait_for_their_bytes() {
        let input =
            b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 11\r\n\r\n{\"a\":[1,2]}\
                      Content-Length: 2\r\n\r\n{}";
        let expected = vec![Frame::Body(b"{\"a\":[1,2]}".to_vec()), Frame::Body(b"{}".to_vec())];
        for step in 1..=input.len() {
            assert_eq!(frames_in_pieces(input, step), expected, "fed {step} bytes at a time");
        }
        // Nothing is handed out before the body is complete.
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::from(&b"Content-Length: 4\r\n\r\nnu"[..]);
        assert_eq!(codec.decode(&mut buf).expect("decode"), None);
        buf.extend_from_slice(b"ll");
        assert_eq!(codec.decode(&mut buf).expect("decode"), Some(Frame::Body(b"null".to_vec())));
    }

    #[tokio::test]
    async fn two_frames_in_one_read_are_both_read() {
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::from(&b"Content-Length: 2\r\n\r\n{}Content-Length: 4\r\n\r\nnull"[..]);
        assert_eq!(codec.decode(&mut buf).expect("decode"), Some(Frame::Body(b"{}".to_vec())));
        assert_eq!(codec.decode(&mut buf).expect("decode"), Some(Frame::Body(b"null".to_vec())));
        assert_eq!(codec.decode(&mut buf).expect("decode"), None);
        assert!(buf.is_empty());
    }

    #[tokio::test]
    async fn reads_frames_and_resynchronises_after_garbage() {
        let input = b"Content-Length: 2\r\n\r\n{}garbage\r\n\r\nxxContent-Length: 4\r\n\r\nnull";
        let got = frames(input).await;
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0], Frame::Body(b"{}".to_vec()));
        assert!(matches!(&got[1], Frame::Malformed(m) if m.contains("not a header line")), "{got:?}");
        assert!(matches!(got[2], Frame::Malformed(_)));
        assert_eq!(got[3], Frame::Body(b"null".to_vec()));
        assert_eq!(blocking(input), got);
        assert_eq!(frames_in_pieces(input, 3), got);
    }

    #[tokio::test]
    async fn bad_headers_name_what_is_wrong() {
        let got = frames(b"Content-Length: abc\r\n\r\n").await;
        assert!(matches!(&got[..], [Frame::Malformed(m)] if m.starts_with("bad Content-Length \"abc\"")), "{got:?}");
        let got = frames(b"X-Foo: 1\r\n\r\n{}").await;
        assert!(matches!(&got[0], Frame::Malformed(m) if m == "a header without Content-Length"), "{got:?}");
        let got = frames(b"Content-Length: 2\r\n\r").await;
        assert!(matches!(&got[..], [Frame::Malformed(m)] if m.starts_with("input ended inside a header")), "{got:?}");
        // Garbage longer than any header without a blank line.
        let got = frames(&vec![b'x'; MAX_HEADER + 10]).await;
        assert!(matches!(&got[0], Frame::Malformed(m) if m.ends_with("bytes without a frame header")), "{got:?}");
    }

    #[tokio::test]
    async fn a_bad_frame_whose_body_mentions_content_length_does_not_swallow_the_next() {
        let body = br#"{"text":"what is a Content-Length: header?"}"#;
        let mut input = b"Content-Length: abc\r\n\r\n".to_vec();
        input.extend_from_slice(body);
        input.extend_from_slice(b"Content-Length: 4\r\n\r\nnullContent-Length: 2\r\n\r\n{}");
        let got = frames(&input).await;
        let bodies: Vec<&Frame> = got.iter().filter(|f| matches!(f, Frame::Body(_))).collect();
        assert_eq!(bodies, [&Frame::Body(b"null".to_vec()), &Frame::Body(b"{}".to_vec())], "{got:?}");

        let mut input = b"Content-Length: 999999999999\r\n\r\n".to_vec();
        input.extend_from_slice(body);
        input.extend_from_slice(b"Content-Length: 4\r\n\r\nnull");
        let got = frames(&input).await;
        assert_eq!(got.last(), Some(&Frame::Body(b"null".to_vec())), "{got:?}");
    }

    #[tokio::test]
    async fn other_headers_may_come_first() {
        let got =
            frames(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}").await;
        assert_eq!(got, vec![Frame::Body(b"{}".to_vec())]);
        let got = frames(b"Content-Type: text/plain; charset=latin1\r\nContent-Length: 2\r\n\r\n{}").await;
        assert!(matches!(&got[0], Frame::Malformed(m) if m.contains("only utf-8 is understood")), "{got:?}");
    }

    #[tokio::test]
    async fn the_charset_is_read_case_insensitively() {
        for header in [
            "Content-Type: application/vscode-jsonrpc; charset=utf-8",
            "Content-Type: application/vscode-jsonrpc; charset=UTF-8",
            "Content-Type: application/vscode-jsonrpc; charset=utf8",
            "Content-Type: application/vscode-jsonrpc; Charset=\"UTF8\"",
            "content-type: application/json;charset=Utf-8",
            "Content-Type: application/json",
        ] {
            let got = frames(format!("{header}\r\nContent-Length: 2\r\n\r\n{{}}").as_bytes()).await;
            assert_eq!(got, vec![Frame::Body(b"{}".to_vec())], "{header}");
        }
        let got = frames(b"Content-Type: application/json; charset=utf-16\r\nContent-Length: 2\r\n\r\n{}").await;
        assert!(matches!(&got[0], Frame::Malformed(_)), "{got:?}");
    }

    #[tokio::test]
    async fn an_oversized_length_is_answered_at_once_and_the_next_frame_is_read() {
        let input = b"Content-Length: 10000000000\r\n\r\n{\"partial\":Content-Length: 2\r\n\r\n{}";
        let got = frames(input).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(matches!(&got[0], Frame::Malformed(m) if m.contains("exceeds")), "{got:?}");
        assert_eq!(got[1], Frame::Body(b"{}".to_vec()));
        // Reported before its body arrives, and resynchronised whatever the pieces.
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::from(&format!("Content-Length: {}\r\n\r\n", MAX_BODY + 1)[..]);
        assert!(matches!(codec.decode(&mut buf).expect("decode"), Some(Frame::Malformed(_))));
        for step in [1, 2, 5, 13, 14, 40] {
            assert_eq!(frames_in_pieces(input, step), got, "fed {step} bytes at a time");
        }
        // Exactly the limit is still a frame (its header is accepted; the body may follow).
        let mut buf = BytesMut::from(&format!("Content-Length: {MAX_BODY}\r\n\r\n")[..]);
        assert_eq!(codec.decode(&mut buf).expect("decode"), None);
        // A lying length followed by nothing: the input just ends.
        let got = frames(b"Content-Length: 99999999999\r\n\r\nabc").await;
        assert_eq!(got.len(), 1, "{got:?}");
    }

    #[tokio::test]
    async fn a_header_ending_in_bare_newlines_is_refused_without_waiting_for_more() {
        // The whole input: nothing follows the frame, and the reader must
        // not need more to answer it.
        let got = frames(b"Content-Length: 2\n\n{}").await;
        assert!(matches!(&got[..], [Frame::Malformed(m)] if m.contains(r"headers must end with \r\n\r\n")), "{got:?}");
        let mut codec = FrameCodec::new();
        let mut buf = BytesMut::from(&b"Content-Length: 2\n\n"[..]);
        assert!(matches!(codec.decode(&mut buf).expect("decode"), Some(Frame::Malformed(_))));
        // Its body is skipped; the next frame is read as usual.
        let got = frames(b"Content-Length: 2\n\n{}Content-Length: 4\r\n\r\nnull").await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[1], Frame::Body(b"null".to_vec()));
        // A body may hold blank lines; only the header is looked at.
        let got = frames(b"Content-Length: 4\r\n\r\n\n\n\n\n").await;
        assert_eq!(got, vec![Frame::Body(b"\n\n\n\n".to_vec())]);
    }

    #[tokio::test]
    async fn header_lines_ending_in_a_lone_cr_or_lf_are_refused_without_waiting_for_more() {
        for input in [&b"Content-Length: 2\n\r\n{}"[..], b"Content-Length: 2\r\r{}", b"Content-Length: 2\n\r\n\r\n{}"] {
            let got = frames(input).await;
            assert!(
                matches!(&got[..], [Frame::Malformed(m)] if m.contains(r"headers must end with \r\n\r\n")),
                "{got:?}"
            );
            // The next frame is read as itself, not merged with this one.
            let mut input = input.to_vec();
            input.extend_from_slice(b"Content-Length: 4\r\n\r\nnull");
            let got = frames(&input).await;
            assert!(matches!(&got[..], [Frame::Malformed(_), Frame::Body(b)] if b == b"null"), "{got:?}");
        }
        // A newline between frames is tolerated, and a `\r` at the end may still get its `\n`.
        let got = frames(b"Content-Length: 2\r\n\r\n{}\nContent-Length: 2\r\n\r\n{}").await;
        assert_eq!(got, vec![Frame::Body(b"{}".to_vec()), Frame::Body(b"{}".to_vec())]);
        assert_eq!(lone_line_break(b"Content-Length: 2\r"), None);
    }

    #[tokio::test]
    async fn a_truncated_frame_is_reported() {
        let got = frames(b"Content-Length: 10\r\n\r\n{}").await;
        assert!(
            matches!(&got[..], [Frame::Malformed(m)] if m == "input ended inside a frame (2 of 10 bytes)"),
            "{got:?}"
        );
        assert_eq!(blocking(b"Content-Length: 10\r\n\r\n{}"), got);
        // Trailing blank lines are not a frame.
        assert_eq!(frames(b"Content-Length: 2\r\n\r\n{}\r\n\n").await, vec![Frame::Body(b"{}".to_vec())]);
        assert_eq!(frames(b"").await, vec![]);
    }
}
