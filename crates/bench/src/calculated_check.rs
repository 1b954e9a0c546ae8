//! The baseline for DynamoDB cost per decision: the "calculated" permission
//! check of the alternative design weighed before this one, on that
//! design's own layout (not this project's table):
//! user-to-role items `USER#u / ROLE#r` and role-to-permission items
//! `ROLE#r / PERMISSION#p` in one table, checked by querying the user's
//! roles and then each role's permissions. These key strings belong to the
//! alternative layout and live only here.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use aws_sdk_dynamodb::Client;

const USER: &str = "USER#";
const ROLE: &str = "ROLE#";
const PERMISSION: &str = "PERMISSION#";

/// Creates the calculated design's own table (`PK`, `SK`).
pub async fn create_table(client: &Client, name: &str) -> Result<(), String> {
    let attr = |n: &str| {
        AttributeDefinition::builder()
            .attribute_name(n)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .expect("attribute")
    };
    let key = |n: &str, t| {
        KeySchemaElement::builder()
            .attribute_name(n)
            .key_type(t)
            .build()
            .expect("key")
    };
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attr("PK"))
        .attribute_definitions(attr("SK"))
        .key_schema(key("PK", KeyType::Hash))
        .key_schema(key("SK", KeyType::Range))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| format!("create {name}: {e:?}"))
}

/// Gives `user` `roles` roles with `per_role` permissions each
/// (`doc:action{i}` on role 0 includes `member:read`).
pub async fn populate(
    client: &Client,
    table: &str,
    user: &str,
    roles: usize,
    per_role: usize,
) -> Result<(), String> {
    let put = |pk: String, sk: String| {
        client
            .put_item()
            .table_name(table)
            .item("PK", AttributeValue::S(pk))
            .item("SK", AttributeValue::S(sk))
            .send()
    };
    for r in 0..roles {
        let role = format!("role{r}");
        put(format!("{USER}{user}"), format!("{ROLE}{role}"))
            .await
            .map_err(|e| format!("{e:?}"))?;
        for p in 0..per_role {
            let permission = if r == roles - 1 && p == 0 {
                "member:read".to_string()
            } else {
                format!("doc{r}:action{p}")
            };
            put(format!("{ROLE}{role}"), format!("{PERMISSION}{permission}"))
                .await
                .map_err(|e| format!("{e:?}"))?;
        }
    }
    Ok(())
}

/// The calculated check: the user's roles, then each role's permissions
/// (eventually consistent queries, that design's default).
pub async fn has_permission(
    client: &Client,
    table: &str,
    user: &str,
    permission: &str,
) -> Result<bool, String> {
    let query = |pk: String, prefix: &'static str| {
        client
            .query()
            .table_name(table)
            .key_condition_expression("PK = :pk AND begins_with(SK, :prefix)")
            .expression_attribute_values(":pk", AttributeValue::S(pk))
            .expression_attribute_values(":prefix", AttributeValue::S(prefix.into()))
            .send()
    };
    let sk = |item: &std::collections::HashMap<String, AttributeValue>, prefix: &str| {
        item.get("SK")
            .and_then(|v| v.as_s().ok())
            .and_then(|s| s.strip_prefix(prefix))
            .map(str::to_string)
    };
    let roles = query(format!("{USER}{user}"), ROLE)
        .await
        .map_err(|e| format!("{e:?}"))?;
    let mut found = false;
    for role in roles.items().iter().filter_map(|i| sk(i, ROLE)) {
        let permissions = query(format!("{ROLE}{role}"), PERMISSION)
            .await
            .map_err(|e| format!("{e:?}"))?;
        found |= permissions
            .items()
            .iter()
            .filter_map(|i| sk(i, PERMISSION))
            .any(|p| p == permission);
    }
    Ok(found)
}
