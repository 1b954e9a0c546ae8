//! The table definition read from `template.yaml` (the one source of truth
//! for keys, indexes and the stream), and `CreateTable` built from it.

use std::time::Duration;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, StreamSpecification, StreamViewType,
};
use aws_sdk_dynamodb::Client;
use serde_yaml::Value;

/// A global secondary index as the template declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gsi {
    pub name: String,
    pub hash_key: String,
    pub range_key: Option<String>,
    pub projection: String,
}

/// The `AWS::DynamoDB::Table` resource of `template.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDefinition {
    pub logical_id: String,
    /// `(name, type)` pairs.
    pub attributes: Vec<(String, String)>,
    pub hash_key: String,
    pub range_key: Option<String>,
    pub gsis: Vec<Gsi>,
    pub billing_mode: String,
    pub stream_view_type: Option<String>,
    pub point_in_time_recovery: bool,
    pub sse_enabled: bool,
}

fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_str()
}

fn key_schema(v: &Value) -> (String, Option<String>) {
    let elems = v.as_sequence().expect("KeySchema is a list");
    let find = |kind: &str| {
        elems
            .iter()
            .find(|e| s(e, &["KeyType"]) == Some(kind))
            .and_then(|e| s(e, &["AttributeName"]))
            .map(str::to_string)
    };
    (find("HASH").expect("a HASH key"), find("RANGE"))
}

/// Parses the table resource out of `template.yaml`.
pub fn table_definition() -> TableDefinition {
    let path = super::repo_root().join("template.yaml");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    parse(&text)
}

pub(crate) fn parse(text: &str) -> TableDefinition {
    let doc: Value = serde_yaml::from_str(text).expect("template.yaml is YAML");
    let resources = doc["Resources"]
        .as_mapping()
        .expect("template has Resources");
    let tables: Vec<_> = resources
        .iter()
        .filter(|(_, r)| s(r, &["Type"]) == Some("AWS::DynamoDB::Table"))
        .collect();
    assert_eq!(tables.len(), 1, "template.yaml defines exactly one table");
    let (logical_id, table) = tables[0];
    let props = &table["Properties"];
    let attributes = props["AttributeDefinitions"]
        .as_sequence()
        .expect("AttributeDefinitions")
        .iter()
        .map(|a| {
            (
                s(a, &["AttributeName"]).expect("AttributeName").to_string(),
                s(a, &["AttributeType"]).expect("AttributeType").to_string(),
            )
        })
        .collect();
    let (hash_key, range_key) = key_schema(&props["KeySchema"]);
    let gsis = props
        .get("GlobalSecondaryIndexes")
        .and_then(Value::as_sequence)
        .map(|list| {
            list.iter()
                .map(|g| {
                    let (hash_key, range_key) = key_schema(&g["KeySchema"]);
                    Gsi {
                        name: s(g, &["IndexName"]).expect("IndexName").to_string(),
                        hash_key,
                        range_key,
                        projection: s(g, &["Projection", "ProjectionType"])
                            .expect("ProjectionType")
                            .to_string(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    TableDefinition {
        logical_id: logical_id.as_str().expect("logical id").to_string(),
        attributes,
        hash_key,
        range_key,
        gsis,
        billing_mode: s(props, &["BillingMode"])
            .unwrap_or("PROVISIONED")
            .to_string(),
        stream_view_type: s(props, &["StreamSpecification", "StreamViewType"]).map(str::to_string),
        point_in_time_recovery: props["PointInTimeRecoverySpecification"]
            ["PointInTimeRecoveryEnabled"]
            .as_bool()
            .unwrap_or(false),
        sse_enabled: props["SSESpecification"]["SSEEnabled"]
            .as_bool()
            .unwrap_or(false),
    }
}

fn key_elements(hash: &str, range: &Option<String>) -> Vec<KeySchemaElement> {
    let mut out = vec![KeySchemaElement::builder()
        .attribute_name(hash)
        .key_type(KeyType::Hash)
        .build()
        .expect("key element")];
    if let Some(range) = range {
        out.push(
            KeySchemaElement::builder()
                .attribute_name(range)
                .key_type(KeyType::Range)
                .build()
                .expect("key element"),
        );
    }
    out
}

/// Creates `name` with the template's definition. PITR and SSE are account
/// settings DynamoDB Local does not model; everything that shapes behaviour
/// (keys, indexes, projections, billing, stream) is applied.
pub(crate) async fn create_table(client: &Client, name: &str, def: &TableDefinition) {
    let mut request = client
        .create_table()
        .table_name(name)
        .set_key_schema(Some(key_elements(&def.hash_key, &def.range_key)))
        .billing_mode(BillingMode::from(def.billing_mode.as_str()));
    for (attr, kind) in &def.attributes {
        request = request.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(attr)
                .attribute_type(ScalarAttributeType::from(kind.as_str()))
                .build()
                .expect("attribute definition"),
        );
    }
    for gsi in &def.gsis {
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(&gsi.name)
                .set_key_schema(Some(key_elements(&gsi.hash_key, &gsi.range_key)))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::from(gsi.projection.as_str()))
                        .build(),
                )
                .build()
                .expect("gsi"),
        );
    }
    if let Some(view) = &def.stream_view_type {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::from(view.as_str()))
                .build()
                .expect("stream specification"),
        );
    }
    // The server may still be warming up just after its port opens.
    let mut attempt = 0;
    loop {
        match request.clone().send().await {
            Ok(_) => return,
            Err(e) if attempt < 40 => {
                attempt += 1;
                let _ = e;
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            Err(e) => panic!(
                "create table {name}: {}",
                aws_smithy_types::error::display::DisplayErrorContext(&e)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_elsewhere_in_the_template_do_not_break_parsing() {
        let text = r#"
Resources:
  T:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${AWS::StackName}-t"
      AttributeDefinitions: [{AttributeName: PK, AttributeType: S}]
      KeySchema: [{AttributeName: PK, KeyType: HASH}]
Outputs:
  N: {Value: !Ref T}
"#;
        let def = parse(text);
        assert_eq!(def.hash_key, "PK");
        assert_eq!(def.range_key, None);
        assert_eq!(def.billing_mode, "PROVISIONED");
    }
}
