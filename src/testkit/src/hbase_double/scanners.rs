//! The double's open scanners: each walks its table in row order, applies the filter the way
//! HBase does, and hands out up to `nbRows` results per call, rows wider than `batchSize`
//! cut into pieces as HBase's scanner batching does.

use super::columns::Selection;
use hbase_thrift::hbase::TRowResult;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use tsgate_store::hbase::filter::JavaRowRegex;
use tsgate_store::{Cell, RowStream};

pub struct OpenScanner {
    pub rows: RowStream,
    pub filter: Option<JavaRowRegex>,
    /// The `QualifierFilter` prefixes, ORed (empty: every cell).
    pub qualifier_prefixes: Vec<Vec<u8>>,
    pub selection: Selection,
    /// Cells per result; 0 = whole rows.
    pub batch: usize,
    pub sorted: bool,
    /// The rest of a row cut by `batch`.
    pub pending: Option<(Vec<u8>, VecDeque<Cell>)>,
}

impl OpenScanner {
    pub fn next_results(&mut self, nb_rows: usize) -> Result<Vec<TRowResult>, String> {
        let mut out = Vec::new();
        while out.len() < nb_rows {
            if let Some((key, cells)) = &mut self.pending {
                let n = if self.batch == 0 {
                    cells.len()
                } else {
                    self.batch.min(cells.len())
                };
                let piece: Vec<Cell> = cells.drain(..n).collect();
                out.push(super::columns::row_result(key.clone(), piece, self.sorted));
                if cells.is_empty() {
                    self.pending = None;
                }
                continue;
            }
            let Some(row) = self.rows.next() else { break };
            let row = row.map_err(|e| e.to_string())?;
            if self.filter.as_ref().is_some_and(|f| !f.matches(&row.key)) {
                continue;
            }
            let mut cells = self.selection.filter(row.cells);
            cells
                .retain(|c| tsgate_store::qualifier_passes(&self.qualifier_prefixes, &c.qualifier));
            if !cells.is_empty() {
                self.pending = Some((row.key, cells.into()));
            }
        }
        Ok(out)
    }
}

#[derive(Default)]
pub struct Scanners {
    next: AtomicI32,
    open: Mutex<HashMap<i32, Arc<Mutex<OpenScanner>>>>,
}

impl Scanners {
    pub fn add(&self, s: OpenScanner) -> i32 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.open.lock().insert(id, Arc::new(Mutex::new(s)));
        id
    }

    pub fn get(&self, id: i32) -> Option<Arc<Mutex<OpenScanner>>> {
        self.open.lock().get(&id).cloned()
    }

    pub fn close(&self, id: i32) -> bool {
        self.open.lock().remove(&id).is_some()
    }

    pub fn len(&self) -> usize {
        self.open.lock().len()
    }
}
