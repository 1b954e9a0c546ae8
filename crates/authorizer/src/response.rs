//! What the authorizer answers API Gateway: the REST API's IAM policy
//! response, the HTTP API's simple response, and the backend-facing context
//! both carry.

use authz_core::model::values::Permission;
use authz_core::NO_END;
use aws_lambda_events::apigw::{
    ApiGatewayCustomAuthorizerPolicy, ApiGatewayCustomAuthorizerResponse,
    ApiGatewayV2CustomAuthorizerSimpleResponse,
};
use aws_lambda_events::iam::{IamPolicyEffect, IamPolicyStatement};
use serde_json::{json, Map, Value};

use crate::decision::Decision;

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
    let mut ctx = Map::new();
    let (code, message) = match decision {
        Decision::Deny { reason, .. } => refusal(reason),
        _ => ("forbidden", NOT_COVERED),
    };
    ctx.insert("errorCode".into(), json!(code));
    ctx.insert("errorMessage".into(), json!(message));
    match decision {
        Decision::Allow(a) => {
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
            // When each ends (seconds since the epoch, or `never`):
            // provisioning lets a caller give nothing for longer.
            let until =
                |end: Option<u64>| json!(end.map_or_else(|| NO_END.to_string(), |e| e.to_string()));
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
            // The ids of the `permit` policies that allowed it, if any.
            ctx.insert(
                "policies".into(),
                json!(a
                    .policies
                    .iter()
                    .map(|p| p.policy_id.as_str())
                    .collect::<Vec<_>>()
                    .join(",")),
            );
        }
        Decision::SignUp(s) => {
            // No user yet: what provisioning needs to create one.
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
        }
        Decision::Directory(d) => {
            // No user: the backend serves the tenant's directory alone.
            ctx.insert("userId".into(), json!(""));
            ctx.insert("tenantId".into(), json!(d.tenant_id.to_string()));
            ctx.insert("scimTokenId".into(), json!(d.token_id.to_string()));
            ctx.insert("scimTokenName".into(), json!(d.name));
        }
        Decision::Deny {
            user_id, tenant_id, ..
        } => {
            ctx.insert("userId".into(), json!(user_id.to_string()));
            ctx.insert(
                "tenantId".into(),
                json!(tenant_id.map(|t| t.to_string()).unwrap_or_default()),
            );
        }
    }
    ctx
}

fn statement(effect: IamPolicyEffect, resources: Vec<String>) -> IamPolicyStatement {
    let mut s = IamPolicyStatement::default();
    s.action = vec!["execute-api:Invoke".to_string()];
    s.effect = effect;
    s.resource = resources;
    s
}

/// The REST API response for a decision.
pub fn rest_response(decision: &Decision, method_arn: &str) -> Value {
    let mut policy = ApiGatewayCustomAuthorizerPolicy::default();
    policy.version = Some("2012-10-17".to_string());
    let principal = match decision {
        Decision::Allow(a) => {
            policy.statement = vec![statement(IamPolicyEffect::Allow, a.resources.clone())];
            a.user_id.to_string()
        }
        Decision::SignUp(s) => {
            policy.statement = vec![statement(IamPolicyEffect::Allow, s.resources.clone())];
            format!("signup:{}", s.identity_id)
        }
        Decision::Directory(d) => {
            policy.statement = vec![statement(IamPolicyEffect::Allow, d.resources.clone())];
            d.principal()
        }
        Decision::Deny { user_id, .. } => {
            policy.statement = vec![statement(
                IamPolicyEffect::Deny,
                vec![method_arn.to_string()],
            )];
            user_id.to_string()
        }
    };
    let mut response: ApiGatewayCustomAuthorizerResponse<Map<String, Value>> =
        ApiGatewayCustomAuthorizerResponse::default();
    response.principal_id = Some(principal);
    response.policy_document = policy;
    response.context = context(decision);
    serde_json::to_value(response).expect("a response serializes")
}

/// The HTTP API (payload 2.0) simple response for a decision.
pub fn simple_response(decision: &Decision) -> Value {
    let mut response: ApiGatewayV2CustomAuthorizerSimpleResponse<Map<String, Value>> =
        Default::default();
    response.is_authorized = matches!(
        decision,
        Decision::Allow(_) | Decision::SignUp(_) | Decision::Directory(_)
    );
    response.context = context(decision);
    serde_json::to_value(response).expect("a response serializes")
}
