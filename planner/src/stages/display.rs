//! A staged plan as EXPLAIN shows it.

use std::fmt::Write as _;

use datafusion::physical_plan::displayable;

use super::StagedPlan;

impl StagedPlan {
    /// The staged plan as text; `tasks[i]` (e.g. "4 tasks") is shown for
    /// stage `i` when given.
    pub fn display(&self, tasks: Option<&[String]>) -> String {
        let mut out = String::new();
        let last = self.stages.len().saturating_sub(1);
        for (i, s) in self.stages.iter().enumerate() {
            let inputs = if s.inputs.is_empty() {
                String::new()
            } else {
                let ids: Vec<String> = s.inputs.iter().map(|i| format!("s{i}")).collect();
                format!(" <- {}", ids.join(", "))
            };
            let tasks = tasks
                .and_then(|c| c.get(i))
                .map(|t| format!(", {t}"))
                .unwrap_or_default();
            let fin = if i == last { " (final)" } else { "" };
            let filters = if s.filter_inputs.is_empty() {
                String::new()
            } else {
                let ids: Vec<String> = s.filter_inputs.iter().map(|i| format!("s{i}")).collect();
                format!(", after key filter of {}", ids.join(", "))
            };
            let clustered = s
                .clustered_on
                .as_ref()
                .map(|c| format!(", clustered on {c}: no exchange before its aggregation"))
                .unwrap_or_default();
            let reads = self.reads_of(s.id);
            let shared = match reads > 1 {
                true => {
                    let readers: Vec<String> =
                        self.consumers(s.id).map(|r| format!("s{}", r.id)).collect();
                    format!(
                        ", read by {}: planned {reads} times, run once",
                        readers.join(", ")
                    )
                }
                false => String::new(),
            };
            let _ = writeln!(
                out,
                "Stage s{}{fin} [{}{tasks}{clustered}]{inputs}{filters}{shared}",
                s.id, s.layout
            );
            let text = displayable(s.plan.as_ref()).indent(false).to_string();
            for line in text.lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        out
    }
}
