//! The terminal while watch holds it: raw mode and the alternate screen, given back however
//! watch ends — a return, an error, a panic (the panic hook restores the terminal before the
//! message is printed) or a signal (the loop sees the flag and returns). The terminal is never
//! left in raw mode or on the alternate screen.

use std::io::{Stdout, stdout};
use std::sync::Once;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// The terminal in watch's hands until dropped.
pub struct Screen {
    pub term: Term,
}

impl Screen {
    pub fn enter() -> std::io::Result<Screen> {
        static HOOK: Once = Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        enable_raw_mode()?;
        // From here on a failure gives the terminal back before it is reported.
        let entered = execute!(stdout(), EnterAlternateScreen, Hide)
            .and_then(|()| Terminal::new(CrosstermBackend::new(stdout())));
        match entered {
            Ok(term) => Ok(Screen { term }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Leave the alternate screen, show the cursor, end raw mode (each step tried whatever the
/// others did; doing it twice is harmless).
pub fn restore() {
    let _ = execute!(stdout(), Show, LeaveAlternateScreen);
    let _ = disable_raw_mode();
}
