//! Dashboard cost at fleet scale: one frame rendered at 160×48 with 104 hosts (the demo's eight
//! boxes thirteen times over, full histories), and one 1 Hz re-judgement of all of them.
//! Run: `cargo bench --bench render`. The whole-process CPU and RSS are measured by
//! scripts/dashboard-cost.sh on the real binary.

use std::time::{Duration, Instant};

use rigwatch::demo::Demo;
use rigwatch::ui::app::{App, View};
use rigwatch::ui::theme::Theme;
use rigwatch::ui::{Ctx, DEMO_POLL, render_buffer, screenshot_time};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time(rounds: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let samples: Vec<Duration> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    let worst = samples.iter().copied().max().unwrap_or_default();
    (median(samples), worst)
}

fn main() {
    let now = screenshot_time();
    let (_, mut state) = Demo::start_sized(now, 13);
    let theme = Theme::resolve(None, false, None).expect("theme");
    let overview = App::new(true);
    let mut detail = App::new(true);
    detail.selected = Some("h100-train".into());
    detail.view = View::Detail;
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1000.0);
    println!(
        "| what ({} hosts) | median | worst of 200 |",
        state.hosts.len()
    );
    println!("|---|---:|---:|");
    for (name, app) in [
        ("overview frame 160×48", &overview),
        ("host detail frame 160×48", &detail),
    ] {
        let (med, worst) = time(200, || {
            let ctx = Ctx {
                app,
                state: &state,
                theme: &theme,
                now,
                poll: DEMO_POLL,
            };
            std::hint::black_box(render_buffer(&ctx, 160, 48));
        });
        println!("| {name} | {} | {} |", ms(med), ms(worst));
    }
    let (med, worst) = time(200, || {
        let backend = ratatui::backend::TestBackend::new(160, 48);
        let mut terminal = ratatui::Terminal::new(backend).expect("terminal");
        let _ = terminal.draw(|_| {});
        std::hint::black_box(terminal.backend().buffer().clone());
    });
    println!(
        "| empty frame: the test backend's own cost | {} | {} |",
        ms(med),
        ms(worst)
    );
    let (med, worst) = time(50, || state.tick(now));
    println!(
        "| re-judge every host (1 Hz tick) | {} | {} |",
        ms(med),
        ms(worst)
    );
}
