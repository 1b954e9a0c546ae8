//! `authz-bootstrap --email <admin email> [--issuer URL --subject SUB]`:
//! creates the platform-admin role and admin user in `TABLE_NAME`, links the
//! admin's identity at a trusted issuer when given (idempotent), and prints
//! their ids as JSON.

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
    /// The issuer of the admin's tokens (their `iss`), to link the admin's
    /// identity there: tokens from it with `--subject` sign the admin in.
    #[arg(long, requires = "subject")]
    issuer: Option<String>,
    /// The admin's subject at `--issuer` (the `sub` of their tokens, or the
    /// claim the issuer's profile names).
    #[arg(long, requires = "issuer")]
    subject: Option<String>,
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
    let identity = match (&args.issuer, &args.subject) {
        (Some(issuer), Some(subject)) => {
            let link = provisioning::bodies::LinkIdentity {
                issuer: issuer.clone(),
                subject: subject.clone(),
            };
            match link.validate() {
                Ok(identity) => Some(identity),
                Err(e) => {
                    eprintln!("--{e}");
                    return ExitCode::from(2);
                }
            }
        }
        _ => None,
    };
    let admin = async {
        let (role, user) = provisioning::bootstrap::ensure_admin(&store, &args.email).await?;
        let user = match &identity {
            Some(identity) => {
                provisioning::bootstrap::ensure_identity(&store, &user, identity).await?
            }
            None => user,
        };
        Ok::<_, authz_core::Error>((role, user))
    };
    match admin.await {
        Ok((role, user)) => {
            let out = serde_json::json!({
                "table": store.table(),
                "roleId": role.role_id,
                "userId": user.user_id,
                "email": user.email,
                "identities": user.identities.iter().map(|i| i.identity_id).collect::<Vec<_>>(),
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
