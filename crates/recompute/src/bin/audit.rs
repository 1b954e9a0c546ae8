//! `authz-audit [--repair]`: checks every item in `TABLE_NAME` for drift of
//! every kind (see `recompute::audit`), prints each finding and a count per
//! kind, and with `--repair` fixes them. Exits 1 when anything is left.

use std::process::ExitCode;

use clap::Parser;

/// Checks the table for drift: orphan grants; stray, wrong or missing
/// guards, list entries, role refs and RoleMember links; values two users
/// claim; and permissions that differ from the roles'. The table comes from
/// TABLE_NAME (and AWS_ENDPOINT_URL for a local one).
#[derive(Parser)]
#[command(name = "authz-audit", version)]
struct Args {
    /// Fix what is found, each fix one conditional transaction that
    /// changes nothing if its items changed since they were read.
    #[arg(long)]
    repair: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let store = match authz_core::Store::from_env().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let report = match recompute::audit::run(&store, args.repair).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("audit failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    for f in &report.findings {
        println!("{f}");
    }
    for d in &report.drifted {
        println!(
            "drift {:?}: stored {:?}, expected {:?}",
            d.holder, d.stored, d.expected
        );
    }
    for ((problem, item_type), n) in report.counts() {
        println!("{n:>6} {problem} {item_type}");
    }
    println!(
        "scanned {} items, checked {} holders: {} findings, {} drift",
        report.scanned,
        report.checked,
        report.findings.len(),
        report.drifted.len()
    );
    if args.repair {
        println!("repaired {}", report.repaired);
        for (what, why) in &report.unrepaired {
            println!("not repaired: {what}: {why}");
        }
        if report.unrepaired.is_empty() {
            return ExitCode::SUCCESS;
        }
        return ExitCode::FAILURE;
    }
    if report.clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
