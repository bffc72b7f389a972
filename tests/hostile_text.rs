//! Hostile text, as a box that wants to own the user's terminal would print it: OSC 52 (the
//! clipboard), OSC 0 (the title), OSC 8 (links), DCS, C1 bytes raw and as UTF-8, the bidi
//! override U+202E, NUL and invalid UTF-8, in every string rigwatch reads off a real box (GPU
//! name, process names, mount path, log tail, tmux session names, the run's process lines, the
//! kernel log). None of it reaches `status`, `status --json`, `watch` or any dashboard screen raw.

mod support;

use std::path::{Path, PathBuf};

use rigwatch::fleet::memory::FleetMemory;
use rigwatch::ui::app::{App, View};
use rigwatch::ui::theme::Theme;
use rigwatch::ui::{Ctx, buffer_text, render_buffer};
use support::{Lab, Sshd};

/// Every kind of escape at once; no comma (CSV), no newline (one line), no slash (one name).
const HOSTILE: &[u8] =
    b"EVIL\x1b]52;c;aGVsbG8=\x07\x1b]0;owned\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\
\x1bP1$qm\x1b\\\xc2\x9b31m\x9b2J\xe2\x80\xae\xe2\x81\xa6\x00\xff\xfeEND";

/// What must never reach a terminal: ESC, BEL, NUL, C1 controls, bidi overrides and isolates.
fn assert_clean(place: &str, bytes: &[u8]) {
    let text = std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{place}: not UTF-8 ({e})"));
    let bad = text.char_indices().find(|(_, c)| {
        matches!(c, '\u{1b}' | '\u{7}' | '\0' | '\u{80}'..='\u{9f}')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    });
    if let Some((at, c)) = bad {
        let from = text[..at]
            .char_indices()
            .rev()
            .nth(60)
            .map_or(0, |(i, _)| i);
        panic!("{place}: raw {c:?} at byte {at}: …{:?}", &text[from..at]);
    }
}

/// A file of `lines`, each `prefix` + the hostile bytes + `suffix`.
fn hostile_file(dir: &Path, name: &str, lines: &[(&str, &str)]) -> PathBuf {
    let mut bytes = Vec::new();
    for (prefix, suffix) in lines {
        bytes.extend_from_slice(prefix.as_bytes());
        bytes.extend_from_slice(HOSTILE);
        bytes.extend_from_slice(suffix.as_bytes());
        bytes.push(b'\n');
    }
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("hostile file");
    path
}

/// A box whose every tool rigwatch reads prints the hostile bytes.
fn hostile_box(lab: &mut Lab) -> (Sshd, String) {
    let sshd = lab.start_host("evil");
    let data = lab.path("hostile");
    std::fs::create_dir_all(&data).expect("dir");
    let gpu = std::fs::read_to_string(format!(
        "{}/tests/fixtures/h100/q_load_csv.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("capture");
    let lines: Vec<&str> = gpu.lines().collect();
    let (row_head, row_tail) = lines[2]
        .split_once("NVIDIA H100 80GB HBM3")
        .expect("name in capture");
    let mut query = format!("{}\n", lines[1]).into_bytes();
    query.extend_from_slice(
        &std::fs::read(hostile_file(&data, "row", &[(row_head, row_tail)])).expect("row"),
    );
    std::fs::write(data.join("query"), query).expect("query");
    let apps = hostile_file(
        &data,
        "apps",
        &[(
            "585, ",
            ", 29130 MiB, GPU-8e5759bf-9118-4884-149b-e9d93aa91558",
        )],
    );
    let df = hostile_file(
        &data,
        "df",
        &[(
            "/dev/vda ext4 1000000000 990000000 10000000 99% 1000 970 30 97% /mnt/",
            "",
        )],
    );
    let tmux = hostile_file(
        &data,
        "tmux",
        &[("", ": 1 windows (created Mon Jan  1 00:00:00 2026)")],
    );
    let pgrep = hostile_file(&data, "pgrep", &[("4242 python train.py ", "")]);
    let kernel = hostile_file(
        &data,
        "dmesg",
        &[("[ 1.0] NVRM: Xid (PCI:0000:00:00): 79, ", "")],
    );
    let log = hostile_file(&data, "train.log", &[("epoch 1 ", ""), ("loss 0.1 ", "")]);
    let d = data.display();
    sshd.shim_script(
        "nvidia-smi",
        &format!(
            "#!/bin/sh\ncase \"$*\" in *compute-apps*) printf 'pid, process_name, used_gpu_memory [MiB], gpu_uuid\\n'; cat '{}';; \
             *) cat '{d}/query';; esac\n",
            apps.display()
        ),
    );
    sshd.shim_script(
        "df",
        &format!(
            "#!/bin/sh\nprintf 'Filesystem Type 1B-blocks Used Avail Use%% Inodes IUsed IFree IUse%% Mounted on\\n'; cat '{}'\n",
            df.display()
        ),
    );
    sshd.shim_script(
        "tmux",
        &format!(
            "#!/bin/sh\ncase \"$1\" in ls) cat '{}';; *) exit 1;; esac\n",
            tmux.display()
        ),
    );
    sshd.shim_script("pgrep", &format!("#!/bin/sh\ncat '{}'\n", pgrep.display()));
    sshd.shim_script("dmesg", &format!("#!/bin/sh\ncat '{}'\n", kernel.display()));
    // The provider's CLI too: the vastai stand-in lists the box with a hostile label and state,
    // written as JSON escapes (raw control bytes would not be JSON).
    let json_escaped: String = String::from_utf8_lossy(HOSTILE)
        .chars()
        .map(|c| match c {
            '"' | '\\' => format!("\\{c}"),
            c if c.is_control() || !c.is_ascii() => format!("\\u{:04x}", c as u32),
            c => c.to_string(),
        })
        .collect();
    let listing = support::vast_box::vast_listing("4242", sshd.port).replacen(
        "\"actual_status\": \"running\"",
        &format!("\"actual_status\": \"{json_escaped}\", \"label\": \"{json_escaped}\""),
        1,
    );
    std::fs::write(data.join("vast.json"), listing).expect("listing");
    let entry = format!(
        "{}\nrun = \"train\"\nrun_process = \"train.py\"\nlog = \"{}\"\nmounts = [\"/\"]\n\
         profile = \"vastai\"\ninstance_id = \"4242\"\nprice_per_hour = 2.5",
        lab.host_entry(&sshd),
        log.display()
    );
    (sshd, entry)
}

/// The fleet at `fleet_path` probed once and each of `views` drawn at each size with `host`
/// selected: (where, the screen's text).
fn screens(
    fleet_path: &Path,
    host: &str,
    views: &[View],
    sizes: &[(u16, u16)],
) -> Vec<(String, String)> {
    let fleet = rigwatch::config::fleet::load(fleet_path).expect("fleet");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let judged = runtime.block_on(rigwatch::runtime::once::probe_and_judge(
        &fleet,
        &[],
        &FleetMemory::default(),
        Default::default(),
        20.0,
    ));
    let mut out = Vec::new();
    for view in views {
        let mut app = App::new(false);
        app.view = *view;
        app.selected = Some(host.into());
        for (w, h) in sizes {
            let ctx = Ctx {
                app: &app,
                state: &judged.state,
                theme: &Theme::mono(),
                now: judged.taken_at,
                poll: fleet.poll,
            };
            let text = buffer_text(&render_buffer(&ctx, *w, *h));
            out.push((format!("dashboard {view:?} {w}x{h}"), text));
        }
    }
    out
}

#[test]
fn hostile_box_text_never_reaches_a_terminal_raw() {
    let mut lab = Lab::new();
    let (_sshd, entry) = hostile_box(&mut lab);
    // Alerts fire after a second, so `watch` has events to print within its run.
    let fleet_path = lab.fleet(
        "fleet.toml",
        "[alerts]\ngroup_wait_secs = 1\n",
        &[("evil", entry)],
    );

    for args in [
        vec!["status"],
        vec!["status", "--json"],
        vec!["watch", "--for", "8"],
    ] {
        let path = format!(
            "{}:{}",
            support::vast_box::providers().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = lab
            .rigwatch_on(&fleet_path)
            .args(&args)
            .env("PATH", path)
            .env("RIGWATCH_VASTAI_JSON", lab.path("hostile/vast.json"))
            .output()
            .expect("rigwatch");
        let place = args.join(" ");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("EVIL"),
            "{place}: the hostile text was read and shown: {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_clean(&format!("{place} stdout"), &out.stdout);
        if args == ["status", "--json"] {
            // The text was read from every place it was put, not dropped on the way.
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
            let h = support::json_host(&json, "evil");
            for (what, value) in [
                ("GPU name", &h["gpus"][0]["name"]),
                ("process", &h["gpus"][0]["processes"]),
                ("mount", &h["mounts"]),
                ("log tail", &h["log_tail"]),
                ("signals", &h["signals"]),
                ("provider", &h["provider"]),
            ] {
                assert!(value.to_string().contains("EVIL"), "{what}: {value}");
            }
        }
        assert_clean(&format!("{place} stderr"), &out.stderr);
    }

    // The dashboard: the same box probed once, every screen drawn.
    let mut shown = String::new();
    let views = [View::Fleet, View::Detail, View::Roster];
    for (place, text) in screens(&fleet_path, "evil", &views, &[(160, 48), (80, 24)]) {
        assert_clean(&place, text.as_bytes());
        shown.push_str(&text);
    }
    assert!(
        shown.contains("EVIL"),
        "the dashboard shows the box's text: {shown:?}"
    );
}

/// Keys and tokens a box prints (a run started with `--api-key`, a training log that echoes
/// `WANDB_API_KEY=` or a Hugging Face token) are masked wherever rigwatch shows the box's text:
/// `status`, `status --json` and every dashboard screen. What names the value stays, so the
/// line still says what was passed.
#[test]
fn keys_a_box_prints_are_masked_everywhere_they_are_shown() {
    const SECRETS: [&str; 3] = [
        "sk-live0123456789abcdefXYZ",
        "hf_abcdefghijklmnopqrstuvwxyz",
        "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071",
    ];
    let mut lab = Lab::new();
    let sshd = lab.start_host("leaky");
    let data = lab.path("leaky");
    std::fs::create_dir_all(&data).expect("dir");
    let log = data.join("train.log");
    std::fs::write(
        &log,
        format!(
            "wandb: WANDB_API_KEY={} set\nstep 10 loss 0.5 token {}\n",
            SECRETS[2], SECRETS[1]
        ),
    )
    .expect("log");
    sshd.shim_script(
        "pgrep",
        &format!(
            "#!/bin/sh\necho '4242 python train.py --api-key {} --hf {}'\n",
            SECRETS[0], SECRETS[1]
        ),
    );
    let entry = format!(
        "{}\nrun_process = \"train.py\"\nlog = \"{}\"\nmounts = [\"/\"]",
        lab.host_entry(&sshd),
        log.display()
    );
    let fleet_path = lab.fleet("fleet.toml", "", &[("leaky", entry)]);
    let leaked = |place: &str, text: &str| {
        for secret in SECRETS {
            assert!(!text.contains(secret), "{place} shows {secret}: {text}");
        }
    };
    for args in [vec!["status"], vec!["status", "--json"]] {
        let out = lab
            .rigwatch_on(&fleet_path)
            .args(&args)
            .output()
            .expect("rigwatch");
        let said = String::from_utf8_lossy(&out.stdout);
        if args.len() == 2 {
            assert!(
                said.contains("--api-key ****") && said.contains("WANDB_API_KEY=****"),
                "the lines were read and their keys masked: {said}"
            );
        }
        leaked(&args.join(" "), &said);
        leaked(&args.join(" "), &String::from_utf8_lossy(&out.stderr));
    }
    for (place, text) in screens(
        &fleet_path,
        "leaky",
        &[View::Fleet, View::Detail],
        &[(200, 60)],
    ) {
        leaked(&place, &text);
    }
}
