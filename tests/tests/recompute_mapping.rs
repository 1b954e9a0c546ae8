//! The recompute function's stream mapping in `template.yaml`: partial batch
//! responses, bisect on error, bounded retries, an SQS on-failure
//! destination, and filters that let through every record type the handler
//! acts on (roles, users, grants, tenants being deleted, revocations).

use serde_yaml::Value;

fn template() -> Value {
    let text = std::fs::read_to_string(testkit::repo_root().join("template.yaml")).unwrap();
    serde_yaml::from_str(&text).unwrap()
}

#[test]
fn the_stream_mapping_reports_partial_failures_and_cannot_block_a_shard() {
    let t = template();
    let function = &t["Resources"]["RecomputeFunction"]["Properties"];
    let stream = &function["Events"]["TableStream"]["Properties"];
    assert_eq!(
        stream["FunctionResponseTypes"][0].as_str(),
        Some("ReportBatchItemFailures")
    );
    assert_eq!(stream["BisectBatchOnFunctionError"].as_bool(), Some(true));
    let retries = &t["Parameters"]["StreamMaximumRetryAttempts"];
    let max = retries["Default"].as_u64().unwrap();
    assert!(max > 0 && max <= 100, "bounded retries");
    assert!(
        stream["MaximumRecordAgeInSeconds"].as_u64().is_some(),
        "records age out"
    );
    assert_eq!(
        stream["DestinationConfig"]["OnFailure"]["Type"].as_str(),
        Some("SQS")
    );

    let patterns: Vec<serde_json::Value> = stream["FilterCriteria"]["Filters"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|f| serde_json::from_str(f["Pattern"].as_str().unwrap()).unwrap())
        .collect();
    let new_types = &patterns[0]["dynamodb"]["NewImage"]["Type"]["S"];
    for needed in ["Role", "User", "TenantGrant"] {
        assert!(
            new_types.as_array().unwrap().iter().any(|t| t == needed),
            "{needed} passes the filter"
        );
    }
    assert_eq!(patterns[1]["eventName"][0], "REMOVE");
    assert_eq!(patterns[1]["dynamodb"]["OldImage"]["Type"]["S"][0], "Role");
    // Tenants marked for deletion, whose grants the consumer removes.
    let tenant = &patterns[2]["dynamodb"]["NewImage"];
    assert_eq!(tenant["Type"]["S"][0], "Tenant");
    assert_eq!(
        tenant["status"]["S"][0],
        authz_core::model::values::DELETING
    );
    // Revocations recorded, after which API Gateway's cache is flushed.
    assert_eq!(
        patterns[3]["dynamodb"]["NewImage"]["Type"]["S"][0],
        authz_core::model::items::ItemType::Revocations.as_str()
    );
    // Grants DynamoDB's TTL removed (and only those: an API delete removes
    // its own links).
    let ended = &patterns[4];
    assert_eq!(ended["eventName"][0], "REMOVE");
    assert_eq!(ended["userIdentity"]["type"][0], "Service");
    assert_eq!(
        ended["userIdentity"]["principalId"][0],
        "dynamodb.amazonaws.com"
    );
    assert_eq!(ended["dynamodb"]["OldImage"]["Type"]["S"][0], "TenantGrant");
}
