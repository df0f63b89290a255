//! Between tsgate's cells and mutations and Hbase.thrift's `family:qualifier` columns.

use crate::{Cell, Mutation as StoreMutation};
use hbase_thrift::hbase::{Mutation, TCell, TRowResult};

/// `family:qualifier`; the qualifier may hold any byte (HBase splits at the first colon).
pub fn column(family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(family.len() + 1 + qualifier.len());
    c.extend_from_slice(family);
    c.push(b':');
    c.extend_from_slice(qualifier);
    c
}

/// Splits `family:qualifier`; a bare `family` is the whole family (qualifier `None`).
pub fn split_column(c: &[u8]) -> (&[u8], Option<&[u8]>) {
    match c.iter().position(|&b| b == b':') {
        Some(i) => (&c[..i], Some(&c[i + 1..])),
        None => (c, None),
    }
}

/// Families are named without a colon: HBase reads a bare name as the whole family.
pub fn family_columns(families: &[impl AsRef<[u8]>]) -> Vec<Vec<u8>> {
    families.iter().map(|f| f.as_ref().to_vec()).collect()
}

pub fn put(family: &[u8], qualifier: &[u8], value: &[u8]) -> Mutation {
    Mutation {
        is_delete: Some(false),
        column: Some(column(family, qualifier)),
        value: Some(value.to_vec()),
        write_to_w_a_l: Some(true),
    }
}

fn delete(col: Vec<u8>) -> Mutation {
    Mutation {
        is_delete: Some(true),
        column: Some(col),
        value: None,
        write_to_w_a_l: Some(true),
    }
}

/// tsgate's mutations as Thrift ones; a whole-row delete becomes one delete per family.
pub fn mutations(ms: Vec<StoreMutation>, table_families: &[Vec<u8>]) -> Vec<Mutation> {
    let mut out = Vec::with_capacity(ms.len());
    for m in ms {
        match m {
            StoreMutation::Put {
                family,
                qualifier,
                value,
            } => out.push(put(&family, &qualifier, &value)),
            StoreMutation::Delete { family, qualifier }
            | StoreMutation::DeleteOnce { family, qualifier } => {
                out.push(delete(column(&family, &qualifier)))
            }
            StoreMutation::DeleteRow => {
                out.extend(table_families.iter().map(|f| delete(f.clone())))
            }
        }
    }
    out
}

fn cell(col: &[u8], c: TCell) -> Cell {
    let (family, qualifier) = split_column(col);
    Cell {
        family: family.to_vec(),
        qualifier: qualifier.unwrap_or_default().to_vec(),
        value: c.value.unwrap_or_default(),
        timestamp: c.timestamp.unwrap_or(0).max(0) as u64,
    }
}

/// A result's cells, sorted by family then qualifier (the `columns` map sorts by the joined
/// name, which is not the same order when one family name prefixes another).
pub fn cells(r: TRowResult) -> (Vec<u8>, Vec<Cell>) {
    let mut cells: Vec<Cell> = Vec::new();
    if let Some(sorted) = r.sorted_columns {
        for tc in sorted {
            if let (Some(name), Some(c)) = (tc.column_name, tc.cell) {
                cells.push(cell(&name, c));
            }
        }
    }
    if let Some(map) = r.columns {
        for (name, c) in map {
            cells.push(cell(&name, c));
        }
    }
    cells.sort_by(|a, b| (&a.family, &a.qualifier).cmp(&(&b.family, &b.qualifier)));
    (r.row.unwrap_or_default(), cells)
}
