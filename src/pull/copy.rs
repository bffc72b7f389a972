//! One remote file copied into its `.part` over SFTP, with many reads in flight so a long link
//! or a huge file is not limited to one round trip per chunk; fsynced, then renamed into place.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use futures::stream::FuturesOrdered;
use russh_sftp::client::RawSftpSession;
use russh_sftp::client::error::Error as SftpError;
use russh_sftp::protocol::{FileAttributes, OpenFlags, StatusCode};
use tokio::io::{AsyncSeekExt, AsyncWriteExt};

use super::PullError;
use super::local::{part_path, source_path, source_tag};
use super::remote::RemoteFile;

/// Below OpenSSH sftp-server's 255 KiB read cap and russh-sftp's 256 KiB packet limit.
const CHUNK: u64 = 128 * 1024;
/// Reads in flight per file: 4 MiB, enough to fill a fast link's window.
const DEPTH: usize = 32;

/// Copies `remote` from byte `from` into `local`'s `.part`, then renames it to `local`.
/// Returns the bytes sent over the link.
pub async fn download(
    sftp: &RawSftpSession,
    remote: &RemoteFile,
    local: &Path,
    from: u64,
    progress: &AtomicU64,
) -> Result<u64, PullError> {
    let part = part_path(local);
    let io = |source| PullError::Local {
        path: part.clone(),
        source,
    };
    if let Some(dir) = local.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|source| PullError::Local {
                path: dir.to_path_buf(),
                source,
            })?;
    }
    tokio::fs::write(source_path(local), source_tag(remote))
        .await
        .map_err(io)?;
    let handle = sftp
        .open(
            remote.path.as_str(),
            OpenFlags::READ,
            FileAttributes::default(),
        )
        .await
        .map_err(|e| remote_error(remote, e))?
        .handle;
    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&part)
        .await
        .map_err(io)?;
    file.set_len(from).await.map_err(io)?;
    file.seek(std::io::SeekFrom::Start(from))
        .await
        .map_err(io)?;

    let mut sent = 0u64;
    let mut next = from;
    // Requests go out when first polled: FuturesOrdered polls them all, hands them back in order.
    let mut inflight = FuturesOrdered::new();
    let result: Result<(), PullError> = async {
        loop {
            while inflight.len() < DEPTH && next < remote.size {
                let len = CHUNK.min(remote.size - next);
                let offset = next;
                let read = sftp.read(handle.as_str(), offset, len as u32);
                inflight.push_back(async move { (offset, len, read.await) });
                next += len;
            }
            let Some((offset, len, read)) = inflight.next().await else {
                break;
            };
            let mut data = read.map_err(|e| remote_error(remote, e))?.data;
            // A server may return fewer bytes than asked; fetch the rest of this chunk before
            // writing on, so the file is always written in order.
            while (data.len() as u64) < len {
                let at = offset + data.len() as u64;
                let want = (len - data.len() as u64) as u32;
                match sftp.read(handle.as_str(), at, want).await {
                    Ok(more) if !more.data.is_empty() => data.extend_from_slice(&more.data),
                    Ok(_) | Err(SftpError::Status(_)) => {
                        return Err(PullError::Shrank {
                            path: remote.path.clone(),
                            expected: remote.size,
                            got: at,
                        });
                    }
                    Err(e) => return Err(remote_error(remote, e)),
                }
            }
            file.write_all(&data)
                .await
                .map_err(|source| disk(&part, source))?;
            sent += data.len() as u64;
            progress.fetch_add(data.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }
    .await;
    let _ = sftp.close(handle.as_str()).await;
    result?;
    file.flush().await.map_err(|source| disk(&part, source))?;
    file.sync_all()
        .await
        .map_err(|source| disk(&part, source))?;
    drop(file);
    tokio::fs::rename(&part, local)
        .await
        .map_err(|source| PullError::Local {
            path: local.to_path_buf(),
            source,
        })?;
    let _ = tokio::fs::remove_file(source_path(local)).await;
    Ok(sent)
}

fn disk(path: &Path, source: std::io::Error) -> PullError {
    if source.kind() == std::io::ErrorKind::StorageFull {
        PullError::DiskFull {
            path: path.to_path_buf(),
        }
    } else {
        PullError::Local {
            path: path.to_path_buf(),
            source,
        }
    }
}

fn remote_error(remote: &RemoteFile, e: SftpError) -> PullError {
    match e {
        SftpError::Status(s) if s.status_code == StatusCode::NoSuchFile => {
            PullError::Vanished(remote.path.clone())
        }
        SftpError::Status(s) if s.status_code == StatusCode::Eof => PullError::Shrank {
            path: remote.path.clone(),
            expected: remote.size,
            got: 0,
        },
        other => PullError::Remote {
            path: remote.path.clone(),
            reason: other.to_string(),
        },
    }
}
