//! What the authorizer answers API Gateway: the REST API's IAM policy
//! response, the HTTP API's simple response, and the backend-facing context
//! both carry.

use authz_core::model::values::Permission;
use authz_core::NO_END;
use serde_json::{json, Map, Value};

use crate::decision::{Allow, Decision};

/// The refusal a client is shown for a Deny's reason (the reason itself is
/// logged, never shown): a stable `code` and a message that reveals
/// nothing the caller could not learn anyway. A malformed id in the path
/// is named; a policy's `forbid`, an account that is not active and access
/// that has ended are told to the caller they concern; every other reason
/// (no grant here, the permission not granted, a tenant deleted, a crafted
/// event) is the same "not permitted", so a caller cannot tell a tenant
/// they are not in from one that does not exist.
pub fn refusal(reason: &str) -> (&'static str, &'static str) {
    match reason {
        "tenant id missing or malformed" => (
            "invalid_path",
            "tenantId in the path is not a tenant id (a 26-character ULID)",
        ),
        "forbidden by policy" => (
            "forbidden",
            "a policy of this deployment forbids this request",
        ),
        "user not active" => ("forbidden", "the caller's account is not active"),
        "grant expired" | "global roles expired" => {
            ("forbidden", "the caller's access here has ended")
        }
        _ => ("forbidden", "the caller may not do this here"),
    }
}

/// The refusal any request an Allow's IAM policy document does not cover
/// is shown (API Gateway answers it from the cached Allow's context).
const NOT_COVERED: &str = "the caller may not do this here";

/// The backend-facing context: strings only (API Gateway rejects objects
/// and arrays in it). Every answer also carries `errorCode` and
/// `errorMessage`, which API Gateway's `ACCESS_DENIED` response shows the
/// client when it refuses a request with this answer (a Deny's refusal;
/// for an Allow, a request its document does not cover).
pub fn context(decision: &Decision) -> Map<String, Value> {
    match decision {
        Decision::Allow(a) => {
            // Built once per standing (`caller_context`), then the
            // policies that allowed this request.
            let mut ctx = (*a.context).clone();
            ctx.insert(
                "policies".into(),
                json!(a
                    .policies
                    .iter()
                    .map(|p| p.policy_id.as_str())
                    .collect::<Vec<_>>()
                    .join(",")),
            );
            ctx
        }
        Decision::SignUp(s) => {
            // No user yet: what provisioning needs to create one.
            let mut ctx = refused_with("forbidden", NOT_COVERED);
            ctx.insert("userId".into(), json!(""));
            ctx.insert(
                "tenantId".into(),
                json!(s.tenant_id.map(|t| t.to_string()).unwrap_or_default()),
            );
            ctx.insert("signUp".into(), json!("true"));
            ctx.insert("issuer".into(), json!(s.issuer.as_str()));
            ctx.insert("subject".into(), json!(s.subject.as_str()));
            ctx.insert("email".into(), json!(s.email));
            ctx.insert("linkByEmail".into(), json!(s.link_by_email.to_string()));
            ctx
        }
        Decision::Directory(d) => {
            // No user: the backend serves the tenant's directory alone.
            let mut ctx = refused_with("forbidden", NOT_COVERED);
            ctx.insert("userId".into(), json!(""));
            ctx.insert("tenantId".into(), json!(d.tenant_id.to_string()));
            ctx.insert("scimTokenId".into(), json!(d.token_id.to_string()));
            ctx.insert("scimTokenName".into(), json!(d.name));
            // Its end, so that an answer API Gateway cached past it is
            // refused by the backend at once.
            ctx.insert("scimTokenUntil".into(), until(d.expires_at));
            ctx
        }
        Decision::Deny {
            user_id,
            tenant_id,
            reason,
            ..
        } => {
            let (code, message) = refusal(reason);
            let mut ctx = refused_with(code, message);
            ctx.insert("userId".into(), json!(user_id.to_string()));
            ctx.insert(
                "tenantId".into(),
                json!(tenant_id.map(|t| t.to_string()).unwrap_or_default()),
            );
            ctx
        }
    }
}

/// When something ends, as the context says it: seconds since the epoch,
/// or `never`.
fn until(end: Option<u64>) -> Value {
    json!(end.map_or_else(|| NO_END.to_string(), |e| e.to_string()))
}

/// A context's first two keys: what API Gateway shows a client it refuses
/// with this answer.
fn refused_with(code: &str, message: &str) -> Map<String, Value> {
    let mut ctx = Map::new();
    ctx.insert("errorCode".into(), json!(code));
    ctx.insert("errorMessage".into(), json!(message));
    ctx
}

/// An Allow's context but for the policies that allowed it (`policies`,
/// last): what it says of the caller, the same for every request their
/// standing allows, so it is built once per standing (`judge::AllowParts`).
pub fn caller_context(a: &Allow) -> Map<String, Value> {
    let mut ctx = refused_with("forbidden", NOT_COVERED);
    ctx.insert("userId".into(), json!(a.user_id.to_string()));
    ctx.insert(
        "tenantId".into(),
        json!(a.tenant_id.map(|t| t.to_string()).unwrap_or_default()),
    );
    ctx.insert(
        "tenantGrantId".into(),
        json!(a.tenant_grant_id.map(|g| g.to_string()).unwrap_or_default()),
    );
    let list = |perms: &[Permission]| {
        json!(perms
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(","))
    };
    ctx.insert("roles".into(), json!(a.roles.join(",")));
    ctx.insert("permissions".into(), list(&a.permissions));
    // When each ends (seconds since the epoch, or `never`): provisioning
    // lets a caller give nothing for longer.
    ctx.insert("tenantPermissions".into(), list(&a.tenant_permissions));
    ctx.insert(
        "tenantPermissionsUntil".into(),
        until(a.tenant_permissions_until),
    );
    ctx.insert("globalPermissions".into(), list(&a.global_permissions));
    ctx.insert(
        "globalPermissionsUntil".into(),
        until(a.global_permissions_until),
    );
    ctx
}

/// The REST API response for a decision: the shape of
/// `aws_lambda_events`' `ApiGatewayCustomAuthorizerResponse`, built as a
/// value directly (serializing that struct into one copied every field
/// and the context key by key, a third of a decision's time; the tests
/// below read it back with the library's type).
pub fn rest_response(decision: &Decision, method_arn: &str) -> Value {
    let arns = |list: &[String]| list.iter().map(|r| Value::String(r.clone())).collect();
    let (effect, resources, principal): (&str, Vec<Value>, String) = match decision {
        Decision::Allow(a) => ("Allow", arns(&a.resources), a.user_id.to_string()),
        Decision::SignUp(s) => (
            "Allow",
            arns(&s.resources),
            format!("signup:{}", s.identity_id),
        ),
        Decision::Directory(d) => ("Allow", arns(&d.resources), d.principal()),
        Decision::Deny { user_id, .. } => (
            "Deny",
            vec![Value::String(method_arn.to_string())],
            user_id.to_string(),
        ),
    };
    // Built from values, not with `json!`, which would serialize the
    // resources and the context into copies.
    let statement = object(vec![
        ("Action", json!(["execute-api:Invoke"])),
        ("Effect", json!(effect)),
        ("Resource", Value::Array(resources)),
    ]);
    object(vec![
        ("principalId", Value::String(principal)),
        (
            "policyDocument",
            object(vec![
                ("Version", json!("2012-10-17")),
                ("Statement", Value::Array(vec![statement])),
            ]),
        ),
        ("context", Value::Object(context(decision))),
        ("usageIdentifierKey", Value::Null),
    ])
}

/// The HTTP API (payload 2.0) simple response for a decision: the shape
/// of `aws_lambda_events`' `ApiGatewayV2CustomAuthorizerSimpleResponse`,
/// built as a value directly like the REST response.
pub fn simple_response(decision: &Decision) -> Value {
    let is_authorized = matches!(
        decision,
        Decision::Allow(_) | Decision::SignUp(_) | Decision::Directory(_)
    );
    object(vec![
        ("isAuthorized", Value::Bool(is_authorized)),
        ("context", Value::Object(context(decision))),
    ])
}

/// A JSON object of `entries`, in their order.
fn object(entries: Vec<(&str, Value)>) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use authz_core::model::values::{TenantId, UserId};
    use aws_lambda_events::apigw::ApiGatewayCustomAuthorizerResponse;
    use aws_lambda_events::iam::IamPolicyEffect;

    use super::*;

    const ARN: &str = "arn:aws:execute-api:eu-west-1:123456789012:api/prod/GET/users/me";

    fn allow() -> Decision {
        let mut allow = Allow {
            user_id: UserId::generate(),
            tenant_id: Some(TenantId::generate()),
            tenant_grant_id: None,
            roles: vec!["01J8Z0E2Z8D2A3J7A7Y2H9GQ9C".into()],
            permissions: vec![Permission::parse("member:read").unwrap()],
            tenant_permissions: vec![Permission::parse("member:read").unwrap()],
            tenant_permissions_until: Some(1_900_000_000),
            global_permissions: Vec::new(),
            global_permissions_until: None,
            resources: vec![ARN.into(), format!("{ARN}/*")],
            policies: Vec::new(),
            context: Default::default(),
        };
        allow.context = Arc::new(caller_context(&allow));
        Decision::Allow(Box::new(allow))
    }

    /// The response is what the library's type reads and writes, field for
    /// field: API Gateway reads the same document.
    #[test]
    fn a_rest_response_is_the_librarys_shape() {
        let deny = Decision::Deny {
            user_id: UserId::generate(),
            tenant_id: None,
            reason: "permission not granted",
            policies: Vec::new(),
        };
        for (decision, effect, resources) in [
            (allow(), IamPolicyEffect::Allow, 2),
            (deny, IamPolicyEffect::Deny, 1),
        ] {
            let value = rest_response(&decision, ARN);
            let typed: ApiGatewayCustomAuthorizerResponse<Map<String, Value>> =
                serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_value(&typed).unwrap(), value);
            let statement = &typed.policy_document.statement[0];
            assert_eq!(statement.effect, effect);
            assert_eq!(statement.action, vec!["execute-api:Invoke"]);
            assert_eq!(statement.resource.len(), resources);
            assert_eq!(typed.context, context(&decision));
        }
    }

    /// The HTTP API's simple response too, for an Allow and a Deny.
    #[test]
    fn a_simple_response_is_the_librarys_shape() {
        use aws_lambda_events::apigw::ApiGatewayV2CustomAuthorizerSimpleResponse;
        let deny = Decision::Deny {
            user_id: UserId::generate(),
            tenant_id: None,
            reason: "user not active",
            policies: Vec::new(),
        };
        for (decision, authorized) in [(allow(), true), (deny, false)] {
            let value = simple_response(&decision);
            let typed: ApiGatewayV2CustomAuthorizerSimpleResponse<Map<String, Value>> =
                serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_value(&typed).unwrap(), value);
            assert_eq!(typed.is_authorized, authorized);
            assert_eq!(typed.context, context(&decision));
        }
    }

    /// An Allow's context is its caller's, then the policies that allowed
    /// it, every value a string.
    #[test]
    fn an_allows_context_names_the_caller_and_its_policies_last() {
        let decision = allow();
        let ctx = context(&decision);
        let keys: Vec<&str> = ctx.keys().map(String::as_str).collect();
        assert_eq!(keys.first(), Some(&"errorCode"));
        assert_eq!(keys.last(), Some(&"policies"));
        assert_eq!(ctx["permissions"], "member:read");
        assert_eq!(ctx["tenantPermissionsUntil"], "1900000000");
        assert_eq!(ctx["globalPermissionsUntil"], "never");
        assert!(ctx.values().all(Value::is_string));
    }
}
