//! The LSP base protocol over a child's stdio, framed by `mino-framing`.
//!
//! [`Sender`] and [`Receiver`] plug these frames into jsonrpsee's async client
//! (`ClientBuilder::build_with_tokio`). jsonrpsee gets only what it is for,
//! the responses to our requests: the receiver hands every notification to
//! the one ordered queue of [`crate::notifications`] as it reads it.

use std::io;

use futures::{SinkExt, StreamExt};
use jsonrpsee::core::client::{ReceivedMessage, TransportReceiverT, TransportSenderT};
use mino_framing::{Frame, FrameCodec};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::notifications::{classify, Incoming, Queue};

/// The sending half: writes frames to the server's stdin.
pub struct Sender<W> {
    frames: FramedWrite<W, FrameCodec>,
}

impl<W: AsyncWrite> Sender<W> {
    pub fn new(writer: W) -> Self {
        Self { frames: FramedWrite::new(writer, FrameCodec::new()) }
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> TransportSenderT for Sender<W> {
    type Error = io::Error;

    async fn send(&mut self, msg: String) -> Result<(), Self::Error> {
        tracing::trace!(target: "mino::wire", "→ {msg}");
        self.frames.send(msg).await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        SinkExt::<String>::close(&mut self.frames).await
    }
}

/// The receiving half: reads frames from the server's stdout, queues
/// notifications in arrival order and passes the rest to jsonrpsee.
pub struct Receiver<R> {
    frames: FramedRead<R, FrameCodec>,
    notifications: Queue,
}

impl<R: AsyncRead> Receiver<R> {
    pub fn new(reader: R, notifications: Queue) -> Self {
        Self { frames: FramedRead::new(reader, FrameCodec::new()), notifications }
    }
}

impl<R: AsyncRead + Unpin + Send + 'static> TransportReceiverT for Receiver<R> {
    type Error = io::Error;

    async fn receive(&mut self) -> Result<ReceivedMessage, Self::Error> {
        loop {
            let body = match self.frames.next().await {
                Some(Ok(Frame::Body(body))) => body,
                // The framer has skipped the bad bytes; the next frame is read as usual.
                Some(Ok(Frame::Malformed(why))) => {
                    tracing::warn!("mino-server wrote a malformed frame: {why}");
                    continue;
                }
                Some(Err(e)) => return Err(e),
                None => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "mino-server closed its output")),
            };
            let size = body.len();
            let body = String::from_utf8(body).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidData, "mino-server wrote a frame that is not UTF-8")
            })?;
            tracing::trace!(target: "mino::wire", "← {body}");
            match classify(&body) {
                Incoming::Notification(event) => {
                    // Waits while the app is behind: the server then waits for us.
                    if !self.notifications.push(event, size).await {
                        tracing::debug!("notification dropped: nobody listens any more");
                    }
                }
                Incoming::Skip => {}
                Incoming::Other => return Ok(ReceivedMessage::Text(body)),
            }
        }
    }
}
