//! Colours by role, never by widget: views ask for `crit` or `stale`, a theme says what those
//! look like. A dark theme is compiled in; `themes/*.toml` override only the roles they name;
//! `NO_COLOR` selects a mono theme. State is never shown by colour alone: views pair each
//! colour with a word or symbol.

use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

use crate::signals::Severity;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theme {
    pub ok: Style,
    pub info: Style,
    pub warn: Style,
    pub crit: Style,
    pub stale: Style,
    pub link_down: Style,
    pub run_dead: Style,
    pub billing: Style,
    pub selection: Style,
    pub header: Style,
    pub border: Style,
    pub text: Style,
    pub accent: Style,
    pub demo: Style,
}

pub const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    ok: Option<String>,
    info: Option<String>,
    warn: Option<String>,
    crit: Option<String>,
    stale: Option<String>,
    link_down: Option<String>,
    run_dead: Option<String>,
    billing: Option<String>,
    selection: Option<String>,
    header: Option<String>,
    border: Option<String>,
    text: Option<String>,
    accent: Option<String>,
    demo: Option<String>,
}

impl Theme {
    /// Everything in the terminal's own colours; emphasis by weight and reverse video only.
    pub fn mono() -> Theme {
        let plain = Style::default();
        Theme {
            ok: plain,
            info: plain,
            warn: plain.add_modifier(Modifier::BOLD),
            crit: plain.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            stale: plain.add_modifier(Modifier::DIM),
            link_down: plain.add_modifier(Modifier::BOLD),
            run_dead: plain.add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            billing: plain.add_modifier(Modifier::BOLD),
            selection: plain.add_modifier(Modifier::REVERSED),
            header: plain.add_modifier(Modifier::BOLD),
            border: plain,
            text: plain,
            accent: plain.add_modifier(Modifier::BOLD),
            demo: plain.add_modifier(Modifier::REVERSED | Modifier::BOLD),
        }
    }

    pub fn severity(&self, s: Option<Severity>) -> Style {
        match s {
            Some(Severity::Crit) => self.crit,
            Some(Severity::Warn) => self.warn,
            Some(Severity::Info) => self.info,
            None => self.ok,
        }
    }

    /// The theme to use: `NO_COLOR` wins, then the named theme (built in, or a file in
    /// `config_dir/themes/NAME.toml`), else the compiled-in dark theme.
    pub fn resolve(
        name: Option<&str>,
        no_color: bool,
        config_dir: Option<&Path>,
    ) -> Result<Theme, String> {
        let name = name.unwrap_or("dark");
        let base = Theme::parse("dark", BUILTIN[0].1)?;
        // The name is checked even where NO_COLOR wins: a typo is refused, never ignored.
        let named = Theme::named(base, name, config_dir)?;
        Ok(if no_color { Theme::mono() } else { named })
    }

    fn named(base: Theme, name: &str, config_dir: Option<&Path>) -> Result<Theme, String> {
        if let Some(dir) = config_dir {
            let path = dir.join("themes").join(format!("{name}.toml"));
            if let Ok(text) = std::fs::read_to_string(&path) {
                return base.overlay(&path.display().to_string(), &text);
            }
        }
        match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => base.overlay(n, text),
            None => Err(format!(
                "no theme named {name:?}: built in are {}, or put themes/{name}.toml in the config dir",
                BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn parse(name: &str, text: &str) -> Result<Theme, String> {
        Theme::mono().overlay(name, text)
    }

    fn overlay(mut self, name: &str, text: &str) -> Result<Theme, String> {
        let file: ThemeFile = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(0, |s| s.start);
            let line = text.get(..at).map_or(1, |b| b.matches('\n').count() + 1);
            format!("theme {name}: line {line}: {}", e.message().trim())
        })?;
        let slots: [(&Option<String>, &mut Style); 14] = [
            (&file.ok, &mut self.ok),
            (&file.info, &mut self.info),
            (&file.warn, &mut self.warn),
            (&file.crit, &mut self.crit),
            (&file.stale, &mut self.stale),
            (&file.link_down, &mut self.link_down),
            (&file.run_dead, &mut self.run_dead),
            (&file.billing, &mut self.billing),
            (&file.selection, &mut self.selection),
            (&file.header, &mut self.header),
            (&file.border, &mut self.border),
            (&file.text, &mut self.text),
            (&file.accent, &mut self.accent),
            (&file.demo, &mut self.demo),
        ];
        for (spec, style) in slots {
            if let Some(spec) = spec {
                *style = parse_style(spec).map_err(|e| format!("theme {name}: {e}"))?;
            }
        }
        Ok(self)
    }
}

/// `"fg"`, `"fg on bg"`, plus words `bold`, `dim`, `reverse`, `underline`: `"red bold"`,
/// `"black on yellow"`, `"#ff8800"`.
fn parse_style(spec: &str) -> Result<Style, String> {
    let mut style = Style::default();
    let mut words = spec.split_whitespace().peekable();
    while let Some(word) = words.next() {
        style = match word {
            "bold" => style.add_modifier(Modifier::BOLD),
            "dim" => style.add_modifier(Modifier::DIM),
            "reverse" => style.add_modifier(Modifier::REVERSED),
            "underline" => style.add_modifier(Modifier::UNDERLINED),
            "on" => {
                let bg = words
                    .next()
                    .ok_or_else(|| format!("{spec:?}: a colour must follow 'on'"))?;
                style.bg(color(bg).ok_or_else(|| format!("{spec:?}: unknown colour {bg:?}"))?)
            }
            other => style.fg(color(other)
                .ok_or_else(|| format!("{spec:?}: unknown colour or word {other:?}"))?),
        };
    }
    Ok(style)
}

fn color(name: &str) -> Option<Color> {
    name.parse::<Color>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_themes_parse_and_no_color_is_mono() {
        for (name, _) in BUILTIN {
            assert!(Theme::resolve(Some(name), false, None).is_ok(), "{name}");
        }
        assert_eq!(Theme::resolve(Some("light"), true, None), Ok(Theme::mono()));
        let err = Theme::resolve(Some("neon"), false, None).expect_err("unknown");
        assert!(err.contains("dark, light, high-contrast"), "{err}");
    }

    #[test]
    fn styles_parse_and_errors_say_where() {
        assert_eq!(
            parse_style("black on yellow bold"),
            Ok(Style::default()
                .fg(Color::Black)
                .bg(Color::Yellow)
                .add_modifier(Modifier::BOLD))
        );
        let err = Theme::mono()
            .overlay("t", "ok = \"green\"\ncrit = \"blurple\"\n")
            .expect_err("bad colour");
        assert!(err.contains("blurple"), "{err}");
        let err = Theme::mono()
            .overlay("t", "ok = \"green\"\nnope = \"red\"\n")
            .expect_err("bad key");
        assert!(err.contains("line 2") && err.contains("nope"), "{err}");
    }
}
