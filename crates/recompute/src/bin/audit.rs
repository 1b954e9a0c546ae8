//! `authz-audit [--repair]`: checks every grant and user in `TABLE_NAME`
//! against its roles, prints the count and the items that drift, and with
//! `--repair` fixes them. Exits 1 when drift remains.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let repair = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => false,
        [flag] if flag == "--repair" => true,
        _ => {
            eprintln!("usage: authz-audit [--repair]   (table from TABLE_NAME)");
            return ExitCode::from(2);
        }
    };
    let store = match authz_core::config::store_from_env().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match recompute::audit::run(&store, repair).await {
        Ok(report) => {
            for d in &report.drifted {
                println!(
                    "drift {:?}: stored {:?}, expected {:?}",
                    d.holder, d.stored, d.expected
                );
            }
            println!(
                "checked {} holders, {} drift, {} repaired",
                report.checked,
                report.drifted.len(),
                report.repaired
            );
            if report.drifted.len() > report.repaired {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("audit failed: {e}");
            ExitCode::FAILURE
        }
    }
}
