//! `authz-bootstrap --email <admin email>`: creates the platform-admin role
//! and admin user in `TABLE_NAME` (idempotent) and prints their ids as JSON.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let email = match args.as_slice() {
        [flag, email] if flag == "--email" => email.clone(),
        _ => {
            eprintln!("usage: authz-bootstrap --email <admin email>   (table from TABLE_NAME)");
            return ExitCode::from(2);
        }
    };
    let store = match authz_core::config::store_from_env().await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match provisioning::bootstrap::ensure_admin(&store, &email).await {
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
