//! Thrift column lists as HBase reads them (`family` = the whole family, `family:qualifier` =
//! one column) and rows as `TRowResult`s.

use hbase_thrift::hbase::{TCell, TColumn, TRowResult};
use std::collections::{BTreeMap, BTreeSet};
use tsgate_store::hbase::codec;
use tsgate_store::Cell;

/// Which cells a get or scan returns. Empty = everything.
#[derive(Default, Debug, Clone)]
pub struct Selection {
    families: BTreeSet<Vec<u8>>,
    columns: BTreeSet<(Vec<u8>, Vec<u8>)>,
}

impl Selection {
    pub fn parse(columns: &[Vec<u8>]) -> Selection {
        let mut s = Selection::default();
        for c in columns {
            match codec::split_column(c) {
                (f, None) => {
                    s.families.insert(f.to_vec());
                }
                (f, Some(q)) => {
                    s.columns.insert((f.to_vec(), q.to_vec()));
                }
            }
        }
        s
    }

    /// Families the embedded store must read (empty = all).
    pub fn families(&self) -> Vec<Vec<u8>> {
        if self.families.is_empty() && self.columns.is_empty() {
            return Vec::new();
        }
        let mut f: BTreeSet<Vec<u8>> = self.families.clone();
        f.extend(self.columns.iter().map(|(f, _)| f.clone()));
        f.into_iter().collect()
    }

    pub fn filter(&self, cells: Vec<Cell>) -> Vec<Cell> {
        if self.families.is_empty() && self.columns.is_empty() {
            return cells;
        }
        cells
            .into_iter()
            .filter(|c| {
                self.families.contains(&c.family)
                    || self
                        .columns
                        .contains(&(c.family.clone(), c.qualifier.clone()))
            })
            .collect()
    }
}

fn tcell(c: &Cell) -> TCell {
    TCell {
        value: Some(c.value.clone()),
        timestamp: Some(c.timestamp as i64),
    }
}

/// A row as HBase's Thrift server returns it: a `columns` map, or a `sortedColumns` list
/// when the scan asked for sorted columns.
pub fn row_result(key: Vec<u8>, cells: Vec<Cell>, sorted: bool) -> TRowResult {
    if sorted {
        let list = cells
            .iter()
            .map(|c| TColumn {
                column_name: Some(codec::column(&c.family, &c.qualifier)),
                cell: Some(tcell(c)),
            })
            .collect();
        TRowResult {
            row: Some(key),
            columns: None,
            sorted_columns: Some(list),
        }
    } else {
        let map: BTreeMap<Vec<u8>, TCell> = cells
            .iter()
            .map(|c| (codec::column(&c.family, &c.qualifier), tcell(c)))
            .collect();
        TRowResult {
            row: Some(key),
            columns: Some(map),
            sorted_columns: None,
        }
    }
}
