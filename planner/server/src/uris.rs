//! Absolute URIs for `nextUri` and `infoUri`, built from the request.
//!
//! Clients follow `nextUri` verbatim, so it must name the address *they*
//! used, which a server behind a proxy or API Gateway does not see
//! directly:
//!
//! ```text
//! scheme  X-Forwarded-Proto (http | https)          else http
//! host    X-Forwarded-Host, else Host               else localhost
//! prefix  X-Forwarded-Prefix (e.g. an API stage)    else ApiOptions::path_prefix
//! ```
//!
//! Only the first value of a comma-separated forwarded header counts (the
//! client-facing hop). A value with characters that have no place in a
//! host or path is ignored rather than echoed, so a crafted header cannot
//! inject text into the URIs a client will follow.

use axum::http::HeaderMap;
use axum::http::header::HOST;

/// Scheme, host and path prefix of the URIs a client should use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUri(String);

impl BaseUri {
    /// The base of a request with these headers.
    pub fn from_headers(headers: &HeaderMap, default_prefix: &str) -> Self {
        let scheme = first(headers, "x-forwarded-proto")
            .map(str::to_ascii_lowercase)
            .filter(|s| s == "http" || s == "https")
            .unwrap_or_else(|| "http".to_string());
        let host = first(headers, "x-forwarded-host")
            .filter(|h| valid_host(h))
            .or_else(|| {
                headers
                    .get(HOST)
                    .and_then(|v| v.to_str().ok())
                    .filter(|h| valid_host(h))
            })
            .unwrap_or("localhost");
        let prefix = first(headers, "x-forwarded-prefix")
            .filter(|p| valid_prefix(p))
            .unwrap_or(default_prefix);
        let prefix = prefix.trim_matches('/');
        if prefix.is_empty() {
            Self(format!("{scheme}://{host}"))
        } else {
            Self(format!("{scheme}://{host}/{prefix}"))
        }
    }

    /// `{base}/v1/statement/queued/{id}/{slug}/{token}`.
    pub fn queued(&self, id: &str, slug: &str, token: u64) -> String {
        format!("{}/v1/statement/queued/{id}/{slug}/{token}", self.0)
    }

    /// `{base}/v1/statement/executing/{id}/{slug}/{token}`.
    pub fn executing(&self, id: &str, slug: &str, token: u64) -> String {
        format!("{}/v1/statement/executing/{id}/{slug}/{token}", self.0)
    }

    /// `{base}/v1/query/{id}`: the query's summary.
    pub fn info(&self, id: &str) -> String {
        format!("{}/v1/query/{id}", self.0)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn first<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let v = headers.get(name)?.to_str().ok()?;
    let v = v.split(',').next()?.trim();
    (!v.is_empty()).then_some(v)
}

fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 255
        && h.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']'))
}

fn valid_prefix(p: &str) -> bool {
    p.len() <= 255
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '-' | '_' | '~'))
        && !p.split('/').any(|seg| seg == "..")
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn local_and_forwarded() {
        let b = BaseUri::from_headers(&headers(&[("host", "127.0.0.1:8080")]), "");
        assert_eq!(
            b.executing("q1", "s", 2),
            "http://127.0.0.1:8080/v1/statement/executing/q1/s/2"
        );
        let b = BaseUri::from_headers(
            &headers(&[
                ("host", "internal:9000"),
                ("x-forwarded-proto", "https, http"),
                (
                    "x-forwarded-host",
                    "abc.execute-api.eu-west-1.amazonaws.com",
                ),
                ("x-forwarded-prefix", "/prod/"),
            ]),
            "",
        );
        assert_eq!(
            b.as_str(),
            "https://abc.execute-api.eu-west-1.amazonaws.com/prod"
        );
        let b = BaseUri::from_headers(&headers(&[("host", "h")]), "/stage");
        assert_eq!(b.info("q"), "http://h/stage/v1/query/q");
    }

    #[test]
    fn crafted_headers_are_ignored() {
        let b = BaseUri::from_headers(
            &headers(&[
                ("host", "good:1"),
                ("x-forwarded-proto", "javascript"),
                ("x-forwarded-host", "evil/path?x"),
                ("x-forwarded-prefix", "/a/../b"),
            ]),
            "",
        );
        assert_eq!(b.as_str(), "http://good:1");
        assert_eq!(
            BaseUri::from_headers(&HeaderMap::new(), "").as_str(),
            "http://localhost"
        );
    }
}
