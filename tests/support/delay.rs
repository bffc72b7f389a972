//! A TCP proxy on loopback that delays each direction by a fixed time, standing in for a box in
//! another region (netem is missing on these machines). Each chunk read from one side is written
//! to the other no earlier than `one_way` after it arrived, so a request and its answer take one
//! round trip of 2 × `one_way` on top of loopback's. Bounded: at most `IN_FLIGHT` bytes wait per
//! direction (counted in bytes, not chunks: sshd writes small segments, and a count of chunks
//! had capped a 100 ms link at ~90 MiB/s, below what the link carries), and a reader that gets
//! ahead waits, as a real link's buffers fill; it listens on 127.0.0.1 only, and its runtime
//! ends when the proxy is dropped. `cut` drops every open connection mid-stream.
//! `start_limited` also caps each direction's rate, as a far link slower than the box's disk:
//! the proxy reads no faster than the link carries, so what the box sends beyond that waits at
//! the box (in its socket and its sshd), as behind a real bottleneck.
//!
//! `rounds` counts the round trips a conversation waited for, whatever the delay and the
//! machine's speed: each chunk the client sends is one round trip deeper than the deepest
//! answer the proxy had handed it by then, and an answer is as deep as the last request handed
//! to the server before it was sent. Requests sent together (pipelined) are as deep as each
//! other; a request that had to wait for an answer is one deeper. The deepest chunk of a
//! connection is its round trips in sequence, the count a far link multiplies by its delay.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
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
    /// The deepest chunk of any connection, in round trips (the module's comment).
    deepest: Arc<AtomicU32>,
    /// Connections accepted so far.
    accepted: Arc<AtomicU32>,
    /// The newest connection's depths.
    newest: Arc<std::sync::Mutex<Arc<Depths>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How deep a connection's conversation has gone, each way: the depth of the last chunk handed
/// to the client, and to the server.
#[derive(Default)]
struct Depths {
    to_client: AtomicU32,
    to_server: AtomicU32,
    /// Bytes handed to the client, by their depth.
    client_bytes: std::sync::Mutex<std::collections::BTreeMap<u32, u64>>,
}

impl DelayProxy {
    /// Listens on a free loopback port and forwards every connection to 127.0.0.1:`target`.
    pub fn start(target: u16, one_way: Duration) -> DelayProxy {
        DelayProxy::start_limited(target, one_way, None)
    }

    /// As `start`, each direction carrying at most `rate` bytes a second where one is given.
    pub fn start_limited(target: u16, one_way: Duration, rate: Option<u64>) -> DelayProxy {
        let std_listener =
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind the proxy");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let port = std_listener.local_addr().expect("addr").port();
        let (stop, stopped) = oneshot::channel();
        let (cuts, cut_rx) = watch::channel(0u32);
        let deepest = Arc::new(AtomicU32::new(0));
        let max = deepest.clone();
        let accepted = Arc::new(AtomicU32::new(0));
        let count = accepted.clone();
        let newest = Arc::new(std::sync::Mutex::new(Arc::new(Depths::default())));
        let latest = newest.clone();
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
                        count.fetch_add(1, Ordering::SeqCst);
                        let depths = Arc::new(Depths::default());
                        if let Ok(mut newest) = latest.lock() {
                            *newest = depths.clone();
                        }
                        let mut cut = cut_rx.clone();
                        cut.mark_unchanged();
                        let max = max.clone();
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = relay(client, target, (one_way, rate), (depths, max)) => {}
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
            deepest,
            accepted,
            newest,
            thread: Some(thread),
        }
    }

    /// The round trips in sequence of the deepest conversation so far (the module's comment).
    pub fn rounds(&self) -> u32 {
        self.deepest.load(Ordering::SeqCst)
    }

    /// The round trips in sequence of the newest connection so far (one tool's, where each
    /// tool connects anew).
    pub fn newest_rounds(&self) -> u32 {
        self.newest.lock().map_or(0, |d| {
            let down = d.to_client.load(Ordering::SeqCst);
            down.max(d.to_server.load(Ordering::SeqCst))
        })
    }

    /// The bytes the newest connection's client was handed so far, by their depth in round
    /// trips (the module's comment): how much came how many round trips into the conversation.
    pub fn newest_bytes_by_depth(&self) -> std::collections::BTreeMap<u32, u64> {
        self.newest.lock().map_or_else(
            |_| Default::default(),
            |d| d.client_bytes.lock().map(|b| b.clone()).unwrap_or_default(),
        )
    }

    /// How many connections the proxy has taken (each one an SSH handshake and login).
    pub fn connections(&self) -> u32 {
        self.accepted.load(Ordering::SeqCst)
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

async fn relay(
    client: TcpStream,
    target: u16,
    (one_way, rate): (Duration, Option<u64>),
    (depths, deepest): (Arc<Depths>, Arc<AtomicU32>),
) {
    let Ok(server) = TcpStream::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, target))).await
    else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let up = Way {
        one_way,
        rate,
        depths: depths.clone(),
        deepest: deepest.clone(),
        from_client: true,
    };
    let down = Way {
        one_way,
        rate,
        depths,
        deepest,
        from_client: false,
    };
    tokio::join!(pipe(cr, sw, up), pipe(sr, cw, down));
}

/// One direction of a connection: its delay, and where its chunks' depths are kept.
struct Way {
    one_way: Duration,
    /// Bytes a second this direction carries at most (none: as fast as loopback).
    rate: Option<u64>,
    depths: Arc<Depths>,
    deepest: Arc<AtomicU32>,
    from_client: bool,
}

impl Way {
    /// A chunk just read: as deep as the last one handed to its sender, a client's one deeper.
    fn depth_of_read(&self) -> u32 {
        if self.from_client {
            self.depths.to_client.load(Ordering::SeqCst) + 1
        } else {
            self.depths.to_server.load(Ordering::SeqCst)
        }
    }

    /// A chunk of `len` bytes and `depth` handed to the other side.
    fn delivered(&self, depth: u32, len: usize) {
        let to = match self.from_client {
            true => &self.depths.to_server,
            false => {
                if let Ok(mut bytes) = self.depths.client_bytes.lock() {
                    *bytes.entry(depth).or_default() += len as u64;
                }
                &self.depths.to_client
            }
        };
        to.fetch_max(depth, Ordering::SeqCst);
        self.deepest.fetch_max(depth, Ordering::SeqCst);
    }
}

/// Reads from `from` as data comes, and writes each chunk to `to` once its delay has passed.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    way: Way,
) {
    let one_way = way.one_way;
    let way = &way;
    let room = Arc::new(Semaphore::new(IN_FLIGHT));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let reader = async move {
        let mut buf = vec![0u8; CHUNK];
        // When the link is next free: a chunk read takes its length at the link's rate.
        let mut free = Instant::now();
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Some(rate) = way.rate {
                        free = free.max(Instant::now())
                            + Duration::from_secs_f64(n as f64 / rate as f64);
                        tokio::time::sleep_until(free).await;
                    }
                    // n <= CHUNK, far below the semaphore's limit, so the cast is exact.
                    let Ok(held) = room.clone().acquire_many_owned(n as u32).await else {
                        break;
                    };
                    let due = Instant::now() + one_way;
                    let depth = way.depth_of_read();
                    if tx.send((due, depth, buf[..n].to_vec(), held)).is_err() {
                        break;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((due, depth, bytes, held)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            // Counted as handed over before the write, so an answer to it can never be read
            // before its depth is known.
            way.delivered(depth, bytes.len());
            if to.write_all(&bytes).await.is_err() {
                break;
            }
            drop(held);
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
