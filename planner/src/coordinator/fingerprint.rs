//! Fingerprints of a staged plan: what a hand-off checks before a run
//! resumes a query, so that a checkpoint is only ever restored into the
//! stages it was captured from.

use datafusion::error::Result;
use squall_core::fault::hash_text;

use super::QueryJob;
use crate::error::PlannerError;

/// Per stage: its id, layout, plan (as EXPLAIN shows it: its encoded bytes
/// are not the same from one planning to the next) and scan tasks (every
/// file's path, size and modification time), hashed (FNV-1a, stable across
/// builds and processes). Equal on a run that planned the same SQL over the
/// same data with the same settings.
pub(super) fn fingerprints(job: &QueryJob) -> Result<Vec<u64>> {
    let mut out = Vec::with_capacity(job.staged.stages.len());
    for (i, stage) in job.staged.stages.iter().enumerate() {
        let shown = datafusion::physical_plan::displayable(stage.plan.as_ref())
            .indent(true)
            .to_string();
        let scans = match job.scan_tasks.get(i) {
            Some(scans) => serde_json::to_string(scans).map_err(|e| PlannerError::Corrupt {
                what: "encoding scan tasks for a checkpoint",
                message: format!("query {}, stage s{}: {e}", job.query_id, stage.id),
            })?,
            None => String::new(),
        };
        out.push(hash_text(&[
            &stage.id.to_string(),
            &stage.layout.to_string(),
            &without_alias_numbers(&shown),
            &scans,
        ]));
    }
    Ok(out)
}

/// `text` with the numbers of DataFusion's generated aliases dropped
/// (`__common_expr_7` -> `__common_expr_`): the session numbers them
/// anew at every planning, so they differ between two plannings of the
/// same query.
fn without_alias_numbers(text: &str) -> String {
    const GENERATED: &str = "__common_expr_";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(GENERATED) {
        let end = at + GENERATED.len();
        out.push_str(&rest[..end]);
        rest = rest[end..].trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}
