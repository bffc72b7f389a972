//! `s`, `l`, `L`: the terminal is handed to the person's own `ssh` or `kubectl` (as k9s's
//! shell does) and taken back when it ends. The dashboard draws nothing meanwhile; the runtime keeps reading.

use std::ffi::OsString;

use ratatui::DefaultTerminal;

/// Leaves the alternate screen and raw mode, runs `argv` on the terminal, and takes the screen
/// back; says in a line how it ended, for the status bar.
pub async fn give_terminal(
    terminal: &mut DefaultTerminal,
    target: &crate::target::Target,
    argv: &[OsString],
) -> std::io::Result<String> {
    let program = argv
        .first()
        .map_or_else(|| "ssh".into(), |p| p.to_string_lossy().into_owned());
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    ratatui::restore();
    let shown = crate::transport::openssh::shown(argv);
    say(&format!(
        "rigwatch: {shown}\n(the dashboard comes back when this ends)\n"
    ));
    // Ctrl-C typed before ssh takes the terminal goes to the whole foreground group: with a
    // handler installed (tokio keeps it for the life of the process; in raw mode Ctrl-C is a
    // key anyway) it ends ssh alone, not the dashboard.
    let _held = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt());
    let status = match argv.split_first() {
        Some((program, args)) => {
            tokio::process::Command::new(program)
                .args(args)
                .status()
                .await
        }
        None => Err(std::io::Error::other("no command")),
    };
    let (ok, said) = match status {
        Ok(s) if s.success() => (true, format!("back from {program} ({target})")),
        Ok(s) => (false, format!("{program} ({target}) ended: {s}")),
        Err(e) => (
            false,
            format!("{program} ({target}): could not start {program}: {e}"),
        ),
    };
    if !ok {
        // What ssh said (a refused key, a missing file) stays readable until the person is done.
        say(&format!(
            "rigwatch: {said}; press Enter to go back to the dashboard\n"
        ));
        let _ = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)
        })
        .await;
    }
    crossterm::terminal::enable_raw_mode()?;
    crossterm::execute!(
        std::io::stdout(),
        crossterm::terminal::EnterAlternateScreen,
        crossterm::event::EnableMouseCapture
    )?;
    terminal.clear()?;
    Ok(said)
}

/// A line on the terminal the dashboard owns, between its screens (the ui draws through
/// crossterm, never with print!).
fn say(text: &str) {
    let _ = crossterm::execute!(std::io::stdout(), crossterm::style::Print(text));
}
