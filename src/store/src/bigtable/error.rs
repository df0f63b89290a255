//! Errors of the Bigtable backend, told apart by whether retrying can help.

/// A gRPC status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Code(pub i32);

impl Code {
    pub const OK: Code = Code(0);
    pub const CANCELLED: Code = Code(1);
    pub const UNKNOWN: Code = Code(2);
    pub const INVALID_ARGUMENT: Code = Code(3);
    pub const DEADLINE_EXCEEDED: Code = Code(4);
    pub const NOT_FOUND: Code = Code(5);
    pub const ALREADY_EXISTS: Code = Code(6);
    pub const PERMISSION_DENIED: Code = Code(7);
    pub const RESOURCE_EXHAUSTED: Code = Code(8);
    pub const FAILED_PRECONDITION: Code = Code(9);
    pub const ABORTED: Code = Code(10);
    pub const INTERNAL: Code = Code(13);
    pub const UNAVAILABLE: Code = Code(14);
    pub const UNAUTHENTICATED: Code = Code(16);

    pub fn name(self) -> &'static str {
        const NAMES: [&str; 17] = [
            "OK",
            "CANCELLED",
            "UNKNOWN",
            "INVALID_ARGUMENT",
            "DEADLINE_EXCEEDED",
            "NOT_FOUND",
            "ALREADY_EXISTS",
            "PERMISSION_DENIED",
            "RESOURCE_EXHAUSTED",
            "FAILED_PRECONDITION",
            "ABORTED",
            "OUT_OF_RANGE",
            "UNIMPLEMENTED",
            "INTERNAL",
            "UNAVAILABLE",
            "DATA_LOSS",
            "UNAUTHENTICATED",
        ];
        NAMES.get(self.0 as usize).copied().unwrap_or("?")
    }

    /// Codes the service uses for a momentary failure (Google's own clients retry these).
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            Code::UNAVAILABLE | Code::DEADLINE_EXCEEDED | Code::ABORTED | Code::RESOURCE_EXHAUSTED
        )
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BigtableError {
    #[error("cannot connect to Bigtable at {addr}: {message}")]
    Connect { addr: String, message: String },
    /// The connection failed while a request was out: it may or may not have been applied.
    #[error("transport error talking to Bigtable: {0}")]
    Transport(String),
    #[error("Bigtable answered {code}: {message}")]
    Status { code: Code, message: String },
    #[error("protocol error from Bigtable: {0}")]
    Protocol(String),
    #[error("Bigtable configuration: {0}")]
    Config(String),
    #[error("Bigtable configuration: {0}")]
    Settings(#[from] super::SettingsError),
    #[error("Bigtable credentials: {0}")]
    Auth(String),
    #[error("Bigtable credentials: {file}: {source}")]
    Credentials {
        file: String,
        source: super::auth::CredentialsError,
    },
    #[error("row key of {len} bytes is longer than Bigtable's limit of {max} (4 KiB)")]
    KeyTooLong { len: usize, max: usize },
    #[error("{failed} of {rows} rows were not written; first: {first}")]
    RowsFailed {
        failed: usize,
        rows: usize,
        first: String,
    },
    #[error("tables missing in Bigtable instance {instance}: {tables} (create them with `tsgate bigtable create-tables`)")]
    MissingTables { instance: String, tables: String },
    #[error("{0}")]
    Other(String),
}

impl BigtableError {
    /// Whether the same request may be sent again: the server said to try later, or the
    /// request never left (a failed connect). `idempotent` calls are also retried after a
    /// transport failure, which may have happened after the server applied them.
    pub fn is_retryable(&self, idempotent: bool) -> bool {
        match self {
            BigtableError::Connect { .. } => true,
            BigtableError::Transport(_) => idempotent,
            BigtableError::Status { code, .. } => {
                if *code == Code::UNAVAILABLE {
                    // UNAVAILABLE: the service did not take the request in.
                    true
                } else {
                    idempotent && code.is_transient()
                }
            }
            _ => false,
        }
    }
}
