//! A combine stage's tasks, formed when it launches from the measured map
//! outputs of the stage it combines (the two-level exchange, see
//! `crate::two_level` for the request model).
//!
//! The map stage's accepted outputs (in task order) are cut into `a`
//! contiguous *groups* balanced by their bytes, and its partitions into `b`
//! contiguous *columns* balanced by the partitions' bytes (as
//! [`super::coalesce`] balances reduce tasks). Task `t` is one cell
//! `(g, h)` that holds rows: it reads columns `h`'s partitions from each
//! object of group `g` with one ranged GET (the restricted binding,
//! [`Grid::cell_ranges`]) and writes one object. Cells without rows get no
//! task.
//!
//! ```text
//!             column 0 (p0..p9)   column 1 (p10..p31)   ...
//!  group 0    task 0: 1 GET per object of group 0, ...
//!  (t0..t24)
//!  group 1    task b: ...
//! ```
//!
//! When the grid would not halve the requests of reading the map objects
//! directly, the combine stage *forwards*: it runs no task and its reader
//! reads the map stage's outputs as if it had no combine stage.
//! What it does not do: choose where combine stages go (the planner does).

use std::ops::Range;

use squall_core::task::{MapOutput, ObjectRange, RangeLayout};

use super::coalesce::{Sizing, add_sizes, coalesce, span};
use crate::profile::GridProfile;
use crate::two_level::{GridChoice, GridInputs, choose_grid, min_cells};

/// The grid of a launched combine stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Index (in the query's stages) of the map stage it combines.
    pub source: usize,
    /// Contiguous groups of the map stage's accepted outputs (indices in task order).
    pub groups: Vec<Range<usize>>,
    /// Contiguous partition ranges.
    pub columns: Vec<Range<usize>>,
    /// The cells holding rows, `(group, column)`, one task each; empty when forwarding.
    pub cells: Vec<(usize, usize)>,
    /// Map objects holding rows (`M`).
    pub map_objects: usize,
    /// The grid chosen and the requests it was modelled at.
    pub choice: GridChoice,
    /// Runs no task: its reader reads the map stage's outputs.
    pub forwards: bool,
}

impl Grid {
    /// The grid for `outputs`, the accepted outputs of the map stage at index
    /// `source` (`partitions` hash partitions each), sized as `sizing` sizes
    /// reduce tasks.
    pub fn form(source: usize, outputs: &[&MapOutput], partitions: usize, sizing: Sizing) -> Self {
        let mut part_sizes = Vec::new();
        add_sizes(&mut part_sizes, outputs, partitions);
        part_sizes.truncate(partitions);
        let object_sizes: Vec<u64> = outputs
            .iter()
            .map(|o| o.partitions.iter().take(partitions).map(|p| p.len).sum())
            .collect();
        let total: u64 = part_sizes.iter().sum();
        let choice = choose_grid(GridInputs {
            map_objects: object_sizes.iter().filter(|s| **s > 0).count(),
            partitions: part_sizes.iter().filter(|s| **s > 0).count(),
            reduce_tasks: sizing.tasks(total, partitions.max(1)),
            min_cells: min_cells(total, sizing),
        });
        let map_objects = object_sizes.iter().filter(|s| **s > 0).count();
        if !choice.pays() {
            return Self {
                source,
                groups: Vec::new(),
                columns: Vec::new(),
                cells: Vec::new(),
                map_objects,
                choice,
                forwards: true,
            };
        }
        let groups = coalesce(&object_sizes, exactly(choice.shape.map_groups));
        let columns = coalesce(&part_sizes, exactly(choice.shape.partition_ranges));
        let mut cells = Vec::new();
        for (g, group) in groups.iter().enumerate() {
            for (h, column) in columns.iter().enumerate() {
                if outputs[group.clone()]
                    .iter()
                    .any(|o| span(o, column).is_some_and(|r| r.len > 0))
                {
                    cells.push((g, h));
                }
            }
        }
        if cells.is_empty() {
            // Nothing to move: one task writes the (empty) object its reader reads.
            cells.push((0, 0));
        }
        Self {
            source,
            groups,
            columns,
            cells,
            map_objects,
            choice,
            forwards: false,
        }
    }

    /// Tasks the combine stage runs.
    pub fn tasks(&self) -> usize {
        self.cells.len()
    }

    /// The ranges task `task` reads: column `h`'s partitions of each object
    /// of group `g` (one range per object that holds rows there).
    pub fn cell_ranges(&self, outputs: &[&MapOutput], task: usize) -> Vec<ObjectRange> {
        let (objects, column) = self.cell(outputs, task);
        objects.iter().filter_map(|o| span(o, &column)).collect()
    }

    /// Task `task`'s cell: its group's outputs and its column's partitions
    /// (none for a task the grid does not have).
    fn cell<'a>(
        &self,
        outputs: &'a [&'a MapOutput],
        task: usize,
    ) -> (&'a [&'a MapOutput], Range<usize>) {
        let found = self.cells.get(task).and_then(|&(g, h)| {
            let (group, column) = (self.groups.get(g)?, self.columns.get(h)?);
            Some((outputs.get(group.clone())?, column.clone()))
        });
        found.unwrap_or((&[], 0..0))
    }

    /// Where each partition lies in the ranges of [`Self::cell_ranges`]
    /// (same order): the bytes and rows of each partition of column `h`, from
    /// the first one holding rows in that object on.
    pub fn cell_layout(&self, outputs: &[&MapOutput], task: usize) -> Vec<RangeLayout> {
        let (objects, column) = self.cell(outputs, task);
        objects
            .iter()
            .filter(|o| span(o, &column).is_some())
            .map(|o| {
                let parts = &o.partitions[column.clone()];
                // The span starts at the first partition holding bytes.
                let skip = parts.iter().position(|r| r.len > 0).unwrap_or(0);
                RangeLayout {
                    first: (column.start + skip) as u32,
                    lens: parts[skip..].iter().map(|r| r.len).collect(),
                    rows: parts[skip..].iter().map(|r| r.rows).collect(),
                }
            })
            .collect()
    }

    pub fn profile(&self, source: u32) -> GridProfile {
        GridProfile {
            source,
            map_objects: self.map_objects,
            // What it would have been, when it forwarded.
            map_groups: match self.forwards {
                true => self.choice.shape.map_groups,
                false => self.groups.len(),
            },
            partition_ranges: match self.forwards {
                true => self.choice.shape.partition_ranges,
                false => self.columns.len(),
            },
            direct_requests: self.choice.direct.round() as u64,
            two_level_requests: self.choice.two_level.round() as u64,
            forwarded: self.forwards,
        }
    }
}

/// A sizing that makes exactly `n` ranges (fewer only when there are fewer
/// items, or items that hold nothing).
fn exactly(n: usize) -> Sizing {
    Sizing {
        target_bytes: 1,
        min_tasks: n,
        min_task_bytes: 0,
        max_tasks: n,
    }
}

#[cfg(test)]
#[path = "grid_tests.rs"]
mod tests;
