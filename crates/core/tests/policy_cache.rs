//! The policy set as an authorizer instance keeps it, against DynamoDB
//! Local: a reload that fails keeps the last good set for five refresh
//! intervals, then decisions get the error (never an old set past that).

use std::time::Duration;

use authz_core::store::policy_set::{PolicyCache, STALE_REFRESHES};
use authz_core::testing::new_policy;
use authz_core::Store;
use testkit::TestTable;

#[tokio::test]
async fn a_failing_refresh_keeps_the_last_good_set_for_a_bounded_time() {
    let table = TestTable::create().await;
    let good = Store::new(table.client_for("authorizer"), table.name.clone());
    // The same credentials and endpoint, a table the policy does not name:
    // every read fails (AccessDeniedException).
    let failing = Store::new(
        table.client_for("authorizer"),
        format!("{}-gone", table.name),
    );
    let writer = Store::new(table.client_for("provisioning"), table.name.clone());
    let new = new_policy("freeze", None, Some("forbid(principal, action, resource);"));
    writer.create_policy(&new, None).await.unwrap();

    let refresh = Duration::from_millis(200);
    let cache = PolicyCache::new(
        refresh,
        authz_core::policy::cedar::AnswerCaching {
            keyed_on_source_ip: false,
            result_ttl_seconds: 300,
        },
    );
    assert!(
        cache.get(&failing).await.is_err(),
        "nothing to fall back on"
    );
    assert_eq!(cache.get(&good).await.unwrap().len(), 1);
    // Past the interval, the reload fails in the background; the set in
    // hand still answers.
    tokio::time::sleep(refresh + Duration::from_millis(50)).await;
    assert_eq!(cache.get(&failing).await.unwrap().len(), 1);
    // Past five intervals without a good reload: the error.
    tokio::time::sleep(refresh * STALE_REFRESHES).await;
    let err = cache.get(&failing).await.unwrap_err();
    assert!(
        matches!(&err, authz_core::Error::Internal { message } if message.contains("AccessDenied")),
        "{err}"
    );
    // A good reload restores it.
    assert_eq!(cache.get(&good).await.unwrap().len(), 1);
}
