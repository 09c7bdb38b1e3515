//! Python's text helpers the script's behaviour depends on (`str.isspace`, `strip`, `\w`, `repr`).

use super::*;

/// `str.isspace()` (also what `\s` matches in a `str` regex).
pub(super) fn py_isspace(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{1f}'
            | ' '
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// `str.strip()` with no argument.
pub(super) fn py_strip(s: &str) -> &str {
    s.trim_matches(py_isspace)
}

/// `\w` in a `str` regex (approximated by Rust's alphanumeric property).
pub(super) fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// First code point of every run of ten Unicode decimal digits (category Nd,
/// Unicode 14.0, as Python 3.11's `\d`, `int()` and `Decimal()` accept them).
pub(super) const ND_ZEROS: [u32; 66] = [
    0x30, 0x660, 0x6f0, 0x7c0, 0x966, 0x9e6, 0xa66, 0xae6, 0xb66, 0xbe6, 0xc66, 0xce6, 0xd66,
    0xde6, 0xe50, 0xed0, 0xf20, 0x1040, 0x1090, 0x17e0, 0x1810, 0x1946, 0x19d0, 0x1a80, 0x1a90,
    0x1b50, 0x1bb0, 0x1c40, 0x1c50, 0xa620, 0xa8d0, 0xa900, 0xa9d0, 0xa9f0, 0xaa50, 0xabf0, 0xff10,
    0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450, 0x114d0, 0x11650,
    0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0, 0x16b50,
    0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0,
];

/// The value of a `\d` digit.
pub(super) fn digit_value(c: char) -> Option<u8> {
    let cp = c as u32;
    if c.is_ascii_digit() {
        return Some((cp - 0x30) as u8);
    }
    let i = ND_ZEROS.partition_point(|&z| z <= cp);
    let zero = *ND_ZEROS.get(i.checked_sub(1)?)?;
    (cp - zero < 10).then_some((cp - zero) as u8)
}

/// Whether `c` matches the lowercase ASCII letter `k` under `re.IGNORECASE`.
pub(super) fn ci_eq(c: char, k: char) -> bool {
    c.to_ascii_lowercase() == k
        || match k {
            'i' => c == '\u{130}' || c == '\u{131}',
            's' => c == '\u{17f}',
            'k' => c == '\u{212a}',
            _ => false,
        }
}

/// `^[+-]?\d+$` (`$` also matches before a final newline).
pub(super) fn int_re(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    let digits = body.strip_prefix(['+', '-']).unwrap_or(body);
    !digits.is_empty() && digits.chars().all(|c| digit_value(c).is_some())
}

/// `repr()` of a `str`. Non-printable characters outside ASCII are escaped
/// for the common cases (controls, separators, format and private-use
/// characters); unassigned code points are printed as they are.
pub(super) fn py_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        let cp = c as u32;
        if c == quote || c == '\\' {
            out.push('\\');
            out.push(c);
        } else if c == '\t' {
            out.push_str("\\t");
        } else if c == '\n' {
            out.push_str("\\n");
        } else if c == '\r' {
            out.push_str("\\r");
        } else if cp < 0x20 || cp == 0x7f {
            let _ = write!(out, "\\x{cp:02x}");
        } else if cp < 0x7f || py_printable(c) {
            out.push(c);
        } else if cp <= 0xff {
            let _ = write!(out, "\\x{cp:02x}");
        } else if cp <= 0xffff {
            let _ = write!(out, "\\u{cp:04x}");
        } else {
            let _ = write!(out, "\\U{cp:08x}");
        }
    }
    out.push(quote);
    out
}

pub(super) fn py_printable(c: char) -> bool {
    let cp = c as u32;
    let separator = py_isspace(c) && c != ' ';
    let format = matches!(
        cp,
        0xad | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x180e
            | 0x200b..=0x200f
            | 0x202a..=0x202e
            | 0x2060..=0x2064
            | 0x2066..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x13438
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0001
            | 0xe0020..=0xe007f
    );
    let private = matches!(cp, 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd);
    !(c.is_control() || separator || format || private)
}

/// `repr()` of a list of `str`.
pub(super) fn py_list(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| py_repr(s)).collect();
    format!("[{}]", parts.join(", "))
}
