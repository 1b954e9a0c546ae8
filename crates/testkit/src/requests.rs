//! What a DynamoDB or DynamoDB Streams request (JSON protocol,
//! `X-Amz-Target: DynamoDB_20120810.Op`) asks of IAM, and which items it
//! writes: each action of a transaction is authorized as its own item
//! action (`Put` as `dynamodb:PutItem`, `ConditionCheck` as
//! `dynamodb:ConditionCheckItem`), each table of a batch as the batch
//! action, a query of an index on the index's ARN, as IAM does.

use serde_json::Value;

use crate::iam::table_arn;

/// One permission a request needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// `dynamodb:GetItem`
    pub action: String,
    /// The ARN, or `*` for an action on no resource.
    pub resource: String,
    /// The table the resource belongs to.
    pub table: Option<String>,
}

/// An item, by table and key: what conflicting writes contend for.
pub type ItemKey = (String, String);

/// The items a request writes (or checks, in a transaction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Writes {
    Nothing,
    /// A `TransactWriteItems`: its items in action order.
    Transaction(Vec<ItemKey>),
    /// A `PutItem`, `UpdateItem` or `DeleteItem`.
    Item(ItemKey),
}

/// A request as IAM and the conflict layer see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The operation (`TransactWriteItems`).
    pub operation: String,
    pub accesses: Vec<Access>,
    pub writes: Writes,
}

fn table_access(action: &str, table: &str) -> Access {
    Access {
        action: format!("dynamodb:{action}"),
        resource: table_arn(table),
        table: Some(table.to_string()),
    }
}

fn str_field<'a>(v: &'a Value, field: &str, op: &str) -> Result<&'a str, String> {
    v[field]
        .as_str()
        .ok_or_else(|| format!("{op}: no {field} in the request"))
}

/// The key of an item from a `Key` map or a whole `Item`, by the table's
/// key attributes.
fn item_key(table: &str, item: &Value, key_attributes: &[String]) -> ItemKey {
    let parts: Vec<String> = key_attributes
        .iter()
        .map(|a| item[a.as_str()].to_string())
        .collect();
    (table.to_string(), parts.join("|"))
}

/// Reads a request. `key_attributes` are the table's key attribute names
/// (hash, then range).
pub fn parse(target: &str, body: &[u8], key_attributes: &[String]) -> Result<Request, String> {
    let (service, op) = target
        .split_once('.')
        .ok_or_else(|| format!("X-Amz-Target {target:?} names no operation"))?;
    let v: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body).map_err(|e| format!("{op}: the body is not JSON: {e}"))?
    };
    let mut accesses = Vec::new();
    let mut writes = Writes::Nothing;
    match (service, op) {
        ("DynamoDB_20120810", "ListTables") | ("DynamoDBStreams_20120810", "ListStreams") => {
            let action = if op == "ListTables" {
                "ListTables"
            } else {
                "ListStreams"
            };
            accesses.push(Access {
                action: format!("dynamodb:{action}"),
                resource: "*".into(),
                table: None,
            });
        }
        ("DynamoDB_20120810", "Query" | "Scan") => {
            let table = str_field(&v, "TableName", op)?;
            let mut access = table_access(op, table);
            if let Some(index) = v["IndexName"].as_str() {
                access.resource = format!("{}/index/{index}", access.resource);
            }
            accesses.push(access);
        }
        ("DynamoDB_20120810", "PutItem" | "UpdateItem" | "DeleteItem") => {
            let table = str_field(&v, "TableName", op)?;
            accesses.push(table_access(op, table));
            let key = if op == "PutItem" {
                &v["Item"]
            } else {
                &v["Key"]
            };
            writes = Writes::Item(item_key(table, key, key_attributes));
        }
        ("DynamoDB_20120810", "BatchGetItem" | "BatchWriteItem") => {
            let tables = v["RequestItems"]
                .as_object()
                .ok_or_else(|| format!("{op}: no RequestItems"))?;
            accesses.extend(tables.keys().map(|t| table_access(op, t)));
        }
        ("DynamoDB_20120810", "TransactWriteItems" | "TransactGetItems") => {
            let items = v["TransactItems"]
                .as_array()
                .ok_or_else(|| format!("{op}: no TransactItems"))?;
            let mut keys = Vec::new();
            for item in items {
                let (kind, action) = [
                    ("Put", "PutItem"),
                    ("Update", "UpdateItem"),
                    ("Delete", "DeleteItem"),
                    ("ConditionCheck", "ConditionCheckItem"),
                    ("Get", "GetItem"),
                ]
                .into_iter()
                .find(|(kind, _)| !item[*kind].is_null())
                .ok_or_else(|| format!("{op}: an action of no known kind"))?;
                let action_body = &item[kind];
                let table = str_field(action_body, "TableName", op)?;
                accesses.push(table_access(action, table));
                let key = if kind == "Put" {
                    &action_body["Item"]
                } else {
                    &action_body["Key"]
                };
                keys.push(item_key(table, key, key_attributes));
            }
            if op == "TransactWriteItems" {
                writes = Writes::Transaction(keys);
            }
        }
        ("DynamoDB_20120810", _) => {
            // Table-level operations (DescribeTable, CreateTable, ...).
            let table = str_field(&v, "TableName", op)?;
            accesses.push(table_access(op, table));
        }
        ("DynamoDBStreams_20120810", "DescribeStream" | "GetShardIterator") => {
            let arn = str_field(&v, "StreamArn", op)?;
            accesses.push(stream_access(op, arn));
        }
        ("DynamoDBStreams_20120810", "GetRecords") => {
            // A shard iterator starts with its stream's ARN (on DynamoDB as
            // on DynamoDB Local); one that does not names no resource, and
            // only a statement on `*` can allow it.
            let iterator = str_field(&v, "ShardIterator", op)?;
            let arn = iterator
                .split('|')
                .next()
                .filter(|a| a.starts_with("arn:"))
                .unwrap_or("*");
            accesses.push(stream_access(op, arn));
        }
        _ => {
            return Err(format!(
                "{target}: an operation the IAM check does not know"
            ))
        }
    }
    Ok(Request {
        operation: op.to_string(),
        accesses,
        writes,
    })
}

fn stream_access(op: &str, arn: &str) -> Access {
    let table = arn
        .split_once(":table/")
        .and_then(|(_, rest)| rest.split('/').next())
        .map(str::to_string);
    Access {
        action: format!("dynamodb:{op}"),
        resource: arn.to_string(),
        table,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys() -> Vec<String> {
        vec!["PK".into(), "SK".into()]
    }

    #[test]
    fn transactions_need_each_item_action_and_name_their_items() {
        let body = json!({"TransactItems": [
            {"Put": {"TableName": "t", "Item": {"PK": {"S": "A"}, "SK": {"S": "A"}, "x": {"N": "1"}}}},
            {"ConditionCheck": {"TableName": "t", "Key": {"PK": {"S": "R"}, "SK": {"S": "R"}}}},
            {"Update": {"TableName": "t", "Key": {"SK": {"S": "B"}, "PK": {"S": "B"}}}},
        ]});
        let r = parse(
            "DynamoDB_20120810.TransactWriteItems",
            body.to_string().as_bytes(),
            &keys(),
        )
        .unwrap();
        let actions: Vec<&str> = r.accesses.iter().map(|a| a.action.as_str()).collect();
        assert_eq!(
            actions,
            [
                "dynamodb:PutItem",
                "dynamodb:ConditionCheckItem",
                "dynamodb:UpdateItem"
            ]
        );
        assert!(r.accesses.iter().all(|a| a.resource == table_arn("t")));
        let Writes::Transaction(items) = r.writes else {
            panic!("a transaction writes")
        };
        assert_eq!(items[0], ("t".into(), r#"{"S":"A"}|{"S":"A"}"#.into()));
        // Attribute order in the Key map does not matter.
        assert_eq!(items[2], ("t".into(), r#"{"S":"B"}|{"S":"B"}"#.into()));
    }

    #[test]
    fn index_queries_batches_and_streams_name_their_resources() {
        let q = parse(
            "DynamoDB_20120810.Query",
            br#"{"TableName":"t","IndexName":"GSI1"}"#,
            &keys(),
        )
        .unwrap();
        assert_eq!(
            q.accesses[0].resource,
            format!("{}/index/GSI1", table_arn("t"))
        );
        let b = parse(
            "DynamoDB_20120810.BatchGetItem",
            br#"{"RequestItems":{"t":{"Keys":[]}}}"#,
            &keys(),
        )
        .unwrap();
        assert_eq!(b.accesses[0].action, "dynamodb:BatchGetItem");
        let arn = format!("{}/stream/2026-01-01T00:00:00.000", table_arn("t"));
        let g = parse(
            "DynamoDBStreams_20120810.GetRecords",
            json!({"ShardIterator": format!("{arn}|1|AAAA")})
                .to_string()
                .as_bytes(),
            &keys(),
        )
        .unwrap();
        assert_eq!(g.accesses[0].resource, arn);
        assert_eq!(g.accesses[0].table.as_deref(), Some("t"));
        assert!(parse("DynamoDB_20120810", b"{}", &keys()).is_err());
        assert!(parse("Other_1.Op", b"{}", &keys()).is_err());
    }
}
