//! Trino's `format(fmt, args...)`: Java's `String.format` for the
//! conversions SQL users write: `%s` (text), `%d` (integers), `%f` and
//! `%e` (numbers, precision `.N`, 6 by default), `%x` / `%X` / `%o`
//! (integers in hex or octal), `%b`, `%c`, `%%` and `%n`; flags `-` (left
//! justified), `0` (zero padded), `,` (grouped thousands), `+` and ` `;
//! a width; and argument indices (`%2$s`). Arguments come as their text; a
//! conversion an argument does not fit (`%d` of `1.5`) or another
//! conversion is refused, naming the format.

use datafusion::error::{DataFusionError, Result};

use super::Arg;

pub(super) fn format(args: &[Arg]) -> Result<Option<String>> {
    let (fmt, values) = match args.split_first() {
        Some((f, v)) => (f.text, v),
        None => return Ok(None),
    };
    let refuse =
        |why: String| DataFusionError::Execution(format!("format: {why}, in the format '{fmt}'"));
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    let mut next = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        let conversion = loop {
            match chars.next() {
                Some(c) if c.is_ascii_alphabetic() || c == '%' => break c,
                Some(c) => spec.push(c),
                None => return Err(refuse("a % without a conversion".into())),
            }
        };
        match conversion {
            '%' => {
                out.push('%');
                continue;
            }
            'n' => {
                out.push('\n');
                continue;
            }
            _ => {}
        }
        // [index$][flags][width][.precision]
        let (index, rest) = match spec.split_once('$') {
            Some((i, rest)) => {
                let i: usize = i
                    .parse()
                    .map_err(|_| refuse(format!("argument index '{i}'")))?;
                (
                    i.checked_sub(1)
                        .ok_or_else(|| refuse("argument index 0".into()))?,
                    rest,
                )
            }
            None => {
                next += 1;
                (next - 1, spec.as_str())
            }
        };
        let flags: String = rest.chars().take_while(|c| "-0,+ #".contains(*c)).collect();
        let rest = &rest[flags.len()..];
        let (width, precision) = match rest.split_once('.') {
            Some((w, p)) => (w, Some(p)),
            None => (rest, None),
        };
        let width: usize = match width {
            "" => 0,
            w => w.parse().map_err(|_| refuse(format!("width '{w}'")))?,
        };
        let precision: Option<usize> = match precision {
            None => None,
            Some(p) => Some(p.parse().map_err(|_| refuse(format!("precision '{p}'")))?),
        };
        let value = values
            .get(index)
            .ok_or_else(|| refuse(format!("no argument {} for %{conversion}", index + 1)))?
            .text;
        let integer = || -> Result<i128> {
            value
                .trim()
                .parse::<i128>()
                .map_err(|_| refuse(format!("%{conversion} needs an integer, not '{value}'")))
        };
        let number = || -> Result<f64> {
            value
                .trim()
                .parse::<f64>()
                .map_err(|_| refuse(format!("%{conversion} needs a number, not '{value}'")))
        };
        let grouped = flags.contains(',');
        let signed = |text: String, negative: bool| match (
            negative,
            flags.contains('+'),
            flags.contains(' '),
        ) {
            (true, _, _) => format!("-{text}"),
            (false, true, _) => format!("+{text}"),
            (false, false, true) => format!(" {text}"),
            _ => text,
        };
        let text = match conversion {
            's' | 'S' => {
                let t: String = match precision {
                    Some(p) => value.chars().take(p).collect(),
                    None => value.to_string(),
                };
                if conversion == 'S' {
                    t.to_uppercase()
                } else {
                    t
                }
            }
            'b' | 'B' => value.to_string(),
            'c' => value.chars().next().map(String::from).unwrap_or_default(),
            'd' => {
                let v = integer()?;
                let digits = v.unsigned_abs().to_string();
                signed(if grouped { group(&digits) } else { digits }, v < 0)
            }
            'x' | 'X' | 'o' => {
                let v = integer()?;
                match conversion {
                    'x' => format!("{:x}", v as i64),
                    'X' => format!("{:X}", v as i64),
                    _ => format!("{:o}", v as i64),
                }
            }
            'f' => {
                let v = number()?;
                let t = fixed(v.abs(), precision.unwrap_or(6));
                let t = match (grouped, t.split_once('.')) {
                    (true, Some((whole, frac))) => format!("{}.{frac}", group(whole)),
                    (true, None) => group(&t),
                    (false, _) => t,
                };
                signed(t, v.is_sign_negative() && v != 0.0)
            }
            'e' | 'E' => {
                let v = number()?;
                let t = format!("{:.*e}", precision.unwrap_or(6), v.abs());
                // Java writes the exponent with a sign and two digits.
                let t = match t.split_once('e') {
                    Some((m, e)) => {
                        let e: i32 = e.parse().unwrap_or(0);
                        format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
                    }
                    None => t,
                };
                let t = if conversion == 'E' {
                    t.to_uppercase()
                } else {
                    t
                };
                signed(t, v.is_sign_negative() && v != 0.0)
            }
            other => {
                return Err(refuse(format!(
                    "conversion %{other} is not one squall formats"
                )));
            }
        };
        let pad = width.saturating_sub(text.chars().count());
        if flags.contains('-') {
            out.push_str(&text);
            out.extend(std::iter::repeat_n(' ', pad));
        } else if flags.contains('0')
            && matches!(conversion, 'd' | 'f' | 'e' | 'E' | 'x' | 'X' | 'o')
        {
            let (sign, digits) = match text.strip_prefix(['-', '+', ' ']) {
                Some(d) => (&text[..1], d),
                None => ("", text.as_str()),
            };
            out.push_str(sign);
            out.extend(std::iter::repeat_n('0', pad));
            out.push_str(digits);
        } else {
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(&text);
        }
    }
    Ok(Some(out))
}

/// `v` (not negative) with `precision` decimals, rounded half up from its
/// shortest decimal form, as Java's `%f` rounds (`%.1f` of 0.15 is 0.2,
/// of 1000.25 is 1000.3, where Rust's and C's give 0.1 and 1000.2).
fn fixed(v: f64, precision: usize) -> String {
    if !v.is_finite() {
        return if v.is_nan() { "NaN" } else { "Infinity" }.to_string();
    }
    let shortest = format!("{v}");
    let (whole, fraction) = shortest.split_once('.').unwrap_or((&shortest, ""));
    if fraction.len() <= precision {
        return match precision {
            0 => whole.to_string(),
            p => format!("{whole}.{fraction:0<p$}"),
        };
    }
    let mut digits: Vec<u8> = whole.bytes().chain(fraction[..precision].bytes()).collect();
    if fraction.as_bytes()[precision] >= b'5' {
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if digits[i] == b'9' {
                digits[i] = b'0';
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let text = String::from_utf8(digits).unwrap_or_default();
    let split = text.len() - precision;
    match precision {
        0 => text,
        _ => format!("{}.{}", &text[..split], &text[split..]),
    }
}

/// Digits grouped by thousands with commas.
fn group(digits: &str) -> String {
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::DataType;

    fn format(parts: &[&str]) -> Result<String, String> {
        let args: Vec<super::Arg> = parts
            .iter()
            .map(|text| super::Arg {
                text,
                data_type: &DataType::Utf8,
            })
            .collect();
        super::format(&args)
            .map(|s| s.unwrap_or_default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn java_conversions() {
        assert_eq!(format(&["%s-%d", "a", "3"]).unwrap(), "a-3");
        assert_eq!(format(&["%.2f", "3.14159"]).unwrap(), "3.14");
        assert_eq!(format(&["%,d", "1234567"]).unwrap(), "1,234,567");
        assert_eq!(format(&["%,.2f", "-1234567.891"]).unwrap(), "-1,234,567.89");
        assert_eq!(
            format(&["%05d|%-4s|%4s", "42", "ab", "cd"]).unwrap(),
            "00042|ab  |  cd"
        );
        assert_eq!(
            format(&["%2$s %1$s", "world", "hello"]).unwrap(),
            "hello world"
        );
        assert_eq!(
            format(&["%x %X %o", "255", "255", "8"]).unwrap(),
            "ff FF 10"
        );
        assert_eq!(format(&["%e", "12345.678"]).unwrap(), "1.234568e+04");
        assert_eq!(format(&["100%% %+d", "5"]).unwrap(), "100% +5");
        assert_eq!(format(&["%f", "2"]).unwrap(), "2.000000");
        assert_eq!(
            format(&["%.1f %.1f %.0f %.2f", "0.15", "1000.25", "9.5", "-0.999"]).unwrap(),
            "0.2 1000.3 10 -1.00"
        );
        let err = format(&["%d", "1.5"]).unwrap_err();
        assert!(
            err.contains("format: %d needs an integer, not '1.5'"),
            "{err}"
        );
        assert!(super::super::is_argument_error(&err), "{err}");
        assert!(
            format(&["%s %s", "a"])
                .unwrap_err()
                .contains("no argument 2")
        );
        assert!(format(&["%q", "a"]).unwrap_err().contains("%q"));
    }
}
