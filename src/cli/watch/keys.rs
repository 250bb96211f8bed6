//! Watch's keys, read from the terminal (stdin, in raw mode) by watch itself: a `poll` with a
//! timeout, then the bytes there are, turned into keys. Reading them here rather than through
//! crossterm's event reader lets watch see its terminal go away: crossterm's reader retries a
//! read that returns end-of-file or EIO for ever, so a watch whose terminal was closed (a
//! killed tmux, a closed window) would spin on it and never look at its signals again. Here a
//! hang-up, an end of file or a read error is [`Input::Gone`], and the caller ends.

use std::os::fd::AsFd;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::io::Errno;

/// A key watch knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
    Enter,
    Esc,
    CtrlC,
    Char(char),
}

/// What waiting on the terminal gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    Keys(Vec<Key>),
    /// Nothing within the time (or a signal came: the caller looks at its flags).
    Nothing,
    /// The terminal is gone: hung up, closed, or it cannot be read.
    Gone,
}

/// Wait up to `timeout` for input on `fd`, and read what is there.
pub fn wait(fd: impl AsFd, timeout: Duration) -> Input {
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: timeout.as_secs() as _,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(0) => return Input::Nothing,
        Ok(_) => {}
        Err(Errno::INTR) | Err(Errno::AGAIN) => return Input::Nothing,
        Err(_) => return Input::Gone,
    }
    let revents = fds[0].revents();
    if revents.intersects(PollFlags::ERR | PollFlags::NVAL) {
        return Input::Gone;
    }
    let mut buf = [0u8; 1024];
    match rustix::io::read(&fd, &mut buf) {
        // End of file: nobody can type here any more.
        Ok(0) => Input::Gone,
        Ok(n) => Input::Keys(parse(&buf[..n])),
        Err(Errno::INTR) | Err(Errno::AGAIN) => Input::Nothing,
        Err(_) => Input::Gone,
    }
}

/// The keys in `bytes`, as one read of a terminal gives them (a terminal writes a key's whole
/// escape sequence at once, so an escape with nothing after it is the Esc key). Sequences watch
/// does not know are skipped whole.
pub fn parse(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x1b => {
                let (key, used) = escape(&bytes[i + 1..]);
                keys.extend(key);
                i += 1 + used;
            }
            b'\r' | b'\n' => {
                keys.push(Key::Enter);
                i += 1;
            }
            0x03 => {
                keys.push(Key::CtrlC);
                i += 1;
            }
            b if b < 0x80 => {
                if !b.is_ascii_control() {
                    keys.push(Key::Char(b as char));
                }
                i += 1;
            }
            _ => {
                // A UTF-8 character: as many bytes as it takes (a broken one is skipped).
                let len = (2..=4)
                    .find(|n| {
                        bytes
                            .get(i..i + n)
                            .is_some_and(|s| std::str::from_utf8(s).is_ok())
                    })
                    .unwrap_or(1);
                if let Some(c) = bytes
                    .get(i..i + len)
                    .and_then(|s| std::str::from_utf8(s).ok())
                    .and_then(|s| s.chars().next())
                {
                    keys.push(Key::Char(c));
                }
                i += len;
            }
        }
    }
    keys
}

/// The key of an escape sequence whose bytes after the escape are `rest`, and how many of them
/// it used.
fn escape(rest: &[u8]) -> (Option<Key>, usize) {
    match rest {
        [] => (Some(Key::Esc), 0),
        [b'[' | b'O', final_byte, ..] if final_byte.is_ascii_uppercase() => {
            let key = match final_byte {
                b'A' => Some(Key::Up),
                b'B' => Some(Key::Down),
                b'C' => Some(Key::Right),
                b'D' => Some(Key::Left),
                b'H' => Some(Key::Home),
                b'F' => Some(Key::End),
                _ => None,
            };
            (key, 2)
        }
        [b'[', tail @ ..] => {
            // CSI: parameters, then one final byte (0x40..=0x7e).
            let Some(end) = tail.iter().position(|b| (0x40..=0x7e).contains(b)) else {
                return (None, rest.len());
            };
            let key = match (&tail[..end], tail[end]) {
                (b"1" | b"7", b'~') => Some(Key::Home),
                (b"4" | b"8", b'~') => Some(Key::End),
                (b"5", b'~') => Some(Key::PageUp),
                (b"6", b'~') => Some(Key::PageDown),
                (_, b'A') => Some(Key::Up),
                (_, b'B') => Some(Key::Down),
                (_, b'C') => Some(Key::Right),
                (_, b'D') => Some(Key::Left),
                _ => None,
            };
            (key, 1 + end + 1)
        }
        // An escape before another key (Alt+key, or Esc typed fast before it): Esc.
        _ => (Some(Key::Esc), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_their_escape_sequences_are_read() {
        use Key::*;
        assert_eq!(parse(b"jkq?"), [Char('j'), Char('k'), Char('q'), Char('?')]);
        assert_eq!(parse(b"\x1b[A\x1b[B\x1bOC\x1b[D"), [Up, Down, Right, Left]);
        assert_eq!(parse(b"\x1b[H\x1b[F\x1b[1~\x1b[4~"), [Home, End, Home, End]);
        assert_eq!(parse(b"\x1b[5~\x1b[6~"), [PageUp, PageDown]);
        assert_eq!(parse(b"\x1b"), [Esc]);
        assert_eq!(parse(b"\x1bq"), [Esc, Char('q')]);
        assert_eq!(parse(b"\r\x03"), [Enter, CtrlC]);
        // Modified arrows (Shift+Up) are arrows; unknown sequences and controls are skipped.
        assert_eq!(parse(b"\x1b[1;2A\x1b[200~x\x01"), [Up, Char('x')]);
        assert_eq!(parse("é→".as_bytes()), [Char('é'), Char('→')]);
        assert_eq!(parse(b"\xff\x1b["), []);
    }

    #[test]
    fn a_closed_terminal_is_gone_and_silence_is_nothing() {
        let (mine, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(wait(&mine, Duration::from_millis(10)), Input::Nothing);
        std::io::Write::write_all(&mut &theirs, b"j").unwrap();
        assert_eq!(
            wait(&mine, Duration::from_millis(1000)),
            Input::Keys(vec![Key::Char('j')])
        );
        drop(theirs);
        assert_eq!(wait(&mine, Duration::from_millis(1000)), Input::Gone);
    }
}
