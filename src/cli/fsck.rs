//! `tsgate fsck`: checks the data table (row keys, UIDs, decodable columns, duplicates,
//! uncompacted closed hours) and the UID table (forward ↔ reverse, counters); `--fix` repairs.

use super::{hex_lower, Common};
use crate::schema::compaction::merge_columns;
use crate::schema::uid_table::{
    decode_counter, id_from_bytes, UidKind, ID_FAMILY, MAXID_ROW, NAME_FAMILY,
};
use crate::store::{Mutation, RowMutations, Scan, SharedStore};
use crate::write::compactor::{Compactor, Outcome, DATA_FAMILY};
use crate::write::flusher::hour_closed;
use clap::Args;
use std::collections::{HashMap, HashSet};

#[derive(Args, Debug)]
pub struct FsckArgs {
    #[command(flatten)]
    pub common: Common,
    /// Repair what is found: delete undecodable cells and rows, compact rows with duplicates.
    #[arg(long)]
    pub fix: bool,
}

#[derive(Default, Debug)]
pub struct Report {
    pub rows: u64,
    pub cells: u64,
    pub problems: Vec<String>,
    pub fixed: u64,
    /// Closed hours still spread over several columns (not an error).
    pub uncompacted: u64,
}

pub fn run(args: &FsckArgs) -> anyhow::Result<i32> {
    let cfg = args.common.load()?;
    let store = crate::app::open_existing_store(&cfg)?;
    let report = check(&store, &cfg, args.fix)?;
    for p in &report.problems {
        println!("{p}");
    }
    println!(
        "rows={} cells={} problems={} fixed={} uncompacted_closed_rows={}",
        report.rows,
        report.cells,
        report.problems.len(),
        report.fixed,
        report.uncompacted
    );
    store.flush()?;
    Ok(
        if report.problems.is_empty() || args.fix && report.fixed as usize >= report.problems.len()
        {
            0
        } else {
            1
        },
    )
}

pub fn check(
    store: &SharedStore,
    cfg: &crate::config::Config,
    fix: bool,
) -> anyhow::Result<Report> {
    let mut r = Report::default();
    let layout = cfg.layout();
    let t = &cfg.storage.tables;
    let (known, uid_problems) = check_uids(store, &t.uid, cfg)?;
    for p in uid_problems {
        r.problems.push(p);
    }
    let now = tsgate_common::clock::now_ms() / 1000;
    let compactor =
        Compactor::new(store.clone(), &t.data).with_rollups(crate::app::rollup_build(cfg));
    for row in store.scan(
        &t.data,
        &Scan {
            families: vec![DATA_FAMILY.to_vec()],
            ..Default::default()
        },
    )? {
        let row = row?;
        r.rows += 1;
        r.cells += row.cells.len() as u64;
        let key = hex_lower(&row.key);
        let rk = match layout.parse(&row.key) {
            Ok(rk) => rk,
            Err(e) => {
                r.problems.push(format!("row {key}: {e}"));
                if fix {
                    store.mutate(
                        &t.data,
                        vec![RowMutations {
                            row: row.key.clone(),
                            mutations: vec![Mutation::DeleteRow],
                        }],
                    )?;
                    r.fixed += 1;
                }
                continue;
            }
        };
        if !rk.metric.iter().all(|&b| b == 0) {
            let mut missing = Vec::new();
            if !known[0].contains(rk.metric) {
                missing.push(format!("metric {}", hex_lower(rk.metric)));
            }
            for (k, v) in rk.tag_pairs() {
                if !known[1].contains(k) {
                    missing.push(format!("tagk {}", hex_lower(k)));
                }
                if !known[2].contains(v) {
                    missing.push(format!("tagv {}", hex_lower(v)));
                }
            }
            if !missing.is_empty() {
                r.problems.push(format!(
                    "row {key}: UIDs without a name: {}",
                    missing.join(", ")
                ));
            }
        }
        let cols = crate::store::columns(&row.cells);
        let merged = merge_columns(&cols);
        let mut needs_compaction = false;
        if !merged.errors.is_empty() {
            for (q, e) in &merged.errors {
                r.problems
                    .push(format!("row {key} column {}: {e}", hex_lower(q)));
            }
            if fix {
                let mutations = merged
                    .errors
                    .iter()
                    .map(|(q, _)| Mutation::Delete {
                        family: DATA_FAMILY.to_vec(),
                        qualifier: q.clone(),
                    })
                    .collect();
                store.mutate(
                    &t.data,
                    vec![RowMutations {
                        row: row.key.clone(),
                        mutations,
                    }],
                )?;
                r.fixed += merged.errors.len() as u64;
                needs_compaction = true;
            }
        }
        if merged.conflicting_duplicates > 0 {
            r.problems.push(format!(
                "row {key}: {} duplicate timestamps with different values (the newest write wins)",
                merged.conflicting_duplicates
            ));
            if fix {
                r.fixed += 1;
                needs_compaction = true;
            }
        }
        if merged.data_columns > 1 && hour_closed(rk.base, now) {
            r.uncompacted += 1;
            needs_compaction |= fix;
        }
        if needs_compaction && compactor.compact_row(&row.key)? == Outcome::TooFresh {
            println!("row {key}: being written right now; compact it later");
        }
    }
    Ok(r)
}

/// The UIDs the uid table assigns, per kind (indexed by `UidKind as usize`).
type KnownUids = [HashSet<Vec<u8>>; 3];

/// Checks that forward and reverse maps agree and counters cover every id; returns the known
/// UIDs per kind.
fn check_uids(
    store: &SharedStore,
    table: &str,
    cfg: &crate::config::Config,
) -> anyhow::Result<(KnownUids, Vec<String>)> {
    let mut forward: [HashMap<Vec<u8>, Vec<u8>>; 3] = Default::default(); // name -> uid
    let mut reverse: [HashMap<Vec<u8>, Vec<u8>>; 3] = Default::default(); // uid -> name
    let mut counters = [0i64; 3];
    let mut problems = Vec::new();
    for row in store.scan(table, &Scan::default())? {
        let row = row?;
        for c in &row.cells {
            for k in UidKind::ALL {
                if c.qualifier != k.qualifier() {
                    continue;
                }
                let i = k as usize;
                if c.family == ID_FAMILY && row.key == MAXID_ROW {
                    counters[i] = decode_counter(&c.value).unwrap_or_else(|| {
                        problems.push(format!("uid counter {}: not an 8-byte value", k.as_str()));
                        0
                    });
                } else if c.family == ID_FAMILY {
                    forward[i].insert(row.key.clone(), c.value.clone());
                } else if c.family == NAME_FAMILY {
                    reverse[i].insert(row.key.clone(), c.value.clone());
                }
            }
        }
    }
    let widths = [
        cfg.storage.uid_width_metric,
        cfg.storage.uid_width_tagk,
        cfg.storage.uid_width_tagv,
    ];
    let mut known: KnownUids = Default::default();
    for k in UidKind::ALL {
        let i = k as usize;
        let mut seen: HashMap<&Vec<u8>, &Vec<u8>> = HashMap::new();
        for (name, uid) in &forward[i] {
            let n = String::from_utf8_lossy(name);
            if uid.len() != widths[i] {
                problems.push(format!(
                    "uid {} {n}: id {} is not {} bytes wide",
                    k.as_str(),
                    hex_lower(uid),
                    widths[i]
                ));
            }
            if let Some(other) = seen.insert(uid, name) {
                problems.push(format!(
                    "uid {} {}: assigned to both {n} and {}",
                    k.as_str(),
                    hex_lower(uid),
                    String::from_utf8_lossy(other)
                ));
            }
            match reverse[i].get(uid) {
                Some(back) if back == name => {}
                Some(back) => problems.push(format!(
                    "uid {} {n}: reverse map of {} names {}",
                    k.as_str(),
                    hex_lower(uid),
                    String::from_utf8_lossy(back)
                )),
                None => problems.push(format!(
                    "uid {} {n}: no reverse map for {}",
                    k.as_str(),
                    hex_lower(uid)
                )),
            }
            if id_from_bytes(uid) as i64 > counters[i] {
                problems.push(format!(
                    "uid {} {n}: id {} above the counter {}",
                    k.as_str(),
                    hex_lower(uid),
                    counters[i]
                ));
            }
            known[i].insert(uid.clone());
        }
        // Reverse maps without a forward map are what a lost assignment race leaves: harmless.
    }
    Ok((known, problems))
}
