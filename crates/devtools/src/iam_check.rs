//! The policy mutation check behind `authz-iam-check` (run by `make test`
//! after the test suite): every DynamoDB and API Gateway action of every
//! function's policy in `template.yaml` is used by some test, and without
//! it the tests that use it fail, with AccessDenied for that action.
//!
//! The suite runs with `AUTHZ_IAM_USAGE` set, so the harness's proxy (and
//! the local gateway's management API, for recompute's flushes) records
//! which test used which action under which function's policy, and how soon
//! (`testkit::usage`). For each action, the check writes the template
//! without it and runs, against that template (`AUTHZ_TEMPLATE`), the
//! [`RERUN_MAX`] tests that reached it soonest, those within [`QUICK`] of
//! their start (at least the one that used it first): the proxy (or the
//! management API) must deny that action and tests must fail. (A test
//! that used the action only on a path that timing decides, such as the read
//! after a transaction conflict, may pass without it; it is named, not
//! failed.)
//! Tests that reach an action only after minutes of set-up (a 1,000-holder
//! fan-out), and the hundred more that reach a common one (`GetItem`), are
//! not rerun for every action; the quickest few already show the suite
//! depends on it, and rerunning all of them would add minutes to every
//! `make test` and show nothing more. An action no test uses is a finding too: either the
//! policy grants more than the function needs, or nothing tests what needs
//! it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use testkit::dynamodb_local::{self, Storage};
use testkit::iam::{remove_action, Policies};
use testkit::usage::{self, TestId};

/// Tests that use an action within this long of their start are rerun
/// without it...
pub const QUICK: Duration = Duration::from_secs(5);

/// ...at most this many of them, the soonest to reach it (two rounds of
/// the two test threads a rerun uses).
pub const RERUN_MAX: usize = 4;

/// What one action's removal did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub function: String,
    pub action: String,
    /// The tests that used the action.
    pub tests: usize,
    /// Those rerun without it.
    pub rerun: usize,
    /// Those of them that still passed without it.
    pub survivors: Vec<String>,
    /// Whether the proxy (or the management API) denied the action during
    /// the reruns.
    pub denied: bool,
    pub took: Duration,
}

impl Outcome {
    /// Tests rerun without the action that failed.
    pub fn failed(&self) -> usize {
        self.rerun - self.survivors.len()
    }

    pub fn passed(&self) -> bool {
        self.failed() > 0 && self.denied
    }
}

/// The actions the tests can see used: DynamoDB's (through the proxy) and
/// API Gateway's (through the local gateway's management API).
const CHECKED: [&str; 2] = ["dynamodb:", "apigateway:"];

/// The checked actions each function's policy allows, in template order.
fn allowed_actions(policies: &Policies) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for function in policies.functions() {
        for statement in policies.statements(function).unwrap_or_default() {
            if statement.allow && statement.sid.as_deref() != Some(testkit::iam::SAM_STREAM_SID) {
                for action in &statement.actions {
                    if CHECKED.iter().any(|service| action.starts_with(service)) {
                        out.push((function.to_string(), action.clone()));
                    }
                }
            }
        }
    }
    out
}

/// Runs the check for the template at `template`, with the usage the suite
/// recorded in `usage_log`; `work` holds the mutated templates. `progress`
/// hears about each action as it is done.
pub fn run(
    template: &Path,
    usage_log: &Path,
    work: &Path,
    progress: &mut dyn FnMut(&Outcome),
) -> Result<Vec<Outcome>, String> {
    let doc = testkit::template::read_file(template)?;
    let policies = Policies::from_template(&doc)?;
    let used = usage::read(usage_log)?;
    std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    let root = testkit::repo_root();
    let server = dynamodb_local::start(
        &dynamodb_local::jar_dir(&root),
        dynamodb_local::free_port(),
        &Storage::InMemory,
        Some(&work.join("dynamodb-local.log")),
    )?;
    let mut outcomes = Vec::new();
    for (function, action) in allowed_actions(&policies) {
        let started = Instant::now();
        let uses = used
            .uses
            .get(&(function.clone(), action.clone()))
            .cloned()
            .unwrap_or_default();
        let mut tests: BTreeSet<TestId> = BTreeSet::new();
        for (i, u) in uses.iter().enumerate() {
            if tests.len() == RERUN_MAX || (i > 0 && u.after > QUICK) {
                break;
            }
            tests.insert(u.test.clone());
        }
        let mut outcome = Outcome {
            function: function.clone(),
            action: action.clone(),
            tests: uses.len(),
            rerun: tests.len(),
            survivors: Vec::new(),
            denied: false,
            took: Duration::ZERO,
        };
        if !tests.is_empty() {
            let mut mutated = doc.clone();
            remove_action(&mut mutated, &function, &action);
            let path = work.join(format!(
                "template-without-{function}-{}.yaml",
                action.replace(':', "-")
            ));
            std::fs::write(
                &path,
                serde_yaml::to_string(&mutated).map_err(|e| e.to_string())?,
            )
            .map_err(|e| format!("{}: {e}", path.display()))?;
            let log = path.with_extension("usage.jsonl");
            let _ = std::fs::remove_file(&log);
            outcome.survivors = run_tests(&tests, &path, &log, &server.endpoint, &root)?;
            outcome.denied = usage::read(&log)
                .map(|u| u.denials.contains(&(function.clone(), action.clone())))
                .unwrap_or(false);
        }
        outcome.took = started.elapsed();
        progress(&outcome);
        outcomes.push(outcome);
    }
    testkit::process::stop_group(server.pid, Duration::from_secs(5));
    Ok(outcomes)
}

/// Runs `tests` against the template at `template`, the proxy recording
/// into `log`; returns the tests that passed.
fn run_tests(
    tests: &BTreeSet<TestId>,
    template: &Path,
    log: &Path,
    endpoint: &str,
    root: &Path,
) -> Result<Vec<String>, String> {
    let mut by_binary: BTreeMap<&String, Vec<&Option<String>>> = BTreeMap::new();
    for (binary, test) in tests {
        by_binary.entry(binary).or_default().push(test);
    }
    let mut survivors = Vec::new();
    for (binary, names) in by_binary {
        let mut command = Command::new(binary);
        // A test known by name runs alone; one recorded without a name (a
        // run on one thread) stands for its whole binary.
        if names.iter().all(|n| n.is_some()) {
            command.arg("--exact");
            command.args(names.iter().filter_map(|n| n.as_deref()));
        }
        let out = command
            .arg("--test-threads=2")
            .current_dir(root)
            .env("AUTHZ_TEMPLATE", template)
            .env("DYNAMODB_LOCAL_ENDPOINT", endpoint)
            .env(usage::ENV, log)
            .output()
            .map_err(|e| format!("{binary}: {e}"))?;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(name) = line
                .strip_prefix("test ")
                .and_then(|l| l.strip_suffix(" ... ok"))
            {
                survivors.push(format!("{} {name}", short(binary)));
            }
        }
    }
    Ok(survivors)
}

/// A test binary's name without its path and hash.
fn short(binary: &str) -> String {
    let name = Path::new(binary)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.rsplit_once('-') {
        Some((stem, _hash)) => stem.to_string(),
        None => name,
    }
}

/// Where `make test` keeps the usage log and the mutated templates.
pub fn default_work_dir(root: &Path) -> PathBuf {
    root.join("target/iam-check")
}
