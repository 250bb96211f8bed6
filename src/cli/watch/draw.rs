//! Drawing watch's screen with ratatui: a header, the list of specs (or one spec's log pane),
//! a footer with the keys, and the keys' list over it on `?`. Every piece of plan or agent text
//! is made safe (`text::for_terminal`) and cut to its width here, before it reaches a cell.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph};

use runner::agent::output::activity::Activity;
use runner::ops::watch::Row;
use runner::ops::watch::model::clock;

use super::{App, Pane};

/// The footer of the list, and of the log pane.
pub const LIST_KEYS: &str = "↑/↓ j/k move · Enter/l log · ? keys · q quit";
pub const PANE_KEYS: &str = "↑/↓ j/k scroll · End/G follow · Esc/q back · ? keys";

/// The keys' list (`?`).
const KEYS: [(&str, &str); 9] = [
    ("↑ ↓  j k", "move the selection (in a log: scroll)"),
    (
        "g G  Home End",
        "first / last spec (in a log: G follows the end)",
    ),
    (
        "Enter  l  →",
        "open the selected spec's log (its newest session, followed)",
    ),
    ("Esc  q  ←  h", "back from a log to the list"),
    ("PgUp PgDn", "scroll a log by a page"),
    ("?", "this list (any key closes it)"),
    ("q  Ctrl-C", "quit"),
    ("", ""),
    ("", "runner status --json: the same facts for a script"),
];

/// Plan and agent text, safe for a terminal and on one line.
fn safe(text: &str) -> String {
    runner::text::for_terminal(text).replace(['\n', '\t'], " ")
}

/// `text` cut to `width` columns (counted as characters), with `…` where it was cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    if width > 0 {
        out.push('…');
    }
    out
}

fn pad(text: &str, width: usize) -> String {
    format!("{:<width$}", cut(text, width))
}

pub fn draw(frame: &mut Frame, app: &mut App) {
    let [head, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(header(app, head.width as usize)), head);
    let keys = match &mut app.pane {
        Some(pane) => {
            draw_pane(frame, body, pane);
            PANE_KEYS
        }
        None => {
            draw_list(frame, body, app);
            LIST_KEYS
        }
    };
    let footer = Span::styled(
        cut(keys, foot.width as usize),
        Style::new().add_modifier(Modifier::DIM),
    );
    frame.render_widget(Paragraph::new(footer), foot);
    if app.help {
        draw_help(frame, body);
    }
}

fn header(app: &App, width: usize) -> Line<'static> {
    let active = app.view.rows.iter().filter(|r| r.active).count();
    let mut text = format!(
        "runner watch · {} · {} · {} running",
        safe(&app.root),
        runner::text::count(app.view.rows.len(), "spec"),
        active
    );
    if app.view.hidden > 0 {
        text.push_str(&format!(
            " · {} merged or discarded not shown (--all)",
            app.view.hidden
        ));
    }
    let mut spans = vec![Span::styled(
        cut(&text, width),
        Style::new().add_modifier(Modifier::BOLD),
    )];
    if let Some(error) = &app.error {
        let left = width.saturating_sub(text.chars().count() + 3);
        spans.push(Span::raw(" · "));
        spans.push(Span::styled(
            cut(&safe(error), left),
            Style::new().fg(Color::Red),
        ));
    }
    Line::from(spans)
}

/// A status word's colour, as `runner status` colours it.
fn state_style(state: &str) -> Style {
    match state {
        "complete" | "merged" => Style::new().fg(Color::Green),
        "failed" | "blocked" | "invalid_plan" | "refused" | "missing_work" => {
            Style::new().fg(Color::Red)
        }
        "running" | "planning" | "interrupted" | "budget_exhausted" | "paused" => {
            Style::new().fg(Color::Yellow)
        }
        _ => Style::new(),
    }
}

/// `███████░░░░░` for `done` of `total` in `width` cells.
fn bar(done: usize, total: usize, width: usize) -> String {
    let full = (done.min(total) * width).checked_div(total).unwrap_or(0);
    format!("{}{}", "█".repeat(full), "░".repeat(width - full))
}

/// What a row says of its chunk: `planning`, `subtask-1-2 (attempt 2)`, `next: subtask-1-3`.
fn chunk_words(r: &Row) -> String {
    let attempt = r
        .attempt
        .map(|a| format!(" (attempt {a})"))
        .unwrap_or_default();
    match (&r.chunk, r.planning, r.next) {
        (_, true, _) => format!("planning{attempt}"),
        (Some(c), _, false) => format!("{}{attempt}", safe(c)),
        (Some(c), _, true) => format!("next: {}", safe(c)),
        (None, _, _) => String::new(),
    }
}

fn cost_words(r: &Row) -> String {
    if r.usd > 0.0 {
        format!("${}", runner::policy::budget::dollars(r.usd))
    } else if r.tokens > 0 {
        runner::text::count(r.tokens, "token")
    } else {
        String::new()
    }
}

/// The widths of the list's columns (the spec's name and the chunk count fit the longest).
struct Columns {
    name: usize,
    count: usize,
    width: usize,
}

const STATE: usize = 14;
const BAR: usize = 12;
const ELAPSED: usize = 8;
const COST: usize = 9;

impl Columns {
    fn of(rows: &[Row], width: usize) -> Columns {
        let longest = rows
            .iter()
            .map(|r| safe(&r.spec).chars().count())
            .max()
            .unwrap_or(0);
        let count = rows.iter().map(|r| count(r).len()).max().unwrap_or(0);
        Columns {
            name: longest.clamp(4, (width / 3).max(4)),
            count: count.max(5),
            width,
        }
    }

    /// One line of cells: name, state, bar and count, elapsed, cost, then the chunk in what is
    /// left.
    fn line(&self, cells: [Span<'static>; 6]) -> Line<'static> {
        let [name, state, bar, count, elapsed, cost] = cells;
        let spans = vec![
            Span::styled(format!(" {} ", pad(&name.content, self.name)), name.style),
            Span::styled(format!("{} ", pad(&state.content, STATE)), state.style),
            Span::styled(
                format!(
                    "{} {:>w$} ",
                    pad(&bar.content, BAR),
                    count.content,
                    w = self.count
                ),
                bar.style,
            ),
            Span::styled(
                format!("{:>ELAPSED$} {:>COST$}  ", elapsed.content, cost.content),
                elapsed.style,
            ),
        ];
        Line::from(spans)
    }

    fn used(&self) -> usize {
        1 + self.name + 1 + STATE + 1 + BAR + 1 + self.count + 1 + ELAPSED + 1 + COST + 2
    }

    fn header(&self) -> Line<'static> {
        let cell = |t: &str| Span::raw(t.to_string());
        let mut line = self.line([
            cell("SPEC"),
            cell("STATE"),
            cell("PROGRESS"),
            cell(""),
            cell("ELAPSED"),
            cell("COST"),
        ]);
        line.spans.push(Span::raw(cut(
            "CHUNK",
            self.width.saturating_sub(self.used()),
        )));
        line.style(Style::new().add_modifier(Modifier::DIM | Modifier::BOLD))
    }
}

/// `12/800`.
fn count(r: &Row) -> String {
    format!("{}/{}", r.done, r.total)
}

/// One spec: its line of facts, and under an active run the agent's latest line.
fn item(r: &Row, cols: &Columns) -> ListItem<'static> {
    let elapsed = r.elapsed_secs.map(clock).unwrap_or_default();
    let mut line = cols.line([
        Span::raw(safe(&r.spec)),
        Span::styled(r.state.clone(), state_style(&r.state)),
        Span::raw(bar(r.done, r.total, BAR)),
        Span::raw(count(r)),
        Span::raw(elapsed),
        Span::raw(cost_words(r)),
    ]);
    let left = cols.width.saturating_sub(cols.used());
    line.spans.push(Span::raw(cut(&chunk_words(r), left)));
    let mut lines = vec![line];
    if r.active {
        let said = r.latest.as_deref().map(safe).unwrap_or_else(|| "…".into());
        let agent = r
            .agent
            .as_deref()
            .map(|a| format!("{}: ", safe(a)))
            .unwrap_or_default();
        lines.push(Line::styled(
            cut(&format!("   ↳ {agent}{said}"), cols.width),
            Style::new().add_modifier(Modifier::DIM),
        ));
    }
    ListItem::new(Text::from(lines))
}

fn draw_list(frame: &mut Frame, area: Rect, app: &App) {
    let width = area.width as usize;
    if app.view.rows.is_empty() {
        let text = if app.view.hidden > 0 {
            "Every spec is merged or discarded: `runner watch --all` shows them."
        } else {
            "No specs yet. Start one with `runner new \"what to build\"`; it shows here as it runs."
        };
        frame.render_widget(Paragraph::new(cut(text, width)), area);
        return;
    }
    let cols = Columns::of(&app.view.rows, width);
    let [head, body] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    frame.render_widget(Paragraph::new(cols.header()), head);
    let items: Vec<ListItem> = app.view.rows.iter().map(|r| item(r, &cols)).collect();
    let selected = app
        .selected
        .as_deref()
        .and_then(|name| app.view.rows.iter().position(|r| r.spec == name));
    let list = List::new(items).highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = ListState::default().with_selected(selected);
    frame.render_stateful_widget(list, body, &mut state);
}

/// An activity as the log pane shows it: its lines, each hard-wrapped at `width` columns
/// (counted as characters), so that the pane knows exactly how many rows the end needs.
fn activity_rows(a: &Activity, width: usize, out: &mut Vec<Line<'static>>) {
    let (mark, text, style) = match a {
        Activity::Said(text) => ("", text.clone(), Style::new()),
        Activity::Tool { name, detail } if detail.is_empty() => {
            ("⚙ ", name.clone(), Style::new().fg(Color::Cyan))
        }
        Activity::Tool { name, detail } => (
            "⚙ ",
            format!("{name}: {detail}"),
            Style::new().fg(Color::Cyan),
        ),
        Activity::Result { ok: true, brief } => (
            "→ ",
            brief.clone(),
            Style::new().add_modifier(Modifier::DIM),
        ),
        Activity::Result { ok: false, brief } => ("✗ ", brief.clone(), Style::new().fg(Color::Red)),
        Activity::Note(text) => ("· ", text.clone(), Style::new().fg(Color::Yellow)),
    };
    let text = runner::text::for_terminal(&text).replace('\t', "    ");
    let width = width.max(1);
    for (n, line) in text.split('\n').enumerate() {
        let line: Vec<char> = format!("{}{line}", if n == 0 { mark } else { "  " })
            .chars()
            .collect();
        for piece in line.chunks(width) {
            out.push(Line::styled(piece.iter().collect::<String>(), style));
        }
        if line.is_empty() {
            out.push(Line::raw(""));
        }
    }
}

fn draw_pane(frame: &mut Frame, area: Rect, pane: &mut Pane) {
    let title = match &pane.session {
        Some(id) => format!(" log of {} · session {} ", safe(&pane.spec), safe(id)),
        None => format!(" log of {} ", safe(&pane.spec)),
    };
    let block = Block::new()
        .borders(Borders::TOP)
        .title(cut(&title, area.width as usize));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut rows: Vec<Line> = Vec::new();
    match &pane.follow {
        None => rows.push(Line::raw(cut(
            "No session yet: its log shows here when the agent starts.",
            width,
        ))),
        Some(f) => match f.refused() {
            Some(why) => rows.push(Line::styled(
                cut(&format!("The log is not shown: {}", safe(why)), width),
                Style::new().fg(Color::Red),
            )),
            None if f.activities().is_empty() => rows.push(Line::raw("(nothing in the log yet)")),
            None => {
                for a in f.activities() {
                    activity_rows(a, width, &mut rows);
                }
            }
        },
    }
    // The end shows unless the person scrolled back.
    let height = inner.height as usize;
    let bottom = rows.len().saturating_sub(height);
    pane.back = pane.back.min(bottom);
    let top = bottom - pane.back;
    let shown: Vec<Line> = rows.into_iter().skip(top).take(height).collect();
    frame.render_widget(Paragraph::new(Text::from(shown)), inner);
}

fn draw_help(frame: &mut Frame, area: Rect) {
    let width = 72.min(area.width);
    let height = (KEYS.len() as u16 + 2).min(area.height);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines: Vec<Line> = KEYS
        .iter()
        .map(|(keys, what)| Line::raw(format!(" {keys:<14} {what}")))
        .collect();
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" keys ")),
        popup,
    );
}
