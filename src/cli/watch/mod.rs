//! `runner watch`: every spec and every active run on one full screen, live. The reading is
//! `ops::watch` (status's report, the run records, the agent's latest line, each read again
//! only when its files changed); this module holds the terminal (`screen`), reads the keys and
//! draws (`draw`). Without a terminal it refuses at once (exit 2) and points to `runner status
//! --json`: a full-screen view has no text or JSON form.

mod draw;
mod keys;
mod screen;

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Args;

use keys::{Input, Key};

use runner::ops::watch::follow::Follow;
use runner::ops::watch::{Watch, WatchOptions, WatchView};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Show merged and discarded specs too (left out by default, as in `runner status`).
    #[arg(long)]
    pub all: bool,
}

/// How often the files are looked at: a new agent line shows within this and a draw.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// How often `status` is read again even when no stamp changed (a usage limit's pause running
/// out, a branch rewritten under runner).
const READ_ALL_EVERY: Duration = Duration::from_secs(10);

pub fn run(cwd: &Path, args: WatchArgs) -> anyhow::Result<i32> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(runner::error::RunnerError::bad_input(
            "runner watch is a full-screen view and needs a terminal (stdin and stdout)",
        )
        .with_hint("for a script or a pipe, `runner status --json` gives every spec's state (and `runner runs --json` every run's)")
        .into());
    }
    let ctx = super::open(cwd)?;
    let mut watch = Watch::open(&ctx, WatchOptions { all: args.all })?;
    let flags = Flags::default();
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&flags.stop))?;
    }
    signal_hook::flag::register(libc::SIGWINCH, Arc::clone(&flags.resized))?;
    let mut screen = screen::Screen::enter()?;
    let result = watch_loop(&mut screen.term, &mut watch, &flags);
    drop(screen);
    result
}

/// What the signals said: stop (SIGTERM, SIGINT, SIGHUP), or the window changed size.
#[derive(Default)]
struct Flags {
    stop: Arc<AtomicBool>,
    resized: Arc<AtomicBool>,
}

/// What a key asked for.
enum Asked {
    Nothing,
    Redraw,
    Quit,
}

/// The log pane: one spec's newest session, followed.
pub struct Pane {
    pub spec: String,
    pub session: Option<String>,
    pub follow: Option<Follow>,
    /// Lines scrolled back from the end (0: following the end).
    pub back: usize,
}

/// What the screen shows besides the view.
pub struct App {
    pub view: WatchView,
    /// The selected spec, by name (a row that moves keeps its selection).
    pub selected: Option<String>,
    pub pane: Option<Pane>,
    pub help: bool,
    /// The last error reading the specs (the screen keeps going).
    pub error: Option<String>,
    pub root: String,
}

fn watch_loop(
    term: &mut screen::Term,
    watch: &mut Watch<'_>,
    flags: &Flags,
) -> anyhow::Result<i32> {
    let mut app = App {
        view: watch.view(chrono::Utc::now()),
        selected: None,
        pane: None,
        help: false,
        error: None,
        root: watch.root().display().to_string(),
    };
    let (mut looked, mut read_all) = (Instant::now(), Instant::now());
    let mut dirty = true;
    loop {
        if flags.stop.load(Ordering::Relaxed) {
            return Ok(runner::error::exit::INTERRUPTED);
        }
        let view = watch.view(chrono::Utc::now());
        if view != app.view {
            app.view = view;
            dirty = true;
        }
        dirty |= app.fix_selection() | flags.resized.swap(false, Ordering::Relaxed);
        if dirty {
            term.draw(|frame| draw::draw(frame, &mut app))?;
            dirty = false;
        }
        match keys::wait(
            std::io::stdin(),
            LOOK_EVERY.saturating_sub(looked.elapsed()),
        ) {
            // The terminal was closed under watch: nobody is looking any more.
            Input::Gone => return Ok(runner::error::exit::INTERRUPTED),
            Input::Nothing => {}
            Input::Keys(keys) => {
                for key in keys {
                    match app.key(key, watch) {
                        Asked::Quit => return Ok(0),
                        Asked::Redraw => dirty = true,
                        Asked::Nothing => {}
                    }
                }
            }
        }
        if looked.elapsed() >= LOOK_EVERY {
            let all = read_all.elapsed() >= READ_ALL_EVERY;
            let error = watch.refresh(all).err().map(|e| format!("{e:#}"));
            if error != app.error {
                app.error = error;
                dirty = true;
            }
            if all {
                read_all = Instant::now();
            }
            dirty |= app.follow_pane(watch);
            looked = Instant::now();
        }
    }
}

impl App {
    fn index(&self) -> Option<usize> {
        let name = self.selected.as_deref()?;
        self.view.rows.iter().position(|r| r.spec == name)
    }

    /// Keep a selection on an existing row (the first, when the selected spec went away).
    /// Whether it moved.
    fn fix_selection(&mut self) -> bool {
        if self.index().is_some() || (self.selected.is_none() && self.view.rows.is_empty()) {
            return false;
        }
        self.selected = self.view.rows.first().map(|r| r.spec.clone());
        true
    }

    fn select(&mut self, step: isize) {
        let Some(at) = self.index() else { return };
        let last = self.view.rows.len().saturating_sub(1) as isize;
        let to = (at as isize + step).clamp(0, last) as usize;
        self.selected = self.view.rows.get(to).map(|r| r.spec.clone());
    }

    fn key(&mut self, key: Key, watch: &Watch<'_>) -> Asked {
        if key == Key::CtrlC {
            return Asked::Quit;
        }
        // The test of the panic hook (tests/it/watch.rs): debug builds only, when asked.
        if cfg!(debug_assertions)
            && key == Key::Char('!')
            && std::env::var_os("RUNNER_WATCH_TEST_PANIC").is_some()
        {
            panic!("a panic asked for by RUNNER_WATCH_TEST_PANIC");
        }
        if self.help {
            // Any key closes the keys' list; q still quits.
            self.help = false;
            return match key {
                Key::Char('q') => Asked::Quit,
                _ => Asked::Redraw,
            };
        }
        if let Some(pane) = &mut self.pane {
            match key {
                Key::Esc | Key::Char('q') | Key::Char('h') | Key::Left => self.pane = None,
                Key::Up | Key::Char('k') => pane.back += 1,
                Key::Down | Key::Char('j') => pane.back = pane.back.saturating_sub(1),
                Key::PageUp => pane.back += 20,
                Key::PageDown => pane.back = pane.back.saturating_sub(20),
                Key::End | Key::Char('G') => pane.back = 0,
                Key::Char('?') => self.help = true,
                _ => return Asked::Nothing,
            }
            return Asked::Redraw;
        }
        match key {
            Key::Char('q') => return Asked::Quit,
            Key::Up | Key::Char('k') => self.select(-1),
            Key::Down | Key::Char('j') => self.select(1),
            Key::Home | Key::Char('g') => self.select(isize::MIN / 2),
            Key::End | Key::Char('G') => self.select(isize::MAX / 2),
            Key::Enter | Key::Char('l') | Key::Right => self.open_pane(watch),
            Key::Char('?') => self.help = true,
            _ => return Asked::Nothing,
        }
        Asked::Redraw
    }

    fn open_pane(&mut self, watch: &Watch<'_>) {
        let Some(spec) = self.selected.clone() else {
            return;
        };
        let mut pane = Pane {
            spec,
            session: None,
            follow: None,
            back: 0,
        };
        if let Some((id, follow)) = watch.newest_log(&pane.spec) {
            pane.session = Some(id);
            pane.follow = Some(follow);
        }
        self.pane = Some(pane);
        self.follow_pane(watch);
    }

    /// Read what the pane's log gained, and follow into the spec's next session when one
    /// starts. Whether the pane changed.
    fn follow_pane(&mut self, watch: &Watch<'_>) -> bool {
        let Some(pane) = &mut self.pane else {
            return false;
        };
        let mut changed = false;
        let newest = watch.newest_session(&pane.spec);
        if newest.is_some()
            && newest != pane.session
            && let Some((id, follow)) = watch.newest_log(&pane.spec)
        {
            pane.session = Some(id);
            pane.follow = Some(follow);
            pane.back = 0;
            changed = true;
        }
        if let Some(follow) = &mut pane.follow {
            changed |= follow.poll();
        }
        changed
    }
}
