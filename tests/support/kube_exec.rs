//! `kubectl exec` against the fake API server: the WebSocket upgrade kubectl 1.30+ asks for
//! (subprotocol `v5.channel.k8s.io`), then binary frames whose first byte is the channel (1
//! stdout, 2 stderr, 3 the final Status), then a close. A Status `Success` makes kubectl exit
//! 0; `Failure` / `NonZeroExitCode` with an `ExitCode` cause makes it exit with that code.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::json;
use sha1::{Digest, Sha1};

/// What one pod's exec answers: stdout, stderr, exit code.
#[derive(Debug, Clone, Default)]
pub struct ExecAnswer {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
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
    if !answer.stdout.is_empty() {
        out.extend(channel(1, answer.stdout.as_bytes()));
    }
    if !answer.stderr.is_empty() {
        out.extend(channel(2, answer.stderr.as_bytes()));
    }
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
