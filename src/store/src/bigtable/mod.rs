//! The Cloud Bigtable backend: the `Store` trait over Bigtable's gRPC data API (v2), table
//! creation through its admin API, and the same against Google's Bigtable emulator
//! (`BIGTABLE_EMULATOR_HOST`, or `storage.bigtable.emulator_host`).

pub mod auth;
pub mod client;
pub mod error;
pub mod filter;
pub mod grpc;
pub mod proto;
pub mod rows;
pub mod tables;

pub use client::BigtableStore;
pub use error::BigtableError;

/// The service's limit on mutations in one `MutateRows` request (and in one row's entry).
pub const MAX_MUTATIONS_PER_REQUEST: usize = 100_000;
/// The service's limit on a row key.
pub const MAX_ROW_KEY_BYTES: usize = 4096;

/// `[storage.bigtable]`: which instance, and how to talk to it.
#[derive(Debug, Clone, serde::Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct BigtableConfig {
    /// Google Cloud project id (OpenTSDB's `google.bigtable.project.id`).
    pub project: String,
    /// Bigtable instance id (`google.bigtable.instance.id`).
    pub instance: String,
    /// App profile of every data call ("" = the instance's default profile). It must route to
    /// a single cluster and allow single-row transactions (increments and check-and-mutate).
    pub app_profile: String,
    /// A service account's JSON key (`google.bigtable.auth.json.keyfile`); "" = the
    /// `GOOGLE_APPLICATION_CREDENTIALS` file, else the metadata server on Google Cloud.
    pub credentials_file: String,
    /// `host:port` of an emulator; "" = the `BIGTABLE_EMULATOR_HOST` environment variable;
    /// either set = plain-text gRPC, no credentials.
    pub emulator_host: String,
    /// The data API (`host:port`, TLS).
    pub endpoint: String,
    /// The admin API, for `tsgate bigtable create-tables` and the check at start.
    pub admin_endpoint: String,
    /// PEM file of the root certificates trusted for TLS.
    pub ca_file: String,
    /// HTTP/2 connections to the service, used in turn (each carries many calls at once).
    pub channels: usize,
    pub connect_timeout_ms: u64,
    /// Deadline of one call (each retry gets its own).
    pub timeout_ms: u64,
    /// Retries of a call that failed transiently (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED,
    /// RESOURCE_EXHAUSTED, a lost connection); increments and check-and-mutate are retried
    /// only when the service cannot have applied them.
    pub retries: u32,
    /// First retry delay; doubles each retry, at most 5 s, with jitter.
    pub retry_backoff_ms: u64,
    /// Rows per `ReadRows` call of a scan (a scan reads page after page).
    pub scan_rows: u32,
    /// Mutations per `MutateRows` request (at most the service's 100,000).
    pub max_mutations_per_request: usize,
    /// Bytes of mutations per `MutateRows` request.
    pub max_request_bytes: usize,
    /// Send scans' row-key regex to the server (RE2, re-checked on the client); off = filter on
    /// the client only.
    pub server_row_filter: bool,
}

impl Default for BigtableConfig {
    fn default() -> Self {
        BigtableConfig {
            project: String::new(),
            instance: String::new(),
            app_profile: String::new(),
            credentials_file: String::new(),
            emulator_host: String::new(),
            endpoint: "bigtable.googleapis.com:443".into(),
            admin_endpoint: "bigtableadmin.googleapis.com:443".into(),
            ca_file: "/etc/ssl/certs/ca-certificates.crt".into(),
            channels: 4,
            connect_timeout_ms: 5_000,
            timeout_ms: 30_000,
            retries: 5,
            retry_backoff_ms: 50,
            scan_rows: 1024,
            max_mutations_per_request: MAX_MUTATIONS_PER_REQUEST,
            max_request_bytes: 32 << 20,
            server_row_filter: true,
        }
    }
}

impl BigtableConfig {
    /// The emulator to use, if any: the config key, else `BIGTABLE_EMULATOR_HOST`.
    pub fn emulator(&self) -> Option<String> {
        if !self.emulator_host.trim().is_empty() {
            return Some(self.emulator_host.trim().to_string());
        }
        std::env::var("BIGTABLE_EMULATOR_HOST")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
    }

    /// What is wrong with these settings, if anything.
    pub fn check(&self) -> Result<(), SettingsError> {
        if self.project.trim().is_empty() || self.instance.trim().is_empty() {
            return Err(SettingsError::NoInstance);
        }
        if self.channels == 0 || self.scan_rows == 0 {
            return Err(SettingsError::ZeroChannelsOrScanRows);
        }
        if self.max_mutations_per_request == 0
            || self.max_mutations_per_request > MAX_MUTATIONS_PER_REQUEST
        {
            return Err(SettingsError::MaxMutations);
        }
        if self.timeout_ms == 0 {
            return Err(SettingsError::ZeroTimeout);
        }
        Ok(())
    }
}

/// What [`BigtableConfig::check`] finds wrong with `[storage.bigtable]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("storage.bigtable.project and storage.bigtable.instance must be set")]
    NoInstance,
    #[error("storage.bigtable.channels and scan_rows must be >= 1")]
    ZeroChannelsOrScanRows,
    #[error(
        "storage.bigtable.max_mutations_per_request must be 1..={MAX_MUTATIONS_PER_REQUEST} \
         (the service's limit)"
    )]
    MaxMutations,
    #[error("storage.bigtable.timeout_ms must be >= 1")]
    ZeroTimeout,
}
