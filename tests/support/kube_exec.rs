//! `kubectl exec` against the fake API server: the WebSocket upgrade kubectl 1.30+ asks for
//! (subprotocol `v5.channel.k8s.io`), then binary frames whose first byte is the channel (1
//! stdout, 2 stderr, 3 the final Status), then a close. A Status `Success` makes kubectl exit
//! 0; `Failure` / `NonZeroExitCode` with an `ExitCode` cause makes it exit with that code.
//! An answer with `run` set runs the command kubectl sent on this machine, for real: its
//! stdout streamed back on channel 1 as it comes, its stderr on 2, its exit code in the Status
//! (a pod whose files are a temporary folder here).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use serde_json::json;
use sha1::{Digest, Sha1};

/// What one pod's exec answers: stdout, stderr, exit code; or, with `run`, whatever the
/// command kubectl sent answers when run here.
#[derive(Debug, Clone, Default)]
pub struct ExecAnswer {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
    pub run: bool,
    /// With `run`: the next command whose text holds the first, and the bytes its stdout loses
    /// at its end while its exit still says success, as the real kubectl can
    /// (kubernetes/kubernetes#124571); used once.
    pub cut: Option<(&'static str, std::sync::Arc<std::sync::atomic::AtomicUsize>)>,
}

impl ExecAnswer {
    /// Runs each exec'd command here, for real.
    pub fn run() -> ExecAnswer {
        ExecAnswer {
            run: true,
            ..ExecAnswer::default()
        }
    }
}

/// The command of an exec request's query (`command=sh&command=-c&command=...`).
fn command_of(path: &str) -> Vec<String> {
    let query = path.split_once('?').map_or("", |(_, q)| q);
    query
        .split('&')
        .filter_map(|kv| kv.strip_prefix("command="))
        .map(super::kube::percent_decoded)
        .collect()
}

/// Runs the command, streaming its stdout as frames while it runs, less its last `cut` bytes
/// (held back until it ends, then dropped); its stderr and exit code.
fn run_here(conn: &mut TcpStream, argv: &[String], cut: usize) -> (Vec<u8>, i32) {
    use std::process::{Command, Stdio};
    let Some((program, args)) = argv.split_first() else {
        return (b"exec: no command\n".to_vec(), 127);
    };
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return (format!("exec: {e}\n").into_bytes(), 127),
    };
    let mut err = child.stderr.take().expect("stderr");
    let errors = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        bytes
    });
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 32 * 1024];
    let mut held = Vec::new();
    loop {
        match out.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                held.extend_from_slice(&buf[..n]);
                let send = held.len().saturating_sub(cut);
                if send == 0 {
                    continue;
                }
                let frame = channel(1, &held[..send]);
                held.drain(..send);
                if conn.write_all(&frame).is_err() {
                    // kubectl hung up (rigwatch stopped reading): end the command.
                    let _ = child.kill();
                    break;
                }
            }
        }
    }
    let code = child.wait().map_or(127, |s| s.code().unwrap_or(137));
    (errors.join().unwrap_or_default(), code)
}

/// A server frame (servers never mask): FIN + opcode, length, payload.
fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => out.push(n as u8),
        n if n <= 0xffff => {
            out.push(126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(payload);
    out
}

fn channel(number: u8, data: &[u8]) -> Vec<u8> {
    let mut payload = vec![number];
    payload.extend_from_slice(data);
    frame(0x2, &payload)
}

/// Answers an upgrade request with `answer`, then closes the way a real server does.
pub fn serve_exec(
    mut conn: TcpStream,
    mut reader: BufReader<TcpStream>,
    key: &str,
    path: &str,
    answer: &ExecAnswer,
) {
    let mut hash = Sha1::new();
    hash.update(format!("{key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11").as_bytes());
    let accept = data_encoding::BASE64.encode(&hash.finalize());
    let _ = write!(
        conn,
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n"
    );
    let mut out = Vec::new();
    let (stderr, code) = if answer.run {
        let argv = command_of(path);
        let cut = match &answer.cut {
            Some((text, cut)) if argv.iter().any(|a| a.contains(text)) => cut.swap(0, SeqCst),
            _ => 0,
        };
        run_here(&mut conn, &argv, cut)
    } else {
        if !answer.stdout.is_empty() {
            out.extend(channel(1, answer.stdout.as_bytes()));
        }
        (answer.stderr.clone().into_bytes(), answer.code)
    };
    if !stderr.is_empty() {
        out.extend(channel(2, &stderr));
    }
    let answer = ExecAnswer {
        code,
        ..ExecAnswer::default()
    };
    let status = if answer.code == 0 {
        json!({"metadata": {}, "status": "Success"})
    } else {
        json!({"metadata": {}, "status": "Failure",
               "message": format!("command terminated with non-zero exit code: {}", answer.code),
               "reason": "NonZeroExitCode",
               "details": {"causes": [{"reason": "ExitCode", "message": answer.code.to_string()}]}})
    };
    out.extend(channel(3, status.to_string().as_bytes()));
    // Close: status 1000, normal.
    out.extend(frame(0x8, &1000u16.to_be_bytes()));
    let _ = conn.write_all(&out);
    // Read what kubectl sends (its stdin close, its close reply) until it hangs up, so closing
    // here never resets the connection under data it has not read yet.
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut sink = [0u8; 4096];
    let _ = reader.fill_buf();
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
}
