//! The policy-usage log: with `AUTHZ_IAM_USAGE=<file>` set, the proxy
//! records which function used (or was denied) which action on which table
//! and when (and the local gateway's management API, API Gateway's actions,
//! under the key a test gives it), and each test table records the test
//! binary and test that created it. Read together they say which tests
//! exercise each action of each policy, and how soon: the policy mutation check (`authz-iam-check`)
//! removes one action at a time and runs the tests that reach it first.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::iam::Policies;

/// The variable naming the log file.
pub const ENV: &str = "AUTHZ_IAM_USAGE";

/// The log file, when one is asked for.
pub fn log_path() -> Option<PathBuf> {
    std::env::var_os(ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// Appends one line (one `write` call, so lines from several processes do
/// not interleave).
pub fn append(path: &Path, line: &str) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.write_all(format!("{line}\n").as_bytes())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Records that the running test created `table`, or, for what it does
/// with no table (API Gateway's management calls), that it goes by `table`.
pub fn record_table(table: &str) {
    let Some(path) = log_path() else { return };
    let binary = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    // libtest runs each test on a thread named after it.
    let test = std::thread::current()
        .name()
        .filter(|n| *n != "main")
        .map(str::to_string);
    append(
        &path,
        &json!({"table": table, "binary": binary, "test": test, "at": authz_core::clock::now_millis()}).to_string(),
    );
}

/// Records in the log at `path` what `policies` decided for `function`'s
/// `action` in the test that created `table`: a use, or a refusal of the
/// action itself (no statement allows it on any resource: what removing it
/// from the policy causes, which the mutation check looks for). A refusal
/// of one resource only (another table, a stage the policy does not name)
/// is neither: it cannot stand for the removal's.
pub fn record_decision(
    path: &Path,
    table: &str,
    policies: &Policies,
    function: &str,
    action: &str,
    allowed: bool,
) {
    if !allowed && policies.allows_action(function, action) {
        return;
    }
    let mut line = json!({
        "table": table, "function": function, "action": action, "at": authz_core::clock::now_millis(),
    });
    if !allowed {
        line["denied"] = json!(true);
    }
    append(path, &line.to_string());
}

/// A test: its binary, and its name (`None`: the whole binary).
pub type TestId = (String, Option<String>);

/// A (function, action) pair.
pub type Grant = (String, String);

/// One test's use of an action.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Use {
    /// How long after the test created its table it first used the action:
    /// about how long the test runs before failing without it.
    pub after: Duration,
    pub test: TestId,
}

/// What a log says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// The tests that used each action under each function's policy,
    /// quickest to reach it first.
    pub uses: BTreeMap<Grant, Vec<Use>>,
    /// The actions the proxy (or the local gateway's management API)
    /// denied, by function.
    pub denials: BTreeSet<Grant>,
}

/// Reads a log.
pub fn read(path: &Path) -> Result<Usage, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut tests: BTreeMap<String, (TestId, u64)> = BTreeMap::new();
    let mut uses: Vec<(String, Grant, u64)> = Vec::new();
    let mut usage = Usage::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value =
            serde_json::from_str(line).map_err(|e| format!("{}: {e}: {line}", path.display()))?;
        let s = |k: &str| v[k].as_str().map(str::to_string);
        let at = v["at"].as_u64().unwrap_or_default();
        match (s("table"), s("binary"), s("function"), s("action")) {
            (Some(table), Some(binary), _, _) => {
                tests.insert(table, ((binary, s("test")), at));
            }
            (Some(_), None, Some(function), Some(action)) if v["denied"] == true => {
                usage.denials.insert((function, action));
            }
            (Some(table), None, Some(function), Some(action)) => {
                uses.push((table, (function, action), at))
            }
            _ => return Err(format!("{}: an unknown line: {line}", path.display())),
        }
    }
    for (table, grant, at) in uses {
        if let Some((test, created)) = tests.get(&table) {
            usage.uses.entry(grant).or_default().push(Use {
                after: Duration::from_millis(at.saturating_sub(*created)),
                test: test.clone(),
            });
        }
    }
    for list in usage.uses.values_mut() {
        list.sort();
        list.dedup_by(|a, b| a.test == b.test);
    }
    Ok(usage)
}
