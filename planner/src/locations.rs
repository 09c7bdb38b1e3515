//! Where SQL may read and write: [`AllowedRoots`], checked against every
//! location a statement names before it runs.
//!
//! DataFusion lets SQL name paths in two places squall runs:
//! `CREATE EXTERNAL TABLE … LOCATION '…'` (reads, and writes through a later
//! `INSERT INTO`) and `COPY … TO '…'` (writes). URL tables (`SELECT * FROM
//! 'file.parquet'`) are off: squall never enables DataFusion's dynamic file
//! catalog, and the only table functions are `generate_series` and `range`.
//! So the engine walks each logical plan for those two nodes and refuses a
//! location outside the roots, with an error naming the location.
//!
//! ```text
//! squall.catalog.allowed_roots = ""            -> the engine's catalog location only
//!                              = "/data, s3://lake/tables" -> under these
//!                              = "*"           -> anywhere (trusted single-user use)
//! ```
//!
//! Locations are compared by path segments after normalisation: a local
//! path is made absolute, `.` and `..` are resolved, and the longest prefix
//! that exists is resolved through symlinks; an `s3://` location must name
//! the root's bucket and a key under its prefix, with no `..` segment.
//! Schemes other than local paths, `file://` and `s3://` are refused unless
//! the roots are `*`.

use crate::error::PlannerError;
use std::path::{Component, Path, PathBuf};

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{DdlStatement, LogicalPlan};

/// The locations SQL may name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedRoots {
    /// Any location.
    Anywhere,
    /// Under one of these (possibly none).
    Under(Vec<Root>),
}

/// One allowed root, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Root {
    Local(PathBuf),
    S3 { bucket: String, prefix: Vec<String> },
}

impl std::fmt::Display for Root {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Local(p) => write!(f, "{}", p.display()),
            Self::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{}", prefix.join("/")),
        }
    }
}

impl AllowedRoots {
    /// From `squall.catalog.allowed_roots` and the engine's catalog location.
    pub fn from_setting(setting: &str, catalog: Option<&str>) -> Result<Self> {
        let setting = setting.trim();
        if setting == "*" {
            return Ok(Self::Anywhere);
        }
        let listed: Vec<&str> = if setting.is_empty() {
            catalog.into_iter().collect()
        } else {
            setting
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect()
        };
        let roots = listed
            .into_iter()
            .map(|r| {
                Root::parse(r).ok_or_else(|| {
                    DataFusionError::Configuration(format!(
                        "squall.catalog.allowed_roots: {r:?} is not a folder or s3://bucket/prefix"
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self::Under(roots))
    }

    /// Refuses `location` unless it is under a root.
    pub fn check(&self, location: &str, what: &str) -> Result<()> {
        let roots = match self {
            Self::Anywhere => return Ok(()),
            Self::Under(roots) => roots,
        };
        let allowed = Root::parse(location).is_some_and(|l| roots.iter().any(|r| r.contains(&l)));
        if allowed {
            return Ok(());
        }
        let listed = if roots.is_empty() {
            "none".to_string()
        } else {
            roots
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        Err(PlannerError::OutsideRoots {
            what: what.to_string(),
            location: location.to_string(),
            roots: listed,
        }
        .into())
    }

    /// Checks every location `plan` reads or writes by name.
    pub fn check_plan(&self, plan: &LogicalPlan) -> Result<()> {
        if matches!(self, Self::Anywhere) {
            return Ok(());
        }
        let mut result = Ok(());
        plan.apply_with_subqueries(|node| {
            let r = match node {
                LogicalPlan::Ddl(DdlStatement::CreateExternalTable(t)) => t
                    .locations
                    .iter()
                    .try_for_each(|l| self.check(l, &format!("table {}", t.name))),
                LogicalPlan::Copy(copy) => self.check(&copy.output_url, "COPY TO"),
                _ => Ok(()),
            };
            match r {
                Ok(()) => Ok(TreeNodeRecursion::Continue),
                Err(e) => {
                    result = Err(e);
                    Ok(TreeNodeRecursion::Stop)
                }
            }
        })?;
        result
    }
}

impl Root {
    /// A local path (absolute or relative to the working folder), a
    /// `file://` URL or an `s3://bucket/prefix`; `None` for anything else.
    fn parse(location: &str) -> Option<Self> {
        let location = location.trim();
        if let Some(rest) = location.strip_prefix("s3://") {
            let mut parts = rest.split('/');
            let bucket = parts.next().filter(|b| !b.is_empty())?.to_string();
            let mut prefix = Vec::new();
            for part in parts {
                match part {
                    "" | "." => {}
                    ".." => return None,
                    p => prefix.push(p.to_string()),
                }
            }
            return Some(Self::S3 { bucket, prefix });
        }
        let path = match location.strip_prefix("file://") {
            Some(p) => p,
            None if location.contains("://") => return None,
            None => location,
        };
        if path.is_empty() {
            return None;
        }
        Some(Self::Local(normalise(Path::new(path))?))
    }

    fn contains(&self, other: &Root) -> bool {
        match (self, other) {
            (Self::Local(root), Self::Local(p)) => p.starts_with(root),
            (
                Self::S3 { bucket, prefix },
                Self::S3 {
                    bucket: b,
                    prefix: p,
                },
            ) => bucket == b && p.starts_with(prefix),
            _ => false,
        }
    }
}

/// Absolute, `.`/`..` resolved, and the longest existing prefix resolved
/// through symlinks (so a link inside a root cannot lead out of it).
fn normalise(path: &Path) -> Option<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().ok()?.join(path)
    };
    let mut lexical = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    // Resolve symlinks in the part that exists; keep the rest as written.
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => rest.push(name.to_os_string()),
            None => break,
        }
        if !existing.pop() {
            break;
        }
    }
    let mut out = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("data");
        std::fs::create_dir_all(root.join("t")).unwrap();
        let roots = AllowedRoots::from_setting("", Some(&root.to_string_lossy())).unwrap();
        let inside = root.join("t").to_string_lossy().to_string();
        roots.check(&inside, "table t").unwrap();
        roots
            .check(
                &format!("file://{}/new/x.parquet", root.display()),
                "COPY TO",
            )
            .unwrap();
        for outside in [
            "/etc/passwd".to_string(),
            format!("{}/../secret", root.display()),
            format!("{}-other/x", root.display()),
            "s3://bucket/x".to_string(),
            "http://example.com/x.parquet".to_string(),
            String::new(),
        ] {
            let err = roots.check(&outside, "table t").unwrap_err().to_string();
            assert!(
                err.contains("outside the allowed roots"),
                "{outside}: {err}"
            );
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
            let via_link = root.join("link").join("passwd");
            assert!(roots.check(&via_link.to_string_lossy(), "t").is_err());
        }
    }

    #[test]
    fn s3_roots_and_anywhere() {
        let roots = AllowedRoots::from_setting("s3://lake/tables/, /nowhere", None).unwrap();
        roots.check("s3://lake/tables/orders/", "t").unwrap();
        for bad in [
            "s3://lake/other",
            "s3://lake/tables/../secrets",
            "s3://lake2/tables/x",
            "s3://lake/tablesX/y",
        ] {
            assert!(roots.check(bad, "t").is_err(), "{bad}");
        }
        let none = AllowedRoots::from_setting("", None).unwrap();
        let err = none.check("/tmp/x", "COPY TO").unwrap_err().to_string();
        assert!(err.contains("(none)"), "{err}");
        AllowedRoots::from_setting("*", None)
            .unwrap()
            .check("http://anything", "t")
            .unwrap();
        assert!(AllowedRoots::from_setting("gs://x", None).is_err());
    }
}
