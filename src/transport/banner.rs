//! Records the server's identification line (`SSH-2.0-OpenSSH_9.2p1 ...`) as it passes by,
//! since russh keeps it private and `rigwatch check` reports it.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Servers may send a few lines before the version line (RFC 4253 §4.2); stop looking after this.
const MAX_PREAMBLE: usize = 8 * 1024;

pub trait Duplex: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Duplex for T {}

pub struct BannerTap {
    inner: Box<dyn Duplex>,
    pending: Vec<u8>,
    scanned: usize,
    done: bool,
    banner: Arc<Mutex<Option<String>>>,
}

impl BannerTap {
    pub fn new(inner: Box<dyn Duplex>) -> (Self, Arc<Mutex<Option<String>>>) {
        let banner = Arc::new(Mutex::new(None));
        let tap = BannerTap {
            inner,
            pending: Vec::new(),
            scanned: 0,
            done: false,
            banner: Arc::clone(&banner),
        };
        (tap, banner)
    }

    fn observe(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.scanned += 1;
            if b != b'\n' {
                self.pending.push(b);
                continue;
            }
            let line = String::from_utf8_lossy(&self.pending)
                .trim_end()
                .to_string();
            self.pending.clear();
            if line.starts_with("SSH-") {
                if let Ok(mut slot) = self.banner.lock() {
                    *slot = Some(crate::sanitize::line(&line, 255));
                }
                self.done = true;
                return;
            }
        }
        if self.scanned > MAX_PREAMBLE {
            self.done = true;
        }
    }
}

impl AsyncRead for BannerTap {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if !self.done && matches!(result, Poll::Ready(Ok(()))) {
            let fresh = buf.filled()[before..].to_vec();
            self.observe(&fresh);
        }
        result
    }
}

impl AsyncWrite for BannerTap {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn records_the_version_line_after_a_preamble() {
        let (mut server, client) = tokio::io::duplex(64);
        let (mut tap, banner) = BannerTap::new(Box::new(client));
        server
            .write_all(b"hello\r\nSSH-2.0-OpenSSH_9.2p1 Debian\x1b[31m\r\nrest")
            .await
            .expect("write");
        drop(server);
        let mut all = Vec::new();
        tap.read_to_end(&mut all).await.expect("read");
        assert!(all.ends_with(b"rest"), "bytes pass through unchanged");
        let seen = banner.lock().expect("lock").clone();
        assert_eq!(seen.as_deref(), Some("SSH-2.0-OpenSSH_9.2p1 Debian"));
    }
}
