//! carbon's whisper files: every archive's points, finest first, named by their path under the tree
//! (`a/b/c.wsp` → `a.b.c`) and stored through the Graphite name rules, as carbon ingest would
//! have stored them. A coarser archive gives only the points before the span of the finer
//! ones (graphite-web reads a range from the finest archive covering it). Only points inside an archive's retention as of now count (older slots
//! hold what the archive's ring overwrote since, as whisper's own reads discard them).
//!
//! The format (all big-endian): a header of aggregation type (u32), maximum retention (u32),
//! xFilesFactor (f32) and archive count (u32); then per archive its offset, seconds per point
//! and point count (u32 each); then each archive's ring of (timestamp u32, value f64) slots.

use crate::graphite::names::{Mapped, PLACEHOLDER_TAG};
use crate::migrate::write::{write_reporting, StoredImport, Tally};
use std::path::{Path, PathBuf};

/// One archive's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Archive {
    pub offset: u32,
    pub seconds_per_point: u32,
    pub points: u32,
}

/// Why a file is not a whisper file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhisperError {
    #[error("not a whisper file: {0}")]
    Format(String),
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, WhisperError> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| WhisperError::Format(format!("truncated at byte {at}")))
}

/// The archives a file declares, checked against its length.
pub fn archives(b: &[u8]) -> Result<Vec<Archive>, WhisperError> {
    let count = u32_at(b, 12)? as usize;
    if count == 0 || count > 64 {
        return Err(WhisperError::Format(format!("{count} archives")));
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let at = 16 + i * 12;
        let a = Archive {
            offset: u32_at(b, at)?,
            seconds_per_point: u32_at(b, at + 4)?,
            points: u32_at(b, at + 8)?,
        };
        let end = a.offset as u64 + a.points as u64 * 12;
        if a.seconds_per_point == 0 || a.points == 0 || end > b.len() as u64 {
            return Err(WhisperError::Format(format!(
                "archive {i} ({} s × {} points at byte {}) does not fit the file's {} bytes",
                a.seconds_per_point,
                a.points,
                a.offset,
                b.len()
            )));
        }
        out.push(a);
    }
    Ok(out)
}

/// The file's points as of `now` (seconds): each archive's valid slots, finest archive first,
/// a coarser one only before the oldest point of the finer ones; in time order.
pub fn points(b: &[u8], now: u64) -> Result<Vec<(u64, f64)>, WhisperError> {
    let mut archives = archives(b)?;
    archives.sort_by_key(|a| a.seconds_per_point);
    let mut out: Vec<(u64, f64)> = Vec::new();
    // The start of the finer archives' span: a coarser archive gives only points before it.
    let mut cutoff = u64::MAX;
    for a in archives {
        let step = a.seconds_per_point as u64;
        let oldest = now.saturating_sub(step * a.points as u64);
        for i in 0..a.points as usize {
            let at = a.offset as usize + i * 12;
            let ts = u32_at(b, at)? as u64;
            let v = f64::from_be_bytes(b[at + 4..at + 12].try_into().expect("8 bytes"));
            if ts == 0 || !ts.is_multiple_of(step) || ts <= oldest || ts > now || ts > cutoff {
                continue;
            }
            out.push((ts, v));
        }
        cutoff = cutoff.min(oldest);
    }
    out.sort_by_key(|p| p.0);
    out.dedup_by_key(|p| p.0);
    Ok(out)
}

/// The Graphite path of a whisper file under `root`. carbon keeps a tagged series at
/// `_tagged/<3 hex>/<3 hex>/<name;tags with . written _DOT_>.wsp` (graphite's
/// `TaggedSeries.encode`): such a file is the tagged path its name holds.
pub fn path_of(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?;
    let s = rel.to_str()?.strip_suffix(".wsp")?;
    let parts: Vec<&str> = s.split(std::path::MAIN_SEPARATOR).collect();
    if let ["_tagged", _, _, name] = parts[..] {
        return Some(name.replace("_DOT_", "."));
    }
    Some(parts.join("."))
}

/// Every `.wsp` file under `root`, in path order.
pub fn files(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "wsp") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Imports every whisper file under `root` (or the one file `root` names).
pub async fn import_tree(
    ingest: &crate::ingest::Ingest,
    names: &crate::graphite::names::NameRules,
    root: &Path,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<Tally> {
    let (base, list) = if root.is_file() {
        let parent = root.parent().unwrap_or(Path::new("")).to_path_buf();
        (parent, vec![root.to_path_buf()])
    } else {
        (root.to_path_buf(), files(root)?)
    };
    bar.set_length(list.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let now = tsgate_common::clock::now_ms() / 1000;
    let mut t = Tally::default();
    let mut batch: Vec<StoredImport> = Vec::new();
    let mut held = 0usize;
    for (i, f) in list.iter().enumerate() {
        let fail = |t: &mut Tally, m: String| {
            t.bad += 1;
            bar.suspend(|| eprintln!("{}: {m}", f.display()));
        };
        let Some(path) = path_of(&base, f) else {
            fail(&mut t, "cannot name it (not UTF-8?)".into());
            continue;
        };
        let bytes = match std::fs::read(f) {
            Ok(b) => b,
            Err(e) => {
                fail(&mut t, e.to_string());
                continue;
            }
        };
        let pts = match points(&bytes, now) {
            Ok(p) => p,
            Err(e) => {
                fail(&mut t, e.to_string());
                continue;
            }
        };
        let (metric, tags) = match names.map(&path) {
            Ok(Mapped::Drop) => continue,
            Ok(Mapped::Whole(m)) => (
                m.into_owned(),
                PLACEHOLDER_TAG
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            Ok(Mapped::Series(m, tags)) => (m, tags),
            Err(e) => {
                fail(&mut t, e.to_string());
                continue;
            }
        };
        held += pts.len();
        batch.push(StoredImport {
            metric,
            tags,
            points: pts
                .into_iter()
                .map(|(ts, v)| (ts as i64 * 1000, crate::ingest::encode::data_value(v)))
                .collect(),
        });
        if held >= 50_000 || i + 1 == list.len() {
            held = 0;
            write_reporting(ingest, &std::mem::take(&mut batch), bar, &mut t).await?;
        }
        bar.inc(1);
    }
    if !batch.is_empty() {
        write_reporting(ingest, &batch, bar, &mut t).await?;
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file as whisper lays it out: archives of (seconds per point, points), slots given.
    fn file(archives: &[(u32, u32)], slots: &[&[(u32, f64)]]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&1u32.to_be_bytes());
        let max = archives.iter().map(|(s, p)| s * p).max().unwrap();
        b.extend_from_slice(&max.to_be_bytes());
        b.extend_from_slice(&0.5f32.to_be_bytes());
        b.extend_from_slice(&(archives.len() as u32).to_be_bytes());
        let mut offset = 16 + 12 * archives.len() as u32;
        for (s, p) in archives {
            b.extend_from_slice(&offset.to_be_bytes());
            b.extend_from_slice(&s.to_be_bytes());
            b.extend_from_slice(&p.to_be_bytes());
            offset += p * 12;
        }
        for (i, (_, p)) in archives.iter().enumerate() {
            let mut ring = vec![0u8; *p as usize * 12];
            for (j, (ts, v)) in slots[i].iter().enumerate() {
                ring[j * 12..j * 12 + 4].copy_from_slice(&ts.to_be_bytes());
                ring[j * 12 + 4..j * 12 + 12].copy_from_slice(&v.to_be_bytes());
            }
            b.extend_from_slice(&ring);
        }
        b
    }

    #[test]
    fn finest_first_then_older_coarse_points_and_stale_slots_dropped() {
        let now = 1_000_000u64;
        let b = file(
            &[(10, 6), (60, 10)],
            &[
                // 10 s for a minute: two valid points, one stale (older than 60 s ago).
                &[(999_990, 1.0), (999_980, 2.0), (999_000, 9.0)],
                // 60 s for 10 minutes: one inside the fine archive's minute (dropped), two
                // older, one misaligned (dropped).
                &[
                    (999_960, 5.0),
                    (999_900, 6.0),
                    (999_840, 7.0),
                    (999_845, 8.0),
                ],
            ],
        );
        assert_eq!(
            points(&b, now).unwrap(),
            vec![
                (999_840, 7.0),
                (999_900, 6.0),
                (999_980, 2.0),
                (999_990, 1.0)
            ]
        );
    }

    #[test]
    fn truncated_files_are_refused() {
        let b = file(&[(10, 6)], &[&[]]);
        assert!(points(&b[..b.len() - 1], 0).is_err());
        assert!(points(&b[..10], 0).is_err());
    }

    #[test]
    fn paths_are_dotted() {
        let root = Path::new("/w");
        assert_eq!(
            path_of(root, Path::new("/w/servers/web01/load.wsp")).as_deref(),
            Some("servers.web01.load")
        );
        assert_eq!(path_of(root, Path::new("/w/x.txt")), None);
        assert_eq!(
            path_of(
                root,
                Path::new("/w/_tagged/3a1/0c2/disk_DOT_used;dc=east;host=h1.wsp")
            )
            .as_deref(),
            Some("disk.used;dc=east;host=h1")
        );
        // Not carbon's tagged layout: an ordinary path.
        assert_eq!(
            path_of(root, Path::new("/w/_tagged/x.wsp")).as_deref(),
            Some("_tagged.x")
        );
    }
}
