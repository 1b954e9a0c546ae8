//! The rules the API enforces on every parameter and body field, stated in
//! the document so that generated clients and contract testers agree with
//! the server: each value's pattern (`authz_core::model::values::pattern`,
//! held against its parser there), lengths, list sizes, enums and formats.
//! Applied to the document as JSON, by parameter and property name.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use authz_core::model::input::{
    IDENTITIES_PER_USER_MAX, POLICY_STATEMENT_MAX, ROLES_PER_HOLDER_MAX, ROLE_PERMISSIONS_MAX,
};
use authz_core::model::values::{
    pattern, EMAIL_MAX, ISSUER_MAX, PERMISSION_MAX, SUBJECT_MAX, TEXT_MAX,
};
use authz_core::store::page::CURSOR_MAX;

use crate::bodies::BATCH_MAX;
use crate::change::{REASON_HEADER, REASON_MAX};
use crate::extract::VERSION_DIGITS_MAX;
use crate::handlers::history::ACTOR_MAX;
use crate::idempotency::MAX_KEY;

/// A ULID as the API accepts it: 26 Crockford base32 characters in any
/// case, the first at most 7 (128 bits).
pub const ULID_PATTERN: &str = pattern::ULID;

/// The route rules the stack ships: their permissions are the actions the
/// check API knows (a deployment with other rules knows its own).
const SHIPPED_RULES: &str = include_str!("../../../../route_rules/provisioning.json");

/// Operations that refuse to run without a reason for the change.
const REASON_REQUIRED: [&str; 2] = ["deleteTenant", "deleteUser"];

/// The actions of the shipped route rules, sorted.
fn actions() -> Vec<String> {
    let rules = authz_core::policy::route_rules::parse(SHIPPED_RULES)
        .expect("the shipped route rules parse");
    let mut actions: Vec<String> = rules
        .into_iter()
        .map(|r| r.permission.to_string())
        .collect();
    actions.sort();
    actions.dedup();
    actions
}

/// The permissions a role may hold, by the shipped rules: each action, `*`,
/// and each wildcard over some (`member:*` for `member:read`).
fn role_permissions(actions: &[String]) -> Vec<String> {
    let mut known: BTreeSet<String> = actions.iter().cloned().collect();
    known.insert("*".into());
    for action in actions {
        let segments: Vec<&str> = action.split(':').collect();
        for n in 1..segments.len() {
            known.insert(format!("{}:*", segments[..n].join(":")));
        }
    }
    known.into_iter().collect()
}

/// What a request body's property or a parameter named `name` must be;
/// `owner` is the schema holding the property, or the path holding the
/// parameter.
fn rule(owner: &str, name: &str, actions: &[String]) -> Option<Value> {
    Some(match (owner, name) {
        ("CheckContext", "scope") => return None,
        (_, "scope") => json!({"enum": ["tenant", "global"]}),
        ("CreateTenant" | "UpdateTenant" | "/tenants/by-name/{name}", "name") => {
            json!({"pattern": pattern::TENANT_NAME})
        }
        (_, "name") => json!({"pattern": pattern::NAME}),
        (_, "namePrefix") => json!({"pattern": pattern::TENANT_NAME_PREFIX}),
        (_, "prefix") => json!({"pattern": pattern::NAME_PREFIX}),
        (_, "email") => json!({"pattern": pattern::EMAIL, "maxLength": EMAIL_MAX}),
        (_, "emailPrefix") => json!({"pattern": pattern::EMAIL_PREFIX, "maxLength": EMAIL_MAX}),
        (_, "phone") => json!({"pattern": pattern::PHONE}),
        (_, "preferredUsername") => json!({"pattern": pattern::PREFERRED_USERNAME}),
        (_, "givenName" | "familyName" | "description") => {
            json!({"pattern": pattern::TEXT, "maxLength": TEXT_MAX})
        }
        (_, "roles") => json!({
            "items": {"pattern": pattern::ULID},
            "maxItems": ROLES_PER_HOLDER_MAX,
            "uniqueItems": true,
        }),
        // What a role may hold: a known permission, `*`, or a wildcard
        // over some (the shipped rules'; a deployment knows its own).
        (_, "permissions") => json!({
            "items": {"enum": role_permissions(actions)},
            "maxItems": ROLE_PERMISSIONS_MAX,
            "uniqueItems": true,
        }),
        (_, "permission") => json!({"pattern": pattern::PERMISSION, "maxLength": PERMISSION_MAX}),
        (_, "rolesExpireAt" | "expiresAt" | "time" | "from" | "to") => {
            json!({"format": "date-time"})
        }
        // A search needs something to search for.
        (_, "q") => json!({"pattern": "\\S"}),
        ("/tenants/{tenantId}/changes", "kind") => json!({"enum": ["tenant", "grant"]}),
        (_, "kind") => json!({"enum": ["tenant", "user", "role", "grant", "policy"]}),
        (_, "actor") => json!({"pattern": "\\S", "maxLength": ACTOR_MAX}),
        (_, "identities") => json!({"maxItems": IDENTITIES_PER_USER_MAX, "uniqueItems": true}),
        (_, "issuer") => json!({"pattern": pattern::ISSUER, "maxLength": ISSUER_MAX}),
        (_, "subject") => json!({"pattern": pattern::SUBJECT, "maxLength": SUBJECT_MAX}),
        (_, "code") => json!({"pattern": pattern::CODE}),
        (_, "principal" | "emailId" | "userId" | "tenantId") => json!({"pattern": pattern::ULID}),
        (_, "policyId") => json!({"pattern": pattern::POLICY_ID}),
        (_, n) if n.ends_with("Id") => json!({"pattern": pattern::ULID}),
        (_, "status") => json!({"enum": ["active", "suspended", "deleted"]}),
        (_, "statement") => json!({"maxLength": POLICY_STATEMENT_MAX}),
        // Any unsigned 64-bit number (`int64` would stop at 2^63 - 1).
        (_, "version") => json!({"format": "uint64", "minimum": 0, "maximum": u64::MAX}),
        (_, "action") => json!({"enum": actions}),
        (_, "sourceIp") => json!({"pattern": pattern::IP_ADDRESS}),
        ("BatchRequest", "requests") => json!({"minItems": 1, "maxItems": BATCH_MAX}),
        (_, "cursor") => json!({"pattern": "^[A-Za-z0-9_-]*$", "maxLength": CURSOR_MAX}),
        (_, "If-Match") => json!({
            "type": "string",
            "pattern": format!("^(W/)?(\"[0-9]{{1,{VERSION_DIGITS_MAX}}}\"|[0-9]{{1,{VERSION_DIGITS_MAX}}})$"),
        }),
        (_, "If-None-Match") => json!({"type": "string", "enum": ["*"]}),
        (_, "Idempotency-Key") => {
            json!({"pattern": format!("^[A-Za-z0-9._:-]{{1,{MAX_KEY}}}$")})
        }
        (_, REASON_HEADER) => json!({
            // A header value is visible ASCII; the reason is trimmed, then
            // 1 to 1,024 characters without control characters.
            "pattern": format!("^[\\t ]*[!-~]([ -~]{{0,{}}}[!-~])?[\\t ]*$", REASON_MAX - 2),
        }),
        _ => return None,
    })
}

/// Merges `rule` into `schema`: `items` into the schema of the elements,
/// everything else beside the type.
fn merge(schema: &mut Value, rule: Value) {
    let Value::Object(rule) = rule else { return };
    let Some(target) = schema.as_object_mut() else {
        return;
    };
    let nullable = match target.get("type") {
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    for (key, mut value) in rule {
        // An enum lists every value the type allows: `null` too where the
        // field may be null (absent, or removed).
        if let (true, "enum", Value::Array(values)) = (nullable, key.as_str(), &mut value) {
            values.push(Value::Null);
        }
        match (key.as_str(), target.get_mut("items")) {
            ("items", Some(Value::Object(items))) if !items.contains_key("$ref") => {
                if let Value::Object(value) = value {
                    items.extend(value);
                }
            }
            ("items", _) => {}
            _ => {
                target.insert(key, value);
            }
        }
    }
}

/// A code, or `verified: true` from an admin who vouches: one of them.
fn verify_email(schema: &mut Map<String, Value>) {
    let given =
        |field: &str, value: Value| json!({"required": [field], "properties": {field: value}});
    schema.insert(
        "oneOf".into(),
        json!([
            {"allOf": [given("code", json!({"type": "string"})),
                       {"not": given("verified", json!({"type": "boolean"}))}]},
            {"allOf": [given("verified", json!({"const": true})),
                       {"not": given("code", json!({"type": "string"}))}]},
        ]),
    );
}

/// The schemas request bodies are made of: those `refs` name and those
/// they name in turn (responses are the server's, and keep their own).
fn request_schemas(schemas: &Map<String, Value>, refs: &[String]) -> BTreeSet<String> {
    fn names(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    out.push(r.clone());
                }
                map.values().for_each(|v| names(v, out));
            }
            Value::Array(list) => list.iter().for_each(|v| names(v, out)),
            _ => {}
        }
    }
    let mut seen = BTreeSet::new();
    let mut pending: Vec<String> = refs.to_vec();
    while let Some(reference) = pending.pop() {
        let Some(name) = reference.strip_prefix("#/components/schemas/") else {
            continue;
        };
        if seen.insert(name.to_string()) {
            if let Some(schema) = schemas.get(name) {
                names(schema, &mut pending);
            }
        }
    }
    seen
}

/// States the rules in `document` (the OpenAPI document as JSON).
pub fn apply(document: &mut Value) {
    let actions = actions();
    let request_bodies: Vec<String> = document["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.values())
        .filter_map(Value::as_object)
        .flat_map(|item| item.values())
        .filter_map(|op| op.pointer("/requestBody/content/application~1json/schema/$ref"))
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    if let Some(schemas) = document
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    {
        let requests = request_schemas(&*schemas, &request_bodies);
        for (owner, schema) in schemas.iter_mut() {
            if !requests.contains(owner) {
                continue;
            }
            if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
                for (name, property) in properties.iter_mut() {
                    if let Some(rule) = rule(owner, name, &actions) {
                        merge(property, rule);
                    }
                }
            }
            if owner == "VerifyEmail" {
                if let Some(schema) = schema.as_object_mut() {
                    verify_email(schema);
                }
            }
        }
    }
    let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for operation in item.values_mut() {
            let id = operation["operationId"].as_str().unwrap_or("").to_string();
            let parameters = operation
                .get_mut("parameters")
                .and_then(Value::as_array_mut);
            for parameter in parameters.into_iter().flatten() {
                let name = parameter["name"].as_str().unwrap_or("").to_string();
                if name == REASON_HEADER && REASON_REQUIRED.contains(&id.as_str()) {
                    parameter["required"] = Value::Bool(true);
                }
                if let Some(rule) = rule(path, &name, &actions) {
                    merge(&mut parameter["schema"], rule);
                }
            }
        }
    }
}
