//! The response headers the API sends, stated on the responses that carry
//! them, so that clients and the contract test know them: `ETag` on a
//! resource with a version, `Idempotent-Replayed` on a write's success,
//! `Retry-After` on a 429 or 503, and API Gateway's `WWW-Authenticate` on
//! a 401.

use serde_json::{json, Value};

use super::READ_ONLY_TAG;

/// The operations that write (their success may be a replay).
const WRITES: [&str; 4] = ["post", "put", "patch", "delete"];

/// Adds the headers to every response of `document` that carries them.
pub fn apply(document: &mut Value) {
    let versioned = versioned_schemas(document);
    let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (method, operation) in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.iter_mut())
    {
        let read_only = operation
            .get("tags")
            .and_then(Value::as_array)
            .is_some_and(|tags| tags.iter().any(|t| t == READ_ONLY_TAG));
        let replays = WRITES.contains(&method.as_str()) && !read_only;
        let Some(responses) = operation
            .get_mut("responses")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        for (status, response) in responses.iter_mut() {
            let mut headers = serde_json::Map::new();
            if status == "401" {
                headers.insert(
                    "WWW-Authenticate".into(),
                    header(
                        "From API Gateway: the bearer challenge of RFC 6750 (`Bearer error=\"invalid_token\"`)",
                        json!({"type": "string", "pattern": "^Bearer"}),
                    ),
                );
            }
            if matches!(status.as_str(), "429" | "503" | "504") {
                headers.insert(
                    "Retry-After".into(),
                    header(
                        "Seconds to wait before sending the request again",
                        json!({"type": "string", "pattern": "^[0-9]+$"}),
                    ),
                );
            }
            if status.starts_with('2') && replays {
                headers.insert(
                    "Idempotent-Replayed".into(),
                    header(
                        "`true` when this is the first answer to the same `Idempotency-Key` again",
                        json!({"type": "string", "enum": ["true"]}),
                    ),
                );
            }
            let versioned_body = response
                .pointer("/content/application~1json/schema/$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.rsplit('/').next())
                .is_some_and(|name| versioned.iter().any(|v| v == name));
            if status.starts_with('2') && versioned_body {
                headers.insert(
                    "ETag".into(),
                    header(
                        "The resource's version, quoted: send it back as `If-Match` to change it",
                        json!({"type": "string", "pattern": "^\"[0-9]+\"$"}),
                    ),
                );
            }
            if !headers.is_empty() {
                if let Some(response) = response.as_object_mut() {
                    response
                        .entry("headers")
                        .or_insert_with(|| json!({}))
                        .as_object_mut()
                        .expect("headers is an object")
                        .extend(headers);
                }
            }
        }
    }
}

fn header(description: &str, schema: Value) -> Value {
    json!({"description": description, "schema": schema})
}

/// The schemas with a `version`: the resources answered with an `ETag`.
fn versioned_schemas(document: &Value) -> Vec<String> {
    document
        .pointer("/components/schemas")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, schema)| schema.pointer("/properties/version").is_some())
        .map(|(name, _)| name.clone())
        .collect()
}
