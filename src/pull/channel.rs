//! The pull's SFTP channel: the connection's kept one (`Session::sftp`), asked for while the
//! box lists where it is not open yet (four round trips to open, which a 100 ms link made half
//! a second of every pull), and awaited only when a file first needs it.

use std::sync::Arc;

use crate::transport::{SftpChannel, TransportError};

/// An SFTP channel being opened (or opened), awaited only if some file needs it.
pub type Opening<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Arc<SftpChannel>, TransportError>> + Send + 'a>,
>;

/// The pull's SFTP channel, opened once for all its chunks and awaited only when a file first
/// needs it: None where the box has none (then files go over exec channels).
pub struct LazySftp<'a> {
    opening: std::sync::Mutex<Option<Opening<'a>>>,
    opened: tokio::sync::OnceCell<Option<Arc<SftpChannel>>>,
}

impl<'a> LazySftp<'a> {
    pub fn new(opening: Opening<'a>) -> LazySftp<'a> {
        LazySftp {
            opening: std::sync::Mutex::new(Some(opening)),
            opened: tokio::sync::OnceCell::new(),
        }
    }

    pub async fn get(&self) -> Option<&SftpChannel> {
        let open = || async {
            let opening = self.opening.lock().ok().and_then(|mut o| o.take());
            match opening {
                Some(opening) => opening.await.ok(),
                None => None,
            }
        };
        self.opened.get_or_init(open).await.as_deref()
    }
}
