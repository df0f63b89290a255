//! Connection admission on every TCP listener, built so that clients who prove nothing cannot
//! hold the slots of those who do.
//!
//! A new connection is *pending* until it proves itself: on the OpenTSDB port by a request
//! whose principal authenticated (any request when auth is off) or a telnet line; on a carbon
//! port by its first bytes. A pending connection must prove itself within
//! `limits.handshake_timeout_ms` or it is closed, and once it has waited [`DISPLACE_AFTER`] it
//! may be displaced: when a listener is full (`limits.max_connections` on the OpenTSDB port,
//! `limits.carbon_max_connections` on each carbon port) or one address holds
//! `limits.max_connections_per_ip`, a new connection closes the oldest such pending connection
//! (that address's own first) instead of being refused. Proven connections are never displaced;
//! they end when their client closes them or after `limits.idle_timeout_ms` of silence.
//! Each listener has its own slots, so carbon senders (which cannot authenticate) never take
//! the authenticated port's.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How long a pending connection is safe from displacement: a client that connects and sends
/// its request at once is never displaced by a flood arriving in the same instant.
pub const DISPLACE_AFTER: Duration = Duration::from_secs(1);

/// Slot limits of one listener.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The config key of `max`, for messages.
    pub max_key: &'static str,
    pub max: usize,
    pub per_ip: usize,
    pub handshake: Duration,
}

impl Limits {
    /// The OpenTSDB port's limits, or a carbon port's.
    pub fn of(cfg: &crate::config::LimitsConfig, carbon: bool) -> Limits {
        let (max_key, max) = if carbon {
            ("limits.carbon_max_connections", cfg.carbon_max_connections)
        } else {
            ("limits.max_connections", cfg.max_connections)
        };
        Limits {
            max_key,
            max,
            per_ip: cfg.max_connections_per_ip,
            handshake: Duration::from_millis(cfg.handshake_timeout_ms),
        }
    }
}

/// Why a connection was not admitted; its text is what the client is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("too many connections ({key} = {max})")]
    Full { key: &'static str, max: usize },
    #[error("too many connections from this address (limits.max_connections_per_ip = {max})")]
    PerIp { max: usize },
}

pub struct Admission {
    limits: Limits,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    total: usize,
    by_ip: HashMap<IpAddr, usize>,
    /// Pending connections by id, which is their order of arrival.
    pending: BTreeMap<u64, (IpAddr, Instant, Arc<Conn>)>,
}

/// One admitted connection's standing.
pub struct Conn {
    id: u64,
    ip: IpAddr,
    admission: Arc<Admission>,
    /// Still counted in the listener's slots (cleared once, by its end or its displacement).
    counted: AtomicBool,
    promoted: AtomicBool,
    displaced: Notify,
}

/// Holds a connection's slot until dropped.
pub struct Ticket(Arc<Conn>);

impl Admission {
    pub fn new(limits: Limits) -> Arc<Admission> {
        Arc::new(Admission {
            limits,
            inner: Mutex::new(Inner::default()),
        })
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A slot for a connection from `ip`, displacing a stale pending connection if need be.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Ticket, Refused> {
        self.admit_at(ip, Instant::now())
    }

    fn admit_at(self: &Arc<Self>, ip: IpAddr, now: Instant) -> Result<Ticket, Refused> {
        let ip = ip.to_canonical();
        let mut g = self.inner.lock();
        let stale = |since: &Instant| now.saturating_duration_since(*since) >= DISPLACE_AFTER;
        if g.by_ip.get(&ip).copied().unwrap_or(0) >= self.limits.per_ip {
            let victim = g
                .pending
                .iter()
                .find(|(_, (pip, since, _))| *pip == ip && stale(since))
                .map(|(id, _)| *id);
            match victim {
                Some(id) => Self::displace(&mut g, id),
                None => {
                    return Err(Refused::PerIp {
                        max: self.limits.per_ip,
                    })
                }
            }
        }
        if g.total >= self.limits.max {
            let victim = g
                .pending
                .iter()
                .find(|(_, (_, since, _))| stale(since))
                .map(|(id, _)| *id);
            match victim {
                Some(id) => Self::displace(&mut g, id),
                None => {
                    return Err(Refused::Full {
                        key: self.limits.max_key,
                        max: self.limits.max,
                    })
                }
            }
        }
        g.next_id += 1;
        let conn = Arc::new(Conn {
            id: g.next_id,
            ip,
            admission: self.clone(),
            counted: AtomicBool::new(true),
            promoted: AtomicBool::new(false),
            displaced: Notify::new(),
        });
        g.total += 1;
        *g.by_ip.entry(ip).or_insert(0) += 1;
        g.pending.insert(conn.id, (ip, now, conn.clone()));
        Ok(Ticket(conn))
    }

    fn displace(g: &mut Inner, id: u64) {
        if let Some((_, _, conn)) = g.pending.remove(&id) {
            tracing::debug!(ip = %conn.ip, "pending connection displaced by a new one");
            Self::uncount(g, &conn);
            conn.displaced.notify_one();
        }
    }

    fn uncount(g: &mut Inner, conn: &Conn) {
        if !conn.counted.swap(false, Ordering::AcqRel) {
            return;
        }
        g.total -= 1;
        if let Some(n) = g.by_ip.get_mut(&conn.ip) {
            *n -= 1;
            if *n == 0 {
                g.by_ip.remove(&conn.ip);
            }
        }
    }

    /// (connections, pending) held now.
    pub fn counts(&self) -> (usize, usize) {
        let g = self.inner.lock();
        (g.total, g.pending.len())
    }
}

impl Conn {
    fn promote(&self) {
        if !self.promoted.swap(true, Ordering::AcqRel) {
            self.admission.inner.lock().pending.remove(&self.id);
        }
    }

    /// Resolves when the connection must close: displaced, or still pending at the deadline.
    pub async fn doomed(&self) {
        let deadline = self.admission.limits.handshake;
        let expired = async {
            tokio::time::sleep(deadline).await;
            if self.promoted.load(Ordering::Acquire) {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            _ = self.displaced.notified() => {}
            _ = expired => {
                tracing::debug!(ip = %self.ip, "connection closed: nothing proven within limits.handshake_timeout_ms");
            }
        }
    }
}

impl Ticket {
    pub fn conn(&self) -> Arc<Conn> {
        self.0.clone()
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let adm = self.0.admission.clone();
        let mut g = adm.inner.lock();
        g.pending.remove(&self.0.id);
        Admission::uncount(&mut g, &self.0);
    }
}

tokio::task_local! {
    static CURRENT: Arc<Conn>;
}

/// Runs a connection's future with its standing reachable by [`promote`].
pub async fn scope<F: std::future::Future>(conn: Arc<Conn>, f: F) -> F::Output {
    CURRENT.scope(conn, f).await
}

/// Marks the current connection as proven (no-op outside a connection's task).
pub fn promote() {
    let _ = CURRENT.try_with(|c| c.promote());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adm(max: usize, per_ip: usize) -> Arc<Admission> {
        Admission::new(Limits {
            max_key: "limits.max_connections",
            max,
            per_ip,
            handshake: Duration::from_secs(10),
        })
    }

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn stale_pending_connections_make_room_proven_ones_do_not() {
        let a = adm(3, 10);
        let t0 = Instant::now();
        let silent: Vec<Ticket> = (0..3).map(|_| a.admit_at(ip(1), t0).unwrap()).collect();
        // Too fresh to displace: a burst is refused, not reshuffled.
        assert_eq!(
            a.admit_at(ip(2), t0).err(),
            Some(Refused::Full {
                key: "limits.max_connections",
                max: 3
            })
        );
        let later = t0 + DISPLACE_AFTER;
        let good = a.admit_at(ip(2), later).unwrap();
        assert_eq!(a.counts(), (3, 3), "the oldest silent one made room");
        assert!(!silent[0].0.counted.load(Ordering::Acquire));
        good.0.promote();
        assert_eq!(a.counts(), (3, 2));
        // Two more displace the remaining silent ones; then only proven connections are left.
        let more: Vec<Ticket> = (0..2).map(|_| a.admit_at(ip(3), later).unwrap()).collect();
        more.iter().for_each(|t| t.0.promote());
        assert!(a.admit_at(ip(4), later + DISPLACE_AFTER).is_err());
        drop(silent);
        assert_eq!(
            a.counts(),
            (3, 0),
            "displaced tickets are not uncounted twice"
        );
        drop(good);
        assert_eq!(a.counts(), (2, 0));
        assert!(a.admit_at(ip(4), later).is_ok());
    }

    #[test]
    fn one_address_displaces_its_own_first() {
        let a = adm(100, 2);
        let t0 = Instant::now();
        let other = a.admit_at(ip(9), t0).unwrap();
        let mine = [
            a.admit_at(ip(1), t0).unwrap(),
            a.admit_at(ip(1), t0).unwrap(),
        ];
        assert_eq!(a.admit_at(ip(1), t0).err(), Some(Refused::PerIp { max: 2 }));
        let later = t0 + DISPLACE_AFTER * 2;
        let new = a.admit_at(ip(1), later).unwrap();
        assert!(!mine[0].0.counted.load(Ordering::Acquire));
        assert!(
            other.0.counted.load(Ordering::Acquire),
            "another address keeps its slot"
        );
        mine[1].0.promote();
        // The newest pending one is too fresh to displace…
        assert_eq!(
            a.admit_at(ip(1), later).err(),
            Some(Refused::PerIp { max: 2 })
        );
        // …until it has waited; a proven one never is.
        let newer = a.admit_at(ip(1), later + DISPLACE_AFTER).unwrap();
        assert!(!new.0.counted.load(Ordering::Acquire));
        newer.0.promote();
        assert_eq!(
            a.admit_at(ip(1), later + DISPLACE_AFTER * 5).err(),
            Some(Refused::PerIp { max: 2 })
        );
        assert_eq!(a.counts(), (3, 1));
    }

    #[tokio::test]
    async fn pending_connections_close_at_the_deadline_proven_ones_stay() {
        let a = Admission::new(Limits {
            handshake: Duration::from_millis(200),
            ..adm(10, 10).limits().clone()
        });
        let pending = a.admit(ip(1)).unwrap();
        let proven = a.admit(ip(1)).unwrap();
        scope(proven.conn(), async { promote() }).await;
        let t0 = std::time::Instant::now();
        pending.conn().doomed().await;
        assert!(t0.elapsed() >= Duration::from_millis(200));
        let stays = tokio::time::timeout(Duration::from_millis(600), proven.conn().doomed()).await;
        assert!(stays.is_err(), "a proven connection outlives the deadline");
    }
}
