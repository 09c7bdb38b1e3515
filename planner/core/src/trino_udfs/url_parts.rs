//! Trino's URL functions: the parts of a URL (NULL where the text is not a
//! URL or has no such part), a query parameter's raw value, and the form
//! encoding of a query parameter (`url_encode`, `url_decode`).
//!
//! A relative reference (`/a/b?x=1`) has a path, a query and a fragment,
//! and no protocol, host or port.

use datafusion::error::Result;
use url::Url;

use super::{Arg, refused};

/// The URL `text` is, and whether it was relative (read against a base
/// whose parts are not its own).
fn parsed(text: &str) -> Option<(Url, bool)> {
    match Url::parse(text.trim()) {
        Ok(u) => Some((u, false)),
        Err(url::ParseError::RelativeUrlWithoutBase) => {
            let base = Url::parse("relative://base/").ok()?;
            base.join(text.trim()).ok().map(|u| (u, true))
        }
        Err(_) => None,
    }
}

fn absolute(args: &[Arg]) -> Option<Url> {
    parsed(args[0].text).and_then(|(u, relative)| (!relative).then_some(u))
}

pub(super) fn protocol(args: &[Arg]) -> Result<Option<String>> {
    Ok(absolute(args).map(|u| u.scheme().to_string()))
}

pub(super) fn host(args: &[Arg]) -> Result<Option<String>> {
    Ok(absolute(args).and_then(|u| u.host_str().map(str::to_string)))
}

pub(super) fn port(args: &[Arg]) -> Result<Option<i64>> {
    Ok(absolute(args).and_then(|u| u.port().map(i64::from)))
}

pub(super) fn path(args: &[Arg]) -> Result<Option<String>> {
    Ok(parsed(args[0].text).map(|(u, _)| u.path().to_string()))
}

pub(super) fn query(args: &[Arg]) -> Result<Option<String>> {
    Ok(parsed(args[0].text).and_then(|(u, _)| u.query().map(str::to_string)))
}

pub(super) fn fragment(args: &[Arg]) -> Result<Option<String>> {
    Ok(parsed(args[0].text).and_then(|(u, _)| u.fragment().map(str::to_string)))
}

/// The first value of the query parameter named by the second argument, as
/// written in the URL (`''` for a name without `=`).
pub(super) fn parameter(args: &[Arg]) -> Result<Option<String>> {
    let name = args[1].text;
    Ok(parsed(args[0].text).and_then(|(u, _)| {
        u.query()?.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then(|| value.to_string())
        })
    }))
}

/// Form encoding: letters, digits and `.-*_` kept, a space as `+`, every
/// other byte of the UTF-8 as `%XX`.
pub(super) fn encode(args: &[Arg]) -> Result<Option<String>> {
    Ok(Some(
        url::form_urlencoded::byte_serialize(args[0].text.as_bytes()).collect(),
    ))
}

pub(super) fn decode(args: &[Arg]) -> Result<Option<String>> {
    let text = args[0].text.as_bytes();
    let mut bytes = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'+' => bytes.push(b' '),
            b'%' => {
                let hex = text
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| {
                        refused(
                            "url_decode",
                            format!("'%' at byte {i} is not followed by two hex digits"),
                        )
                    })?;
                bytes.push(hex);
                i += 2;
            }
            b => bytes.push(b),
        }
        i += 1;
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| refused("url_decode", "the decoded bytes are not UTF-8"))
}
