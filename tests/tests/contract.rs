//! The contract is the responses: Schemathesis (installed into `.venv` by
//! `make deps`) reads `docs/openapi.json` and drives every operation of the
//! local stack with valid and invalid requests, then checks every response
//! against the document: no server error, documented statuses, bodies,
//! headers and content types, valid data accepted, invalid data refused,
//! deleted resources gone, authentication enforced. Its setup and hooks are
//! in `tests/contract/`, each exception there with its reason.
//!
//! The run is seeded (`CONTRACT_SEED`, default 1) so that CI repeats it;
//! another seed explores further: `CONTRACT_SEED=7 cargo nextest run -p
//! system-tests -E 'test(/^contract::/)'`.
//!
//! A tenant's SCIM base has a contract of its own, RFC 7643 and 7644: two
//! public compliance checkers (installed into `.venv-scim` by `make deps`)
//! drive it through the local stack with a directory token and must find
//! nothing wrong with what its ServiceProviderConfig advertises.

use std::process::Command;

use devtools::scenario::ApiClient;
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

/// scim2-tester (through scim2-cli's `scim2 test`) and scim-sanity's probe
/// (RFC mode, and with its Entra ID profile, which sends what Entra adds to
/// each resource) against a tenant's SCIM base, with a directory token of
/// that tenant: every check passes, but those of what the service provider
/// does not offer, which are skipped as not supported. Then Okta's and
/// Entra ID's documented sequences, replayed through the same stack.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_scim_base_passes_the_scim_compliance_checkers() {
    let root = testkit::repo_root();
    let bin = root.join(".venv-scim/bin");
    for tool in ["scim2", "scim-sanity"] {
        assert!(
            bin.join(tool).exists(),
            "{} is missing: `make deps` installs it (requirements-scim.txt)",
            bin.join(tool).display()
        );
    }
    let options = system_tests::local_stack_options();
    let mut stack = Stack::start(&options, &mut |line| eprintln!("· {line}"))
        .await
        .unwrap_or_else(|e| panic!("the local stack did not start: {e}"));
    let token = stack.sign_in(&stack.admin_login).await.unwrap();
    let api = ApiClient::new(&stack.api_url);
    let tenant = api
        .call(
            "POST",
            "/tenants",
            Some(&token),
            Some(&serde_json::json!({"name": "scim-compliance"})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(tenant.status, 201, "{}", tenant.body);
    let tenant_id = tenant.body["tenantId"].as_str().unwrap().to_string();
    let created = api
        .call(
            "POST",
            &format!("/tenants/{tenant_id}/scim-tokens"),
            Some(&token),
            Some(&serde_json::json!({"name": "compliance checkers"})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.body);
    let secret = created.body["token"].as_str().unwrap().to_string();
    let base = created.body["baseUrl"].as_str().unwrap().to_string();

    let runs = tokio::task::spawn_blocking({
        let (bin, scratch) = (bin.clone(), options.state_dir.clone());
        move || {
            let tester = Command::new(bin.join("scim2"))
                .current_dir(&scratch)
                .env(
                    "SCIM_CLI_HEADERS",
                    format!("Authorization: Bearer {secret}"),
                )
                .args(["--url", &base, "test"])
                .output()
                .expect("scim2 runs");
            let probe = |extra: &[&str]| {
                Command::new(bin.join("scim-sanity"))
                    .current_dir(&scratch)
                    .args([
                        "probe",
                        &base,
                        "--token",
                        &secret,
                        "--i-accept-side-effects",
                    ])
                    .args(extra)
                    .output()
                    .expect("scim-sanity runs")
            };
            let rfc = probe(&[]);
            let entra = probe(&["--profile", "entra", "--user-domain", "example.com"]);
            (tester, rfc, entra)
        }
    })
    .await
    .unwrap();
    // The sequences Okta and Entra ID document, as they write them,
    // through the gateway and the authorizer, each step's outcome read
    // back by the platform admin.
    let replay = devtools::scim_replay::Replay {
        api: &api,
        admin_token: &token,
    };
    let tag = ulid::Ulid::new().to_string().to_lowercase();
    let okta = replay.okta(&tag[20..]).await;
    let entra_replay = replay.entra(&tag[20..]).await;
    stack.shutdown();
    okta.unwrap_or_else(|e| panic!("Okta's sequence: {e}"));
    entra_replay.unwrap_or_else(|e| panic!("Entra ID's sequence: {e}"));
    let (tester, rfc, entra) = runs;

    // scim2 exits 1 when anything is not a success, a skipped check of a
    // feature not offered included: each result is read instead.
    let report = String::from_utf8_lossy(&tester.stdout);
    eprintln!("{report}{}", String::from_utf8_lossy(&tester.stderr));
    let lines: Vec<&str> = report.lines().collect();
    let (mut passed, mut skipped) = (0, Vec::new());
    for (i, line) in lines.iter().enumerate() {
        // A result starts its line; its reason follows, indented.
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let status = line.split_whitespace().next().unwrap_or_default();
        match status {
            "SUCCESS" => passed += 1,
            "SKIPPED" => {
                let reason = lines.get(i + 1).copied().unwrap_or_default();
                assert!(
                    reason.trim_start().starts_with("POST /.search:")
                        && reason.contains("not supported by the server"),
                    "scim2-tester skipped a check for another reason: {line} {reason}"
                );
                skipped.push(*line);
            }
            s if s.chars().all(|c| c.is_ascii_uppercase()) && !s.is_empty() => {
                panic!("scim2-tester: {line} {}", lines.get(i + 1).unwrap_or(&""))
            }
            _ => {}
        }
    }
    // Only the root `/.search` (several resource types at once), which
    // the service provider config does not offer, once per run of it.
    assert_eq!(
        skipped, ["SKIPPED search_with_attributes"; 2],
        "scim2-tester skipped only the root /.search"
    );
    assert!(passed >= 65, "scim2-tester: {passed} checks passed");

    for (name, run) in [("RFC", rfc), ("Entra ID profile", entra)] {
        let out = String::from_utf8_lossy(&run.stdout);
        eprintln!(
            "scim-sanity ({name}):\n{out}{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(run.status.success(), "scim-sanity ({name}) found a failure");
        assert!(out.contains("All tests passed"), "scim-sanity ({name})");
        // A warning is a check the service only half passed; a skip is only
        // for the agent extension, which it does not advertise.
        assert!(!out.contains("WARN"), "scim-sanity ({name}) warned");
        for skipped in out.lines().filter(|l| l.contains("SKIP]")) {
            assert!(
                skipped.contains("Agent"),
                "scim-sanity ({name}) skipped {skipped}"
            );
        }
    }
}
