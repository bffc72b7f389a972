//! A TCP proxy on loopback that delays each direction by a fixed time, standing in for a box in
//! another region (netem is missing on these machines). Each chunk read from one side is written
//! to the other no earlier than `one_way` after it arrived, so a request and its answer take one
//! round trip of 2 × `one_way` on top of loopback's. Bounded: at most `IN_FLIGHT` bytes wait per
//! direction (counted in bytes, not chunks: sshd writes small segments, and a count of chunks
//! had capped a 100 ms link at ~90 MiB/s, below what the link carries), and a reader that gets
//! ahead waits, as a real link's buffers fill; it listens on 127.0.0.1 only, and its runtime
//! ends when the proxy is dropped. `cut` drops every open connection mid-stream.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tokio::time::Instant;

/// Bytes on the way per direction: a 100 ms link at ~1.3 GB/s.
const IN_FLIGHT: usize = 64 << 20;
const CHUNK: usize = 64 * 1024;

pub struct DelayProxy {
    pub port: u16,
    stop: Option<oneshot::Sender<()>>,
    /// Bumped by `cut`: every connection open then is dropped (new ones are still relayed).
    cuts: watch::Sender<u32>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DelayProxy {
    /// Listens on a free loopback port and forwards every connection to 127.0.0.1:`target`.
    pub fn start(target: u16, one_way: Duration) -> DelayProxy {
        let std_listener =
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let port = std_listener.local_addr().expect("addr").port();
        let (stop, stopped) = oneshot::channel();
        let (cuts, cut_rx) = watch::channel(0u32);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("proxy runtime");
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).expect("listener");
                let accept = async {
                    loop {
                        let Ok((client, _)) = listener.accept().await else {
                            continue;
                        };
                        let mut cut = cut_rx.clone();
                        cut.mark_unchanged();
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = relay(client, target, one_way) => {}
                                _ = cut.changed() => {}
                            }
                        });
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stopped => {}
                }
            });
        });
        DelayProxy {
            port,
            stop: Some(stop),
            cuts,
            thread: Some(thread),
        }
    }

    /// Cuts every connection through the proxy mid-stream (both sockets closed, whatever is in
    /// flight lost), as a NAT or a flaky uplink would; later connections are relayed as before.
    pub fn cut(&self) {
        self.cuts.send_modify(|n| *n += 1);
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn relay(client: TcpStream, target: u16, one_way: Duration) {
    let Ok(server) = TcpStream::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, target))).await
    else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    tokio::join!(pipe(cr, sw, one_way), pipe(sr, cw, one_way));
}

/// Reads from `from` as data comes, and writes each chunk to `to` once its delay has passed.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    one_way: Duration,
) {
    let room = Arc::new(Semaphore::new(IN_FLIGHT));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let reader = async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    // n <= CHUNK, far below the semaphore's limit, so the cast is exact.
                    let Ok(held) = room.clone().acquire_many_owned(n as u32).await else {
                        break;
                    };
                    let due = Instant::now() + one_way;
                    if tx.send((due, buf[..n].to_vec(), held)).is_err() {
                        break;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((due, bytes, held)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
            drop(held);
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
