//! Trino's `soundex`, `luhn_check` and `bit_count`.

use datafusion::error::Result;

use super::{Arg, refused};

/// `soundex(s)`: American Soundex, a letter and three digits (`Robert`
/// and `Rupert` are `R163`); characters that are not ASCII letters are
/// left out, and text without a letter is empty.
pub(super) fn soundex(args: &[Arg]) -> Result<Option<String>> {
    let code = |c: char| match c {
        'B' | 'F' | 'P' | 'V' => Some(b'1'),
        'C' | 'G' | 'J' | 'K' | 'Q' | 'S' | 'X' | 'Z' => Some(b'2'),
        'D' | 'T' => Some(b'3'),
        'L' => Some(b'4'),
        'M' | 'N' => Some(b'5'),
        'R' => Some(b'6'),
        _ => None,
    };
    let mut letters = args[0]
        .text
        .chars()
        .filter(char::is_ascii_alphabetic)
        .map(|c| c.to_ascii_uppercase());
    let Some(first) = letters.next() else {
        return Ok(Some(String::new()));
    };
    let mut out = vec![first as u8];
    let mut last = code(first);
    for c in letters {
        if out.len() == 4 {
            break;
        }
        match c {
            // H and W do not separate two letters of the same code.
            'H' | 'W' => {}
            _ => {
                let this = code(c);
                if let Some(digit) = this
                    && this != last
                {
                    out.push(digit);
                }
                last = this;
            }
        }
    }
    out.resize(4, b'0');
    Ok(Some(String::from_utf8_lossy(&out).into_owned()))
}

/// `luhn_check(s)`: whether the digits of `s` pass the Luhn checksum (card
/// numbers); text that is not all digits does not.
pub(super) fn luhn_check(args: &[Arg]) -> Result<Option<bool>> {
    let text = args[0].text;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Some(false));
    }
    let sum: u32 = text
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = u32::from(b - b'0');
            if i % 2 == 1 {
                let twice = d * 2;
                if twice > 9 { twice - 9 } else { twice }
            } else {
                d
            }
        })
        .sum();
    Ok(Some(sum.is_multiple_of(10)))
}

/// `bit_count(x, bits)`: the bits set in `x` written in two's complement
/// with `bits` bits (2 to 64).
pub(super) fn bit_count(args: &[Arg]) -> Result<Option<i64>> {
    let x: i64 = args[0]
        .text
        .parse()
        .map_err(|_| refused("bit_count", format!("not an integer: {}", args[0].text)))?;
    let bits: u32 = args[1]
        .text
        .parse()
        .ok()
        .filter(|b| (2..=64).contains(b))
        .ok_or_else(|| {
            refused(
                "bit_count",
                "Bits specified in bit_count must be between 2 and 64",
            )
        })?;
    if bits == 64 {
        return Ok(Some(i64::from(x.count_ones())));
    }
    let low = -(1_i64 << (bits - 1));
    let high = (1_i64 << (bits - 1)) - 1;
    if x < low || x > high {
        return Err(refused(
            "bit_count",
            format!(
                "Number must be representable with the bits specified. {x} cannot be represented with {bits} bits"
            ),
        ));
    }
    Ok(Some(i64::from((x & ((1_i64 << bits) - 1)).count_ones())))
}

/// Trino's `strpos(s, sub, n)`: the position (in characters, from 1) of the
/// n-th occurrence of `sub` in `s`, occurrences allowed to overlap; counted
/// from the end for a negative `n`; 0 where there are fewer; 1 for an empty
/// `sub`. `n` = 0 is refused, as Trino refuses it.
pub(super) fn strpos_instance(args: &[Arg]) -> Result<Option<i64>> {
    let (s, sub) = (args[0].text, args[1].text);
    let n: i64 = args[2].text.parse().map_err(|_| {
        refused(
            "strpos",
            format!("'instance' must be a whole number, not {}", args[2].text),
        )
    })?;
    if n == 0 {
        return Err(refused(
            "strpos",
            "'instance' must be a positive or negative number",
        ));
    }
    if sub.is_empty() {
        return Ok(Some(1));
    }
    let mut starts = s
        .char_indices()
        .map(|(i, _)| i)
        .filter(|&i| s[i..].starts_with(sub));
    let found = if n > 0 {
        starts.nth((n - 1) as usize)
    } else {
        let all: Vec<usize> = starts.collect();
        all.len()
            .checked_sub(n.unsigned_abs() as usize)
            .map(|k| all[k])
    };
    Ok(Some(
        found.map_or(0, |at| s[..at].chars().count() as i64 + 1),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::DataType;

    fn args<'a>(values: &'a [&'a str]) -> Vec<Arg<'a>> {
        values
            .iter()
            .map(|text| Arg {
                text,
                data_type: &DataType::Utf8,
            })
            .collect()
    }

    #[test]
    fn codes_answer_as_trino_documents_them() {
        for (name, code) in [
            ("Robert", "R163"),
            ("Rupert", "R163"),
            ("Rubin", "R150"),
            ("Ashcraft", "A261"),
            ("Tymczak", "T522"),
            ("Pfister", "P236"),
            ("jim", "J500"),
            ("", ""),
            ("123", ""),
        ] {
            assert_eq!(soundex(&args(&[name])).unwrap().unwrap(), code, "{name}");
        }
        for (digits, ok) in [
            ("79927398713", true),
            ("79927398714", false),
            ("4111111111111111", true),
            ("", false),
            ("4111 1111", false),
        ] {
            assert_eq!(luhn_check(&args(&[digits])).unwrap(), Some(ok), "{digits}");
        }
        for (x, bits, n) in [
            ("9", "64", 2),
            ("-7", "64", 62),
            ("-7", "8", 6),
            ("127", "8", 7),
        ] {
            assert_eq!(bit_count(&args(&[x, bits])).unwrap(), Some(n), "{x} {bits}");
        }
        let e = bit_count(&args(&["128", "8"])).unwrap_err().to_string();
        assert!(e.contains("cannot be represented with 8 bits"), "{e}");
        assert!(bit_count(&args(&["1", "65"])).is_err());
    }
}
