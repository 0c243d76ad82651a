use std::ffi::c_char;

// jemalloc, not glibc malloc: a parked long-poll's buffers and states fit
// its size classes, 11 KB per parked waiter against glibc's 14.8, at the
// same throughput and latency (BENCHMARKS.md, issue 30).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: memory freed after a burst of
/// long-polls goes back to the system within about a second, by jemalloc's
/// own background thread (one), even when the server then sits idle (by default
/// unused pages are returned only as later allocations happen, and lazily
/// with MADV_FREE, which leaves them counted in the process's RSS).
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: Option<&'static c_char> = Some(unsafe {
    // SAFETY: c_char and u8 have one size and alignment; the bytes are
    // a NUL-terminated ASCII string that lives as long as the program.
    std::mem::transmute::<&'static u8, &'static c_char>(&JEMALLOC_OPTIONS[0])
});

const JEMALLOC_OPTIONS: &[u8] =
    b"background_thread:true,max_background_threads:1,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

fn main() {
    std::process::exit(qp_cli::run());
}
