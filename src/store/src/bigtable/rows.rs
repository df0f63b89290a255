//! Joins `ReadRows` answers' cell chunks back into rows: a row's cells may arrive over several
//! chunks and messages (a family or qualifier named only when it changes, a large value in
//! pieces), and only a committed row counts (a reset drops what came of it so far).

use super::error::BigtableError;
use super::proto::{cell_chunk::Status, CellChunk};
use crate::{Cell, Row};

#[derive(Default)]
pub struct RowMerger {
    key: Vec<u8>,
    cells: Vec<Cell>,
    family: Vec<u8>,
    qualifier: Vec<u8>,
    /// A cell whose value is still arriving in pieces.
    partial: Option<Cell>,
    done: Vec<Row>,
}

fn bad(m: &str) -> BigtableError {
    BigtableError::Protocol(format!("ReadRows: {m}"))
}

impl RowMerger {
    pub fn push(&mut self, chunk: CellChunk) -> Result<(), BigtableError> {
        if let Some(Status::ResetRow(true)) = chunk.status {
            self.key.clear();
            self.cells.clear();
            self.partial = None;
            return Ok(());
        }
        if !chunk.row_key.is_empty() {
            if !self.key.is_empty() && chunk.row_key != self.key {
                return Err(bad("a new row began before the last was committed"));
            }
            self.key = chunk.row_key;
        } else if self.key.is_empty() {
            return Err(bad("a chunk without a row"));
        }
        if let Some(f) = chunk.family_name {
            self.family = f.value.into_bytes();
        }
        if let Some(q) = chunk.qualifier {
            self.qualifier = q.value;
        }
        let cell = match self.partial.take() {
            Some(mut c) => {
                c.value.extend_from_slice(&chunk.value);
                c
            }
            None => Cell {
                family: self.family.clone(),
                qualifier: self.qualifier.clone(),
                value: chunk.value,
                // The service counts microseconds; tsgate (as HBase) milliseconds.
                timestamp: (chunk.timestamp_micros.max(0) / 1000) as u64,
            },
        };
        if chunk.value_size > 0 {
            let mut cell = cell;
            // The whole value's size comes with its first piece.
            cell.value
                .reserve((chunk.value_size as usize).saturating_sub(cell.value.len()));
            self.partial = Some(cell);
        } else {
            self.cells.push(cell);
        }
        if let Some(Status::CommitRow(true)) = chunk.status {
            if self.partial.is_some() {
                return Err(bad("a row committed in the middle of a cell"));
            }
            let mut cells = std::mem::take(&mut self.cells);
            // Families may come in any order; qualifiers come sorted within each.
            cells.sort_by(|a, b| (&a.family, &a.qualifier).cmp(&(&b.family, &b.qualifier)));
            // Only the newest version of a column is asked for, but a family's GC may lag:
            // keep the first (newest) of any duplicates.
            cells.dedup_by(|b, a| a.family == b.family && a.qualifier == b.qualifier);
            self.done.push(Row {
                key: std::mem::take(&mut self.key),
                cells,
            });
        }
        Ok(())
    }

    /// The rows committed so far.
    pub fn take(&mut self) -> Vec<Row> {
        std::mem::take(&mut self.done)
    }

    /// Whether the stream ended cleanly (no row left half-read).
    pub fn finished(&self) -> Result<(), BigtableError> {
        if self.key.is_empty() && self.partial.is_none() {
            Ok(())
        } else {
            Err(bad("the stream ended inside a row"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bigtable::proto::{BytesValue, StringValue};

    fn chunk(key: &[u8], fam: Option<&str>, q: Option<&[u8]>, v: &[u8], size: i32) -> CellChunk {
        CellChunk {
            row_key: key.to_vec(),
            family_name: fam.map(|f| StringValue { value: f.into() }),
            qualifier: q.map(|q| BytesValue { value: q.to_vec() }),
            timestamp_micros: 5_000,
            value: v.to_vec(),
            value_size: size,
            status: None,
        }
    }

    #[test]
    fn split_values_resets_and_commits() {
        let mut m = RowMerger::default();
        m.push(chunk(b"r1", Some("t"), Some(b"a"), b"x", 0))
            .unwrap();
        m.push(CellChunk {
            status: Some(Status::ResetRow(true)),
            ..Default::default()
        })
        .unwrap();
        m.push(chunk(b"r1", Some("t"), Some(b"b"), b"he", 5))
            .unwrap();
        m.push(chunk(b"", None, None, b"llo", 0)).unwrap();
        let mut last = chunk(b"", Some("a"), Some(b"z"), b"1", 0);
        last.status = Some(Status::CommitRow(true));
        m.push(last).unwrap();
        m.finished().unwrap();
        let rows = m.take();
        assert_eq!(rows.len(), 1);
        type CellView<'a> = (&'a [u8], &'a [u8], &'a [u8], u64);
        let view: Vec<CellView> = rows[0]
            .cells
            .iter()
            .map(|c| (&c.family[..], &c.qualifier[..], &c.value[..], c.timestamp))
            .collect();
        assert_eq!(
            view,
            vec![
                (&b"a"[..], &b"z"[..], &b"1"[..], 5),
                (b"t", b"b", b"hello", 5)
            ]
        );
        m.push(chunk(b"r2", Some("t"), Some(b"a"), b"x", 0))
            .unwrap();
        assert!(
            m.finished().is_err(),
            "an uncommitted row is an error at the end"
        );
    }
}
