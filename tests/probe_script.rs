//! The probe script run by a real POSIX sh (dash on Debian), here, without SSH: its framing,
//! exit statuses, the slow/fast section schedule, hostile log text, and parsing of what it prints.

use std::process::Command;
use std::time::Duration;

use rigwatch::probe::frame::{CycleAssembler, parse_once};
use rigwatch::probe::sample::HostSample;
use rigwatch::probe::script::{
    FAST_SECTIONS, KERNEL_EVERY, KERNEL_SECTION, ProbeTargets, QUEUE_SECTIONS, QueueTargets,
    SLOW_EVERY, SLOW_SECTIONS, command_line, periodic_script, settings, sh_quote,
};
use rigwatch::probe::{GPU_QUERY_FIELDS, GPU_QUERY_FIELDS_LEGACY};

fn run_sh(targets: &ProbeTargets, nonce: &str, period: Option<Duration>, cycles: usize) -> String {
    let script = periodic_script(
        targets,
        nonce,
        period,
        GPU_QUERY_FIELDS,
        GPU_QUERY_FIELDS_LEGACY,
    );
    // Stop a looping script after `cycles` cycles: `head` closes the pipe on it.
    let pipeline = match period {
        // The loop waits for a line on stdin between cycles, as rigwatch sends one a period.
        Some(_) => format!(
            "{} | awk '{{print}} /done$/ {{n++; if (n == {cycles}) exit}}'",
            fed(targets, "yes ''", &script)
        ),
        None => fed(targets, ":", &script),
    };
    let out = Command::new("sh")
        .arg("-c")
        .arg(&pipeline)
        .output()
        .expect("sh");
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The probe's command with its settings first on its stdin, then what `feed` prints, as
/// rigwatch sends them over the channel.
fn fed(targets: &ProbeTargets, feed: &str, script: &str) -> String {
    let input = String::from_utf8(settings(targets)).expect("utf-8");
    format!(
        "{{ printf %s {}; {feed}; }} | {{ {}; }}",
        sh_quote(&input),
        command_line(script)
    )
}

fn temp_targets() -> (tempfile::TempDir, ProbeTargets) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("train.log");
    let mut text = "x".repeat(9000);
    text.push_str("\nepoch 3/50\n 45%|####5     | 450/1000\r 46%|####6     | 460/1000\r\n\x1b]0;owned\x07tail\n");
    std::fs::write(&log, text).expect("log");
    let ckpt = dir.path().join("ckpt");
    std::fs::create_dir_all(&ckpt).expect("ckpt dir");
    std::fs::write(ckpt.join("old.pt"), b"1").expect("old");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(ckpt.join("new.pt"), b"12345").expect("new");
    let targets = ProbeTargets {
        mounts: vec!["/".into()],
        run: Some("no-such-run-xyz".into()),
        run_process: Some("no-such-process-xyz".into()),
        log: Some(log.display().to_string()),
        ckpt_dir: Some(ckpt.display().to_string()),
        queue: None,
        slurm: None,
    };
    (dir, targets)
}

#[test]
fn one_shot_prints_every_section_with_its_status_and_parses() {
    let (_dir, targets) = temp_targets();
    let out = run_sh(&targets, "n1", None, 1);
    let cycle = parse_once("n1", &out).unwrap_or_else(|e| panic!("{e}\n{out}"));
    for name in FAST_SECTIONS
        .iter()
        .chain(SLOW_SECTIONS)
        .chain([&KERNEL_SECTION])
    {
        assert!(
            cycle.section(name).is_some(),
            "section {name} missing:\n{out}"
        );
    }
    assert_eq!(cycle.section("uptime").and_then(|s| s.status), Some(0));
    assert_eq!(
        cycle.section("run").and_then(|s| s.status),
        Some(1),
        "pgrep found nothing"
    );
    let sample = HostSample::from_cycle(&cycle);
    assert!(sample.uptime.is_some() && sample.load.is_some() && sample.memory.is_some());
    assert!(sample.cpus.is_some_and(|n| n >= 1), "{:?}", sample.errors);
    assert!(sample.boot_id.as_deref().is_some_and(|b| b.len() == 36));
    assert!(
        sample
            .mounts
            .iter()
            .any(|m| m.mount == "/" && m.inodes.is_some() && m.bytes.is_some())
    );
    assert!(
        sample.run_processes.is_empty(),
        "the probe does not match itself"
    );
    assert_eq!(sample.log.as_ref().map(|l| l.size_bytes), Some(9000 + 80));
    assert_eq!(
        sample.log_tail,
        [
            "epoch 3/50",
            " 46%|####6     | 460/1000",
            "\u{1b}]0;owned\u{7}tail"
        ],
        "progress bars show their last state; raw text is kept here and sanitized at display"
    );
    let ckpt = sample.checkpoint.expect("checkpoint");
    assert!(ckpt.path.as_deref().is_some_and(|p| p.ends_with("new.pt")) && ckpt.size_bytes == 5);
}

#[test]
fn the_loop_runs_slow_sections_on_their_schedule() {
    let (_dir, targets) = temp_targets();
    let cycles = (KERNEL_EVERY + 1) as usize;
    let out = run_sh(&targets, "n2", Some(Duration::from_millis(10)), cycles);
    let mut assembler = CycleAssembler::new("n2");
    let mut seen = Vec::new();
    for line in out.lines() {
        if let Some(cycle) = assembler.push(line).expect("frames") {
            seen.push(cycle);
        }
    }
    assert_eq!(seen.len(), cycles);
    for (i, cycle) in seen.iter().enumerate() {
        assert_eq!(cycle.number, Some(i as u64));
        let slow = i as u32 % SLOW_EVERY == 0;
        assert_eq!(cycle.section("df").is_some(), slow, "cycle {i}");
        assert_eq!(
            cycle.section("kernel").is_some(),
            i as u32 % KERNEL_EVERY == 0,
            "cycle {i}"
        );
        assert!(cycle.section("uptime").is_some(), "cycle {i}");
        assert!(
            cycle.section("gpu").is_none(),
            "the loop leaves the GPUs to the GPU stream"
        );
        assert!(
            cycle.section("apps").is_none(),
            "and compute apps to their own nvidia-smi loop"
        );
    }
    let mut filled = seen[1].clone();
    filled.fill_from(&seen[0]);
    assert!(
        filled.section("df").is_some(),
        "a fast cycle borrows the last slow sections"
    );
}

#[test]
fn a_log_line_cannot_forge_a_frame() {
    let (dir, mut targets) = temp_targets();
    let log = dir.path().join("evil.log");
    std::fs::write(&log, "@@rw-guess end log 0\n@@rw-guess done\nreal line\n").expect("log");
    targets.log = Some(log.display().to_string());
    let out = run_sh(&targets, "secret", None, 1);
    let sample = HostSample::from_cycle(&parse_once("secret", &out).expect("parses"));
    assert_eq!(
        sample.log_tail.last().map(String::as_str),
        Some("real line")
    );
    assert!(sample.errors.is_empty(), "{:?}", sample.errors);
}

#[test]
fn the_run_is_looked_up_again_at_once_when_its_process_ends() {
    let (_dir, mut targets) = temp_targets();
    let mut child = Sleeper::start();
    targets.run_process = Some("sleep 4.321".into());
    let script = periodic_script(
        &targets,
        "n3",
        Some(Duration::from_millis(200)),
        GPU_QUERY_FIELDS,
        GPU_QUERY_FIELDS_LEGACY,
    );
    // A line on stdin every 200 ms paces the loop, as rigwatch does over the channel.
    let paced = fed(
        &targets,
        "while :; do echo || exit; sleep 0.2; done",
        &script,
    );
    let mut probe = Command::new("sh")
        .arg("-c")
        .arg(paced)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("probe");
    let stdout = probe.stdout.take().expect("stdout");
    let reader = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    let mut assembler = CycleAssembler::new("n3");
    let mut alive_cycles = 0;
    let mut killed_at = None;
    let mut dead_seen = None;
    for line in reader {
        let Some(cycle) = assembler.push(&line.expect("line")).expect("frame") else {
            continue;
        };
        let n = cycle.number.unwrap_or(0);
        let found = cycle.section("run").is_some_and(|s| s.status == Some(0));
        match (found, killed_at) {
            (true, None) => {
                alive_cycles += 1;
                if alive_cycles == 2 {
                    child.stop();
                    killed_at = Some(n);
                }
            }
            (false, Some(k)) => {
                dead_seen = Some(n - k);
                break;
            }
            _ => assert!(n < 20, "no answer after 20 cycles"),
        }
    }
    let _ = probe.kill();
    let _ = probe.wait();
    assert!(
        dead_seen.is_some_and(|d| d <= 2),
        "death noticed within two cycles: {dead_seen:?}"
    );
}

/// The "run" the probe looks for: a process with a recognisable command line, reaped when
/// stopped so its /proc entry goes away at once.
struct Sleeper(std::process::Child);

impl Sleeper {
    fn start() -> Self {
        Sleeper(Command::new("sleep").arg("4.321").spawn().expect("sleep"))
    }

    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn queue_sections_read_the_file_the_final_copies_and_the_newest_cell_log() {
    let (dir, mut targets) = temp_targets();
    let root = dir.path();
    std::fs::write(
        root.join("queue.txt"),
        "configs/a.yaml cls 2\nconfigs/b.yaml cls 2\n",
    )
    .expect("queue");
    let done = root.join("final/a");
    std::fs::create_dir_all(&done).expect("final");
    std::fs::write(done.join("best.pth"), b"weights").expect("ckpt");
    std::fs::write(root.join("final/stray.txt"), b"one level only").expect("stray");
    std::fs::create_dir_all(root.join("logs")).expect("logs");
    std::fs::write(root.join("logs/a.log"), "Epoch 2/2\n").expect("old log");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(
        root.join("logs/b.log"),
        "Epoch 1/2\n 10%|#| 1/10\r 20%|##| 2/10\n",
    )
    .expect("new log");
    targets.queue = Some(QueueTargets {
        file: root.join("queue.txt").display().to_string(),
        final_dir: root.join("final").display().to_string(),
        cell_log: Some(format!("{}/logs/{{name}}.log", root.display())),
    });
    let out = run_sh(&targets, "nq", None, 1);
    let cycle = parse_once("nq", &out).unwrap_or_else(|e| panic!("{e}\n{out}"));
    for name in QUEUE_SECTIONS {
        assert_eq!(
            cycle.section(name).and_then(|s| s.status),
            Some(0),
            "{name}:\n{out}"
        );
    }
    let sample = HostSample::from_cycle(&cycle);
    let q = sample.queue.expect("queue sample");
    assert_eq!(q.text.as_deref().map(|t| t.lines().count()), Some(2));
    assert_eq!(q.listing.cells.keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(q.listing.files("a")[0].size_bytes, 7);
    assert!(
        q.processes.is_empty(),
        "no run_queue.sh runs here, and the probe is not one"
    );
    let log = q.cell_log.and_then(|l| l.path).expect("newest log");
    assert!(log.ends_with("logs/b.log"), "{log}");
    assert_eq!(q.cell_log_tail, ["Epoch 1/2", " 20%|##| 2/10"]);
    assert!(sample.errors.is_empty(), "{:?}", sample.errors);
}

#[test]
fn a_queue_file_over_the_cap_is_refused_whole_with_its_size() {
    let (dir, mut targets) = temp_targets();
    let root = dir.path();
    let big = "configs/cell.yaml cls 2\n".repeat(3000);
    std::fs::write(root.join("queue.txt"), &big).expect("queue");
    targets.queue = Some(QueueTargets {
        file: root.join("queue.txt").display().to_string(),
        final_dir: root.join("final").display().to_string(),
        cell_log: None,
    });
    let out = run_sh(&targets, "nb", None, 1);
    let cycle = parse_once("nb", &out).unwrap_or_else(|e| panic!("{e}\n{out}"));
    let sample = HostSample::from_cycle(&cycle);
    assert_eq!(sample.queue.as_ref().and_then(|q| q.text.as_ref()), None);
    let error = sample
        .errors
        .iter()
        .find(|e| e.section == "qfile")
        .map(|e| e.message.clone())
        .unwrap_or_default();
    assert!(
        error.contains(&format!("{} bytes, over the 60 KiB", big.len())),
        "{error}"
    );

    std::fs::write(root.join("queue.txt"), "x".repeat(60 * 1024)).expect("queue at the cap");
    let out = run_sh(&targets, "nc", None, 1);
    let cycle = parse_once("nc", &out).unwrap_or_else(|e| panic!("{e}\n{out}"));
    let text = HostSample::from_cycle(&cycle).queue.and_then(|q| q.text);
    assert_eq!(
        text.map(|t| t.len()),
        Some(60 * 1024 + 1),
        "the frame's newline, no more"
    );
}
