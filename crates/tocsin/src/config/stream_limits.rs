//! The live streams' buffer and caps (`--stream-buffer`, `--max-streams-per-workspace`,
//! `--max-streams-per-ip`): configuration the live hub is built with (`crate::live::Hub::new`).

/// Frames of its workspace a stream may fall behind the newest before it is dropped (default;
/// each streamed workspace has a ring of this many, so it stays small).
const DEFAULT_BUFFER: usize = 256;
/// Open streams per workspace, at most (default).
const DEFAULT_MAX_PER_WORKSPACE: usize = 2000;
/// Open streams per client address, at most (default; 0: no per-address share).
const DEFAULT_MAX_PER_IP: usize = 2000;

/// The caps on open streams.
#[derive(Debug, Clone, Copy)]
pub struct StreamLimits {
    pub buffer: usize,
    pub per_workspace: usize,
    /// 0: no per-address share.
    pub per_ip: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            buffer: DEFAULT_BUFFER,
            per_workspace: DEFAULT_MAX_PER_WORKSPACE,
            per_ip: DEFAULT_MAX_PER_IP,
        }
    }
}
