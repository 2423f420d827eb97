//! The `tocsin` binary: the command line ([`cli`]) and the load generator ([`bench`], `tocsin
//! bench`) over the service, which is the library (`tocsin::...`). The load generator lives here
//! rather than in the library so that the service does not compile it.

mod bench;
mod cli;

// The service allocates and frees many small, short-lived buffers per request and per stored
// row from several threads at once (HTTP handling, the database driver's worker threads,
// the heartbeat writer); mimalloc's per-thread free lists serve that pattern with far less
// time in the allocator than the system's (see BENCHMARKS.md, "Summary: push ingestion").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
