//! Moving data in and out: VictoriaMetrics' JSON-lines format (`vmjson`), OpenTSDB's import
//! format on the way out, carbon's whisper files (`whisper`), a Prometheus server's remote-read
//! API (`remote_read`), and the one place imported series meet the write path (`write`).
//! Used by the HTTP endpoints (`/api/v1/export`, `/api/v1/import`) and the `export`/`import`
//! commands alike.

pub mod remote_read;
pub mod vmjson;
pub mod whisper;
pub mod write;
