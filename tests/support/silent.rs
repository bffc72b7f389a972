//! A peer that accepts TCP and never speaks SSH: a box whose sshd hangs before its banner, or a
//! port some other service holds open. Connections are held open, silent, until it is dropped.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest a silent peer lives, whatever the test does: bounded, never a stuck thread.
const LIFETIME: Duration = Duration::from_secs(120);

pub struct SilentPeer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SilentPeer {
    pub fn start() -> SilentPeer {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a silent peer");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut held: Vec<TcpStream> = Vec::new();
            while !stopped.load(Ordering::Relaxed) && started.elapsed() < LIFETIME {
                match listener.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        SilentPeer {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for SilentPeer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The first figure in seconds a message states ("after 3.0s", "within 2.9s"; "850ms" too).
pub fn stated_secs(message: &str) -> Option<f64> {
    message
        .split(|c: char| c.is_whitespace() || c == '(' || c == ',')
        .find_map(|word| {
            let word = word.trim_end_matches([')', ':', ';', '.']);
            if let Some(ms) = word.strip_suffix("ms") {
                return ms.parse::<f64>().ok().map(|ms| ms / 1000.0);
            }
            word.strip_suffix('s')?.parse().ok()
        })
}
