//! The contract is the responses: Schemathesis (installed into `.venv` by
//! `make deps`) reads `docs/openapi.json` and drives every operation of the
//! local stack with valid and invalid requests, then checks every response
//! against the document: no server error, documented statuses, bodies,
//! headers and content types, valid data accepted, invalid data refused,
//! deleted resources gone, authentication enforced. Its setup and hooks are
//! in `tests/contract/`, each exception there with its reason.
//!
//! The run is seeded (`CONTRACT_SEED`, default 1) so that CI repeats it;
//! another seed explores further: `CONTRACT_SEED=7 cargo test -p
//! system-tests --test contract`.

use std::process::Command;

use devtools::stack::Stack;

/// Examples per operation and phase: about 6,000 requests in two minutes.
const EXAMPLES: &str = "30";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_response_of_every_operation_matches_the_document() {
    let root = testkit::repo_root();
    let schemathesis = root.join(".venv/bin/st");
    assert!(
        schemathesis.exists(),
        "{} is missing: `make deps` installs Schemathesis (requirements-dev.txt)",
        schemathesis.display()
    );
    let options = system_tests::local_stack_options();
    let mut stack = Stack::start(&options, &mut |line| eprintln!("· {line}"))
        .await
        .unwrap_or_else(|e| panic!("the local stack did not start: {e}"));
    let token = stack.sign_in(&stack.admin_login).await.unwrap();
    let seed = std::env::var("CONTRACT_SEED").unwrap_or_else(|_| "1".into());
    let contract = root.join("tests/contract");

    let run = tokio::task::spawn_blocking({
        let (api_url, admin) = (stack.api_url.clone(), stack.admin_user_id.clone());
        let (contract, root, seed) = (contract.clone(), root.clone(), seed.clone());
        // Its caches go in the stack's state directory, not the repository.
        let scratch = options.state_dir.clone();
        move || {
            Command::new(schemathesis)
                .current_dir(&scratch)
                .env("SCHEMATHESIS_HOOKS", "hooks")
                .env("PYTHONPATH", &contract)
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .env("CONTRACT_ADMIN_USER_ID", admin)
                .arg("--config-file")
                .arg(contract.join("schemathesis.toml"))
                .arg("run")
                .arg(root.join("docs/openapi.json"))
                .args(["--url", &api_url])
                .args(["--header", &format!("Authorization: Bearer {token}")])
                .args(["--max-examples", EXAMPLES, "--seed", &seed])
                // One worker: the Python 3.11 this runs on can fail building
                // a regular expression's syntax tree in two threads at once.
                .args(["--workers", "1", "--request-timeout", "30"])
                .args(["--generation-database", "none", "--no-color"])
                .output()
                .expect("Schemathesis runs")
        }
    })
    .await
    .unwrap();
    stack.shutdown();

    let report = String::from_utf8_lossy(&run.stdout);
    eprintln!("{report}");
    eprintln!("{}", String::from_utf8_lossy(&run.stderr));
    assert!(
        run.status.success(),
        "Schemathesis found responses that do not match docs/openapi.json (seed {seed}): see the report above"
    );
    // Every operation of the document was run: "Selected: 58/58", "Tested: 58".
    let number_after = |label: &str| -> Option<&str> {
        let rest = &report[report.find(label)? + label.len()..];
        rest.trim_start()
            .split(|c: char| !c.is_ascii_digit() && c != '/')
            .next()
    };
    let selected = number_after("Selected:").expect("the report's operations");
    let (_, total) = selected.split_once('/').expect("selected/total");
    assert_eq!(number_after("Tested:"), Some(total), "operations tested");
}
