//! The recompute function's stream mappings in `template.yaml`: partial
//! batch responses, bisect on error, bounded retries, an SQS on-failure
//! destination, and filters that let through every record type the handler
//! acts on (roles, users and their list entries, grants, directory groups,
//! tenants being deleted; revocations in a mapping of their own).

use serde_yaml::Value;

fn template() -> Value {
    let text = std::fs::read_to_string(testkit::repo_root().join("template.yaml")).unwrap();
    serde_yaml::from_str(&text).unwrap()
}

/// The filters of one of the function's stream mappings.
fn filters(mapping: &Value) -> Vec<serde_json::Value> {
    mapping["FilterCriteria"]["Filters"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|f| serde_json::from_str(f["Pattern"].as_str().unwrap()).unwrap())
        .collect()
}

#[test]
fn the_stream_mappings_report_partial_failures_and_cannot_block_a_shard() {
    let t = template();
    let function = &t["Resources"]["RecomputeFunction"]["Properties"];
    let events = &function["Events"];
    for name in ["TableStream", "RevocationStream"] {
        let stream = &events[name]["Properties"];
        assert_eq!(
            stream["FunctionResponseTypes"][0].as_str(),
            Some("ReportBatchItemFailures"),
            "{name}"
        );
        assert_eq!(stream["BisectBatchOnFunctionError"].as_bool(), Some(true));
        assert!(
            stream["MaximumRecordAgeInSeconds"].as_u64().is_some(),
            "{name}: records age out"
        );
        assert_eq!(
            stream["DestinationConfig"]["OnFailure"]["Type"].as_str(),
            Some("SQS")
        );
    }
    let retries = &t["Parameters"]["StreamMaximumRetryAttempts"];
    let max = retries["Default"].as_u64().unwrap();
    assert!(max > 0 && max <= 100, "bounded retries");

    let patterns = filters(&events["TableStream"]["Properties"]);
    let new_types = &patterns[0]["dynamodb"]["NewImage"]["Type"]["S"];
    for needed in [
        "Role",
        "User",
        "UserLookup",
        "TenantGrant",
        "DirectoryGroup",
    ] {
        assert!(
            new_types.as_array().unwrap().iter().any(|t| t == needed),
            "{needed} passes the filter"
        );
    }
    assert_eq!(patterns[1]["eventName"][0], "REMOVE");
    assert_eq!(
        patterns[1]["dynamodb"]["OldImage"]["Type"]["S"],
        serde_json::json!(["Role", "DirectoryGroup"])
    );
    // Tenants marked for deletion, whose grants the consumer removes.
    let tenant = &patterns[2]["dynamodb"]["NewImage"];
    assert_eq!(tenant["Type"]["S"][0], "Tenant");
    assert_eq!(
        tenant["status"]["S"][0],
        authz_core::model::values::DELETING
    );
    // Grants DynamoDB's TTL removed (and only those: an API delete removes
    // its own links).
    let ended = &patterns[3];
    assert_eq!(ended["eventName"][0], "REMOVE");
    assert_eq!(ended["userIdentity"]["type"][0], "Service");
    assert_eq!(
        ended["userIdentity"]["principalId"][0],
        "dynamodb.amazonaws.com"
    );
    assert_eq!(ended["dynamodb"]["OldImage"]["Type"]["S"][0], "TenantGrant");
    // Revocations recorded, after which API Gateway's caches are flushed:
    // in a mapping of their own, which no fan-out on the shard holds up,
    // and not in the other.
    let revocations = authz_core::model::items::ItemType::Revocations.as_str();
    let flushes = filters(&events["RevocationStream"]["Properties"]);
    assert_eq!(flushes.len(), 1);
    assert_eq!(
        flushes[0]["dynamodb"]["NewImage"]["Type"]["S"],
        serde_json::json!([revocations])
    );
    assert!(!serde_json::to_string(&patterns)
        .unwrap()
        .contains(revocations));
}
