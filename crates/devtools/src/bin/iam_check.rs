//! `authz-iam-check`: after the test suite ran with `AUTHZ_IAM_USAGE`, removes
//! each DynamoDB and API Gateway action from each function's policy in turn
//! and shows that the tests using it fail with AccessDenied (see
//! `devtools::iam_check`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// The policy mutation check: every action each function's policy in
/// template.yaml allows is needed, and tested.
#[derive(Parser)]
#[command(name = "authz-iam-check")]
struct Args {
    /// The usage log the test suite wrote (its AUTHZ_IAM_USAGE).
    #[arg(long)]
    usage: PathBuf,
    /// The template whose policies are checked.
    #[arg(long, default_value = "template.yaml")]
    template: PathBuf,
    /// Where the mutated templates and DynamoDB Local's log go.
    #[arg(long, default_value = "target/iam-check")]
    work: PathBuf,
}

fn main() -> ExitCode {
    let args = Args::parse();
    println!(
        "policy mutation check: each action removed in turn, the tests that use it run without it"
    );
    let result = devtools::iam_check::run(&args.template, &args.usage, &args.work, &mut |o| {
        let verdict = if o.passed() { "ok  " } else { "FAIL" };
        let detail = if o.tests == 0 {
            "no test uses it: remove it from the policy, or test what needs it".to_string()
        } else if !o.denied {
            "rerun without it, no request was denied it".to_string()
        } else if o.failed() == 0 {
            format!("still passed without it: {}", o.survivors.join(", "))
        } else {
            let mut line = format!(
                "used by {} test(s); {} of the {} quickest to reach it fail without it",
                o.tests,
                o.failed(),
                o.rerun
            );
            if !o.survivors.is_empty() {
                line.push_str(&format!(" (passed: {})", o.survivors.join(", ")));
            }
            line
        };
        println!(
            "{verdict} {:<13} {:<28} {detail} ({:.1} s)",
            o.function,
            o.action,
            o.took.as_secs_f64()
        );
    });
    match result {
        Ok(outcomes) if outcomes.iter().all(|o| o.passed()) => {
            println!(
                "policy mutation check passed: {} actions, each needed and tested",
                outcomes.len()
            );
            ExitCode::SUCCESS
        }
        Ok(_) => {
            eprintln!("policy mutation check FAILED (see the lines marked FAIL)");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("policy mutation check could not run: {e}");
            ExitCode::from(2)
        }
    }
}
