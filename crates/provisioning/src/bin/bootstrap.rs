//! `authz-bootstrap --email <admin email>`: creates the platform-admin role
//! and admin user in `TABLE_NAME` (idempotent) and prints their ids as JSON.

use std::process::ExitCode;

use clap::Parser;

/// Creates the `platform-admin` global role (`*`) and an admin user holding
/// it, directly in the table named by TABLE_NAME (AWS_ENDPOINT_URL for a
/// local one). Idempotent: run it again and it finds them.
#[derive(Parser)]
#[command(name = "authz-bootstrap", version)]
struct Args {
    /// The admin's email address.
    #[arg(long)]
    email: String,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let store = match authz_core::Store::from_env().await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match provisioning::bootstrap::ensure_admin(&store, &args.email).await {
        Ok((role, user)) => {
            let out = serde_json::json!({
                "table": store.table(),
                "roleId": role.role_id,
                "userId": user.user_id,
                "email": user.email,
            });
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bootstrap failed: {e}");
            ExitCode::FAILURE
        }
    }
}
