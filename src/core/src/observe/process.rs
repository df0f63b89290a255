//! Process basics from `/proc/self` (Linux), read when scraped.

use std::sync::LazyLock;
use std::time::{SystemTime, UNIX_EPOCH};

static START: LazyLock<SystemTime> = LazyLock::new(SystemTime::now);

/// Fixes the process start time; call once at startup.
pub fn mark_start() {
    LazyLock::force(&START);
}

#[derive(Debug, Default, Clone, Copy)]
pub struct ProcessStats {
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    pub max_fds: u64,
    pub threads: u64,
    pub cpu_seconds: f64,
    pub start_time_seconds: f64,
}

fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if n > 0 {
        n as f64
    } else {
        100.0
    }
}

/// What `/proc` says now; fields it cannot read stay 0.
pub fn read() -> ProcessStats {
    let mut s = ProcessStats {
        start_time_seconds: START
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0),
        ..Default::default()
    };
    if let Ok(statm) = std::fs::read_to_string("/proc/self/statm") {
        let mut f = statm
            .split_whitespace()
            .map(|x| x.parse::<u64>().unwrap_or(0));
        let (size, rss) = (f.next().unwrap_or(0), f.next().unwrap_or(0));
        s.virtual_bytes = size * page_size();
        s.resident_bytes = rss * page_size();
    }
    if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
        // Minus the descriptor read_dir itself holds open.
        s.open_fds = dir.count().saturating_sub(1) as u64;
    }
    if let Ok(limits) = std::fs::read_to_string("/proc/self/limits") {
        if let Some(l) = limits.lines().find(|l| l.starts_with("Max open files")) {
            s.max_fds = l
                .split_whitespace()
                .nth(3)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
        }
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the parenthesised command name (which may contain spaces).
        if let Some(rest) = stat.rsplit_once(')').map(|x| x.1) {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            // utime, stime are fields 14 and 15 of stat; num_threads is 20 (1-based, pid = 1).
            s.cpu_seconds = (num(11) + num(12)) as f64 / clock_ticks();
            s.threads = num(17);
        }
    }
    s
}

/// Thread names and states from `/proc/self/task` (for `/api/stats/threads`).
pub fn threads() -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(tid) = e.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let name = std::fs::read_to_string(e.path().join("comm"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let state = std::fs::read_to_string(e.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .and_then(|x| x.1.split_whitespace().next().map(str::to_string))
            })
            .map(|c| match c.as_str() {
                "R" => "RUNNABLE",
                "S" | "I" => "WAITING",
                "D" => "BLOCKED",
                "T" | "t" => "STOPPED",
                "Z" | "X" => "TERMINATED",
                _ => "UNKNOWN",
            })
            .unwrap_or("UNKNOWN")
            .to_string();
        out.push((tid, name, state));
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_process() {
        super::mark_start();
        let s = super::read();
        assert!(
            s.resident_bytes > 0 && s.virtual_bytes >= s.resident_bytes,
            "{s:?}"
        );
        assert!(s.open_fds >= 3 && s.threads >= 1, "{s:?}");
        assert!(s.start_time_seconds > 1.6e9);
        assert!(!super::threads().is_empty());
    }
}
