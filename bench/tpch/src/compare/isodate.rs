//! A port of Python's `datetime.fromisoformat`.

use super::*;

/// A parsed `datetime` (Python 3.11 `datetime.fromisoformat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct DateTime {
    pub(super) year: i64,
    pub(super) month: i64,
    pub(super) day: i64,
    pub(super) hour: i64,
    pub(super) minute: i64,
    pub(super) second: i64,
    pub(super) micro: i64,
    /// UTC offset in microseconds; None for a naive datetime.
    pub(super) offset_us: Option<i64>,
}

impl DateTime {
    /// Microseconds since 0001-01-01 00:00 of the wall-clock fields.
    pub(super) fn local_us(&self) -> i64 {
        let days = ymd_to_ord(self.year, self.month, self.day);
        ((days * 86_400 + self.hour * 3_600 + self.minute * 60 + self.second) * 1_000_000)
            + self.micro
    }

    /// `==` between datetimes: naive and aware never compare equal.
    pub(super) fn same_instant(&self, other: &DateTime) -> bool {
        match (self.offset_us, other.offset_us) {
            (None, None) => self.local_us() == other.local_us(),
            (Some(a), Some(b)) => self.local_us() - a == other.local_us() - b,
            _ => false,
        }
    }

    /// `timestamp()` of a naive datetime (local time taken as UTC).
    pub(super) fn timestamp(&self) -> f64 {
        let days = ymd_to_ord(self.year, self.month, self.day) - ymd_to_ord(1970, 1, 1);
        let secs = days * 86_400 + self.hour * 3_600 + self.minute * 60 + self.second;
        secs as f64 + self.micro as f64 / 1e6
    }
}

pub(super) fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

pub(super) fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

pub(super) const DAYS_BEFORE_MONTH: [i64; 13] =
    [0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];

pub(super) fn days_before_month(y: i64, m: i64) -> i64 {
    let d = DAYS_BEFORE_MONTH.get(m as usize).copied().unwrap_or(0);
    if m > 2 && is_leap(y) { d + 1 } else { d }
}

pub(super) fn ymd_to_ord(y: i64, m: i64, d: i64) -> i64 {
    let p = y - 1;
    p * 365 + p / 4 - p / 100 + p / 400 + days_before_month(y, m) + d
}

pub(super) fn ord_to_ymd(ordinal: i64) -> (i64, i64, i64) {
    let o = ordinal - 1;
    let n400 = o / 146_097;
    let n = o % 146_097;
    let mut year = n400 * 400 + 1;
    let n100 = n / 36_524;
    let n = n % 36_524;
    let n4 = n / 1_461;
    let n = n % 1_461;
    let n1 = n / 365;
    let n = n % 365;
    year += n100 * 100 + n4 * 4 + n1;
    if n1 == 4 || n100 == 4 {
        return (year - 1, 12, 31);
    }
    let leap = n1 == 3 && (n4 != 24 || n100 == 3);
    let mut month = (n + 50) >> 5;
    let mut preceding =
        DAYS_BEFORE_MONTH.get(month as usize).copied().unwrap_or(0) + i64::from(month > 2 && leap);
    if preceding > n {
        month -= 1;
        preceding -= days_in_month(year, month);
    }
    (year, month, n - preceding + 1)
}

pub(super) fn iso_to_ymd(
    iso_year: i64,
    iso_week: i64,
    iso_day: i64,
) -> Result<(i64, i64, i64), i32> {
    if !(1..=9999).contains(&iso_year) {
        return Err(-4);
    }
    if iso_week <= 0 || iso_week >= 53 {
        let first_weekday = (ymd_to_ord(iso_year, 1, 1) + 6) % 7;
        let has_53 = first_weekday == 3 || (first_weekday == 2 && is_leap(iso_year));
        if !(iso_week == 53 && has_53) {
            return Err(-2);
        }
    }
    if iso_day <= 0 || iso_day >= 8 {
        return Err(-3);
    }
    let first_day = ymd_to_ord(iso_year, 1, 1);
    let first_weekday = (first_day + 6) % 7;
    let mut week1_monday = first_day - first_weekday;
    if first_weekday > 3 {
        week1_monday += 7;
    }
    Ok(ord_to_ymd(week1_monday + (iso_week - 1) * 7 + iso_day - 1))
}

/// The UTF-8 bytes of the string with C's view past the end (NUL).
pub(super) struct CStr<'a>(pub(super) &'a [u8]);

impl CStr<'_> {
    pub(super) fn at(&self, i: i64) -> u8 {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.0.get(i))
            .copied()
            .unwrap_or(0)
    }

    pub(super) fn is_digit(&self, i: i64) -> bool {
        self.at(i).is_ascii_digit()
    }

    /// `parse_digits`: accumulates `n` digits into `var`.
    pub(super) fn digits(&self, p: &mut i64, n: i64, var: &mut i64) -> bool {
        for _ in 0..n {
            let c = self.at(*p);
            *p += 1;
            if !c.is_ascii_digit() {
                return false;
            }
            *var = *var * 10 + i64::from(c - b'0');
        }
        true
    }
}

/// `_find_isoformat_datetime_separator`.
pub(super) fn find_separator(s: &CStr, len: i64) -> i64 {
    if len == 7 {
        return 7;
    }
    if s.at(4) == b'-' {
        if s.at(5) == b'W' {
            if len < 8 {
                return -1;
            }
            if len > 8 && s.at(8) == b'-' {
                if len == 9 {
                    return -1;
                }
                if len > 10 && s.is_digit(10) {
                    return 8;
                }
                return 10;
            }
            return 8;
        }
        return 10;
    }
    if s.at(4) == b'W' {
        let mut idx = 7;
        while idx < len && s.is_digit(idx) {
            idx += 1;
        }
        if idx < 9 {
            return idx;
        }
        return if idx % 2 == 0 { 7 } else { 8 };
    }
    8
}

/// `parse_isoformat_date`: 0 on success.
pub(super) fn parse_iso_date(s: &CStr, len: i64, ymd: &mut (i64, i64, i64)) -> i32 {
    let mut p = 0;
    if !s.digits(&mut p, 4, &mut ymd.0) {
        return -1;
    }
    let uses_separator = s.at(p) == b'-';
    if uses_separator {
        p += 1;
    }
    if s.at(p) == b'W' {
        p += 1;
        let (mut week, mut day) = (0, 0);
        if !s.digits(&mut p, 2, &mut week) {
            return -3;
        }
        // (size_t)(p - dtstr) < len, with len == -1 wrapping to SIZE_MAX
        if len < 0 || p < len {
            if uses_separator {
                let c = s.at(p);
                p += 1;
                if c != b'-' {
                    return -2;
                }
            }
            if !s.digits(&mut p, 1, &mut day) {
                return -4;
            }
        } else {
            day = 1;
        }
        return match iso_to_ymd(ymd.0, week, day) {
            Ok(v) => {
                *ymd = v;
                0
            }
            Err(rv) => -3 + rv,
        };
    }
    if !s.digits(&mut p, 2, &mut ymd.1) {
        return -1;
    }
    if uses_separator {
        let c = s.at(p);
        p += 1;
        if c != b'-' {
            return -2;
        }
    }
    if !s.digits(&mut p, 2, &mut ymd.2) {
        return -1;
    }
    0
}

/// `parse_hh_mm_ss_ff`: (rv, [h, m, s], microseconds).
pub(super) fn parse_hh_mm_ss_ff(s: &CStr, start: i64, end: i64) -> (i32, [i64; 3], i64) {
    let mut vals = [0i64; 3];
    let mut micro = 0;
    let mut p = start;
    let mut has_separator = true;
    for i in 0..3 {
        if !s.digits(&mut p, 2, &mut vals[i]) {
            return (-3, vals, micro);
        }
        let c = s.at(p);
        p += 1;
        if i == 0 {
            has_separator = c == b':';
        }
        if p >= end {
            return (i32::from(c != 0), vals, micro);
        } else if has_separator && c == b':' {
            continue;
        } else if c == b'.' || c == b',' {
            break;
        } else if !has_separator {
            p -= 1;
        } else {
            return (-4, vals, micro);
        }
    }
    let remains = end - p;
    let to_parse = if !(0..6).contains(&remains) {
        6
    } else {
        remains
    };
    if !s.digits(&mut p, to_parse, &mut micro) {
        return (-3, vals, micro);
    }
    if (1..6).contains(&to_parse) {
        micro *= 10i64.pow((6 - to_parse) as u32);
    }
    while s.is_digit(p) {
        p += 1;
    }
    (i32::from(s.at(p) != 0), vals, micro)
}

/// `parse_isoformat_time`: (rv, [h, m, s], microseconds, tz seconds, tz microseconds).
pub(super) fn parse_iso_time(s: &CStr, start: i64, len: i64) -> (i32, [i64; 3], i64, i64, i64) {
    let end = start + len;
    let mut tz = start;
    loop {
        if matches!(s.at(tz), b'Z' | b'+' | b'-') {
            break;
        }
        tz += 1;
        if tz >= end {
            break;
        }
    }
    let (rv, hms, micro) = parse_hh_mm_ss_ff(s, start, tz);
    if rv < 0 {
        return (rv, hms, micro, 0, 0);
    }
    if tz == end {
        return (if rv == 1 { -5 } else { 0 }, hms, micro, 0, 0);
    }
    if s.at(tz) == b'Z' {
        return (if s.at(tz + 1) != 0 { -5 } else { 1 }, hms, micro, 0, 0);
    }
    let sign = if s.at(tz) == b'-' { -1 } else { 1 };
    let (rv, tz_hms, tz_micro) = parse_hh_mm_ss_ff(s, tz + 1, end);
    let offset = sign * (tz_hms[0] * 3_600 + tz_hms[1] * 60 + tz_hms[2]);
    (
        if rv != 0 { -5 } else { 1 },
        hms,
        micro,
        offset,
        tz_micro * sign,
    )
}

/// `datetime.fromisoformat(s)`; None where Python raises ValueError.
pub(super) fn fromisoformat(text: &str) -> Option<DateTime> {
    if text.chars().count() < 7 {
        return None;
    }
    let s = CStr(text.as_bytes());
    let len = text.len() as i64;
    let sep = find_separator(&s, len);
    let mut ymd = (0, 0, 0);
    let mut rv = parse_iso_date(&s, sep, &mut ymd);
    let (mut hms, mut micro, mut tz_secs, mut tz_micro) = ([0i64; 3], 0, 0, 0);
    if rv == 0 && len > sep {
        if sep < 0 {
            return None;
        }
        let lead = s.at(sep);
        let step = if lead & 0x80 == 0 {
            1
        } else {
            match lead & 0xf0 {
                0xe0 => 3,
                0xf0 => 4,
                _ => 2,
            }
        };
        let p = sep + step;
        if p > len {
            return None;
        }
        (rv, hms, micro, tz_secs, tz_micro) = parse_iso_time(&s, p, len - p);
    }
    if rv < 0 {
        return None;
    }
    let offset_us = if rv == 1 {
        if tz_secs == 0 {
            Some(0)
        } else {
            let total = tz_secs * 1_000_000 + tz_micro;
            if total <= -86_400_000_000 || total >= 86_400_000_000 {
                return None;
            }
            Some(total)
        }
    } else {
        None
    };
    let (year, month, day) = ymd;
    let date_ok = (1..=9999).contains(&year)
        && (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month);
    let [hour, minute, second] = hms;
    let time_ok = hour <= 23 && minute <= 59 && second <= 59 && micro <= 999_999;
    (date_ok && time_ok).then_some(DateTime {
        year,
        month,
        day,
        hour,
        minute,
        second,
        micro,
        offset_us,
    })
}

/// `_dt`.
pub(super) fn dt(s: &str) -> Option<DateTime> {
    fromisoformat(py_strip(s))
}
