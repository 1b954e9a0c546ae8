//! IAM policies for API Gateway that stay right when API Gateway caches them
//! and reuses them for another route of the same caller.
//!
//! An Allow lists every rule the caller satisfies: tenant routes with this
//! tenant's id written into the ARN (so it can never open another tenant),
//! other path parameters as `*`. Because `*` in an execute-api ARN also
//! spans `/`, a wildcard that would also match a route the caller is *not*
//! allowed is not used; that rule is then allowed only for the exact ARN of
//! this request. The result is checked against every rule before it is
//! returned.

use authz_core::values::{any_grants, Permission, TenantId};

use crate::routes::{RouteRules, Rule, TENANT_PARAM};

/// Most resources one Allow statement may list; past that only the
/// requested ARN is allowed (and results cannot be cached usefully).
pub const MAX_RESOURCES: usize = 100;

/// The parts of a `methodArn`:
/// `arn:aws:execute-api:{region}:{account}:{apiId}/{stage}/{METHOD}/{path}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodArn {
    /// `arn:aws:execute-api:{region}:{account}:{apiId}/{stage}`.
    pub prefix: String,
    pub method: String,
    /// The request path without its leading `/`.
    pub path: String,
}

impl MethodArn {
    pub fn parse(arn: &str) -> Option<Self> {
        if !arn.starts_with("arn:") {
            return None;
        }
        let mut parts = arn.splitn(4, '/');
        let api = parts.next()?;
        let stage = parts.next()?;
        let method = parts.next()?;
        let path = parts.next().unwrap_or("");
        Some(Self {
            prefix: format!("{api}/{stage}"),
            method: method.to_string(),
            path: path.to_string(),
        })
    }

    pub fn arn(&self) -> String {
        format!("{}/{}/{}", self.prefix, self.method, self.path)
    }
}

/// IAM's wildcard match for resources: `*` any run of characters (also
/// `/`), `?` one character.
pub fn arn_matches(pattern: &str, arn: &str) -> bool {
    let (p, s): (Vec<char>, Vec<char>) = (pattern.chars().collect(), arn.chars().collect());
    let (mut pi, mut si) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The ARN pattern of a rule: `{tenantId}` as `tenant`, other parameters
/// as `fill`.
fn rule_arn(prefix: &str, rule: &Rule, tenant: Option<&TenantId>, fill: &str) -> Option<String> {
    let mut path = Vec::new();
    for segment in rule.resource.split('/').skip(1) {
        if segment == format!("{{{TENANT_PARAM}}}") {
            path.push(tenant?.to_string());
        } else if segment.starts_with('{') {
            path.push(fill.to_string());
        } else {
            path.push(segment.to_string());
        }
    }
    Some(format!("{prefix}/{}/{}", rule.method, path.join("/")))
}

/// What the caller holds, for deciding each rule.
pub struct Holdings<'a> {
    /// The tenant of the request, when it is a tenant route.
    pub tenant: Option<&'a TenantId>,
    /// The grant's permissions in that tenant (empty without a grant).
    pub tenant_permissions: &'a [Permission],
    /// The user's global permissions.
    pub global_permissions: &'a [Permission],
}

impl Holdings<'_> {
    /// Whether the caller may use `rule` (in this tenant, for tenant rules).
    pub fn allows(&self, rule: &Rule) -> bool {
        let required = rule.permission.as_str();
        if any_grants(self.global_permissions, required) {
            return true;
        }
        rule.is_tenant_scoped()
            && self.tenant.is_some()
            && any_grants(self.tenant_permissions, required)
    }
}

/// The resources to allow for a caller whose request is `request`: every
/// satisfied rule's ARN pattern that cannot also match an unsatisfied rule,
/// plus the exact ARN of the request itself.
pub fn allowed_resources(
    rules: &RouteRules,
    holdings: &Holdings<'_>,
    request: &MethodArn,
) -> Vec<String> {
    let prefix = &request.prefix;
    // A representative request of each rule this caller may not use: in
    // this tenant, and in any other tenant (tenant rules there are never
    // covered by this policy).
    let other_tenant = TenantId::generate();
    let mut forbidden: Vec<String> = Vec::new();
    for rule in rules.rules() {
        let method = if rule.method == "*" {
            "GET"
        } else {
            rule.method.as_str()
        };
        let sample = |tenant: Option<&TenantId>| {
            rule_arn(prefix, rule, tenant, "x")
                .map(|arn| arn.replacen(&format!("/{}/", rule.method), &format!("/{method}/"), 1))
        };
        if !holdings.allows(rule) {
            forbidden.extend(sample(holdings.tenant));
        }
        if rule.is_tenant_scoped() {
            forbidden.extend(sample(Some(&other_tenant)));
        }
    }
    let mut resources = vec![request.arn()];
    for rule in rules.rules().iter().filter(|r| holdings.allows(r)) {
        let method = if rule.method == "*" {
            "*"
        } else {
            rule.method.as_str()
        };
        let Some(pattern) = rule_arn(prefix, rule, holdings.tenant, "*")
            .map(|arn| arn.replacen(&format!("/{}/", rule.method), &format!("/{method}/"), 1))
        else {
            continue;
        };
        if forbidden.iter().any(|f| arn_matches(&pattern, f)) {
            continue;
        }
        if !resources.contains(&pattern) {
            resources.push(pattern);
        }
    }
    if resources.len() > MAX_RESOURCES {
        resources.truncate(1);
    }
    resources
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_arns_split() {
        let arn = MethodArn::parse(
            "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/GET/tenants/T/members",
        )
        .unwrap();
        assert_eq!(
            arn.prefix,
            "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod"
        );
        assert_eq!(arn.method, "GET");
        assert_eq!(arn.path, "tenants/T/members");
        assert_eq!(
            arn.arn(),
            "arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/GET/tenants/T/members"
        );
        assert!(MethodArn::parse("nonsense").is_none());
    }

    #[test]
    fn a_wildcard_that_would_open_a_forbidden_route_is_not_used() {
        let rules = RouteRules::parse(
            r#"{"routes":[
                {"method":"GET","resource":"/docs/{docId}","permission":"doc:read"},
                {"method":"GET","resource":"/docs/{docId}/secrets","permission":"secret:read"},
                {"method":"GET","resource":"/tenants/{tenantId}/items/{itemId}","permission":"item:read"}
            ]}"#,
        )
        .unwrap();
        let read = [
            Permission::parse("doc:read").unwrap(),
            Permission::parse("item:read").unwrap(),
        ];
        let tenant = TenantId::generate();
        let holdings = Holdings {
            tenant: Some(&tenant),
            tenant_permissions: &read,
            global_permissions: &[],
        };
        let request = MethodArn::parse(&format!(
            "arn:aws:execute-api:r:1:api/prod/GET/tenants/{tenant}/items/i1"
        ))
        .unwrap();
        let resources = allowed_resources(&rules, &holdings, &request);
        let allows = |path: &str| {
            resources
                .iter()
                .any(|p| arn_matches(p, &format!("arn:aws:execute-api:r:1:api/prod/GET/{path}")))
        };
        assert!(
            allows(&format!("tenants/{tenant}/items/i2")),
            "{resources:?}"
        );
        assert!(!allows("docs/d1/secrets"), "{resources:?}");
        assert!(
            !allows(&format!("tenants/{}/items/i1", TenantId::generate())),
            "another tenant"
        );
        // The wildcard for /docs/{docId} was dropped, so docs are allowed
        // only where this request is: not here.
        assert!(!allows("docs/d1"));
        let on_doc = MethodArn::parse("arn:aws:execute-api:r:1:api/prod/GET/docs/d1").unwrap();
        let resources = allowed_resources(&rules, &holdings, &on_doc);
        assert!(resources.contains(&on_doc.arn()));
        assert!(!resources
            .iter()
            .any(|p| arn_matches(p, "arn:aws:execute-api:r:1:api/prod/GET/docs/d1/secrets")));
    }

    #[test]
    fn iam_wildcards() {
        assert!(arn_matches("a/*/c", "a/b/c"));
        assert!(arn_matches("a/*", "a/b/c/d"), "* spans slashes");
        assert!(arn_matches("a/?/c", "a/b/c"));
        assert!(!arn_matches("a/?/c", "a/bb/c"));
        assert!(!arn_matches("a/*/c", "a/b/d"));
        assert!(arn_matches("*", ""));
        assert!(arn_matches("a", "a"));
        assert!(!arn_matches("a", "ab"));
    }
}
