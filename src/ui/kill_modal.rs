//! `K`: end what holds VRAM on a GPU that computes nothing. The dialog shows the exact commands
//! and the processes, takes the host's name typed (the one line editor of every prompt), and
//! once the runtime has answered, what ended and the VRAM the GPUs hold now against before.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::Ctx;
use crate::fleet::HostState;
use crate::probe::GpuProcess;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillStage {
    /// The name is being typed.
    Asking,
    /// Sent; the box has not answered yet.
    Running,
    /// What the runtime said, and when.
    Done {
        said: String,
        at: chrono::DateTime<chrono::Utc>,
    },
}

#[derive(Debug, Clone)]
pub struct KillModal {
    pub host: String,
    pub targets: Vec<GpuProcess>,
    /// The zombie GPUs by index, and the VRAM (MiB) each held when `K` was pressed.
    pub before: Vec<(usize, u64)>,
    pub typed: String,
    /// The prompt's cursor, a character index (None: the end).
    cursor: Option<usize>,
    pub stage: KillStage,
    /// Why the last Enter did nothing.
    pub said: Option<String>,
}

/// What `K` on `h` opens, or why it opens nothing.
pub fn open(h: &HostState) -> Result<KillModal, String> {
    let name = &h.config.name;
    let gpus = h
        .history
        .latest_gpu()
        .map(|g| g.gpus.clone())
        .unwrap_or_default();
    let processes = h
        .history
        .latest_host()
        .and_then(|r| r.sample.gpu_processes.clone())
        .unwrap_or_default();
    let holders = crate::signals::zombie_holders(&gpus, &processes);
    let zombies = crate::signals::zombie_gpus(&gpus);
    if zombies.is_empty() {
        return Err(format!(
            "K {name}: no GPU holds VRAM while computing nothing: there is nothing to end"
        ));
    }
    // A process nvidia-smi cannot name cannot be checked before each signal: never a target.
    let targets: Vec<GpuProcess> = holders.into_iter().filter(|p| p.name.is_some()).collect();
    if targets.is_empty() {
        return Err(format!(
            "K {name}: nvidia-smi names no process holding the VRAM here (a container lists the \
             host's, or none): end it from the provider's console, or restart the box"
        ));
    }
    Ok(KillModal {
        host: name.clone(),
        targets,
        before: zombies
            .iter()
            .map(|&i| (i, gpus[i].mem_used_mib.unwrap_or(0)))
            .collect(),
        typed: String::new(),
        cursor: None,
        stage: KillStage::Asking,
        said: None,
    })
}

impl KillModal {
    /// A key while the name is asked for (Esc is the caller's): true when Enter confirmed a
    /// typed name that matches, and the runtime should be asked to send the signals; every
    /// other key edits the name with the one line editor of every prompt.
    pub fn key(&mut self, key: crossterm::event::KeyEvent) -> bool {
        if self.stage != KillStage::Asking {
            return false;
        }
        self.said = None;
        match key.code {
            crossterm::event::KeyCode::Enter if self.typed == self.host => {
                self.stage = KillStage::Running;
                return true;
            }
            crossterm::event::KeyCode::Enter => {
                self.said = Some(format!("type {} exactly to confirm", self.host));
                self.typed.clear();
                self.cursor = None;
            }
            _ => super::line_edit::edit(
                &mut self.typed,
                &mut self.cursor,
                key,
                crate::teardown::NAME_MAX,
            ),
        }
        false
    }
}

pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx<'_>, modal: &KillModal) {
    let t = ctx.theme;
    let mut lines = vec![
        Line::styled(
            " These hold VRAM on a GPU that computes nothing:".to_string(),
            t.text,
        ),
        Line::styled(
            format!("   {}", crate::runtime::kill::named(&modal.targets)),
            t.accent,
        ),
        Line::styled(" rigwatch runs on the box, as your login user:", t.text),
        Line::styled(
            format!("   {}", crate::runtime::kill::shown(&modal.targets)),
            t.accent,
        ),
        Line::styled(
            " each signal only while nvidia-smi still lists that pid under that name",
            t.stale,
        ),
        Line::raw(""),
    ];
    match &modal.stage {
        KillStage::Asking => {
            lines.push(Line::from(vec![
                Span::styled(" Type the host's name to confirm: ", t.text),
                Span::styled(
                    super::line_edit::with_cursor(&modal.typed, modal.cursor),
                    t.accent,
                ),
            ]));
            if let Some(said) = &modal.said {
                lines.push(Line::styled(format!(" {said}"), t.warn));
            }
            lines.push(Line::styled(
                " Enter ends them · Esc cancels · Ctrl-U clears",
                t.stale,
            ));
        }
        KillStage::Running => lines.push(Line::styled(" sent; waiting for the box…", t.warn)),
        KillStage::Done { said, at } => {
            lines.push(Line::styled(format!(" {said}"), t.text));
            lines.extend(
                vram_now(ctx, modal, *at)
                    .into_iter()
                    .map(|l| Line::styled(l, t.text)),
            );
            lines.push(Line::styled(" Esc or Enter closes", t.stale));
        }
    }
    let (popup, _, lines) = super::widgets::popup(area, 100, lines);
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" End what holds VRAM on {} ", modal.host))
        .border_style(t.crit);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block),
        popup,
    );
}

/// Each zombie GPU's VRAM when `K` was pressed against the latest reading: the VRAM freed is
/// what the driver reports, not what rigwatch hopes.
fn vram_now(ctx: &Ctx<'_>, modal: &KillModal, done: chrono::DateTime<chrono::Utc>) -> Vec<String> {
    let Some(h) = ctx.state.host(&modal.host) else {
        return Vec::new();
    };
    // Only a reading taken after the box answered says what the kill freed.
    let latest = h.history.latest_gpu().filter(|r| r.at >= done);
    let gb = |mib: u64| mib as f64 / 1024.0;
    modal
        .before
        .iter()
        .map(|&(i, was)| {
            match latest
                .and_then(|r| r.gpus.get(i))
                .and_then(|g| g.mem_used_mib)
            {
                Some(now) => format!(
                    " GPU {i}: {:.1} GiB held before, {:.1} GiB now: {:.1} GiB freed",
                    gb(was),
                    gb(now),
                    gb(was.saturating_sub(now))
                ),
                None => format!(
                    " GPU {i}: {:.1} GiB held before; waiting for the next reading",
                    gb(was)
                ),
            }
        })
        .collect()
}
