//! `tocsin bench`: the project's load benchmark (being written).

#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

pub async fn run(_args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("not yet")
}
