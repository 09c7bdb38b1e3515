//! [`BoundaryProperties`]: what an exchange boundary promises the operators
//! above it about its rows — the orderings, equivalence classes, constants
//! and constraints of DataFusion's [`EquivalenceProperties`].
//!
//! DataFusion plans every operator against its input's properties: a sort is
//! left out because the input is already ordered, a window operator records
//! which of its `PARTITION BY` keys are ordered because one of them is a
//! constant or equal to another, an aggregate streams because its keys are
//! sorted. When the planner cuts the plan at an exchange, the node that stood
//! there (a `RepartitionExec`, the input of a `CoalescePartitionsExec`, a
//! broadcast build side) is replaced by a [`super::ShuffleReadExec`]; the read
//! must report what that node reported, or the plan rebuilt around it in a
//! worker is not the plan that was made (and may fail, or silently give
//! wrong rows).
//!
//! So the read carries these properties, captured from the replaced node at
//! the cut ([`BoundaryProperties::capture`]) with what the exchange destroys
//! taken out, and the plan codec ships them to the workers. What an exchange
//! destroys ([`super::ReadMode::keeps`]):
//!
//! | read mode  | orderings                                        |
//! |------------|--------------------------------------------------|
//! | hash       | lost: a task's partition concatenates map outputs |
//! | gather     | kept: one upstream partition per read partition  |
//! | broadcast  | lost: everything is concatenated                 |
//!
//! A constant of each partition (DataFusion's heterogeneous constant) is
//! kept only when the input had a single partition, where it is a constant
//! of every row. Equivalence classes, constants the same in every
//! partition, and constraints hold of every row wherever it goes, so every
//! mode keeps them. An ordering a read cannot keep is the planner's to
//! re-establish (a sort above the read); this module only describes.

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::common::Constraints;
use datafusion::error::Result;
use datafusion::physical_expr::equivalence::{EquivalenceClass, EquivalenceGroup};
use datafusion::physical_expr::{ConstExpr, EquivalenceProperties, LexOrdering, PhysicalExpr};

/// The properties an exchange boundary reports to the operators above it.
#[derive(Debug, Clone, Default)]
pub struct BoundaryProperties {
    /// Orderings every output partition keeps.
    pub orderings: Vec<LexOrdering>,
    /// Sets of expressions known to have the same value in every row.
    pub classes: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    /// Expressions known to be constant, and whether across partitions.
    pub constants: Vec<ConstExpr>,
    /// Uniqueness and primary-key constraints.
    pub constraints: Constraints,
}

/// What an exchange keeps of its input's properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keeps {
    /// Each output partition is one input partition (or a part of one), in order.
    pub orderings: bool,
    /// Each output partition holds rows of one input partition only.
    pub partition_constants: bool,
}

impl BoundaryProperties {
    /// What of `eq` still holds on the far side of an exchange that keeps `keeps`.
    pub fn capture(eq: &EquivalenceProperties, keeps: Keeps) -> Self {
        let mut eq = eq.clone();
        if !keeps.orderings {
            eq.clear_orderings();
        }
        if !keeps.partition_constants {
            eq.clear_per_partition_constants();
        }
        Self {
            orderings: eq.oeq_class().iter().cloned().collect(),
            classes: eq
                .eq_group()
                .iter()
                .filter(|c| c.len() > 1)
                .map(|c| c.iter().cloned().collect())
                .collect(),
            constants: eq.constants(),
            constraints: eq.constraints().clone(),
        }
    }

    /// True when nothing is known.
    pub fn is_empty(&self) -> bool {
        self.orderings.is_empty()
            && self.classes.is_empty()
            && self.constants.is_empty()
            && self.constraints.is_empty()
    }

    /// DataFusion's equivalence properties over `schema`. The same
    /// properties always give the same result: the read the coordinator
    /// plans with and the one a worker decodes are built alike.
    pub fn equivalence_properties(&self, schema: &SchemaRef) -> Result<EquivalenceProperties> {
        let mut eq = EquivalenceProperties::new(Arc::clone(schema));
        let classes = self
            .classes
            .iter()
            .map(|c| EquivalenceClass::new(c.iter().cloned()));
        eq.add_equivalence_group(EquivalenceGroup::new(classes))?;
        eq.add_constants(self.constants.iter().cloned())?;
        eq.add_orderings(self.orderings.iter().cloned());
        eq.set_constraints(self.constraints.clone());
        Ok(eq)
    }
}

impl fmt::Display for BoundaryProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let orderings: Vec<String> = self.orderings.iter().map(|o| format!("[{o}]")).collect();
        let classes: Vec<String> = self
            .classes
            .iter()
            .map(|c| {
                let members: Vec<String> = c.iter().map(|e| e.to_string()).collect();
                format!("[{}]", members.join(" = "))
            })
            .collect();
        let constants: Vec<String> = self.constants.iter().map(|c| c.to_string()).collect();
        write!(
            f,
            "order=[{}], eq=[{}], const=[{}], {}",
            orderings.join(", "),
            classes.join(", "),
            constants.join(", "),
            self.constraints
        )
    }
}

#[cfg(test)]
#[path = "boundary/tests.rs"]
mod tests;
