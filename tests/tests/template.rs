//! `template.yaml` as a deployment: every provisioning route is an API route
//! with a route rule (and nothing else is), the API's default authorizer is
//! the authorizer function as a REQUEST authorizer keyed by token and path,
//! each function is a Rust `provided.al2023` arm64 build with its own log
//! group, the authorizer may only read single items from the table, and
//! idempotency records expire through the table's TTL.

use std::collections::BTreeSet;

use serde_yaml::Value;
use testkit::template::{api_definition, http_api_definition, ApiDefinition, IdentitySource};

fn template() -> Value {
    testkit::template::read(&testkit::repo_root()).unwrap()
}

/// A function property, from the resource or else from `Globals.Function`.
fn property<'a>(t: &'a Value, function: &str, name: &str) -> &'a Value {
    let own = &t["Resources"][function]["Properties"][name];
    if own.is_null() {
        &t["Globals"]["Function"][name]
    } else {
        own
    }
}

const FUNCTIONS: [(&str, &str); 3] = [
    ("AuthorizerFunction", "authorizer"),
    ("ProvisioningFunction", "provisioning"),
    ("RecomputeFunction", "recompute"),
];

/// An API's routes and its rules file name the same set of routes.
fn routes_match_rules(
    api: ApiDefinition,
    function: &str,
    rules_file: &str,
    public_routes: &[(&str, &str, &str)],
) {
    let all: BTreeSet<(String, String)> = api
        .routes
        .iter()
        .map(|r| (r.method.clone(), r.resource.clone()))
        .collect();
    assert_eq!(all.len(), api.routes.len(), "no route is declared twice");
    // Every route goes through the authorizer to `function`, but exactly
    // `public_routes` (the console's files, which hold no data).
    let (public, routed): (Vec<_>, Vec<_>) = api.routes.iter().partition(|r| !r.authorized);
    let public: Vec<_> = public
        .iter()
        .map(|r| (r.method.as_str(), r.resource.as_str(), r.function.as_str()))
        .collect();
    assert_eq!(public, public_routes, "routes without the authorizer");
    assert!(routed.iter().all(|r| r.function == function));
    let routes: BTreeSet<(String, String)> = routed
        .iter()
        .map(|r| (r.method.clone(), r.resource.clone()))
        .collect();

    let rules_text =
        std::fs::read_to_string(testkit::repo_root().join("route_rules").join(rules_file)).unwrap();
    let rules = authorizer::routes::RouteRules::parse(&rules_text).unwrap();
    // A rule for any method (`*`) is an ANY route's.
    let ruled: BTreeSet<(String, String)> = rules
        .rules()
        .iter()
        .map(|r| {
            let method = if r.method == "*" { "ANY" } else { &r.method };
            (method.to_string(), r.resource.clone())
        })
        .collect();
    let unruled: Vec<_> = routes.difference(&ruled).collect();
    let unrouted: Vec<_> = ruled.difference(&routes).collect();
    assert!(
        unruled.is_empty(),
        "API routes without a rule (always denied): {unruled:?}"
    );
    assert!(
        unrouted.is_empty(),
        "rules for routes the API does not have: {unrouted:?}"
    );
}

#[test]
fn every_api_route_has_a_route_rule_and_every_rule_a_route() {
    routes_match_rules(
        api_definition(&template()).unwrap(),
        "provisioning",
        "provisioning.json",
        &[
            ("GET", "/console", "console"),
            ("GET", "/console/{proxy+}", "console"),
        ],
    );
}

/// The example API behind the exported authorizer: its REST API's and its
/// HTTP API's routes are those of `route_rules/tickets.json`, and their
/// authorizer is the stack's, imported; the HTTP API's simple responses
/// are cached by token, method and path.
#[test]
fn the_example_api_has_a_rule_for_each_route_and_imports_the_authorizer() {
    let example =
        testkit::template::read_file(&testkit::repo_root().join("examples/tickets/template.yaml"))
            .unwrap();
    routes_match_rules(
        api_definition(&example).unwrap(),
        "tickets",
        "tickets.json",
        &[],
    );
    let http = http_api_definition(&example).unwrap();
    assert_eq!(
        http.authorizer.function,
        testkit::template::IMPORTED_AUTHORIZER
    );
    assert_eq!(
        http.authorizer.identity,
        vec![
            IdentitySource::Header("Authorization".into()),
            IdentitySource::Context("httpMethod".into()),
            IdentitySource::Context("path".into())
        ]
    );
    routes_match_rules(http, "tickets", "tickets.json", &[]);
    let api = api_definition(&example).unwrap();
    assert_eq!(
        api.authorizer.function,
        testkit::template::IMPORTED_AUTHORIZER
    );
    assert_eq!(
        api.authorizer.identity,
        vec![
            IdentitySource::Header("Authorization".into()),
            IdentitySource::Context("path".into())
        ]
    );
}

#[test]
fn the_default_authorizer_is_the_request_authorizer_keyed_by_token_and_path() {
    let t = template();
    let api = api_definition(&t).unwrap();
    assert_eq!(api.authorizer.function, "authorizer");
    assert_eq!(
        api.authorizer.identity,
        vec![
            IdentitySource::Header("Authorization".into()),
            IdentitySource::Context("path".into())
        ]
    );
    // Another API can put the same function in front of itself.
    let output = &t["Outputs"]["AuthorizerFunctionArn"];
    assert_eq!(
        output["Value"],
        serde_yaml::from_str::<Value>("!GetAtt AuthorizerFunction.Arn").unwrap()
    );
    assert_eq!(
        output["Export"]["Name"],
        serde_yaml::from_str::<Value>("!Sub ${AWS::StackName}-AuthorizerFunctionArn").unwrap()
    );

    // The function reads the token from the header the API keys its cache by.
    let env = &t["Resources"]["AuthorizerFunction"]["Properties"]["Environment"]["Variables"];
    let header = &t["Resources"]["AuthzApi"]["Properties"]["Auth"]["Authorizers"]["JwtAuthorizer"]
        ["Identity"]["Headers"][0];
    assert_eq!(env["TOKEN_HEADER"], *header, "one TokenHeader for both");
    let ttl = &t["Parameters"]["AuthorizerResultTtl"];
    assert_eq!(api.authorizer.ttl_seconds, ttl["Default"].as_u64().unwrap());
    assert_eq!(ttl["MaxValue"].as_u64(), Some(3600));
    for parameter in [
        "JwtIssuer",
        "JwtAudience",
        "JwksUrl",
        "UserIdClaim",
        "RoutesFile",
        "DecisionCacheTtl",
        "StageName",
    ] {
        assert!(
            t["Parameters"][parameter].is_mapping(),
            "parameter {parameter}"
        );
    }
    for output in ["ApiUrl", "TableName"] {
        assert!(t["Outputs"][output].is_mapping(), "output {output}");
    }
}

#[test]
fn the_route_rules_layer_carries_the_default_rules_file() {
    let t = template();
    let layer = &t["Resources"]["RouteRules"]["Properties"];
    let folder = layer["ContentUri"].as_str().unwrap();
    let default = t["Parameters"]["RoutesFile"]["Default"].as_str().unwrap();
    let text = std::fs::read_to_string(testkit::repo_root().join(folder).join(default)).unwrap();
    authorizer::routes::RouteRules::parse(&text).unwrap();
    let env = &t["Resources"]["AuthorizerFunction"]["Properties"]["Environment"]["Variables"];
    // Layers are mounted at /opt.
    let Value::Tagged(sub) = &env["ROUTES_FILE"] else {
        panic!("ROUTES_FILE is !Sub")
    };
    assert_eq!(sub.value.as_str(), Some("/opt/${RoutesFile}"));
}

#[test]
fn each_function_is_a_rust_arm64_build_with_its_own_log_group() {
    let t = template();
    for (function, binary) in FUNCTIONS {
        assert_eq!(
            property(&t, function, "Runtime").as_str(),
            Some("provided.al2023"),
            "{function}"
        );
        assert_eq!(
            property(&t, function, "Architectures")[0].as_str(),
            Some("arm64"),
            "{function}"
        );
        assert_eq!(
            property(&t, function, "Handler").as_str(),
            Some("bootstrap"),
            "{function}"
        );
        let metadata = &t["Resources"][function]["Metadata"];
        assert_eq!(
            metadata["BuildMethod"].as_str(),
            Some("rust-cargolambda"),
            "{function}"
        );
        assert_eq!(
            metadata["BuildProperties"]["Binary"].as_str(),
            Some(binary),
            "{function}"
        );
        let groups: Vec<_> = t["Resources"]
            .as_mapping()
            .unwrap()
            .values()
            .filter(|r| r["Type"].as_str() == Some("AWS::Logs::LogGroup"))
            .filter(|r| {
                matches!(&r["Properties"]["LogGroupName"], Value::Tagged(s) if s.value.as_str() == Some(&format!("/aws/lambda/${{{function}}}")))
            })
            .collect();
        assert_eq!(groups.len(), 1, "{function} has one log group");
        assert!(!groups[0]["Properties"]["RetentionInDays"].is_null());
    }
}

/// Every IAM action the function's inline statements allow.
fn actions(t: &Value, function: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for policy in property(t, function, "Policies").as_sequence().unwrap() {
        for statement in policy["Statement"].as_sequence().into_iter().flatten() {
            assert_eq!(statement["Effect"].as_str(), Some("Allow"));
            for action in statement["Action"].as_sequence().unwrap() {
                out.insert(action.as_str().unwrap().to_string());
            }
        }
    }
    out
}

/// Single items (the caller's standing) and a Query of the table (the
/// policy set), on the table alone: no index, no scan, no write.
#[test]
fn the_authorizer_may_only_read_items_and_query_the_table() {
    let t = template();
    let policies = property(&t, "AuthorizerFunction", "Policies")
        .as_sequence()
        .unwrap();
    assert!(
        policies.iter().all(|p| p.get("Statement").is_some()),
        "inline statements only, no managed policies"
    );
    assert_eq!(
        actions(&t, "AuthorizerFunction"),
        BTreeSet::from([
            "dynamodb:BatchGetItem".to_string(),
            "dynamodb:GetItem".to_string(),
            "dynamodb:Query".to_string()
        ])
    );
    let statements = policies[0]["Statement"].as_sequence().unwrap();
    assert!(
        statements
            .iter()
            .all(|s| s["Resource"].as_sequence().is_none()),
        "one resource: the table, not its indexes"
    );
    let provisioning = actions(&t, "ProvisioningFunction");
    for forbidden in ["dynamodb:Scan", "dynamodb:DeleteTable", "dynamodb:*"] {
        assert!(
            !provisioning.contains(forbidden),
            "provisioning may not {forbidden}"
        );
    }
}

/// Idempotency records expire through the table's TTL on the attribute the
/// code writes.
#[test]
fn the_table_expires_idempotency_records() {
    let t = template();
    let ttl = &t["Resources"]["AuthzTable"]["Properties"]["TimeToLiveSpecification"];
    assert_eq!(ttl["Enabled"].as_bool(), Some(true));
    assert_eq!(
        ttl["AttributeName"].as_str(),
        Some(authz_core::store::idempotency::EXPIRES_AT)
    );
}
