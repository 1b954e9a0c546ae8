//! `authz-local`: the whole system on this machine (see `devtools::local`):
//! `demo | up | dev | down | token [--login NAME] |
//! with-dynamodb -- COMMAND...`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Runs the authorization system locally: DynamoDB Local, the three
/// functions under `cargo lambda watch`, the stream poller and an API
/// Gateway stand-in, each function under its own policy from template.yaml.
#[derive(Parser)]
#[command(name = "authz-local", version)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the stack, run the demo scenario, print each step, and stop.
    Demo,
    /// Run the stack in the foreground until a signal.
    Up,
    /// Start the stack in the background and print the commands to try it.
    Dev,
    /// Stop a running stack.
    Down,
    /// Sign in at the running stack's OpenID provider and print the access
    /// token (valid 1 h).
    Token {
        /// The login name to sign in as, which is the token's `sub`
        /// (default: the stack's admin, by their email address).
        #[arg(long)]
        login: Option<String>,
        /// Which local provider (1, or 2 when TRUSTED_ISSUERS names
        /// `{local2}`).
        #[arg(long, default_value_t = 1)]
        issuer: usize,
    },
    /// Start DynamoDB Local alone (in memory, on a free port), run COMMAND
    /// with DYNAMODB_LOCAL_ENDPOINT naming it, stop it, and exit with
    /// COMMAND's status: the tests of `make unit` share one server this way.
    WithDynamodb {
        /// The command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    /// Print the provisioning API's OpenAPI 3.1 document (`make openapi`
    /// writes it to docs/openapi.json).
    Openapi,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Command::Openapi = args.command {
        return match serde_json::to_string_pretty(&provisioning::openapi::document()) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::FAILURE
            }
        };
    }
    let root = std::env::current_dir().expect("a working directory");
    let options = match devtools::local::options(&root) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if matches!(args.command, Command::Demo | Command::Up) {
        if let Err(e) = devtools::local::log_to_file(&options, "authz-local") {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    match args.command {
        Command::Demo => devtools::local::demo(options).await,
        Command::Up => devtools::local::up(options).await,
        Command::Dev => devtools::local::dev(options).await,
        Command::Down => devtools::local::down(options),
        Command::Token { login, issuer } => devtools::local::token(options, login, issuer).await,
        Command::WithDynamodb { command } => devtools::local::with_dynamodb(&root, &command),
        Command::Openapi => unreachable!("answered before the stack's options are read"),
    }
}
