//! The eight TPC-H tables as the generator knows them: names, row counts
//! per part (from `tpchgen`'s own arithmetic), their batch iterators, and how
//! a scale factor becomes the list of files ([`Unit`]s) to write.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Table {
    Nation,
    Region,
    Part,
    Supplier,
    PartSupp,
    Customer,
    Orders,
    LineItem,
}

impl Table {
    /// Same order as [`TABLES`].
    pub(super) const ALL: [Table; 8] = [
        Table::Nation,
        Table::Region,
        Table::Part,
        Table::Supplier,
        Table::PartSupp,
        Table::Customer,
        Table::Orders,
        Table::LineItem,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Table::Nation => "nation",
            Table::Region => "region",
            Table::Part => "part",
            Table::Supplier => "supplier",
            Table::PartSupp => "partsupp",
            Table::Customer => "customer",
            Table::Orders => "orders",
            Table::LineItem => "lineitem",
        }
    }

    /// Rows of the key tpchgen divides between parts (parts for partsupp, orders for lineitem)
    /// in part `part` of `num_parts` (1-based), and how many table rows each of them yields on
    /// average (exact except for lineitem's 1..=7 lines per order).
    pub(super) fn base_rows(self, sf: f64, part: i32, num_parts: i32) -> (u64, u64) {
        let (base, per_base) = match self {
            Table::Nation => (25, 1),
            Table::Region => (5, 1),
            Table::Part => (PartGenerator::calculate_row_count(sf, part, num_parts), 1),
            Table::Supplier => (
                SupplierGenerator::calculate_row_count(sf, part, num_parts),
                1,
            ),
            Table::PartSupp => (
                PartSuppGenerator::calculate_row_count(sf, part, num_parts),
                4,
            ),
            Table::Customer => (
                CustomerGenerator::calculate_row_count(sf, part, num_parts),
                1,
            ),
            Table::Orders => (OrderGenerator::calculate_row_count(sf, part, num_parts), 1),
            Table::LineItem => (OrderGenerator::calculate_row_count(sf, part, num_parts), 4),
        };
        (u64::try_from(base).unwrap_or(0), per_base)
    }

    /// Number of parts (files) for this table at `sf`.
    pub(super) fn num_parts(self, sf: f64, target_rows_per_file: u64) -> i32 {
        if matches!(self, Table::Nation | Table::Region) {
            return 1;
        }
        let (base, per_base) = self.base_rows(sf, 1, 1);
        let parts = (base * per_base)
            .div_ceil(target_rows_per_file.max(1))
            // Every part must get at least one key, or tpchgen would emit empty parts.
            .clamp(1, base.max(1));
        i32::try_from(parts).unwrap_or(i32::MAX)
    }

    /// Arrow batches of part `part` of `num_parts` (1-based), as tpchgen-arrow produces them.
    pub(super) fn batches(self, sf: f64, part: i32, num_parts: i32) -> Box<dyn RecordBatchReader> {
        match self {
            Table::Nation => Box::new(
                NationArrow::new(NationGenerator::new(sf, part, num_parts))
                    .with_batch_size(BATCH_ROWS),
            ),
            Table::Region => Box::new(
                RegionArrow::new(RegionGenerator::new(sf, part, num_parts))
                    .with_batch_size(BATCH_ROWS),
            ),
            Table::Part => Box::new(
                PartArrow::new(PartGenerator::new(sf, part, num_parts)).with_batch_size(BATCH_ROWS),
            ),
            Table::Supplier => Box::new(
                SupplierArrow::new(SupplierGenerator::new(sf, part, num_parts))
                    .with_batch_size(BATCH_ROWS),
            ),
            Table::PartSupp => Box::new(
                PartSuppArrow::new(PartSuppGenerator::new(sf, part, num_parts))
                    .with_batch_size(BATCH_ROWS),
            ),
            Table::Customer => Box::new(
                CustomerArrow::new(CustomerGenerator::new(sf, part, num_parts))
                    .with_batch_size(BATCH_ROWS),
            ),
            Table::Orders => Box::new(
                OrderArrow::new(OrderGenerator::new(sf, part, num_parts))
                    .with_batch_size(BATCH_ROWS),
            ),
            Table::LineItem => Box::new(
                LineItemArrow::new(LineItemGenerator::new(sf, part, num_parts))
                    .with_batch_size(BATCH_ROWS),
            ),
        }
    }
}

/// One output file: part `part` of `num_parts` (1-based, as tpchgen counts) of `table`.
#[derive(Debug, Clone)]
pub(super) struct Unit {
    pub(super) table: Table,
    pub(super) part: i32,
    pub(super) num_parts: i32,
    /// Exact, except for lineitem where it is 4 lines per order.
    pub(super) expected_rows: u64,
}

impl Unit {
    pub(super) fn file_name(&self) -> String {
        format!("part-{:04}.parquet", self.part - 1)
    }
}

pub(super) fn plan(sf: f64, target_rows_per_file: u64) -> Vec<Unit> {
    let mut units = Vec::new();
    for table in Table::ALL {
        let num_parts = table.num_parts(sf, target_rows_per_file);
        for part in 1..=num_parts {
            let (base, per_base) = table.base_rows(sf, part, num_parts);
            units.push(Unit {
                table,
                part,
                num_parts,
                expected_rows: base * per_base,
            });
        }
    }
    units
}
