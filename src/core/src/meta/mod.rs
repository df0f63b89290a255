//! OpenTSDB metadata as 2.4 stores it: annotations (in `tsdb`), UIDMeta (in `tsdb-uid`),
//! TSMeta and its `ts_ctr` counter (in `tsdb-meta`), and the background worker that creates
//! them for new series. Storage logic only; the HTTP shapes live in `server::opentsdb_meta`.

pub mod annotation;
pub mod counter;
pub mod json;
pub mod realtime;
pub mod search;
pub mod tree;
pub mod tsmeta;
pub mod uidmeta;

use crate::config::MetaConfig;
use crate::uid::{UidCore, UidError};
use std::sync::Arc;
use tsgate_schema::KeyLayout;
use tsgate_store::{SharedStore, StoreError, TableNames};

/// Why a metadata operation failed; each maps to one OpenTSDB HTTP answer.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    /// 400 (OpenTSDB's IllegalArgumentException).
    #[error("{message}")]
    BadRequest { message: String, details: String },
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 304: the request set no field (OpenTSDB's IllegalStateException "No changes detected").
    #[error("no changes detected")]
    NotModified,
    /// The compare-and-set lost against another writer; OpenTSDB answers 500.
    #[error("{0}")]
    CasFailed(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Uid(#[from] UidError),
}

impl MetaError {
    pub fn bad(message: impl Into<String>) -> MetaError {
        MetaError::BadRequest {
            message: message.into(),
            details: String::new(),
        }
    }
}

pub type MetaResult<T> = Result<T, MetaError>;

/// What metadata code needs from the node: the store, table names, key layout, UID names and
/// the metadata switches.
pub struct MetaCtx {
    pub store: SharedStore,
    pub tables: TableNames,
    pub layout: KeyLayout,
    pub uids: Arc<UidCore>,
    pub config: MetaConfig,
    pub tree_processing: bool,
}

/// Parses a hex UID/TSUID given by a client.
pub fn parse_uid_hex(s: &str, what: &str) -> MetaResult<Vec<u8>> {
    tsgate_schema::parse_hex(s)
        .filter(|b| !b.is_empty())
        .ok_or_else(|| MetaError::bad(format!("Invalid {what}: {s}")))
}

/// The node's metadata side: shared context, the tree cache and the `ts_ctr` keeper.
pub struct MetaService {
    pub ctx: Arc<MetaCtx>,
    pub trees: Arc<crate::meta::tree::TreeCache>,
    pub ts_counter: Option<Arc<counter::TsCounter>>,
}

impl MetaService {
    /// Builds the context and, when a realtime feature is on, starts the worker and hooks it
    /// to the series resolver.
    pub fn start(
        cfg: &crate::config::Config,
        store: SharedStore,
        uids: Arc<UidCore>,
        resolver: &crate::series::SeriesResolver,
    ) -> std::io::Result<Arc<MetaService>> {
        let ctx = Arc::new(MetaCtx {
            store: store.clone(),
            tables: cfg.storage.tables.clone(),
            layout: cfg.layout(),
            uids,
            config: cfg.meta.clone(),
            tree_processing: cfg.tree.enable_processing,
        });
        let trees = Arc::new(crate::meta::tree::TreeCache::default());
        if realtime::wanted(&ctx) {
            let tx = realtime::start(ctx.clone(), trees.clone())?;
            resolver.set_new_series_hook(Box::new(move |tsuid: &[u8]| {
                let _ = tx.send(tsuid.into());
            }));
        }
        let ts_counter = counter::CounterMode::from_config(&cfg.meta).map(|mode| {
            Arc::new(counter::TsCounter {
                store,
                table: cfg.storage.tables.meta.clone(),
                mode,
            })
        });
        Ok(Arc::new(MetaService {
            ctx,
            trees,
            ts_counter,
        }))
    }
}
