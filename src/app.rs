//! Wiring: opens the store, recovers the WAL, starts the writer and the listeners.

use crate::config::Config;
use crate::ingest::Ingest;
use crate::query::QueryEngine;
use crate::series::SeriesResolver;
use crate::server::{state, AppState};
use crate::store::bigtable::BigtableStore;
use crate::store::embedded::EmbeddedStore;
use crate::store::hbase::HBaseStore;
use crate::store::{SharedStore, StoreError};
use crate::uid::UidCore;
use crate::write::{Writer, WriterConfig};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tsgate_opentsdb::Limits;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Write(#[from] crate::write::WriteError),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Cardinality(#[from] crate::lifecycle::cardinality::CardinalityError),
    #[error(transparent)]
    Uid(#[from] crate::uid::UidError),
    #[error("invalid graphite.rules: {0}")]
    NameRules(#[from] crate::graphite::names::RuleError),
    #[error("invalid auth config: {0}")]
    Auth(#[from] crate::server::auth::AuthError),
    #[error(transparent)]
    Tls(#[from] crate::server::tls::TlsError),
    #[error(
        "the data directory {0} is in use by another tsgate process (a running server?): \
         stop it first"
    )]
    Locked(String),
    #[error("cannot create {path}: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "no store in {0}: nothing was ever written to this data directory \
         (check --data-dir, or data_dir in the config)"
    )]
    NoStore(String),
    #[error(
        "not enough free space to replay the write-ahead log: {free} free in {path}, and \
         replaying {wal} of log needs about {need} (its size plus storage.min_free_mb); \
         nothing was replayed or lost: free some space (or lower storage.min_free_mb) and \
         start again"
    )]
    NoRoomToReplay {
        path: String,
        free: String,
        wal: String,
        need: String,
    },
    #[error(
        "replaying the write-ahead log stopped: {0}; nothing is lost (the log is kept until \
         the store holds it): free some space and start again"
    )]
    ReplayRefused(String),
}

/// `create_dir_all` whose error names the directory.
fn create_dir(path: &std::path::Path) -> Result<(), AppError> {
    std::fs::create_dir_all(path).map_err(|source| AppError::Create {
        path: path.display().to_string(),
        source,
    })
}

/// Opens the configured store: the embedded engine under `data_dir/store`, or HBase through
/// its Thrift gateway (checking that the tables exist).
pub fn open_store(cfg: &Config) -> Result<SharedStore, AppError> {
    let specs = cfg.storage.tables.specs();
    match cfg.storage.backend.as_str() {
        "hbase" => {
            let store = HBaseStore::open(&cfg.storage.hbase, &specs).map_err(|source| {
                StoreError::HBase {
                    op: "open",
                    table: cfg.storage.tables.data.clone(),
                    source,
                }
            })?;
            Ok(crate::observe::store::instrument(Arc::new(store)))
        }
        "bigtable" => {
            let names: Vec<&str> = specs.iter().map(|t| t.name.as_str()).collect();
            let store = BigtableStore::open(&cfg.storage.bigtable, &names).map_err(|source| {
                StoreError::Bigtable {
                    op: "open",
                    table: cfg.storage.tables.data.clone(),
                    source,
                }
            })?;
            Ok(crate::observe::store::instrument(Arc::new(store)))
        }
        _ => {
            create_dir(&cfg.data_dir)?;
            let store = EmbeddedStore::open_with_cache(
                &cfg.data_dir.join("store"),
                &specs,
                cfg.storage.cache_mb << 20,
            )
            .map_err(|e| match e {
                StoreError::Locked(_) => AppError::Locked(cfg.data_dir.display().to_string()),
                e => e.into(),
            })?;
            store.set_min_free_bytes(cfg.storage.min_free_mb << 20);
            store.set_encode_columns(cfg.storage.encode_columns);
            Ok(crate::observe::store::instrument(Arc::new(store)))
        }
    }
}

/// As [`open_store`], for commands that only read or mend what is there (`scan`, `query`,
/// `fsck`, `uid grep`): a data directory without an embedded store is refused instead of
/// getting a new, empty one (a mistyped `--data-dir` would otherwise look like lost data).
pub fn open_existing_store(cfg: &Config) -> Result<SharedStore, AppError> {
    if cfg.storage.backend == "embedded" && !cfg.data_dir.join("store").is_dir() {
        return Err(AppError::NoStore(cfg.data_dir.display().to_string()));
    }
    open_store(cfg)
}

/// Holds `data_dir/wal/LOCK` for as long as a node runs: one process per write-ahead log
/// (with HBase nothing else would stop two nodes sharing a data dir).
pub fn lock_wal(data_dir: &std::path::Path) -> Result<std::fs::File, AppError> {
    let dir = data_dir.join("wal");
    create_dir(&dir)?;
    let path = dir.join("LOCK");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|source| AppError::Create {
            path: path.display().to_string(),
            source,
        })?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(AppError::Locked(data_dir.display().to_string()))
        }
        Err(std::fs::TryLockError::Error(e)) => Err(e.into()),
    }
}

/// Bytes of write-ahead log segments waiting under `data_dir/wal` (files kept for reuse
/// aside): an upper bound of what start-up replays (a reused file may be longer than its
/// records).
fn wal_bytes(data_dir: &std::path::Path) -> u64 {
    let Ok(shards) = std::fs::read_dir(data_dir.join("wal")) else {
        return 0;
    };
    shards
        .flatten()
        .filter_map(|d| std::fs::read_dir(d.path()).ok())
        .flatten()
        .flatten()
        .filter(|f| f.file_name().to_string_lossy().ends_with(".wal"))
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Start-up replay writes the whole write-ahead log into the embedded store before anything
/// else; on a disk without room for it the engine would fill the disk and fail. Refuses to
/// start instead, saying where and how much is free (the log stays as it is).
fn check_room_to_replay(cfg: &Config) -> Result<(), AppError> {
    if cfg.storage.backend != "embedded" {
        return Ok(());
    }
    let wal = wal_bytes(&cfg.data_dir);
    if wal == 0 {
        return Ok(());
    }
    let Ok(free) = crate::store::embedded::free_bytes(&cfg.data_dir) else {
        return Ok(());
    };
    let need = (cfg.storage.min_free_mb << 20) + wal;
    if free < need {
        let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
        return Err(AppError::NoRoomToReplay {
            path: cfg.data_dir.display().to_string(),
            free: mib(free),
            wal: mib(wal),
            need: mib(need),
        });
    }
    Ok(())
}

/// The UID core over `store`; with the embedded store, new UIDs are made durable in
/// `data_dir/uid.journal` (replayed here first) instead of by syncing the whole engine.
pub fn uid_core(cfg: &Config, store: SharedStore) -> Result<Arc<UidCore>, AppError> {
    let s = &cfg.storage;
    let u = &cfg.uid;
    let core = UidCore::new(
        store,
        s.tables.uid.clone(),
        [s.uid_width_metric, s.uid_width_tagk, s.uid_width_tagv],
        [
            u.auto_create_metrics,
            u.auto_create_tagks,
            u.auto_create_tagvs,
        ],
    );
    Ok(Arc::new(if s.backend == "embedded" {
        core.with_journal(&cfg.data_dir.join("uid.journal"))?
    } else {
        core
    }))
}

pub fn limits(cfg: &Config) -> Limits {
    Limits {
        max_tags: cfg.limits.max_tags,
        allow_special: cfg.limits.allow_special_chars.clone(),
    }
}

pub fn query_limits(cfg: &Config) -> crate::query::QueryLimits {
    let q = &cfg.query;
    crate::query::QueryLimits {
        timeout: (q.timeout_ms > 0).then(|| Duration::from_millis(q.timeout_ms)),
        max_series: q.max_series,
        max_points: q.max_points,
        max_cells: q.max_cells,
    }
}

/// The row cache of `storage.row_cache_mb`, unless another process may write the store.
fn row_cache(cfg: &Config, store: &SharedStore) -> Option<Arc<crate::query::row_cache::RowCache>> {
    if store.shared() {
        return None;
    }
    crate::query::row_cache::RowCache::new(
        cfg.storage.row_cache_mb << 20,
        &cfg.storage.tables.data,
        cfg.layout().head_width(),
    )
    .map(Arc::new)
}

pub fn writer_config(cfg: &Config) -> WriterConfig {
    WriterConfig {
        shards: cfg.shards(),
        flush_interval: Duration::from_millis(cfg.write.flush_interval_ms.max(1)),
        fsync: cfg.write.wal_fsync == "always",
        max_batch_points: cfg.write.wal_max_batch_points,
        buffer_max_points: cfg.write.buffer_max_points,
        compaction_delay: Duration::from_millis(cfg.write.compaction_delay_ms),
        roll_interval: Duration::from_millis(cfg.write.roll_interval_ms),
        roll_max_points: cfg.write.roll_max_points,
        queue_depth: 64,
        ts_counter: None,
        rollups: rollup_build(cfg),
    }
}

/// What the compactor builds of `[rollups]` (nothing unless enabled with `build`).
pub fn rollup_build(cfg: &Config) -> Option<Arc<crate::write::rollup::RollupBuild>> {
    let r = &cfg.rollups;
    if !r.build {
        return None;
    }
    crate::write::rollup::RollupBuild::new(r.compiled.as_deref()?, cfg.layout())
}

/// Everything a running node holds: the shared state and the writer's threads.
pub struct Node {
    pub state: Arc<AppState>,
    pub threads: crate::write::WriterThreads,
    /// Held until the node is dropped.
    pub wal_lock: std::fs::File,
}

impl Node {
    /// Opens the store, replays the WAL and starts the writer. Needs a tokio runtime.
    pub fn start(cfg: Config) -> Result<Node, AppError> {
        cfg.validate()?;
        // Secrets and certificates first: a bad one should fail before the store is opened.
        let auth = crate::server::auth::Authenticator::from_config(&cfg.auth)?;
        let tls = crate::server::tls::Tls::from_config(&cfg.server.tls)?;
        crate::observe::process::mark_start();
        let wal_lock = lock_wal(&cfg.data_dir)?;
        // Before the engine is opened too: opening replays its own journal.
        check_room_to_replay(&cfg)?;
        let store = open_store(&cfg)?;
        // The row cache hears of every write, so everything writes through the watched store.
        let rows = row_cache(&cfg, &store);
        let store = match &rows {
            Some(c) => crate::store::watch::watched(store, c.clone()),
            None => store,
        };
        tracing::info!(backend = %cfg.storage.backend, data_dir = %cfg.data_dir.display(), "store opened");
        let layout = cfg.layout();
        let table = cfg.storage.tables.data.clone();
        let stats = match crate::write::recover(
            &cfg.data_dir,
            &store,
            &table,
            layout,
            rollup_build(&cfg),
        ) {
            Ok(s) => s,
            // The disk filled up meanwhile (another writer), or the engine failed.
            Err(e) => {
                return Err(match store.refusing_writes() {
                    Some(r) => AppError::ReplayRefused(r.detail),
                    None => e.into(),
                })
            }
        };
        crate::observe::metrics()
            .wal_replayed_points
            .add(stats.points as u64);
        tracing::info!(
            points = stats.points,
            records = stats.records,
            damaged = stats.damaged,
            "write-ahead log replayed"
        );
        let uids = uid_core(&cfg, store.clone())?;
        let resolver = Arc::new(SeriesResolver::new(uids.clone()));
        let cardinality = Arc::new(crate::lifecycle::cardinality::Cardinality::open(
            &cfg.data_dir,
            &store,
            &table,
            layout,
            crate::lifecycle::cardinality::Limits {
                max_series: cfg.limits.max_series,
                max_series_per_metric: cfg.limits.max_series_per_metric,
                max_new_series_per_minute: cfg.limits.max_new_series_per_minute,
            },
        )?);
        resolver.set_gate(cardinality.clone());
        let meta = crate::meta::MetaService::start(&cfg, store.clone(), uids.clone(), &resolver)?;
        let mut wcfg = writer_config(&cfg);
        wcfg.ts_counter = meta.ts_counter.clone();
        let (writer, threads) = Writer::start(
            &cfg.data_dir,
            store.clone(),
            &table,
            layout,
            &wcfg,
            tokio::runtime::Handle::current(),
        )?;
        let prom = crate::prometheus::PromState::open(&cfg.data_dir);
        let names = Arc::new(crate::graphite::names::NameRules::from_config(&cfg)?);
        let config = Arc::new(cfg);
        let ingest = Arc::new(Ingest {
            resolver: resolver.clone(),
            writer,
            max_name_length: config.limits.max_name_length,
            received: Default::default(),
            direct: Arc::new(crate::write::direct::DirectSync::new(
                store.clone(),
                config.write.wal_fsync == "always",
            )),
        });
        let query = Arc::new(QueryEngine {
            rows,
            store,
            uids,
            layout,
            table,
            allow_delete: config.query.allow_delete,
            limits: query_limits(&config),
            rollups: config.rollups.compiled.clone(),
        });
        // Each API family gets its part, once; the listeners hold the whole.
        let graphite_index = Arc::new(crate::query::graphite::index::SeriesIndex::default());
        let bodies = Arc::new(crate::server::body_budget::BodyBudget::new(
            config.limits.max_body_bytes_in_flight,
            config.limits.http_body_max as u64,
        ));
        let state = Arc::new(AppState {
            opentsdb: Arc::new(state::OpenTsdb {
                ingest: ingest.clone(),
                query: query.clone(),
                resolver: resolver.clone(),
                meta,
                limits: limits(&config),
                graphite_index: graphite_index.clone(),
                settings: state::OpenTsdbSettings::from_config(&config),
            }),
            prometheus: Arc::new(state::Prometheus {
                ingest: ingest.clone(),
                query: query.clone(),
                resolver: resolver.clone(),
                prom,
                graphite_index: graphite_index.clone(),
                cardinality: cardinality.clone(),
                settings: state::PrometheusSettings::from_config(&config),
            }),
            graphite_web: Arc::new(state::GraphiteWeb {
                ingest: ingest.clone(),
                engine: Arc::new(crate::query::graphite::Engine {
                    query: query.clone(),
                    resolver: resolver.clone(),
                    names: names.clone(),
                    graphite_index,
                    settings: crate::query::graphite::Settings::from_config(&config),
                }),
                cardinality,
                settings: state::GraphiteWebSettings::from_config(&config),
            }),
            carbon: Arc::new(state::Carbon {
                ingest: ingest.clone(),
                resolver: resolver.clone(),
                names,
                settings: state::CarbonSettings::from_config(&config),
            }),
            ingest,
            query,
            resolver,
            config,
            started: Instant::now(),
            auth,
            tls,
            bodies,
        });
        Ok(Node {
            state,
            threads,
            wal_lock,
        })
    }
}

/// The retention sweep's thread (`storage.retention`): it runs at start, then every
/// `storage.retention_sweep_interval`.
pub fn start_sweeper(
    state: &AppState,
) -> Result<crate::lifecycle::retention::SweepThread, AppError> {
    use crate::lifecycle::retention::{SweepThread, Sweeper};
    let cfg = &state.config;
    let mut sweeper = Sweeper::new(cfg, state.query.store.clone(), state.query.uids.clone())
        .map_err(|e| crate::config::ConfigError::Invalid(format!("storage.retention: {e}")))?;
    // Series left without a row no longer count against the limits nor show in the explorer,
    // and a later point of one is admitted anew.
    let cardinality = state.prometheus.cardinality.clone();
    let resolver = state.resolver.clone();
    let graphite_index = state.prometheus.graphite_index.clone();
    sweeper.on_expired_series = Some(Box::new(move |series| {
        cardinality.forget(series);
        resolver.forget(series);
        graphite_index.invalidate();
    }));
    let every =
        crate::config::parse_duration_s(&cfg.storage.retention_sweep_interval).map_err(|e| {
            crate::config::ConfigError::Invalid(format!("storage.retention_sweep_interval: {e}"))
        })?;
    let record = Some(cfg.data_dir.join("retention-sweep"));
    Ok(SweepThread::start(
        sweeper,
        Duration::from_secs(every.max(1)),
        record,
    )?)
}

/// Runs the server until SIGINT/SIGTERM, then drains and flushes everything.
pub async fn serve(cfg: Config) -> Result<(), AppError> {
    let listen = cfg.server.listen.clone();
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .map_err(|source| AppError::Listen {
            addr: listen.clone(),
            source,
        })?;
    let graphite = bind_graphite(&cfg.server).await?;
    let signals = ShutdownSignals::install();
    let node = Node::start(cfg)?;
    let sweeper = start_sweeper(&node.state)?;
    let c = &node.state.config;
    tracing::info!(addr = %listener.local_addr()?, data_dir = %c.data_dir.display(), backend = %c.storage.backend, telnet = c.telnet_enabled(),
        https = c.server.tls.enabled(), auth = c.auth.enabled, "tsgate listening (OpenTSDB telnet + HTTP)");
    crate::server::auth::warn_unprotected(c);
    let (tx, rx) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(crate::server::serve(
        node.state.clone(),
        listener,
        rx.clone(),
    ));
    let graphite = start_graphite(&node.state, graphite, rx);
    signals.recv().await;
    let budget = Duration::from_millis(node.state.config.server.shutdown_timeout_ms);
    tracing::info!(
        timeout_ms = budget.as_millis() as u64,
        "shutting down: draining connections and flushing"
    );
    let drain = async move {
        let _ = tx.send(true);
        let _ = server.await;
        for g in graphite {
            let _ = g.await;
        }
        // Give open connections a moment to finish their current request.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&node.state) > 1 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let Node {
            state,
            threads,
            wal_lock,
        } = node;
        state.ingest.writer.close();
        let store = state.query.store.clone();
        drop(state);
        let refused = tokio::task::spawn_blocking(move || {
            // A sweep under way finishes before the store closes.
            drop(sweeper);
            threads.join();
            // Refusing writes (disk full), the flushers gave up at once: what they held is in
            // the write-ahead log, and closing would only fail the same way.
            if let Some(r) = store.refusing_writes() {
                return Some(r);
            }
            if let Err(e) = store.close() {
                tracing::error!(error = %e, "closing the store failed (the next start recovers it)");
            }
            None
        })
        .await
        .ok()
        .flatten();
        drop(wal_lock);
        refused
    };
    // Bounded: a store that is down would keep the flusher retrying forever. Everything
    // acknowledged is in the WAL, which the next start replays.
    tokio::select! {
        refused = drain => if let Some(r) = refused {
            tracing::warn!(reason = r.reason, "stopped while the store refuses writes ({}): the write-ahead log keeps what the store does not hold, and the next start replays it", r.detail);
            std::process::exit(3);
        },
        _ = tokio::time::sleep(budget) => {
            tracing::warn!(timeout_ms = budget.as_millis() as u64, "server.shutdown_timeout_ms passed with work left: exiting; the write-ahead log is replayed at the next start");
            std::process::exit(3);
        }
    }
    tracing::info!("stopped cleanly");
    Ok(())
}

/// The Graphite sockets, bound before the node starts so a busy port fails fast.
pub struct GraphiteSockets {
    pub tcp: Option<tokio::net::TcpListener>,
    pub udp: Option<tokio::net::UdpSocket>,
    pub pickle: Option<tokio::net::TcpListener>,
}

/// Binds `server.graphite_listen` (TCP and UDP) and `server.pickle_listen`; "" turns one off.
pub async fn bind_graphite(s: &crate::config::ServerConfig) -> Result<GraphiteSockets, AppError> {
    let listen_err = |addr: &str| {
        let addr = addr.to_string();
        move |source| AppError::Listen { addr, source }
    };
    let (mut tcp, mut udp, mut pickle) = (None, None, None);
    let g = s.graphite_listen.trim();
    if !g.is_empty() {
        let l = tokio::net::TcpListener::bind(g)
            .await
            .map_err(listen_err(g))?;
        // UDP on the same port as TCP (port 0 picks one for TCP; UDP follows it).
        let addr = l.local_addr()?;
        udp = Some(
            tokio::net::UdpSocket::bind(addr)
                .await
                .map_err(listen_err(g))?,
        );
        tcp = Some(l);
    }
    let p = s.pickle_listen.trim();
    if !p.is_empty() {
        pickle = Some(
            tokio::net::TcpListener::bind(p)
                .await
                .map_err(listen_err(p))?,
        );
    }
    Ok(GraphiteSockets { tcp, udp, pickle })
}

/// Spawns the Graphite listeners; they stop when `shutdown` turns true.
pub fn start_graphite(
    state: &Arc<AppState>,
    s: GraphiteSockets,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    if let Some(l) = s.tcp {
        tracing::info!(addr = %l.local_addr().map(|a| a.to_string()).unwrap_or_default(), "Graphite plaintext listening (TCP and UDP)");
        tasks.push(tokio::spawn(crate::server::carbon::plaintext::serve_tcp(
            state.carbon.clone(),
            l,
            shutdown.clone(),
        )));
    }
    if let Some(u) = s.udp {
        tasks.push(tokio::spawn(crate::server::carbon::plaintext::serve_udp(
            state.carbon.clone(),
            u,
            shutdown.clone(),
        )));
    }
    if let Some(l) = s.pickle {
        tracing::info!(addr = %l.local_addr().map(|a| a.to_string()).unwrap_or_default(), "Graphite pickle listening");
        tasks.push(tokio::spawn(crate::server::carbon::pickle::serve(
            state.carbon.clone(),
            l,
            shutdown,
        )));
    }
    tasks
}

pub async fn shutdown_signal() {
    ShutdownSignals::install().recv().await
}

/// SIGINT and SIGTERM handlers, installed when created: created before the listeners serve,
/// so a signal right after start-up takes the clean path instead of killing the process.
pub struct ShutdownSignals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    pub fn install() -> ShutdownSignals {
        use tokio::signal::unix::{signal, SignalKind};
        ShutdownSignals {
            int: signal(SignalKind::interrupt()).expect("SIGINT handler"),
            term: signal(SignalKind::terminate()).expect("SIGTERM handler"),
        }
    }

    pub async fn recv(mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
        }
    }
}
