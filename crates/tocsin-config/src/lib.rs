//! Configuration as code for Tocsin: a workspace kept in a YAML (or JSON) file, exported,
//! planned and applied through the REST API of a running server with a bearer token, and
//! imported from other tools. It speaks only HTTP to the server: nothing here depends on the
//! `tocsin` crate.
//!
//! - `yaml`: parsing that keeps the line of every node; `load`: the file read and checked,
//!   errors as `FILE:LINE: path: message`; `model`: the file's types and JSON Schema.
//! - `client`: the REST client; `remote`: the workspace read and written as a file.
//! - `plan`: the field-level difference; `apply`: making it true with version locks.
//! - `emit`: YAML output; `import`: Uptime Kuma, Gatus and Healthchecks; `cli`: the
//!   subcommands.

pub mod apply;
pub mod cli;
pub mod client;
pub mod emit;
pub mod import;
pub mod load;
pub mod model;
pub mod plan;
pub mod remote;
pub mod yaml;
