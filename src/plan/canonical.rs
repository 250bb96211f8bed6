//! Is a piece of JSON text exactly what runner would write for it? Then it can be kept as text
//! and written back verbatim: the same bytes as parsing it into values and pretty-printing them
//! (`plan_to_bytes`), at a fraction of the cost. Anything else — other spacing, an escape
//! serde_json would not write, a key given twice, deep nesting — is read the slow way.

/// Deeper than this is read the slow way (serde_json refuses 128 levels; a chunk starts a few
/// levels down).
const MAX_DEPTH: usize = 100;

/// Is `text` (one JSON value, already checked to be valid JSON) byte for byte what
/// `serde_json::to_vec_pretty` writes for its value at nesting `level` (two spaces a level),
/// with no key twice in an object?
pub fn is_canonical(text: &str, level: usize) -> bool {
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
    };
    scan.value(level, 0) && scan.at == scan.bytes.len()
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, what: &[u8]) -> bool {
        let ok = self.bytes[self.at..].starts_with(what);
        if ok {
            self.at += what.len();
        }
        ok
    }

    /// A line break and the indentation of `level`.
    fn newline(&mut self, level: usize) -> bool {
        if !self.eat(b"\n") {
            return false;
        }
        let end = self.at + 2 * level;
        let ok = self
            .bytes
            .get(self.at..end)
            .is_some_and(|s| s.iter().all(|&b| b == b' '));
        self.at = end;
        ok
    }

    fn value(&mut self, level: usize, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') => depth < MAX_DEPTH && self.object(level, depth + 1),
            Some(b'[') => depth < MAX_DEPTH && self.array(level, depth + 1),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.eat(b"true"),
            Some(b'f') => self.eat(b"false"),
            Some(b'n') => self.eat(b"null"),
            // With `arbitrary_precision`, serde_json keeps a number's text as it was, except
            // the exponent, which it writes `e` with its sign (`1E3` becomes `1e+3`).
            Some(b'-' | b'0'..=b'9') => {
                let token = &self.bytes[self.at..];
                let len = token
                    .iter()
                    .take_while(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .count();
                let token = &token[..len];
                self.at += len;
                match token.iter().position(|&b| b == b'e' || b == b'E') {
                    None => true,
                    Some(e) => token[e] == b'e' && matches!(token.get(e + 1), Some(b'+' | b'-')),
                }
            }
            _ => false,
        }
    }

    fn object(&mut self, level: usize, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b"}") {
            return true;
        }
        let mut keys = SeenKeys::default();
        loop {
            if !self.newline(level + 1) {
                return false;
            }
            let Some(key) = self.string() else {
                return false;
            };
            if !keys.first_time(key) {
                return false;
            }
            if !self.eat(b": ") || !self.value(level + 1, depth) {
                return false;
            }
            if !self.eat(b",") {
                return self.newline(level) && self.eat(b"}");
            }
        }
    }

    fn array(&mut self, level: usize, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b"]") {
            return true;
        }
        loop {
            if !self.newline(level + 1) || !self.value(level + 1, depth) {
                return false;
            }
            if !self.eat(b",") {
                return self.newline(level) && self.eat(b"]");
            }
        }
    }

    /// A string with only the escapes serde_json writes (`\"`, `\\`, `\b \f \n \r \t`, and
    /// `\u00xx` in lower case for the other control characters); its text between the quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b"\"") {
            return None;
        }
        let start = self.at;
        loop {
            let rest = &self.bytes[self.at..];
            let next = memchr::memchr2(b'"', b'\\', rest)?;
            self.at += next;
            if self.bytes[self.at] == b'"' {
                let text = &self.bytes[start..self.at];
                self.at += 1;
                return Some(text);
            }
            self.at += 1;
            match self.peek()? {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => self.at += 1,
                b'u' => {
                    let hex = self.bytes.get(self.at + 1..self.at + 5)?;
                    let [b'0', b'0', hi @ (b'0' | b'1'), lo] = *hex else {
                        return None;
                    };
                    let lo = match lo {
                        b'0'..=b'9' => lo - b'0',
                        b'a'..=b'f' => lo - b'a' + 10,
                        _ => return None,
                    };
                    let code = (hi - b'0') * 16 + lo;
                    // These have a short escape, which serde_json uses.
                    if matches!(code, 0x08 | 0x09 | 0x0A | 0x0C | 0x0D) {
                        return None;
                    }
                    self.at += 5;
                }
                _ => return None,
            }
        }
    }
}

/// The keys of one object seen so far. Chunks have a dozen keys, so a list is the quickest; an
/// object an agent made with thousands of keys moves to a set, so the check stays linear.
#[derive(Default)]
struct SeenKeys<'a> {
    few: Vec<&'a [u8]>,
    many: std::collections::HashSet<&'a [u8]>,
}

impl<'a> SeenKeys<'a> {
    const LIST_LIMIT: usize = 16;

    /// Records `key`; false when it was seen before.
    fn first_time(&mut self, key: &'a [u8]) -> bool {
        if self.many.is_empty() {
            if self.few.contains(&key) {
                return false;
            }
            if self.few.len() < Self::LIST_LIMIT {
                self.few.push(key);
                return true;
            }
            self.many.extend(self.few.drain(..));
        }
        self.many.insert(key)
    }
}
