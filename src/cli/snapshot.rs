//! `tsgate snapshot DIR`: a consistent copy of a stopped node's embedded store as a new data
//! directory, which `tsgate serve --data-dir DIR` opens. A running server takes the same copy
//! with `POST /api/v1/admin/tsdb/snapshot` (admin right, `admin.enabled`); this command
//! says so when the store is in use.

use super::Common;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct SnapshotArgs {
    #[command(flatten)]
    pub common: Common,
    /// The new data directory (must not exist, or be empty).
    pub dir: PathBuf,
}

pub fn run(args: &SnapshotArgs) -> anyhow::Result<i32> {
    let cfg = args.common.load()?;
    if args.dir.read_dir().is_ok_and(|mut d| d.next().is_some()) {
        anyhow::bail!("{}: exists and is not empty", args.dir.display());
    }
    let store = match crate::app::open_existing_store(&cfg) {
        Ok(s) => s,
        Err(e) if e.to_string().contains("in use by another") => {
            anyhow::bail!(
                "{e} (a running server takes a snapshot with \
                 `curl -X POST http://HOST:4242/api/v1/admin/tsdb/snapshot`, admin.enabled = true)"
            )
        }
        Err(e) => return Err(e.into()),
    };
    let cells = crate::server::prometheus::transfer::take_snapshot(&store, &args.dir)?;
    println!("snapshot of {cells} cells in {}", args.dir.display());
    Ok(0)
}
