//! How an inspection is shown: an aligned text table for people, JSON with
//! the field names of the Rust and Python types for scripts (times in
//! seconds, as numbers; `null` where a backend does not measure).

use std::borrow::Cow;
use std::time::Duration;

use serde_json::{json, Value};
use volt_sem::inspect::Inspection;

/// `inspect --json`: the fields of `volt_sem::inspect::Inspection`.
pub fn inspection_json(i: &Inspection) -> Value {
    let secs = |d: Option<Duration>| d.map(|d| d.as_secs_f64());
    json!({
        "total": i.total,
        "available": i.available,
        "closed": i.closed,
        "holders": i.holders.iter().map(|h| json!({
            "label": h.label,
            "host": h.host,
            "pid": h.pid,
            "permits": h.permits,
            "held_for": secs(h.held_for),
            "lease_remaining": secs(h.lease_remaining),
            "token": h.token,
        })).collect::<Vec<_>>(),
        "waiters": i.waiters.iter().map(|w| json!({
            "label": w.label,
            "host": w.host,
            "pid": w.pid,
            "permits": w.permits,
            "granted": w.granted,
            "waiting_for": w.waiting_for.as_secs_f64(),
            "position": w.position,
        })).collect::<Vec<_>>(),
    })
}

/// `s` as the text output shows it: its control characters (a newline, a
/// terminal's ESC, ...) escaped as Rust writes them (`\n`, `\u{1b}`), the
/// rest as it is. A semaphore's name is anything but `/` and NUL, and a
/// Redis one's anything at all: printed raw, one could recolour or clear
/// the terminal of whoever lists the semaphores, or split a row in two.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `inspect`: a summary line, then the holders and the waiters.
pub fn inspection_table(title: &str, i: &Inspection) -> String {
    let title = printable(title);
    // After a shrink below what is held, the holders keep their permits and
    // the cut is taken as they come back: say so, rather than show more
    // held than the total as if the limit were broken.
    let above = (i.available + i.held() + i.granted_to_waiters()).saturating_sub(i.total);
    let mut out = format!(
        "{title}\ntotal {}  available {}  held {}  granted to waiters {}{}{}\n",
        i.total,
        i.available,
        i.held(),
        i.granted_to_waiters(),
        if i.closed { "  CLOSED" } else { "" },
        if above > 0 {
            format!("  ({above} held above the total: taken back as released)")
        } else {
            String::new()
        },
    );
    out.push_str(&format!("\nholders ({})\n", i.holders.len()));
    if !i.holders.is_empty() {
        // The lease and token columns only where the backend has them (Redis).
        let leased = i.holders.iter().any(|h| h.token.is_some());
        let rows = i.holders.iter().map(|h| {
            let mut row = vec![
                h.label.clone(),
                h.pid.to_string(),
                h.host.clone(),
                h.permits.to_string(),
                opt_duration(h.held_for),
            ];
            if leased {
                row.push(opt_duration(h.lease_remaining));
                row.push(h.token.map_or("-".into(), |t| t.to_string()));
            }
            row
        });
        let head = [
            "LABEL",
            "PID",
            "HOST",
            "PERMITS",
            "HELD FOR",
            "LEASE LEFT",
            "TOKEN",
        ];
        out.push_str(&table(&head[..if leased { 7 } else { 5 }], rows));
    }
    out.push_str(&format!("\nwaiters ({}, next first)\n", i.waiters.len()));
    if !i.waiters.is_empty() {
        let rows = i.waiters.iter().map(|w| {
            vec![
                w.position.to_string(),
                w.label.clone(),
                w.pid.to_string(),
                w.host.clone(),
                w.permits.to_string(),
                w.granted.to_string(),
                duration(w.waiting_for),
            ]
        });
        out.push_str(&table(
            &[
                "POS",
                "LABEL",
                "PID",
                "HOST",
                "PERMITS",
                "GRANTED",
                "WAITING FOR",
            ],
            rows,
        ));
    }
    out
}

/// Left-aligned columns, two spaces apart, no trailing spaces (control
/// characters escaped: see [`printable`]).
pub fn table(head: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let rows: Vec<Vec<String>> = rows
        .map(|r| r.iter().map(|c| printable(c).into_owned()).collect())
        .collect();
    let mut width: Vec<usize> = head.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(columns(cell));
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (k, (cell, w)) in cells.iter().zip(&width).enumerate() {
            if k > 0 {
                s.push_str("  ");
            }
            s.push_str(cell);
            s.extend(std::iter::repeat_n(' ', w - columns(cell)));
        }
        s.truncate(s.trim_end().len());
        s.push('\n');
        s
    };
    let mut out = line(head.to_vec());
    for r in &rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
    }
    out
}

/// The columns `s` takes on a terminal: 2 for a character of the East
/// Asian Wide and Fullwidth ranges (CJK ideographs, kana, Hangul syllables,
/// fullwidth forms, the emoji blocks), 0 for a combining mark, a zero-width
/// space or joiner and a variation selector, 1 for the others. The main
/// ranges of Unicode's EastAsianWidth.txt, not every code point of it (a
/// few symbols outside these blocks are wide too): enough to align a table
/// of names and labels written in Chinese, Japanese or Korean, without a
/// dependency.
pub fn columns(s: &str) -> usize {
    s.chars().map(char_columns).sum()
}

fn char_columns(c: char) -> usize {
    const ZERO: &[(u32, u32)] = &[
        (0x0300, 0x036F), // combining diacritical marks
        (0x200B, 0x200D), // zero-width space, non-joiner, joiner
        (0x20D0, 0x20FF), // combining marks for symbols
        (0xFE00, 0xFE0F), // variation selectors
        (0xFE20, 0xFE2F), // combining half marks
    ];
    const WIDE: &[(u32, u32)] = &[
        (0x1100, 0x115F),   // Hangul Jamo (leading consonants)
        (0x2E80, 0x303E),   // CJK radicals ... CJK symbols and punctuation
        (0x3041, 0x33FF),   // kana, Bopomofo, Hangul compatibility Jamo, CJK
        (0x3400, 0x4DBF),   // CJK extension A
        (0x4E00, 0x9FFF),   // CJK unified ideographs
        (0xA000, 0xA4CF),   // Yi
        (0xA960, 0xA97F),   // Hangul Jamo extended A
        (0xAC00, 0xD7A3),   // Hangul syllables
        (0xF900, 0xFAFF),   // CJK compatibility ideographs
        (0xFE10, 0xFE19),   // vertical forms
        (0xFE30, 0xFE6F),   // CJK compatibility forms, small form variants
        (0xFF00, 0xFF60),   // fullwidth forms
        (0xFFE0, 0xFFE6),   // fullwidth signs
        (0x16FE0, 0x16FE4), // ideographic symbols
        (0x17000, 0x18CFF), // Tangut, Khitan
        (0x1B000, 0x1B2FF), // kana supplement and extensions, Nushu
        (0x1F300, 0x1F64F), // pictographs, emoticons
        (0x1F900, 0x1F9FF), // supplemental symbols and pictographs
        (0x20000, 0x3FFFD), // CJK extensions B to H, compatibility supplement
    ];
    let c = c as u32;
    let within = |ranges: &[(u32, u32)]| ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&c));
    if within(ZERO) {
        0
    } else if within(WIDE) {
        2
    } else {
        1
    }
}

/// `850ms`, `12.3s`, `5m03s`, `2h05m`.
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", d.as_secs_f64())
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, ms / 60_000 % 60)
    }
}

fn opt_duration(d: Option<Duration>) -> String {
    d.map_or("-".into(), duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(Duration::from_micros(1500)), "1ms");
        assert_eq!(duration(Duration::from_millis(12_345)), "12.3s");
        assert_eq!(duration(Duration::from_secs(303)), "5m03s");
        assert_eq!(duration(Duration::from_secs(7500)), "2h05m");
    }

    #[test]
    fn tables_align() {
        let t = table(
            &["A", "BB"],
            [vec!["long".to_string(), "x".to_string()]].into_iter(),
        );
        assert_eq!(t, "A     BB\nlong  x\n");
    }

    #[test]
    fn wide_characters_take_two_columns() {
        assert_eq!(columns("gpu"), 3);
        assert_eq!(columns("池"), 2);
        assert_eq!(columns("ｇｐｕ"), 6);
        assert_eq!(columns("세마포어"), 8);
        assert_eq!(columns("e\u{301}"), 1);
        let t = table(
            &["A", "B"],
            [
                vec!["池子".to_string(), "x".to_string()],
                vec!["pool".to_string(), "y".to_string()],
            ]
            .into_iter(),
        );
        assert_eq!(t, "A     B\n池子  x\npool  y\n");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("gpu:ü 1"), "gpu:ü 1");
        assert_eq!(printable("a\nb\x1b[2J\u{7}"), "a\\nb\\u{1b}[2J\\u{7}");
        let t = table(
            &["A", "B"],
            [vec!["x\ty".to_string(), "z".to_string()]].into_iter(),
        );
        assert_eq!(t, "A     B\nx\\ty  z\n");
    }
}
