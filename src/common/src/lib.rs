//! The bottom of tsgate's layers: what every other crate may use and which uses none of them.
//! The clock, number formatting shared by the APIs, the query worker pool, memory release and
//! the receipts of input on its way to the writer.

pub mod clock;
pub mod memory;
pub mod numfmt;
pub mod pool;
pub mod received;

/// The cores this process may run on, read once: the standard library reads the affinity
/// mask and the cgroup's CPU quota files on every call, tens of microseconds a query paid
/// several times over.
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
