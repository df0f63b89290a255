//! Returning freed memory to the OS.
//!
//! The server's allocator is mimalloc (`main.rs`). mimalloc 3 keeps pages freed by the
//! program committed for a second (`purge_delay`) in case they are wanted again. Ingest frees
//! in bursts: each flush drops a shard's whole buffer (hundreds of thousands of points), and
//! the engine drops a memtable once it is written out. A burst of writes then held the freed
//! buffers of the last second on top of the live ones: about 10 MiB of the Graphite bench
//! set's peak RSS. So a flusher releases after each large flush or compaction pass.
//!
//! The release is program-wide: it returns what queries freed too, and a query then faults its
//! working memory back in (25–40 % more CPU per query when every query's memory was returned
//! before the next one, measured with `MIMALLOC_PURGE_DELAY=0`). Hence not after small flushes:
//! a steady scrape never releases, and queries keep the delay except under heavy ingest.

/// Purges the pages freed so far, by any thread, instead of after mimalloc's delay. Costs one
/// walk of the allocator's arenas plus the `madvise` calls.
pub fn release_freed() {
    // SAFETY: mi_collect only walks mimalloc's own structures; any thread may call it. In a
    // build whose global allocator is not mimalloc (the tests) it finds nearly nothing.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// How many of the pages wholly inside these blocks are resident, by `mincore` (which
    /// reads the page tables only, so it may be asked about freed memory).
    fn resident_pages(blocks: &[usize], len: usize) -> usize {
        let page = 4096;
        let mut n = 0;
        for &b in blocks {
            let start = b.next_multiple_of(page);
            let pages = (b + len - start) / page;
            let mut vec = vec![0u8; pages];
            // SAFETY: the range is page-aligned and `vec` has a byte per page of it.
            let rc = unsafe {
                libc::mincore(start as *mut libc::c_void, pages * page, vec.as_mut_ptr())
            };
            assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
            n += vec.iter().filter(|&&v| v & 1 == 1).count();
        }
        n
    }

    /// Memory freed through mimalloc stays resident until its purge delay has passed (a
    /// second), and `release_freed` gives it back at once. (This test's process allocates
    /// through the system allocator, so only these blocks are mimalloc's.)
    #[test]
    fn freed_memory_is_returned_at_once() {
        const BLOCK: usize = 64 << 10;
        const BLOCKS: usize = 1024; // 64 MiB
        let blocks: Vec<usize> = (0..BLOCKS)
            .map(|i| {
                // SAFETY: a plain allocation, written within its size and freed below.
                unsafe {
                    let p = libmimalloc_sys::mi_malloc(BLOCK) as *mut u8;
                    assert!(!p.is_null());
                    std::ptr::write_bytes(p, i as u8, BLOCK);
                    p as usize
                }
            })
            .collect();
        let live = resident_pages(&blocks, BLOCK);
        for &p in &blocks {
            // SAFETY: each was allocated by mi_malloc above and is freed once.
            unsafe { libmimalloc_sys::mi_free(p as *mut std::ffi::c_void) }
        }
        let freed = resident_pages(&blocks, BLOCK);
        release_freed();
        let released = resident_pages(&blocks, BLOCK);
        let all = BLOCKS * (BLOCK / 4096 - 1);
        assert!(live >= all, "{live} of {all} pages resident while live");
        assert!(
            freed >= all * 9 / 10,
            "{freed} of {all} pages resident just after the free"
        );
        assert!(
            released <= all / 10,
            "{released} of {all} pages resident after the release"
        );
    }
}
