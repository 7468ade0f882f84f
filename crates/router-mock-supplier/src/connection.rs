//! One accepted TCP connection: the socket wrapper hyper drives, and the
//! control a script uses to reset the connection instead of answering.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// Lets a request handler ask its connection's task to reset the socket.
#[derive(Debug, Default)]
pub(crate) struct ConnectionControl {
    reset: AtomicBool,
    notify: Notify,
}

impl ConnectionControl {
    /// Asks for the connection to be dropped with a TCP reset.
    pub(crate) fn request_reset(&self) {
        self.reset.store(true, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// Completes once a reset was requested (even if requested earlier).
    pub(crate) async fn reset_requested(&self) {
        self.notify.notified().await;
    }

    fn should_reset(&self) -> bool {
        self.reset.load(Ordering::SeqCst)
    }
}

/// The socket given to hyper. It delegates all I/O to the `TcpStream`; its
/// only addition is on drop: after [`ConnectionControl::request_reset`] it
/// sets `SO_LINGER` to zero, so closing sends `RST` rather than `FIN` and the
/// client sees "connection reset" rather than an orderly end of stream.
#[derive(Debug)]
pub(crate) struct ConnectionIo {
    stream: TcpStream,
    control: Arc<ConnectionControl>,
}

impl ConnectionIo {
    pub(crate) fn new(stream: TcpStream, control: Arc<ConnectionControl>) -> ConnectionIo {
        ConnectionIo { stream, control }
    }
}

impl Drop for ConnectionIo {
    fn drop(&mut self) {
        if self.control.should_reset() {
            // Should this fail, the close is an orderly FIN; the client still
            // gets no response, which is what the script asks for.
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for ConnectionIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ConnectionIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
