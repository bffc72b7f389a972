//! The dashboard on TestBackend: whole-screen snapshots of each view at 80×24 and 160×48 on the
//! demo fleet at a fixed time, and key handling driven through the same App as the real loop.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use rigwatch::cluster::Scheduler;
use rigwatch::demo::Demo;
use rigwatch::signals::Severity;
use rigwatch::target::Target;
use rigwatch::ui::app::{Action, App, Pane, SortKey, View};
use rigwatch::ui::theme::Theme;
use rigwatch::ui::{Ctx, DEMO_POLL, buffer_text, demo_frames, render_buffer, screenshot_time};

/// `app` over `state` as text, drawn at `w`×`h` in the mono theme at the screenshot time.
fn screen(app: &App, state: &rigwatch::fleet::FleetState, w: u16, h: u16) -> String {
    let theme = Theme::mono();
    let ctx = Ctx {
        app,
        state,
        theme: &theme,
        now: screenshot_time(),
        poll: DEMO_POLL,
    };
    buffer_text(&render_buffer(&ctx, w, h))
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn views_at_80x24_and_160x48() {
    let theme = Theme::mono();
    for (w, h) in [(80u16, 24u16), (160, 48)] {
        for (name, buffer) in demo_frames(&theme, w, h) {
            insta::assert_snapshot!(format!("{name}_{w}x{h}"), buffer_text(&buffer));
        }
    }
}

#[test]
fn overview_names_every_state_a_user_must_see() {
    let frames = demo_frames(&Theme::mono(), 160, 48);
    let overview = buffer_text(&frames[0].1);
    for needle in [
        "DEMO",
        "■ DEAD",
        "✗ down",
        "▶ alive",
        "inodes 99% used",
        "zombie",
        "? unknown",
        "GPU0: SM clock",
        "disk full",
        "release",
        "balance",
    ] {
        assert!(overview.contains(needle), "{needle:?} missing:\n{overview}");
    }
    let narrow = buffer_text(&demo_frames(&Theme::mono(), 80, 24)[0].1);
    assert!(narrow.lines().all(|l| l.chars().count() <= 80));
    assert!(
        narrow.contains("h100-zombie") && narrow.contains("DEAD"),
        "{narrow}"
    );
    // At 80 columns the header still says what matters at 3 a.m.
    let header = narrow.lines().next().unwrap_or("");
    for needle in ["need you", "data ", "/h", "zombie", "↓"] {
        assert!(
            header.contains(needle),
            "{needle:?} cut from the header: {header}"
        );
    }
}

#[test]
fn keys_move_filter_sort_open_detail_and_quit() {
    let (_, state) = Demo::start(screenshot_time());
    let mut app = App::new(true);
    let first = app.selected_host(&state).map(|h| h.config.name.clone());
    assert_eq!(
        app.handle_key(key(KeyCode::Char('j')), &state),
        Action::None
    );
    let second = app.selected_host(&state).map(|h| h.config.name.clone());
    assert_ne!(first, second, "j moves down");
    app.handle_key(key(KeyCode::Char('G')), &state);
    assert_eq!(
        app.selected_host(&state).map(|h| h.config.name.as_str()),
        app.visible(&state).last().map(|h| h.config.name.as_str())
    );
    app.handle_key(key(KeyCode::Char('g')), &state);
    assert_eq!(
        app.selected_host(&state).map(|h| h.config.name.clone()),
        first
    );

    app.handle_key(key(KeyCode::Char('/')), &state);
    for c in "paperq".chars() {
        app.handle_key(key(KeyCode::Char(c)), &state);
    }
    app.handle_key(key(KeyCode::Backspace), &state);
    app.handle_key(key(KeyCode::Enter), &state);
    let names: Vec<&str> = app
        .visible(&state)
        .iter()
        .map(|h| h.config.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["h100-idle"],
        "filter 'paper': q was text, not quit, and was erased"
    );
    app.handle_key(key(KeyCode::Enter), &state);
    assert_eq!(app.view, View::Detail);
    assert_eq!(
        app.handle_key(key(KeyCode::Char('p')), &state),
        Action::Pull(Target::Box("h100-idle".into()))
    );
    assert_eq!(
        app.handle_key(key(KeyCode::Char('T')), &state),
        Action::Teardown(Target::Box("h100-idle".into()))
    );
    app.handle_key(key(KeyCode::Esc), &state);
    assert_eq!(app.view, View::Fleet);
    app.handle_key(key(KeyCode::Esc), &state);
    assert_eq!(app.visible(&state).len(), 8, "Esc clears the filter");

    app.handle_key(key(KeyCode::Char('o')), &state);
    assert_eq!(app.sort, SortKey::Name);
    let names: Vec<String> = app
        .visible(&state)
        .iter()
        .map(|h| h.config.name.clone())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    // Tab goes through the panes: the demo's cluster jobs, then the events.
    app.handle_key(key(KeyCode::Tab), &state);
    assert_eq!(app.pane, Pane::Jobs);
    assert_eq!(
        app.handle_key(key(KeyCode::Char('T')), &state),
        Action::Teardown(Target::job("hpc", Scheduler::Slurm, "10")),
        "T in the jobs pane is the job under the cursor"
    );
    assert_eq!(
        app.handle_key(key(KeyCode::Char('p')), &state),
        Action::Pull(Target::job("hpc", Scheduler::Slurm, "10")),
        "p in the jobs pane pulls for the job under the cursor (a Kubernetes Job's pod)"
    );
    app.handle_key(key(KeyCode::Tab), &state);
    assert_eq!(app.pane, Pane::Alerts);
    // Enter in the events pane opens the host of the event under the cursor, not the fleet's
    // selected host.
    let fleet_pick = app.selected.clone();
    // The first event about a box other than the pick (events about a cluster's jobs open
    // nothing: their rows are in the jobs pane).
    let at = state
        .events
        .iter()
        .position(|e| state.host(&e.host).is_some() && Some(&e.host) != fleet_pick.as_ref())
        .expect("an event about another box");
    for _ in 0..at {
        app.handle_key(key(KeyCode::Down), &state);
    }
    let event_host = state.events[at].host.clone();
    assert_ne!(
        Some(&event_host),
        fleet_pick.as_ref(),
        "a case that tells them apart"
    );
    app.handle_key(key(KeyCode::Enter), &state);
    assert_eq!(app.view, View::Detail);
    assert_eq!(app.selected.as_ref(), Some(&event_host));
    app.handle_key(key(KeyCode::Esc), &state);
    assert_eq!(app.view, View::Fleet);
    app.handle_key(key(KeyCode::Char('?')), &state);
    assert!(app.help);
    assert_eq!(
        app.handle_key(key(KeyCode::Char('j')), &state),
        Action::None,
        "help swallows keys"
    );
    app.handle_key(key(KeyCode::Esc), &state);
    assert!(!app.help);
    assert_eq!(
        app.handle_key(key(KeyCode::Char('r')), &state),
        Action::Refresh
    );
    assert_eq!(
        app.handle_key(key(KeyCode::Char('q')), &state),
        Action::Quit
    );
    assert_eq!(
        app.handle_key(
            KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            &state
        ),
        Action::Quit
    );
}

#[test]
fn remote_text_never_reaches_the_screen_raw() {
    let (_, mut state) = Demo::start(screenshot_time());
    state.hosts[0].config.name = "evil\u{1b}]0;pwned\u{7}\u{1b}[2J".into();
    let app = App::new(true);
    let text = screen(&app, &state, 160, 48);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text}"
    );
    // The sequences go whole: no `]0;pwned` or `[2J` remnant is left to read as the name.
    assert!(text.contains("evil") && !text.contains("pwned"), "{text}");
}

/// The demo fleet with a queue on its first box whose `run_queue.sh` is gone: one cell done, one
/// killed mid-cell (its name hostile remote text), one pending.
fn with_queue() -> rigwatch::fleet::FleetState {
    use rigwatch::config::QueueConfig;
    use rigwatch::fleet::queues::QueueTracker;
    use rigwatch::probe::sample::{FileStat, HostSample, QueueSample};
    use rigwatch::queue::parse_final_listing;
    use rigwatch::readings::{HostReading, Observation};

    let (_, mut state) = Demo::start(screenshot_time());
    let config = QueueConfig {
        file: "/root/sweep/queue.txt".into(),
        final_dir: "/root/final".into(),
        cell_log: Some("/root/logs/{name}.log".into()),
        progress: Vec::new(),
    };
    let host = &mut state.hosts[0];
    host.queue = Some(QueueTracker::new(&config));
    host.config.queue = Some(config);
    let name = host.config.name.clone();
    let sample = HostSample {
        queue: Some(QueueSample {
            text: Some("c/lr1.yaml cls 3\nc/lr2\u{1b}[2J.yaml cls 50\nc/lr3.yaml cls 3\n".into()),
            listing: parse_final_listing("9\t1\t./lr1/best.pth\n9\t1\t./lr1/metrics.json\n"),
            processes: Vec::new(),
            cell_log: Some(FileStat {
                path: Some("/root/logs/lr2\u{1b}[2J.log".into()),
                size_bytes: 40,
                modified: screenshot_time(),
            }),
            cell_log_tail: vec!["Epoch 3/50".into()],
        }),
        ..HostSample::default()
    };
    let reading = HostReading {
        at: screenshot_time(),
        sample,
    };
    state.observe(
        &name,
        Observation::Host(Box::new(reading)),
        screenshot_time(),
    );
    state
}

#[test]
fn queues_show_in_the_overview_the_detail_and_the_roster() {
    let state = with_queue();
    let mut app = App::new(true);
    let render = |app: &App| screen(app, &state, 160, 48);
    let overview = render(&app);
    assert!(
        overview.contains("QUEUE") && overview.contains(" 1/3 "),
        "{overview}"
    );
    app.handle_key(key(KeyCode::Char('R')), &state);
    assert_eq!(app.view, View::Roster);
    let roster = render(&app);
    assert!(!roster.contains('\u{1b}'), "{roster}");
    let failed = roster.find("FAILED").expect("the dead queue's cell failed");
    let pending = roster.find("pending").expect("the next cell waits");
    let done = roster.find("done").expect("lr1 is done");
    assert!(
        failed < pending && pending < done,
        "problems first:\n{roster}"
    );
    assert!(roster.contains("resume "), "{roster}");
    insta::assert_snapshot!("roster_160x48", roster);
    app.handle_key(key(KeyCode::Esc), &state);
    assert_eq!(app.view, View::Fleet);
    app.selected = Some(state.hosts[0].config.name.clone());
    app.view = View::Detail;
    let detail = render(&app);
    assert!(
        detail.contains("── Queue /root/sweep/queue.txt"),
        "{detail}"
    );
    assert!(
        detail.contains("queue not running") && detail.contains("resume: bash run_queue.sh"),
        "{detail}"
    );
}

/// The real dashboard loop (`ui::run`) on a `TestBackend`, fed by the demo runtime and a scripted
/// stream of keys: the teardown of the demo's ready box goes open → checked → name typed →
/// confirmed → last look → the guard lets it through, all through the same runtime and driver
/// as a live box (the demo's I/O rehearses the destroy). A refused box never asks for the name.
#[tokio::test]
async fn the_dashboard_loop_walks_a_teardown_on_a_test_backend() {
    use crossterm::event::Event;
    use rigwatch::demo::teardown::READY;
    use rigwatch::runtime::Runtime;
    use std::time::Duration;

    async fn walk(host: &str, keys: Vec<KeyCode>) -> String {
        let mut runtime = Runtime::demo(1, chrono::Duration::seconds(2), chrono::Utc::now());
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48)).expect("terminal");
        let mut app = App::new(true);
        app.selected = Some(host.to_string());
        // Each key waits for the dialog's answers (the demo answers at once) before the next;
        // a second after the last, the stream ends, which ends the loop.
        let stream = futures::stream::unfold(keys.into_iter(), |mut keys| async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            match keys.next() {
                Some(code) => Some((Ok(Event::Key(key(code))), keys)),
                None => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    None
                }
            }
        });
        let ran = tokio::time::timeout(
            Duration::from_secs(30),
            rigwatch::ui::run(
                &mut terminal,
                Box::pin(stream),
                app,
                &mut runtime,
                Theme::mono(),
                DEMO_POLL,
            ),
        )
        .await;
        assert!(
            matches!(ran, Ok(Ok(rigwatch::ui::Ended::Quit))),
            "the loop ended by itself"
        );
        buffer_text(terminal.backend().buffer())
    }

    let mut keys = vec![KeyCode::Char('T')];
    keys.extend(READY.chars().map(KeyCode::Char));
    // One Enter: the demo's ready box has a dead run and no queue, so nothing asks twice (a
    // second key would close the finished dialog).
    keys.push(KeyCode::Enter);
    let screen = walk(READY, keys).await;
    assert!(
        screen.contains("Demo: the guard let it through; nothing was destroyed or recorded"),
        "{screen}"
    );

    let refused = "h100-rebooted";
    let mut keys = vec![KeyCode::Char('T')];
    keys.extend(refused.chars().map(KeyCode::Char));
    keys.push(KeyCode::Enter);
    let screen = walk(refused, keys).await;
    assert!(screen.contains("REFUSED — not until:"), "{screen}");
    assert!(!screen.contains("Type the box's name"), "{screen}");
    assert!(!screen.contains("guard let it through"), "{screen}");
}

/// Scrolling never leaves a blank pane: `G` in the detail goes to its end and shows it, a
/// hundred ↓ stop there, and one ↑ comes back at once. The help fits 80×24 by scrolling, and
/// the footer keeps `? help · q quit` at 80 columns.
#[test]
fn scrolling_stops_at_the_end_and_the_help_and_footer_fit_80x24() {
    let now = screenshot_time();
    let (_, state) = Demo::start(now);
    let frame = |app: &App, w: u16, h: u16| screen(app, &state, w, h);
    let mut app = App::new(true);
    app.selected = Some("h100-zombie".into());
    app.view = View::Detail;
    let top = frame(&app, 80, 24);
    app.handle_key(key(KeyCode::Char('G')), &state);
    let end = app.detail_scroll;
    assert!(end > 0, "the detail is longer than 24 rows");
    let bottom = frame(&app, 80, 24);
    assert_ne!(top, bottom);
    let filled = |screen: &str| {
        screen
            .lines()
            .filter(|l| l.trim_matches(|c| c == '│' || c == ' ').len() > 2)
            .count()
    };
    assert!(filled(&bottom) > 15, "not blank at the end:\n{bottom}");
    for _ in 0..100 {
        app.handle_key(key(KeyCode::Down), &state);
    }
    assert_eq!(app.detail_scroll, end, "↓ stops at the end");
    app.handle_key(key(KeyCode::Up), &state);
    assert_eq!(app.detail_scroll, end - 1, "one ↑ moves at once");

    let mut app = App::new(true);
    let footer = frame(&app, 80, 24);
    assert!(
        footer
            .lines()
            .last()
            .is_some_and(|l| l.contains("? help · q quit")),
        "{footer}"
    );
    app.help = true;
    let help = frame(&app, 80, 24);
    assert!(
        help.contains("Esc or ? closes this"),
        "all of it at 80×24:\n{help}"
    );
    assert!(help.contains("verified"), "{help}");
    assert!(
        help.contains("│             Enter (Ctrl-U clears); on a job, scancel or kubectl delete"),
        "a long line wraps under its text, not cut and not at the border:\n{help}"
    );
    // Shorter than the keys: it scrolls, and says so.
    let help = frame(&app, 80, 16);
    assert!(help.contains("Keys · ↑↓ scroll"), "{help}");
    assert!(!help.contains("Esc or ? closes this"), "{help}");
    for _ in 0..40 {
        app.handle_key(key(KeyCode::Down), &state);
    }
    let help = frame(&app, 80, 16);
    assert!(help.contains("Esc or ? closes this"), "{help}");
}

/// One demo box, one story: the box whose teardown the demo lets through has pull paths in its
/// detail, not "no [host.pull] paths configured".
#[test]
fn the_demo_box_ready_for_teardown_has_its_pull_paths_everywhere() {
    let frames = demo_frames(&Theme::mono(), 160, 48);
    let detail = frames
        .iter()
        .find(|(name, _)| *name == "detail")
        .map(|(_, b)| buffer_text(b))
        .expect("the detail frame");
    assert!(detail.contains("h100-zombie"), "{detail}");
    assert!(
        !detail.contains("no [host.pull] paths configured"),
        "{detail}"
    );
    assert!(
        detail.contains("p pulls the [host.pull] paths home"),
        "{detail}"
    );
}

/// The demo's sweep agrees on every screen: `R` lists its cells (it was empty), the overview's
/// QUEUE column counts the same done cells, and the box's detail shows the queue running.
#[test]
fn the_demo_roster_lists_the_sweep_and_every_screen_of_its_box_agrees() {
    let now = screenshot_time();
    let (_, state) = Demo::start(now);
    let frame = |app: &App| screen(app, &state, 160, 48);
    let mut app = App::new(true);
    app.handle_key(key(KeyCode::Char('R')), &state);
    assert_eq!(app.view, View::Roster);
    let roster = frame(&app);
    for needle in [
        "h100-train",
        "vit_lr1e-3",
        "vit_lr1e-4",
        "running",
        "pending",
        "done",
    ] {
        assert!(roster.contains(needle), "{needle:?} missing:\n{roster}");
    }
    assert!(!roster.contains("FAILED"), "a healthy sweep:\n{roster}");
    let overview = frame(&App::new(true));
    let train = overview
        .lines()
        .find(|l| l.contains("h100-train"))
        .expect("the sweep's row");
    assert!(train.contains("2/6"), "{train}");
    let mut detail = App::new(true);
    detail.selected = Some("h100-train".into());
    detail.view = View::Detail;
    let detail = frame(&detail);
    assert!(
        detail.contains("── Queue /root/sweep/queue.txt") && detail.contains("vit_lr1e-4"),
        "{detail}"
    );
    assert!(!detail.contains("queue not running"), "{detail}");
}

/// The columns as the book (docs/dashboard.md) says they drop when the terminal narrows, first to go first.
const DROP_ORDER: [&str; 9] = [
    "PLATFORM",
    "LOAD/CPUS RAM",
    "UTIL",
    "POWER/CAP",
    "DISK B/INODE",
    "VRAM (GPUS)",
    "SM CLOCK/MAX",
    "NEXT CLOCK",
    "QUEUE",
];

/// The overview of `demo --copies 13` (104 boxes, names up to `h100-rebooted-13`) at 80 to 200
/// columns: each width a snapshot, and the columns missing at each width are always the head
/// of the book's drop order, so a column never comes back at a narrower width.
#[test]
fn the_overview_at_every_width_drops_columns_in_the_documented_order() {
    let now = screenshot_time();
    let (_, state) = Demo::start_sized(now, 13);
    let app = App::new(true);
    // The longest names (h100-rebooted-13) filtered onto the screen, whatever needs you most.
    let mut rebooted = App::new(true);
    rebooted.filter = "rebooted".into();
    let mut shown_wider: Option<Vec<&str>> = None;
    for width in [200u16, 160, 140, 120, 100, 80] {
        let screen = screen(&app, &state, width, 30);
        insta::assert_snapshot!(format!("overview_copies13_{width}x30"), screen);
        let header = screen
            .lines()
            .find(|l| l.contains("HOST") && l.contains("NEEDS YOU"))
            .unwrap_or_else(|| panic!("no header at {width}:\n{screen}"));
        let shown: Vec<&str> = DROP_ORDER
            .iter()
            .copied()
            .filter(|t| header.contains(t))
            .collect();
        let dropped = DROP_ORDER.len() - shown.len();
        assert_eq!(shown, DROP_ORDER[dropped..], "at {width}: {header}");
        if let Some(wider) = &shown_wider {
            assert!(
                shown.iter().all(|t| wider.contains(t)),
                "at {width}: {header}"
            );
        }
        shown_wider = Some(shown);
        // Long names keep the suffix that tells the copies apart, whole or cut in the middle.
        let screen = self::screen(&rebooted, &state, width, 30);
        assert!(
            screen.contains("h100-rebooted-13 ") || screen.contains("h100-re…oted-13 "),
            "at {width}:\n{screen}"
        );
        assert!(!screen.contains("h100-rebooted- "), "at {width}:\n{screen}");
    }
    assert_eq!(
        shown_wider.map(|s| s.len()),
        Some(0),
        "at 80 columns every droppable column has gone"
    );
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/dashboard.md"))
        .expect("docs/dashboard.md");
    let said = format!(
        "{} first, then {};",
        DROP_ORDER[0],
        DROP_ORDER[1..].join(", ")
    );
    assert!(
        readme
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains(&said),
        "docs/dashboard.md must say {said:?}"
    );
}

/// A fix the user must copy is never cut: a changed host key's whole message is in the detail
/// (wrapped), and its `ssh-keygen -R …` command stands whole on a line of its own.
#[test]
fn a_fix_command_is_shown_whole_on_its_own_line() {
    use rigwatch::transport::LinkState;
    let now = screenshot_time();
    let (_, mut state) = Demo::start(now);
    let name = "[127.0.0.1]:2222";
    let reason = format!(
        "HOST KEY CHANGED for {name}: the server now presents \
         SHA256:Xq3r5ZkVx1mJ0b9f7eW2yH4cN8pL6tG1aS5dQ0uR7vI, which does not match \
         /home/someone-with-a-long-name/.config/rigwatch/deeply/nested/known_hosts:12. This may \
         be an attack or a rebuilt box; rigwatch will not connect. If the box was rebuilt, \
         remove the old entry with `ssh-keygen -f '/home/someone-with-a-long-name/.config/rigwatch/deeply/nested/known_hosts' -R '{name}'`"
    );
    state.set_link(
        "h100-train",
        LinkState::HostkeyRefused { since: now, reason },
        now,
    );
    state.tick(now);
    let mut app = App::new(true);
    app.selected = Some("h100-train".into());
    app.view = View::Detail;
    let screen = screen(&app, &state, 160, 48);
    assert!(
        screen
            .lines()
            .any(|l| l.contains(
                "$ ssh-keygen -f '/home/someone-with-a-long-name/.config/rigwatch/deeply/nested/known_hosts' -R '[127.0.0.1]:2222'"
            )),
        "{screen}"
    );
    assert!(
        screen.contains("box was rebuilt, remove the old entry"),
        "the whole message: {screen}"
    );
}

/// The book's key table (docs/dashboard.md) is the help overlay's keys, word for word: one
/// source for both.
#[test]
fn the_books_key_table_is_the_help_overlay() {
    let book = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/dashboard.md"))
        .expect("docs/dashboard.md");
    let table = rigwatch::ui::help::markdown_table();
    assert!(
        book.contains(&table),
        "docs/dashboard.md's key table must be exactly:\n{table}"
    );
}

/// `:` commands name the actions keys do; Tab completes the command, then a host's name; an
/// unknown command says which there are; the line shows in the status bar while it is open.
#[test]
fn the_command_line_runs_actions_and_completes_host_names() {
    let (_, state) = Demo::start(screenshot_time());
    let mut app = App::new(true);
    let typed = |app: &mut App, text: &str| -> Action {
        let mut last = app.handle_key(key(KeyCode::Char(':')), &state);
        for c in text.chars() {
            last = app.handle_key(
                key(match c {
                    '\t' => KeyCode::Tab,
                    '\n' => KeyCode::Enter,
                    c => KeyCode::Char(c),
                }),
                &state,
            );
        }
        last
    };
    assert_eq!(typed(&mut app, "sort util\n"), Action::None);
    assert_eq!(app.sort, SortKey::Gpu);
    // "pu" + Tab completes the command, "h100-z" + Tab the host.
    app.handle_key(key(KeyCode::Char(':')), &state);
    for c in "pu".chars() {
        app.handle_key(key(KeyCode::Char(c)), &state);
    }
    app.handle_key(key(KeyCode::Tab), &state);
    assert_eq!(app.command.as_deref(), Some("pull "));
    for c in "h100-z".chars() {
        app.handle_key(key(KeyCode::Char(c)), &state);
    }
    app.handle_key(key(KeyCode::Tab), &state);
    assert_eq!(app.command.as_deref(), Some("pull h100-zombie"));
    let text = screen(&app, &state, 100, 30);
    assert!(
        text.contains(" :pull h100-zombie▏  Tab completes"),
        "{text}"
    );
    assert_eq!(
        app.handle_key(key(KeyCode::Enter), &state),
        Action::Pull(Target::Box("h100-zombie".into()))
    );
    assert_eq!(app.command, None, "Enter closes the line");
    assert_eq!(
        typed(&mut app, "teardown h100-idle\n"),
        Action::Teardown(Target::Box("h100-idle".into()))
    );
    assert_eq!(typed(&mut app, "detail h100-down\n"), Action::None);
    assert_eq!(
        (app.view, app.selected.as_deref()),
        (View::Detail, Some("h100-down"))
    );
    assert_eq!(typed(&mut app, "fleet\n"), Action::None);
    // A second way on shows the candidates, as a shell's Tab does.
    typed(&mut app, "detail h100-i\t");
    assert_eq!(app.command.as_deref(), Some("detail h100-i"));
    assert_eq!(app.notice.as_deref(), Some("h100-idle  h100-inodes"));
    app.handle_key(key(KeyCode::Esc), &state);
    // A box the filter hides opens, and says the filter hides it in the fleet.
    app.filter = "zombie".into();
    assert_eq!(typed(&mut app, "detail h100-down\n"), Action::None);
    assert_eq!(app.view, View::Detail);
    assert_eq!(
        app.notice.as_deref(),
        Some("h100-down is hidden in the fleet by the filter \"zombie\" (Esc there clears it)")
    );
    app.filter.clear();
    assert_eq!(typed(&mut app, "fleet\n"), Action::None);
    assert_eq!(typed(&mut app, "pull nosuch\n"), Action::None);
    assert_eq!(
        app.notice.as_deref(),
        Some("no box or cluster/job named \"nosuch\"")
    );
    assert_eq!(typed(&mut app, "frobnicate\n"), Action::None);
    assert!(
        app.notice
            .as_deref()
            .is_some_and(|n| n.starts_with("unknown command :frobnicate; there are: detail")),
        "{:?}",
        app.notice
    );
    typed(&mut app, "ro");
    app.handle_key(key(KeyCode::Esc), &state);
    assert_eq!(
        (app.command.clone(), app.view),
        (None, View::Fleet),
        "Esc cancels"
    );
    assert_eq!(typed(&mut app, "q\n"), Action::Quit);
}

/// Every pane and view × every key that acts: the action's target is what that pane shows
/// selected (or the open detail's), and a key that does not apply to the kind says so in a
/// line; none acts on the host list's selection while another pane has focus (it did: `s` in
/// the jobs pane opened ssh to the selected box).
#[test]
fn every_key_acts_on_the_focused_panes_selection_and_never_a_hidden_one() {
    use rigwatch::transport::Handover;
    let (_, state) = Demo::start(screenshot_time());
    let slurm = Target::job("hpc", Scheduler::Slurm, "10");
    let hosts = App::new(true);
    let host_pick = hosts
        .selected_host(&state)
        .map(|h| h.config.name.clone())
        .expect("a box");
    let boxed = Target::Box(host_pick.clone());
    // The jobs pane, its cursor on hpc/10; the events pane, its cursor on a job's event.
    let mut jobs = App::new(true);
    jobs.handle_key(key(KeyCode::Tab), &state);
    assert_eq!(jobs.pane, Pane::Jobs);
    let mut events = App::new(true);
    events.pane = Pane::Alerts;
    let at = state
        .events
        .iter()
        .position(|e| e.host == "hpc" && e.job.as_deref() == Some("10"))
        .expect("an event about job 10 of hpc");
    events.alerts_scroll = at;
    let mut job_detail = jobs.clone();
    job_detail.handle_key(key(KeyCode::Enter), &state);
    assert_eq!(
        job_detail.view,
        View::Job,
        "Enter on a job opens its detail"
    );
    let mut roster = App::new(true);
    roster.view = View::Roster;

    let handover = |target: &Target, what| Action::Handover {
        target: target.clone(),
        what,
    };
    let cases: Vec<(&str, &App, char, Option<Action>)> = vec![
        ("boxes", &hosts, 'p', Some(Action::Pull(boxed.clone()))),
        (
            "boxes",
            &hosts,
            's',
            Some(handover(&boxed, Handover::Shell)),
        ),
        ("boxes", &hosts, 'S', Some(Action::Silence(boxed.clone()))),
        ("jobs", &jobs, 'p', Some(Action::Pull(slurm.clone()))),
        ("jobs", &jobs, 'T', Some(Action::Teardown(slurm.clone()))),
        ("jobs", &jobs, 's', Some(handover(&slurm, Handover::Shell))),
        ("jobs", &jobs, 'l', Some(handover(&slurm, Handover::Log))),
        ("jobs", &jobs, 'L', Some(handover(&slurm, Handover::Pane))),
        ("jobs", &jobs, 'S', Some(Action::Silence(slurm.clone()))),
        ("jobs", &jobs, 'K', None),
        ("boxes", &hosts, 'y', Some(Action::Copy(boxed.clone()))),
        ("jobs", &jobs, 'y', Some(Action::Copy(slurm.clone()))),
        ("events", &events, 'y', Some(Action::Copy(slurm.clone()))),
        (
            "job detail",
            &job_detail,
            'y',
            Some(Action::Copy(slurm.clone())),
        ),
        ("roster", &roster, 'y', None),
        ("events", &events, 'p', Some(Action::Pull(slurm.clone()))),
        (
            "events",
            &events,
            'T',
            Some(Action::Teardown(slurm.clone())),
        ),
        (
            "events",
            &events,
            'l',
            Some(handover(&slurm, Handover::Log)),
        ),
        (
            "job detail",
            &job_detail,
            'T',
            Some(Action::Teardown(slurm.clone())),
        ),
        (
            "job detail",
            &job_detail,
            'p',
            Some(Action::Pull(slurm.clone())),
        ),
        (
            "job detail",
            &job_detail,
            's',
            Some(handover(&slurm, Handover::Shell)),
        ),
        ("job detail", &job_detail, 'K', None),
        ("roster", &roster, 'p', None),
        ("roster", &roster, 'T', None),
        ("roster", &roster, 's', None),
    ];
    for (pane, app, c, want) in cases {
        let mut app = app.clone();
        let got = app.handle_key(key(KeyCode::Char(c)), &state);
        match want {
            Some(want) => assert_eq!(got, want, "{c} in the {pane} pane"),
            None => {
                assert_eq!(got, Action::None, "{c} in the {pane} pane acts on nothing");
                assert!(
                    app.kill.is_none(),
                    "{c} in the {pane} pane opened K's dialog"
                );
                let said = app.notice.clone().unwrap_or_default();
                assert!(
                    !said.is_empty() && !said.contains(&host_pick),
                    "{c} in the {pane} pane says why, in a line, without the hidden box: {said:?}"
                );
            }
        }
    }
    // Enter in the events pane on a job's event opens that job, not a box.
    let mut app = events.clone();
    app.handle_key(key(KeyCode::Enter), &state);
    assert_eq!(app.view, View::Job);
    assert_eq!(app.job_selected, Some(("hpc".into(), "10".into())));
    let text = screen(&app, &state, 120, 40);
    assert!(text.contains("Slurm job 10 on hpc"), "{text}");
    assert!(text.contains("T cancels the job (scancel)"), "{text}");
    // The hint line names the focused pane's keys.
    let text = screen(&jobs, &state, 160, 40);
    assert!(text.contains("Enter job detail"), "{text}");
    assert!(!text.contains("o order"), "{text}");
}

/// `/` filters the focused pane: in the jobs pane the jobs, leaving the boxes as they are.
#[test]
fn slash_filters_the_focused_pane() {
    let (_, state) = Demo::start(screenshot_time());
    let mut app = App::new(true);
    app.handle_key(key(KeyCode::Tab), &state);
    let all_jobs = app.visible_jobs(&state).len();
    let boxes = app.visible(&state).len();
    assert!(all_jobs >= 2, "the demo has jobs on two clusters");
    for c in "/k8s".chars() {
        app.handle_key(key(KeyCode::Char(c)), &state);
    }
    app.handle_key(key(KeyCode::Enter), &state);
    let shown = app.visible_jobs(&state);
    assert!(
        !shown.is_empty() && shown.len() < all_jobs && shown.iter().all(|(c, _)| c.name == "k8s"),
        "{} of {all_jobs}",
        shown.len()
    );
    assert_eq!(app.visible(&state).len(), boxes, "the boxes are untouched");
    assert!(screen(&app, &state, 160, 48).contains("match /k8s"));
    // The cursor is on a shown job: p pulls a k8s Job, not hpc's.
    assert!(matches!(
        app.handle_key(key(KeyCode::Char('p')), &state),
        Action::Pull(Target::Job(j)) if j.cluster == "k8s"
    ));
    app.handle_key(key(KeyCode::Esc), &state);
    assert_eq!(app.visible_jobs(&state).len(), all_jobs, "Esc clears it");
}

/// What the ledger records of a box shows in its detail (the last pull and teardown, not only
/// help text), and a box whose teardown was confirmed reads "torn down" in its row, not the
/// lost link that follows a destroy.
#[test]
fn a_boxs_records_show_in_its_detail_and_a_torn_down_box_says_so() {
    use rigwatch::fleet::Records;
    let now = screenshot_time();
    let (_, mut state) = Demo::start(now);
    let records = Records {
        last_pull: Some("pull #7, 2026-12-02 03:12 UTC: 12/12 files hashed and verified".into()),
        last_teardown: Some(
            "teardown confirmed, 2026-12-02 03:40 UTC: vastai no longer lists instance 4242".into(),
        ),
        torn_down: Some(now),
        ..Records::default()
    };
    state.take_records([("h100-down".to_string(), records)].into());
    let mut app = App::new(true);
    let overview = screen(&app, &state, 160, 48);
    let row = overview
        .lines()
        .find(|l| l.contains("h100-down"))
        .expect("its row");
    assert!(row.contains("torn down"), "{row}");
    app.selected = Some("h100-down".into());
    app.view = View::Detail;
    let detail = screen(&app, &state, 160, 48);
    assert!(
        detail.contains("last pull #7, 2026-12-02 03:12 UTC"),
        "{detail}"
    );
    assert!(detail.contains("last teardown confirmed"), "{detail}");
    app.selected = Some("h100-idle".into());
    let other = screen(&app, &state, 160, 48);
    assert!(other.contains("no pull on record yet"), "{other}");
    // A job's detail shows its own teardown, not its cluster's last of another job.
    let hpc = Records {
        last_teardown: Some("teardown confirmed, 2026-12-02 03:50 UTC: job 11 ended".into()),
        job_teardowns: [(
            "10".to_string(),
            "teardown UNCONFIRMED, 2026-12-02 03:45 UTC: squeue still shows job 10".to_string(),
        )]
        .into(),
        ..Records::default()
    };
    state.take_records([("hpc".to_string(), hpc)].into());
    app.job_selected = Some(("hpc".into(), "10".into()));
    app.view = View::Job;
    let job = screen(&app, &state, 160, 48);
    assert!(job.contains("squeue still shows job 10"), "{job}");
    assert!(!job.contains("job 11 ended"), "{job}");
}

/// NEEDS YOU, the line that says what is wrong, gets the room before more bars do: at least 60
/// cells at 200 columns (columns drop first), never fewer than 24.
#[test]
fn needs_you_gets_room_before_the_bars() {
    let now = screenshot_time();
    let (_, state) = Demo::start_sized(now, 1);
    let app = App::new(true);
    for (width, least) in [(80u16, 24usize), (120, 24), (160, 24), (180, 40), (200, 60)] {
        let screen = screen(&app, &state, width, 30);
        let header = screen
            .lines()
            .find(|l| l.contains("HOST") && l.contains("NEEDS YOU"))
            .unwrap_or_else(|| panic!("no header at {width}:\n{screen}"));
        let at = header.find("NEEDS YOU").unwrap_or(0);
        let cells = header[at..].chars().count().saturating_sub(1);
        assert!(cells >= least, "{cells} cells at {width}:\n{header}");
    }
}

/// Every size of memory or disk the dashboard shows carries its binary unit, written (B, KiB,
/// MiB, GiB, TiB): never a bare `G` or a decimal `GB` for a binary value. A GPU's product name
/// (`H100 80GB HBM3`) is the vendor's text, not a size rigwatch computed.
#[test]
fn every_size_on_screen_has_its_binary_unit() {
    let bare = regex::Regex::new(r"\b\d+(?:\.\d+)?(?:[KMGTP]|[KMGTP]B)(?:\b|/)").expect("regex");
    for (width, height) in [(80u16, 24u16), (160, 48), (200, 60)] {
        for (name, buffer) in demo_frames(&Theme::mono(), width, height) {
            let text = buffer_text(&buffer);
            for line in text.lines().filter(|l| !l.contains("HBM")) {
                assert!(
                    !bare.is_match(line),
                    "{name} at {width}×{height}: a size without its unit: {line}"
                );
            }
        }
    }
}

/// ↑ and ↓ in `:` walk the commands run before, newest first, as a shell's history does; ↓ past
/// the newest is an empty line again; a command run twice in a row is kept once.
#[test]
fn the_command_line_keeps_a_history() {
    let (_, state) = Demo::start(screenshot_time());
    let mut app = App::new(true);
    let run = |app: &mut App, text: &str| {
        app.handle_key(key(KeyCode::Char(':')), &state);
        for c in text.chars() {
            app.handle_key(key(KeyCode::Char(c)), &state);
        }
        app.handle_key(key(KeyCode::Enter), &state);
    };
    run(&mut app, "sort name");
    run(&mut app, "sort util");
    run(&mut app, "sort util");
    app.handle_key(key(KeyCode::Char(':')), &state);
    app.handle_key(key(KeyCode::Up), &state);
    assert_eq!(app.command.as_deref(), Some("sort util"));
    app.handle_key(key(KeyCode::Up), &state);
    assert_eq!(app.command.as_deref(), Some("sort name"));
    app.handle_key(key(KeyCode::Up), &state);
    assert_eq!(
        app.command.as_deref(),
        Some("sort name"),
        "the oldest stays"
    );
    app.handle_key(key(KeyCode::Down), &state);
    assert_eq!(app.command.as_deref(), Some("sort util"));
    app.handle_key(key(KeyCode::Down), &state);
    assert_eq!(app.command.as_deref(), Some(""));
    app.handle_key(key(KeyCode::Up), &state);
    app.handle_key(key(KeyCode::Up), &state);
    app.handle_key(key(KeyCode::Enter), &state);
    assert_eq!(app.sort, SortKey::Name, "a recalled command runs");
}

/// A box with more than two GPUs gets one row per GPU in its detail (index, util, SM/max,
/// power/cap, VRAM, temperature, holders), so all eight fit a screen; two or fewer keep their
/// sparklines.
#[test]
fn an_eight_gpu_box_has_a_row_per_gpu() {
    let now = screenshot_time();
    let (_, mut state) = Demo::start(now);
    let base = state
        .host("h100x2-fill")
        .and_then(|h| h.history.latest_gpu())
        .map(|r| r.gpus[0].clone())
        .expect("a GPU reading");
    let gpus = (0..8u32)
        .map(|i| {
            let mut g = base.clone();
            g.index = Some(i);
            g.uuid = Some(format!("GPU-eight-{i}"));
            g.util_gpu_pct = Some(10 * i);
            g
        })
        .collect();
    state.record(
        "h100x2-fill",
        rigwatch::readings::Observation::Gpu(rigwatch::readings::GpuReading { at: now, gpus }),
        now,
    );
    let mut app = App::new(true);
    app.selected = Some("h100x2-fill".into());
    app.view = View::Detail;
    let text = screen(&app, &state, 120, 48);
    assert!(
        text.contains("GPU  UTIL  SM/MAX MHz   POWER/CAP W  VRAM GiB"),
        "{text}"
    );
    for i in 0..8 {
        let row = text
            .lines()
            .find(|l| {
                l.trim_start_matches('│')
                    .starts_with(&format!("  {i:<4} {:>4}", format!("{}%", 10 * i)))
            })
            .unwrap_or_else(|| panic!("no row for GPU {i}:\n{text}"));
        assert!(row.contains("/79.6") && row.contains("°C"), "{row}");
    }
    assert!(
        !text.contains("SM clock  "),
        "no sparklines for eight:\n{text}"
    );
}

/// A row's NEEDS YOU starts with the key that deals with it, where one does, before the words
/// that a narrow cell cuts.
#[test]
fn needs_you_names_the_key_that_fixes_it() {
    let now = screenshot_time();
    let (_, state) = Demo::start(now);
    let app = App::new(true);
    let text = screen(&app, &state, 200, 60);
    let row = |host: &str| {
        text.lines()
            .find(|l| l.contains(&format!(" {host} ")) || l.contains(&format!("›{host} ")))
            .unwrap_or_else(|| panic!("no {host}:\n{text}"))
            .to_string()
    };
    assert!(
        row("h100-idle").contains("‼ p pulls, T tears down · no GPU work"),
        "{text}"
    );
    assert!(
        row("h100-rebooted").contains("‼3 l log · run is not running"),
        "{text}"
    );
}

/// The most urgent line of a row is shown whole before its bars: a row whose line is longer
/// than NEEDS YOU gives up its own bars (from the one beside NEEDS YOU leftwards) for it, and
/// takes more lines where that is not enough; the other rows keep theirs.
#[test]
fn the_urgent_line_is_whole_before_the_rows_bars() {
    let now = screenshot_time();
    let (_, state) = Demo::start_sized(now, 1);
    let app = App::new(true);
    let urgent: Vec<(String, String)> = state
        .hosts
        .iter()
        .filter_map(|h| {
            let top = h.signals.first().filter(|s| s.severity > Severity::Info)?;
            Some((
                h.config.name.clone(),
                rigwatch::sanitize::line(&top.message, 200),
            ))
        })
        .collect();
    assert!(
        urgent.iter().any(|(_, m)| m.chars().count() > 40),
        "the demo has a long urgent line: {urgent:?}"
    );
    for width in [120u16, 160, 200] {
        let screen = screen(&app, &state, width, 60);
        let lines: Vec<&str> = screen.lines().collect();
        let collapse = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        for (host, message) in &urgent {
            let at = lines
                .iter()
                .position(|l| l.contains(host.as_str()))
                .unwrap_or_else(|| panic!("no row for {host} at {width}:\n{screen}"));
            // The row's own lines: its first, and those after it with no host of their own.
            let own = lines[at + 1..]
                .iter()
                .take(3)
                .take_while(|l| l.chars().skip(1).take(15).all(|c| c == ' '));
            let row: String = std::iter::once(lines[at])
                .chain(own.copied())
                .map(|l| l.trim_matches('│'))
                .collect::<Vec<_>>()
                .join(" ");
            // Whole where the bars give room enough (four lines at most); at 120 columns at
            // least its first 100 characters, what any bar would have cut.
            let message = collapse(message);
            let wanted: String = match width {
                120 => message.chars().take(100).collect(),
                _ => message,
            };
            assert!(
                collapse(&row).contains(&wanted),
                "{host} at {width}: {wanted:?} is not whole in\n{row}"
            );
        }
        // A row with nothing urgent keeps its bars.
        assert!(screen.contains("✓ ok"), "{screen}");
    }
}

/// `K`'s name prompt is the one line editor of every prompt: a typo mid-name is mended where
/// it is, and Enter sends the kill only for the name as edited.
#[test]
fn the_kill_prompt_edits_the_name_with_a_cursor() {
    let (_, state) = Demo::start(screenshot_time());
    let mut app = App::new(true);
    app.selected = Some("h100-zombie".into());
    app.handle_key(key(KeyCode::Char('K')), &state);
    assert!(
        app.kill.is_some(),
        "K opened the kill dialog: {:?}",
        app.notice
    );
    for c in "h100zombie".chars() {
        app.handle_key(key(KeyCode::Char(c)), &state);
    }
    for _ in 0.."zombie".len() {
        app.handle_key(key(KeyCode::Left), &state);
    }
    app.handle_key(key(KeyCode::Char('-')), &state);
    assert_eq!(
        app.kill.as_ref().map(|k| k.typed.as_str()),
        Some("h100-zombie")
    );
    let shown = screen(&app, &state, 120, 40);
    assert!(
        shown.contains("h100-▏zombie"),
        "the cursor where typing goes:\n{shown}"
    );
    match app.handle_key(key(KeyCode::Enter), &state) {
        Action::Kill { host, .. } => assert_eq!(host, "h100-zombie"),
        other => panic!("Enter on the right name sends the kill: {other:?}"),
    }
}
