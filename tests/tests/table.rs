//! The table in `template.yaml` is the one docs/table.md lays out, and the table
//! the harness creates from it on DynamoDB Local has the same shape.

use testkit::{table_definition, Gsi, TestTable};

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_string(), b.to_string())
}

#[test]
fn the_template_defines_the_documented_table() {
    let def = table_definition();
    let mut attrs = def.attributes.clone();
    attrs.sort();
    assert_eq!(
        attrs,
        ["GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK", "PK", "SK"]
            .map(|a| pair(a, "S"))
            .to_vec(),
        "six string key attributes"
    );
    assert_eq!(def.hash_key, "PK");
    assert_eq!(def.range_key.as_deref(), Some("SK"));
    let gsi = |n: u8| Gsi {
        name: format!("GSI{n}"),
        hash_key: format!("GSI{n}PK"),
        range_key: Some(format!("GSI{n}SK")),
        projection: "ALL".into(),
    };
    assert_eq!(def.gsis, vec![gsi(1), gsi(2)]);
    assert_eq!(def.billing_mode, "PAY_PER_REQUEST");
    assert_eq!(def.stream_view_type.as_deref(), Some("NEW_AND_OLD_IMAGES"));
    assert!(def.point_in_time_recovery);
    assert!(def.sse_enabled);
}

#[tokio::test]
async fn the_harness_creates_that_table_on_dynamodb_local() {
    let table = TestTable::create_with_stream().await;
    let described = table
        .client
        .describe_table()
        .table_name(&table.name)
        .send()
        .await
        .expect("describe the test table")
        .table
        .expect("table description");
    let mut indexes: Vec<String> = described
        .global_secondary_indexes()
        .iter()
        .map(|g| g.index_name().unwrap_or_default().to_string())
        .collect();
    indexes.sort();
    assert_eq!(indexes, ["GSI1", "GSI2"]);
    let stream = described.stream_specification().expect("stream enabled");
    assert_eq!(
        stream.stream_view_type().map(|v| v.as_str()),
        Some("NEW_AND_OLD_IMAGES")
    );
    assert!(described.latest_stream_arn().is_some());
}
