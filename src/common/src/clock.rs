//! The one wall clock of the process. Every layer reads time here, so a test can pin it
//! (`set_for_test`) and see hour boundaries, retention and "N-ago" windows move on demand.

use std::sync::atomic::{AtomicU64, Ordering};

/// A pinned time in milliseconds, or 0 for the system clock.
static PINNED_MS: AtomicU64 = AtomicU64::new(0);

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    match PINNED_MS.load(Ordering::Relaxed) {
        0 => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
        pinned => pinned,
    }
}

/// Seconds since the Unix epoch.
pub fn now_s() -> u64 {
    now_ms() / 1000
}

/// Pins the clock at `ms` (0 goes back to the system clock). Process-wide: for tests and
/// tools that replay a moment, never for the server.
pub fn set_for_test(ms: u64) {
    PINNED_MS.store(ms, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_then_released() {
        let real = now_ms();
        assert!(real > 1_600_000_000_000, "{real}");
        set_for_test(1_700_000_000_123);
        assert_eq!(now_ms(), 1_700_000_000_123);
        assert_eq!(now_s(), 1_700_000_000);
        set_for_test(0);
        assert!(now_ms() >= real);
    }
}
