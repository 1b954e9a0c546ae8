//! What the whole-system tests in `tests/tests/` share: how they start the
//! local stack.

use std::time::Duration;

use devtools::stack::{Database, StackOptions};
use testkit::dynamodb_local::free_port;

/// The local stack as the end-to-end tests run it: on the harness's
/// DynamoDB Local with a table of its own, free ports, short caches (2 s)
/// so revocations show quickly, and no rebuilds on file changes.
pub fn local_stack_options() -> StackOptions {
    let root = testkit::repo_root();
    let mut o = StackOptions::new(&root);
    o.state_dir = root
        .join("target/tmp")
        .join(format!("local-stack-{}", ulid::Ulid::new()));
    o.database = Database::Existing {
        endpoint: testkit::endpoint(),
    };
    o.table = format!("authz-e2e-{}", ulid::Ulid::new().to_string().to_lowercase());
    o.gateway_port = 0;
    o.lambda_port = free_port();
    o.oidc_port = 0;
    o.tickets_port = 0;
    o.tickets_http_port = 0;
    o.result_ttl = Some(Duration::from_secs(2));
    o.decision_cache_seconds = 2;
    o.reload = false;
    o
}
