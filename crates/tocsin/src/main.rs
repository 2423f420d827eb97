//! The `tocsin` binary: everything lives in the library; this only hands over.

// The service allocates and frees many small, short-lived buffers per request and per stored
// row from several threads at once (HTTP handling, the database driver's worker threads,
// the heartbeat writer); mimalloc's per-thread free lists serve that pattern with far less
// time in the allocator than the system's (see BENCHMARKS.md, "Summary: push ingestion").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    tocsin::cli::main()
}
