//! One cluster job in full (Enter on a job): its state and why in words, the walltime clock,
//! nodes and GPUs with what nvidia-smi saw on each node, restarts, the newest checkpoint's age,
//! what will cost data, a Kubernetes Job's pods, who holds its cluster now, and its events.
//! Every word from the scheduler is sanitized here.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Ctx;
use super::widgets::age;
use crate::cluster::{ClusterReading, JobRow, Scheduler};
use crate::sanitize::line as clean;

fn heading<'a>(text: &str, ctx: &Ctx<'a>) -> Line<'a> {
    Line::from(Span::styled(format!("── {text} "), ctx.theme.header))
}

fn kv<'a>(key: &str, value: String, style: Style) -> Line<'a> {
    Line::from(vec![
        Span::raw(format!("  {key:<12}")),
        Span::styled(value, style),
    ])
}

fn span(secs: u64) -> String {
    crate::signals::minutes(chrono::Duration::seconds(secs as i64))
}

/// State, clock, placement and restarts.
fn state_lines<'a>(c: &ClusterReading, job: &JobRow, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let mut out = vec![kv(
        "state",
        clean(&job.summary(), 600),
        t.severity(Some(job.severity())),
    )];
    if let Some(reason) = &job.reason {
        out.push(kv("reason", clean(reason, 80), t.text));
    }
    if let Some(error) = &c.error {
        out.push(kv(
            "queue",
            format!(
                "{}; as last read {} ago",
                clean(error, 400),
                age(c.read_at, ctx.now)
            ),
            t.warn,
        ));
    } else {
        out.push(kv(
            "read",
            format!("{} ago", age(c.read_at, ctx.now)),
            t.text,
        ));
    }
    let run = match (job.elapsed_secs, job.limit_secs) {
        (Some(e), Some(l)) => Some(format!("{} of {}", span(e), span(l))),
        (Some(e), None) => Some(span(e)),
        (None, Some(l)) => Some(format!("limit {}", span(l))),
        (None, None) => None,
    };
    if let Some(run) = run {
        out.push(kv("run", run, t.text));
    }
    if let Some(clock) = &job.walltime {
        out.push(kv(
            "walltime",
            format!(
                "{} · {}",
                crate::clocks::Urgency::of(clock).word(),
                clean(&clock.message, 400)
            ),
            t.severity(Some(job.severity())),
        ));
    }
    let nodes = match (&job.node_list, job.nodes) {
        (Some(list), _) => Some(clean(list, 200)),
        (None, Some(n)) => Some(format!("{n}")),
        (None, None) => None,
    };
    if let Some(nodes) = nodes {
        out.push(kv("nodes", nodes, t.text));
    }
    if let Some(gpus) = job.gpus {
        out.push(kv("GPUs", gpus.to_string(), t.text));
    }
    let restarts = match (job.restarts, job.restart_limit, job.requeue) {
        (Some(n), Some(limit), _) => Some(format!("{n} of {limit} allowed")),
        (Some(n), None, Some(true)) => Some(format!("{n} (requeue allowed)")),
        (Some(n), None, _) => Some(n.to_string()),
        (None, _, Some(true)) => Some("requeue allowed".to_string()),
        (None, _, _) => None,
    };
    if let Some(restarts) = restarts {
        out.push(kv("restarts", restarts, t.text));
    }
    if let Some(secs) = job.checkpoint_age_secs {
        out.push(kv(
            "checkpoint",
            format!("newest {} old", span(secs)),
            t.text,
        ));
    }
    for danger in &job.dangers {
        out.push(Line::styled(format!("  ! {}", clean(danger, 600)), t.warn));
    }
    out
}

/// What nvidia-smi saw inside the job, node by node; a Job's pods and their GPUs.
fn gpu_lines<'a>(job: &JobRow, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let mut out = Vec::new();
    if !job.gpu_truth.is_empty() {
        out.push(heading("GPUs per node", ctx));
    }
    for node in &job.gpu_truth {
        if let Some(error) = &node.error {
            out.push(Line::styled(
                format!(
                    "  {}: not read: {}",
                    clean(&node.node, 60),
                    clean(error, 300)
                ),
                t.warn,
            ));
        }
        for g in &node.gpus {
            let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
            out.push(Line::styled(
                format!(
                    "  {} gpu{} util {}% · SM {}/{} MHz · {}/{} W · {}/{} MiB",
                    clean(&node.node, 60),
                    opt(g.index.map(|i| i.to_string())),
                    opt(g.util_gpu_pct.map(|u| u.to_string())),
                    opt(g.sm_clock_mhz.map(|u| u.to_string())),
                    opt(g.sm_clock_max_mhz.map(|u| u.to_string())),
                    opt(g.power_draw_w.map(|w| format!("{w:.0}"))),
                    opt(g.power_limit_w.map(|w| format!("{w:.0}"))),
                    opt(g.mem_used_mib.map(|m| m.to_string())),
                    opt(g.mem_total_mib.map(|m| m.to_string())),
                ),
                t.text,
            ));
        }
    }
    if !job.pods.is_empty() {
        out.push(heading("Pods", ctx));
    }
    for pod in &job.pods {
        out.push(Line::styled(
            format!(
                "  {} · {} · on {} · {} restart{}",
                clean(&pod.name, 100),
                clean(&pod.phase, 40),
                pod.node
                    .as_deref()
                    .map_or("no node yet".into(), |n| clean(n, 60)),
                pod.restarts,
                if pod.restarts == 1 { "" } else { "s" }
            ),
            t.text,
        ));
        if let Some(end) = &pod.last_end {
            out.push(Line::styled(
                format!("    last ended: {}", clean(end, 400)),
                t.warn,
            ));
        }
        if let Some(error) = &pod.gpu_error {
            out.push(Line::styled(
                format!("    GPUs not read: {}", clean(error, 300)),
                t.warn,
            ));
        }
        for g in &pod.gpus {
            out.push(Line::styled(
                format!(
                    "    gpu{} util {}% · {}/{} MiB",
                    g.index.map_or("?".into(), |i| i.to_string()),
                    g.util_pct.map_or("?".into(), |u| u.to_string()),
                    g.mem_used_mib.map_or("?".into(), |m| m.to_string()),
                    g.mem_total_mib.map_or("?".into(), |m| m.to_string()),
                ),
                t.text,
            ));
        }
    }
    out
}

/// What `p`, `T`, `s`, `l` and `L` do to this job, in its scheduler's words.
fn action_lines<'a>(c: &ClusterReading, job: &JobRow, ctx: &Ctx<'a>) -> Vec<Line<'a>> {
    let t = ctx.theme;
    let keys = match c.scheduler {
        Scheduler::Slurm => {
            "  p pulls the cluster's [slurm.pull] paths from the login node · T cancels the job \
             (scancel) through the guard · s a shell on the login node · l follows the job's \
             output file (scontrol's StdOut) · L a shell inside the job (srun --overlap)"
        }
        Scheduler::Kubernetes => {
            "  p pulls the Job's results from its running pod · T deletes the Job with its pods \
             through the guard · s kubectl exec into its newest pod · l kubectl logs -f of it"
        }
        Scheduler::Kaggle => {
            "  p downloads the commit's output (kaggle kernels output) and proves it loads · \
             nothing to tear down: the commit runs on Kaggle's machine and stops by itself"
        }
    };
    let mut out = vec![heading("Pull and teardown", ctx)];
    out.extend(super::host_detail::record_lines(
        &c.name,
        Some(&job.id),
        ctx,
    ));
    out.push(Line::styled(keys, t.stale));
    if job.phase.is_over() {
        out.push(Line::styled(
            "  the job has ended: there is nothing left to cancel",
            t.stale,
        ));
    }
    if let Some(who) = ctx.app.holders.get(&c.name) {
        out.push(Line::styled(
            format!("  held now: {}", clean(who, 200)),
            t.warn,
        ));
    }
    out
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>) {
    let t = ctx.theme;
    let Some((c, job)) = ctx.app.detail_job(ctx.state) else {
        frame.render_widget(
            Paragraph::new(" the job is no longer in its cluster's queue as read · Esc back")
                .block(Block::default().borders(Borders::ALL)),
            area,
        );
        return;
    };
    let mut lines = state_lines(c, job, ctx);
    lines.extend(gpu_lines(job, ctx));
    lines.extend(action_lines(c, job, ctx));
    lines.push(heading("Events", ctx));
    for e in ctx
        .state
        .events
        .iter()
        .filter(|e| e.host == c.name && e.job.as_deref() == Some(job.id.as_str()))
        .take(20)
    {
        lines.push(Line::styled(
            format!(
                "  {} {:<4} {}",
                e.at.format("%H:%M:%S"),
                e.severity.word(),
                clean(&e.text, 300)
            ),
            t.severity(Some(e.severity)),
        ));
    }
    let target = super::jobs_pane::target_of((c, job));
    let title = format!(
        " {} · {} · via {} ",
        clean(&target.to_string(), 100),
        clean(&job.name, 60),
        clean(&c.via, 60)
    );
    super::widgets::detail_page(frame, area, ctx, title, lines);
}
