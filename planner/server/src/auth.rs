//! Who may call the API: [`ApiAuth`], the check every protected request
//! passes, and the rule that an open endpoint is never exposed by accident.
//!
//! - [`ApiAuth::Token`]: a request must carry `Authorization: Bearer <token>`,
//!   or `Authorization: Basic` with the token as the password (any user
//!   name), which is what the Trino CLI and JDBC driver send with a
//!   password. Anything else is answered 401 with a Trino-shaped error.
//! - [`ApiAuth::None`]: no check. Right on a loopback address, and behind
//!   API Gateway with IAM authorization, where the gateway has already
//!   authenticated the caller; it must be chosen explicitly (there is no
//!   default).
//!
//! [`check_bind`] refuses `ApiAuth::None` on any address that is not
//! loopback; `squall serve` calls it before binding. Tokens are compared in
//! constant time. This module does not do TLS: put a TLS-terminating proxy
//! in front of a server reachable from other hosts.

use std::net::SocketAddr;

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use base64::Engine as _;

use crate::error::ServerError;

/// How requests are authenticated.
#[derive(Clone, PartialEq, Eq)]
pub enum ApiAuth {
    /// No authentication (loopback, or an authenticating gateway in front).
    None,
    /// A shared secret: bearer token, or basic-auth password.
    Token(String),
}

impl std::fmt::Debug for ApiAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

impl ApiAuth {
    /// Whether a request with these headers may proceed.
    pub fn allows(&self, headers: &HeaderMap) -> bool {
        let token = match self {
            Self::None => return true,
            Self::Token(t) => t.as_bytes(),
        };
        let Some(value) = headers.get(AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let Some((scheme, credentials)) = value.trim().split_once(' ') else {
            return false;
        };
        let credentials = credentials.trim();
        if scheme.eq_ignore_ascii_case("bearer") {
            constant_time_eq(credentials.as_bytes(), token)
        } else if scheme.eq_ignore_ascii_case("basic") {
            let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(credentials) else {
                return false;
            };
            match decoded.iter().position(|&b| b == b':') {
                Some(i) => constant_time_eq(&decoded[i + 1..], token),
                None => false,
            }
        } else {
            false
        }
    }
}

/// Refuses to serve without authentication on a non-loopback address.
pub fn check_bind(addr: &SocketAddr, auth: &ApiAuth) -> Result<(), ServerError> {
    if matches!(auth, ApiAuth::None) && !addr.ip().is_loopback() {
        return Err(ServerError::InsecureBind { addr: *addr });
    }
    Ok(())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn with_auth(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn token_checks() {
        let auth = ApiAuth::Token("s3cret".into());
        assert!(!auth.allows(&HeaderMap::new()));
        assert!(auth.allows(&with_auth("Bearer s3cret")));
        assert!(auth.allows(&with_auth("bearer  s3cret")));
        assert!(!auth.allows(&with_auth("Bearer s3cre")));
        assert!(!auth.allows(&with_auth("Bearer s3cretX")));
        let basic = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        assert!(auth.allows(&with_auth(&format!("Basic {basic}"))));
        let wrong = base64::engine::general_purpose::STANDARD.encode("alice:nope");
        assert!(!auth.allows(&with_auth(&format!("Basic {wrong}"))));
        assert!(!auth.allows(&with_auth("Basic !!!")));
        assert!(ApiAuth::None.allows(&HeaderMap::new()));
        assert_eq!(format!("{auth:?}"), "Token(<redacted>)");
    }

    #[test]
    fn open_endpoints_only_on_loopback() {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let local6: SocketAddr = "[::1]:8080".parse().unwrap();
        let all: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(check_bind(&local, &ApiAuth::None).is_ok());
        assert!(check_bind(&local6, &ApiAuth::None).is_ok());
        let err = check_bind(&all, &ApiAuth::None).unwrap_err().to_string();
        assert!(
            err.contains("refusing") && err.contains("SQUALL_API_TOKEN"),
            "{err}"
        );
        assert!(check_bind(&all, &ApiAuth::Token("t".into())).is_ok());
    }
}
