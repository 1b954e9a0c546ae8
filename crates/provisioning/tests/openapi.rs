//! The OpenAPI document lists exactly the API's routes: the router's (both
//! are built from `handlers::with_handlers!`), the template's API events for this
//! function and the route rules name the same set, and `docs/openapi.json`
//! is the document the code generates.

use std::collections::BTreeSet;

use serde_json::{json, Value};

type Routes = BTreeSet<(String, String)>;

fn document() -> Value {
    provisioning::openapi::document()
}

fn documented(doc: &Value) -> Routes {
    let mut routes = Routes::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                routes.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    routes
}

#[test]
fn the_document_the_template_and_the_route_rules_list_the_same_routes() {
    let doc = document();
    let documented = documented(&doc);
    assert!(documented.len() >= 50, "{} routes", documented.len());

    let template = testkit::template::read(&testkit::repo_root()).unwrap();
    let deployed: Routes = testkit::template::api_definition(&template)
        .unwrap()
        .routes
        .into_iter()
        .filter(|r| r.function == "provisioning")
        .map(|r| (r.method, r.resource))
        .collect();
    // Any-method routes are no operation: under a SCIM base they take what
    // no operation does, and the API answers them with a SCIM error. The
    // template and the rules list the same ones, and nowhere else.
    let any = |routes: &Routes, wildcard: &str| -> (Routes, BTreeSet<String>) {
        let (wild, concrete): (Routes, Routes) =
            routes.iter().cloned().partition(|(m, _)| m == wildcard);
        (concrete, wild.into_iter().map(|(_, p)| p).collect())
    };
    let (deployed, deployed_any) = any(&deployed, "ANY");

    let rules_file = testkit::repo_root().join("route_rules/provisioning.json");
    let rules: Value = serde_json::from_str(&std::fs::read_to_string(rules_file).unwrap()).unwrap();
    let ruled: Routes = rules["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (s("method"), s("resource"))
        })
        .collect();
    let (ruled, ruled_any) = any(&ruled, "*");
    assert_eq!(deployed_any, ruled_any);
    assert!(deployed_any.len() >= 9, "{deployed_any:?}");
    for path in &deployed_any {
        assert!(path.starts_with("/scim/v2/{tenantId}/"), "ANY {path}");
    }

    let missing = |from: &Routes, name: &str| -> Vec<String> {
        documented
            .symmetric_difference(from)
            .map(|(m, p)| {
                let side = if documented.contains(&(m.clone(), p.clone())) {
                    "only in the document"
                } else {
                    name
                };
                format!("{m} {p}: {side}")
            })
            .collect()
    };
    assert_eq!(
        missing(&deployed, "only in template.yaml"),
        Vec::<String>::new()
    );
    assert_eq!(
        missing(&ruled, "only in the route rules"),
        Vec::<String>::new()
    );
}

#[test]
fn every_operation_documents_its_answers_and_bodies() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let resolves = |r: &Value| {
        r.as_str()
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .is_some_and(|name| schemas.contains_key(name))
    };
    let mut operation_ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            let id = op["operationId"].as_str().unwrap_or_default();
            assert!(
                operation_ids.insert(id.to_string()),
                "{method} {path}: operationId {id:?} missing or used twice"
            );
            let responses = op["responses"].as_object().unwrap();
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{method} {path}: no success answer"
            );
            // API Gateway answers 401, 403 and 404 itself too, in the same
            // shape (the template's gateway responses).
            for status in ["400", "401", "403", "404", "500", "503"] {
                let error = &responses[status]["content"]["application/json"]["schema"]["$ref"];
                assert!(resolves(error), "{method} {path} {status}: {error}");
                assert_eq!(
                    error,
                    &json!("#/components/schemas/ErrorBody"),
                    "{method} {path} {status}"
                );
            }
            let reads_only = op["tags"][0] == "authorize" || method == "get";
            // The headers the responses carry: the bearer challenge on a
            // 401, a replay's mark on a write's success, the version of a
            // resource that has one.
            assert!(
                responses["401"]["headers"]["WWW-Authenticate"].is_object(),
                "{method} {path}: 401 WWW-Authenticate"
            );
            for (status, response) in responses.iter().filter(|(s, _)| s.starts_with('2')) {
                assert_eq!(
                    response["headers"]["Idempotent-Replayed"].is_object(),
                    !reads_only,
                    "{method} {path} {status}: Idempotent-Replayed"
                );
                let versioned = response["content"]["application/json"]["schema"]["$ref"]
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/components/schemas/"))
                    .is_some_and(|name| schemas[name]["properties"]["version"].is_object());
                assert_eq!(
                    response["headers"]["ETag"].is_object(),
                    versioned,
                    "{method} {path} {status}: ETag"
                );
            }
            let has_key = op["parameters"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "Idempotency-Key"));
            assert_eq!(has_key, !reads_only, "{method} {path}: Idempotency-Key");
            assert_eq!(
                responses.contains_key("422"),
                !reads_only,
                "{method} {path}: 422"
            );
            for segment in path.split('/').filter(|s| s.starts_with('{')) {
                let name = segment.trim_matches(['{', '}']);
                let declared = op["parameters"]
                    .as_array()
                    .is_some_and(|ps| ps.iter().any(|p| p["name"] == name && p["in"] == "path"));
                assert!(
                    declared,
                    "{method} {path}: path parameter {name} undeclared"
                );
            }
            if let Some(body) = op.get("requestBody") {
                let schema = &body["content"]["application/json"]["schema"]["$ref"];
                assert!(resolves(schema), "{method} {path}: request body {schema}");
            }
        }
    }
}

#[test]
fn the_paging_limit_is_documented_with_the_bounds_the_api_applies() {
    let doc = document();
    let list = &doc["paths"]["/tenants/{tenantId}/members"]["get"]["parameters"];
    let limit = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "limit")
        .expect("a limit parameter");
    assert_eq!(limit["in"], "query");
    assert_eq!(limit["schema"]["minimum"], 1);
    assert_eq!(
        limit["schema"]["maximum"],
        authz_core::store::page::MAX_LIMIT
    );
    assert_eq!(
        limit["schema"]["default"],
        authz_core::store::page::DEFAULT_LIMIT
    );
}

#[test]
fn docs_openapi_json_is_the_generated_document() {
    let path = testkit::repo_root().join("docs/openapi.json");
    let checked_in: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default())
            .unwrap_or(Value::Null);
    assert!(
        checked_in == document(),
        "{} is stale: run `make openapi` and commit it",
        path.display()
    );
}

/// The document states the rules the handlers enforce on parameters: ids
/// are ULIDs (the pattern admits exactly what the API parses: any case,
/// no I, L, O or U, at most 7 first), scopes and statuses are enums.
#[test]
fn parameters_carry_the_rules_the_api_enforces() {
    use authz_core::model::values::TenantId;
    let doc = document();
    let mut ulids = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                let name = p["name"].as_str().unwrap();
                let schema = &p["schema"];
                if p["in"] == "path" && name.ends_with("Id") && name != "policyId" {
                    assert_eq!(
                        schema["pattern"],
                        provisioning::openapi::ULID_PATTERN,
                        "{method} {path} {name}"
                    );
                    ulids += 1;
                }
                if name == "scope" {
                    assert_eq!(
                        schema["enum"],
                        json!(["tenant", "global"]),
                        "{method} {path}"
                    );
                }
            }
        }
    }
    assert!(ulids > 40, "{ulids}");
    let id = TenantId::generate().to_string();
    assert!(TenantId::parse(&id.to_lowercase()).is_ok());
    for excluded in ["I", "L", "O", "U"] {
        let bad = format!("0{excluded}{}", &id[2..]);
        assert!(TenantId::parse(&bad).is_err(), "{bad}");
    }
    assert!(TenantId::parse(&format!("8{}", &id[1..])).is_err());
}
