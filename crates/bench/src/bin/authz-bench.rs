//! `authz-bench [--starts N] [--holders 1000,10000] [--concurrency N]
//! [--costs-only] [--policies-only] [--revocation-only]`:
//! everything `make bench` measures besides the criterion bench (whose
//! estimates it reads), printed as one table (`bench::run`). Expects the
//! release binaries `authorizer` and `hello` and DynamoDB Local's jar
//! (`make bench` builds and installs them).

use clap::Parser;

/// Measures cold starts, the first decision, fan-out and costs, and prints
/// them with the criterion bench's warm-decision estimates as one table.
#[derive(Parser)]
#[command(name = "authz-bench", version)]
struct Cli {
    /// Starts of each binary for the cold-start medians.
    #[arg(long, default_value_t = bench::run::Args::default().starts)]
    starts: usize,
    /// Holder counts for the fan-out runs, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = bench::run::Args::default().holders)]
    holders: Vec<usize>,
    /// Pages in flight during the fan-out.
    #[arg(long, default_value_t = bench::run::Args::default().concurrency)]
    concurrency: usize,
    /// Only the DynamoDB requests and capacity units per decision and write
    /// (counts, not times: a debug build measures them the same).
    #[arg(long)]
    costs_only: bool,
    /// Only the warm decisions and tenants' own policies at a platform's
    /// size (10,000 tenants, 100,000 statements seeded).
    #[arg(long)]
    policies_only: bool,
    /// Only the revocation latency and the flush rate under a storm of
    /// revoking writes, through the local stack (debug functions: any
    /// build of this runner measures them the same).
    #[arg(long)]
    revocation_only: bool,
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    let args = bench::run::Args {
        starts: cli.starts,
        holders: cli.holders,
        concurrency: cli.concurrency,
        costs_only: cli.costs_only,
        policies_only: cli.policies_only,
        revocation_only: cli.revocation_only,
    };
    match bench::run::run(args).await {
        Ok(sections) => println!("{}", bench::report::render(&sections)),
        Err(e) => {
            eprintln!("benchmark failed: {e}");
            std::process::exit(1);
        }
    }
}
