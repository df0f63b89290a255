//! Realtime metadata: a background thread fed (through a channel) with every series the
//! first time this process resolves it. For each it creates the UIDMetas
//! (`meta.enable_realtime_uid`), the TSMeta (`enable_tsuid_tracking` + `enable_realtime_ts`)
//! and files the series into the enabled trees (`tree.enable_processing`). New series are
//! rare, so none of this sits on the write path: the resolver only sends the TSUID.
//!
//! Differences from OpenTSDB, on purpose: UIDMetas are created when a UID is first used by a
//! series of this process rather than inside UID assignment; every step is idempotent
//! (compare-and-set on absence), so a restart re-checking its series is harmless and events
//! queued at shutdown that are lost are redone by the next process.

use super::{tsmeta, uidmeta, MetaCtx};
use crate::meta::tree::{builder, TreeCache};
use crossbeam_channel::{Receiver, Sender};
use std::collections::HashSet;
use std::sync::Arc;
use tsgate_schema::uid_table::UidKind;

/// True when any realtime feature needs to hear about new series.
pub fn wanted(ctx: &MetaCtx) -> bool {
    let c = &ctx.config;
    c.enable_realtime_uid
        || (c.enable_tsuid_tracking && c.enable_realtime_ts)
        || ctx.tree_processing
}

/// Starts the worker; returns the sender the series resolver feeds.
pub fn start(ctx: Arc<MetaCtx>, trees: Arc<TreeCache>) -> std::io::Result<Sender<Box<[u8]>>> {
    let (tx, rx) = crossbeam_channel::unbounded::<Box<[u8]>>();
    std::thread::Builder::new()
        .name("meta-realtime".into())
        .spawn(move || run(&ctx, &trees, rx))?;
    Ok(tx)
}

fn run(ctx: &MetaCtx, trees: &TreeCache, rx: Receiver<Box<[u8]>>) {
    let mut seen_uids: HashSet<(UidKind, Box<[u8]>)> = HashSet::new();
    while let Ok(tsuid) = rx.recv() {
        if let Err(e) = new_series(ctx, trees, &tsuid, &mut seen_uids) {
            tracing::warn!(tsuid = %tsgate_schema::hex_upper(&tsuid), error = %e, "realtime metadata failed");
        }
    }
}

/// Handles one new series (public for tests).
pub fn new_series(
    ctx: &MetaCtx,
    trees: &TreeCache,
    tsuid: &[u8],
    seen_uids: &mut HashSet<(UidKind, Box<[u8]>)>,
) -> super::MetaResult<()> {
    let now = tsgate_common::clock::now_s();
    let l = &ctx.layout;
    if ctx.config.enable_realtime_uid && tsuid.len() >= l.metric_width {
        let mut uids = vec![(UidKind::Metric, &tsuid[..l.metric_width])];
        for p in tsuid[l.metric_width..].chunks_exact(l.tag_width()) {
            let (k, v) = p.split_at(l.tagk_width);
            uids.push((UidKind::Tagk, k));
            uids.push((UidKind::Tagv, v));
        }
        for (kind, uid) in uids {
            if seen_uids.insert((kind, uid.into())) {
                uidmeta::create_if_absent(ctx, kind, uid, now)?;
            }
        }
    }
    if ctx.config.enable_tsuid_tracking && ctx.config.enable_realtime_ts {
        tsmeta::create_if_absent(ctx, tsuid, now)?;
    }
    if ctx.tree_processing {
        let enabled = trees.enabled(ctx)?;
        if !enabled.is_empty() {
            let meta = tsmeta::load_or_blank(ctx, tsuid)?;
            for t in enabled.iter() {
                let built = builder::build(t, &meta);
                if let builder::Stored::Collision(other) =
                    builder::store(ctx, &t.tree, &built, &meta.tsuid)?
                {
                    tracing::debug!(tree = t.tree.tree_id, tsuid = %meta.tsuid, existing = %other, "tree leaf collision");
                }
            }
        }
    }
    Ok(())
}
