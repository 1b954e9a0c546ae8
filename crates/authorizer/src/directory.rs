//! A tenant directory's SCIM token: accepted on that tenant's SCIM routes
//! (the rules marked `"self": "directory"`) and nowhere else, after one
//! read of the tenant and the token (no more than a user's decision
//! reads); refused on any other route, on another tenant's SCIM base, and
//! once revoked or ended.

use authz_core::store::directory::PresentedToken;
use authz_core::Store;

use crate::decision::{Decision, DirectoryAllow, Failure, Request};
use crate::iam_policy::MethodArn;
use crate::judge::target;
use crate::routes::{RouteRules, SelfRule, TENANT_PARAM};

/// Whether a bearer token is a directory's (never a JWT's shape).
pub fn is_directory_token(token: &str) -> bool {
    token.starts_with(authz_core::store::directory::TOKEN_PREFIX)
}

/// The decision for a directory token: an Allow on its tenant's SCIM
/// routes, else `Unauthorized` with the reason (for the log).
pub async fn decide(
    rules: &RouteRules,
    store: &Store,
    request: &Request<'_>,
    token: &str,
) -> Result<Decision, Failure> {
    let refuse = |reason: &str| Failure::Unauthorized(format!("SCIM token: {reason}"));
    let presented = PresentedToken::parse(token).ok_or_else(|| refuse("malformed"))?;
    let target = target(rules, request).map_err(refuse)?;
    if target.rule.self_rule != Some(SelfRule::Directory) {
        return Err(refuse("good for its tenant's SCIM routes only"));
    }
    if target.tenant_id != Some(presented.tenant_id) {
        return Err(refuse("another tenant's SCIM base"));
    }
    let token = store
        .directory_credential(&presented)
        .await
        .map_err(|e| Failure::Dependency(format!("directory token: {e}")))?
        .ok_or_else(|| refuse("unknown, revoked or ended, or its tenant is gone"))?;
    let resources = scim_resources(rules, &target.method_arn, &presented);
    Ok(Decision::Directory(Box::new(DirectoryAllow {
        token_id: token.token_id,
        name: token.name,
        tenant_id: token.tenant_id,
        expires_at: token.expires_at,
        resources,
        ceiling: token.ceiling,
        created_by: token.created_by,
    })))
}

/// Every SCIM route of the token's tenant, as ARNs (other parameters any
/// value): what API Gateway may reuse the answer for.
fn scim_resources(rules: &RouteRules, here: &MethodArn, token: &PresentedToken) -> Vec<String> {
    let tenant_param = format!("{{{TENANT_PARAM}}}");
    let tenant = token.tenant_id.to_string();
    let mut arns: Vec<String> = rules
        .rules()
        .iter()
        .filter(|r| r.self_rule == Some(SelfRule::Directory))
        .map(|r| {
            let path = r
                .resource
                .split('/')
                .skip(1)
                .map(|segment| match segment {
                    s if s == tenant_param => tenant.as_str(),
                    s if s.starts_with('{') => "*",
                    s => s,
                })
                .collect::<Vec<_>>()
                .join("/");
            MethodArn {
                prefix: here.prefix.clone(),
                method: r.method.clone(),
                path,
            }
            .arn()
        })
        .collect();
    arns.sort();
    arns.dedup();
    arns
}
