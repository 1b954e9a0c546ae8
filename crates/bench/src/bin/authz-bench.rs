//! `authz-bench [--starts N] [--holders 1000,10000] [--concurrency N]`:
//! everything `make bench` measures besides the criterion bench (whose
//! estimates it reads), printed as one table (`bench::run`). Expects the
//! release binaries `authorizer` and `hello` and DynamoDB Local's jar
//! (`make bench` builds and installs them).

use bench::run::Args;

fn args() -> Result<Args, String> {
    let mut a = Args::default();
    let raw: Vec<String> = std::env::args().skip(1).collect();
    for pair in raw.chunks(2) {
        match pair {
            [flag, v] if flag == "--starts" => a.starts = v.parse().map_err(|_| "--starts")?,
            [flag, v] if flag == "--concurrency" => {
                a.concurrency = v.parse().map_err(|_| "--concurrency")?
            }
            [flag, v] if flag == "--holders" => {
                a.holders = v
                    .split(',')
                    .map(|n| n.trim().parse().map_err(|_| "--holders"))
                    .collect::<Result<_, _>>()?
            }
            _ => {
                return Err(
                    "usage: authz-bench [--starts N] [--holders 1000,10000] [--concurrency N]"
                        .into(),
                )
            }
        }
    }
    Ok(a)
}

#[tokio::main]
async fn main() {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match bench::run::run(args).await {
        Ok(sections) => println!("{}", bench::report::render(&sections)),
        Err(e) => {
            eprintln!("benchmark failed: {e}");
            std::process::exit(1);
        }
    }
}
