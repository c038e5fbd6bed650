//! The LSP base protocol over a child's stdio: every JSON-RPC message is one
//! frame, `Content-Length: N\r\n\r\n` followed by N bytes of UTF-8 JSON.
//!
//! [`Sender`] and [`Receiver`] plug these frames into jsonrpsee's async client
//! (`ClientBuilder::build_with_tokio`).

use std::io;

use jsonrpsee::core::client::{ReceivedMessage, TransportReceiverT, TransportSenderT};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Frames larger than this are refused rather than buffered (a broken peer
/// must not make the client allocate without bound).
pub const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// Writes one framed message.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, body: &str) -> io::Result<()> {
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    w.write_all(header.as_bytes()).await?;
    w.write_all(body.as_bytes()).await?;
    w.flush().await
}

/// Reads one framed message; `Ok(None)` on a clean end of stream before a frame starts.
pub async fn read_frame<R: AsyncBufRead + Unpin>(r: &mut R) -> io::Result<Option<String>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        let n = r.read_line(&mut line).await?;
        if n == 0 {
            if first {
                return Ok(None);
            }
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stream ended inside a frame header"));
        }
        first = false;
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            return Err(invalid(format!("malformed header line {header:?}")));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            let parsed = value.parse::<usize>().map_err(|_| invalid(format!("bad Content-Length {value:?}")))?;
            length = Some(parsed);
        }
        // Other headers (Content-Type) are allowed and ignored.
    }
    let length = length.ok_or_else(|| invalid("frame without Content-Length".to_owned()))?;
    if length > MAX_FRAME_BYTES {
        return Err(invalid(format!("frame of {length} bytes exceeds the limit of {MAX_FRAME_BYTES}")));
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body).await?;
    String::from_utf8(body).map(Some).map_err(|_| invalid("frame body is not UTF-8".to_owned()))
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// The sending half: writes frames to the server's stdin.
pub struct Sender<W> {
    writer: W,
}

impl<W> Sender<W> {
    pub fn new(writer: W) -> Self {
        Self { writer }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> TransportSenderT for Sender<W> {
    type Error = io::Error;

    async fn send(&mut self, msg: String) -> Result<(), Self::Error> {
        tracing::trace!(target: "mino::wire", "→ {msg}");
        write_frame(&mut self.writer, &msg).await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.shutdown().await
    }
}

/// The receiving half: reads frames from the server's stdout.
pub struct Receiver<R> {
    reader: BufReader<R>,
}

impl<R: tokio::io::AsyncRead> Receiver<R> {
    pub fn new(reader: R) -> Self {
        Self { reader: BufReader::new(reader) }
    }
}

impl<R: tokio::io::AsyncRead + Unpin + Send + 'static> TransportReceiverT for Receiver<R> {
    type Error = io::Error;

    async fn receive(&mut self) -> Result<ReceivedMessage, Self::Error> {
        match read_frame(&mut self.reader).await? {
            Some(body) => {
                tracing::trace!(target: "mino::wire", "← {body}");
                Ok(ReceivedMessage::Text(body))
            }
            None => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "mino-server closed its output")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, r#"{"jsonrpc":"2.0","method":"x"}"#).await.unwrap();
        write_frame(&mut buf, "{\"s\":\"é\"}").await.unwrap();
        let mut r = BufReader::new(&buf[..]);
        assert_eq!(read_frame(&mut r).await.unwrap().unwrap(), r#"{"jsonrpc":"2.0","method":"x"}"#);
        assert_eq!(read_frame(&mut r).await.unwrap().unwrap(), "{\"s\":\"é\"}");
        assert_eq!(read_frame(&mut r).await.unwrap(), None);
    }

    #[tokio::test]
    async fn extra_headers_and_case_are_accepted() {
        let raw = b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}";
        let mut r = BufReader::new(&raw[..]);
        assert_eq!(read_frame(&mut r).await.unwrap().unwrap(), "{}");
    }

    #[tokio::test]
    async fn missing_length_and_truncation_are_errors() {
        let mut r = BufReader::new(&b"X-Foo: 1\r\n\r\n{}"[..]);
        assert!(read_frame(&mut r).await.is_err());
        let mut r = BufReader::new(&b"Content-Length: 10\r\n\r\n{}"[..]);
        assert!(read_frame(&mut r).await.is_err());
    }
}
