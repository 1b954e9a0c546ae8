//! `authz-local`: the whole system on this machine (see `devtools::local`).
//! `demo | up | dev | down | token [--user ID] [--ttl SECONDS]`

use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str =
    "usage: authz-local demo | up | dev | down | token [--user <userId>] [--ttl <seconds>]";

#[tokio::main]
async fn main() -> ExitCode {
    let root = std::env::current_dir().expect("a working directory");
    let options = match devtools::local::options(&root) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    if matches!(args.first().map(String::as_str), Some("demo" | "up")) {
        if let Err(e) = devtools::local::log_to_file(&options, "authz-local") {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    }
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["demo"] => devtools::local::demo(options).await,
        ["up"] => devtools::local::up(options).await,
        ["dev"] => devtools::local::dev(options).await,
        ["down"] => devtools::local::down(options),
        ["token", rest @ ..] => {
            let (mut user, mut ttl) = (None, Duration::from_secs(3600));
            for pair in rest.chunks(2) {
                match pair {
                    ["--user", id] => user = Some(id.to_string()),
                    ["--ttl", s] => match s.parse() {
                        Ok(s) => ttl = Duration::from_secs(s),
                        Err(_) => return usage(),
                    },
                    _ => return usage(),
                }
            }
            devtools::local::token(options, user, ttl)
        }
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}
