//! Input read from a connection but not yet handed to the writer: a telnet or Graphite
//! plaintext chunk while it is parsed and mapped (several per connection at once). Those
//! senders get no acknowledgement, so a query waits for what arrived before it (see
//! `server::http::read_your_writes`): `echo "…" | nc` and then a query finds the point.

use parking_lot::Mutex;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

#[derive(Default)]
pub struct Received {
    next: AtomicU64,
    /// The receipts not yet dropped.
    open: Mutex<BTreeSet<u64>>,
    handed: Notify,
}

/// Held while a piece of input is on its way to the writer; dropped once its points are
/// there (also when its task ends any other way).
pub struct Receipt {
    of: Arc<Received>,
    id: u64,
}

impl Received {
    pub fn receipt(self: &Arc<Self>) -> Receipt {
        // Numbered under the lock, so that a waiter that saw the number finds it open.
        let mut open = self.open.lock();
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        open.insert(id);
        Receipt {
            of: self.clone(),
            id,
        }
    }

    /// Returns once everything received before the call is with the writer; input received
    /// later is not waited for.
    pub async fn handed_over(&self) {
        let before = self.next.load(Ordering::Relaxed);
        loop {
            let handed = self.handed.notified();
            tokio::pin!(handed);
            handed.as_mut().enable();
            if self.open.lock().first().is_none_or(|&id| id >= before) {
                return;
            }
            handed.await;
        }
    }
}

impl Drop for Receipt {
    fn drop(&mut self) {
        self.of.open.lock().remove(&self.id);
        self.of.handed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_wait_covers_what_came_before_it_and_nothing_after() {
        let r = Arc::new(Received::default());
        tokio::time::timeout(Duration::from_millis(10), r.handed_over())
            .await
            .expect("nothing open: no wait");
        let first = r.receipt();
        let waiter = tokio::spawn({
            let r = r.clone();
            async move { r.handed_over().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !waiter.is_finished(),
            "input received earlier is still on its way"
        );
        let later = r.receipt();
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("done once the earlier input is handed over")
            .unwrap();
        // The later receipt holds back only waits that began after it.
        let second = tokio::spawn({
            let r = r.clone();
            async move { r.handed_over().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!second.is_finished());
        drop(later);
        tokio::time::timeout(Duration::from_secs(5), second)
            .await
            .expect("done")
            .unwrap();
    }
}
