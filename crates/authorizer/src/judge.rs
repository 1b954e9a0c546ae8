//! The decision for an authenticated caller, from what the table says:
//! where the request goes (its route rule, method ARN and tenant, checked
//! against each other before any is trusted), then Allow only an active
//! user whose permissions give the rule's permission (or whom a self rule
//! or a Cedar `permit` policy lets through) and whom no `forbid` policy
//! stops, a grant counting only in an active tenant. An Allow lists, in
//! its IAM policy document, everything the caller may do that API Gateway
//! could reuse it for.

use std::net::IpAddr;
use std::sync::Arc;

use authz_core::model::items::{TenantGrant, User};
use authz_core::model::values::{TenantId, UserId};
use authz_core::policy::cedar::{Facts, Judgement, Policies, Verdict};

use crate::decision::{Allow, Decision, Failure, Request, TEST_INVOKE_SOURCE_IP};
use crate::iam_policy::{Holdings, MethodArn, Reach};
use crate::inputs::{Held, Inputs};
use crate::issuers::{IssuerProfile, SignUp};
use crate::response::CallerContext;
use crate::routes::{RouteRules, Rule, SelfRule, TENANT_PARAM};
use crate::token::{VerifiedCaller, Who};

/// Where a request goes: its route rule, its method ARN and, on a tenant
/// route, the tenant.
pub struct Target<'r> {
    pub rule: &'r Rule,
    pub method_arn: MethodArn,
    pub tenant_id: Option<TenantId>,
}

/// Where a request goes, before anything is read; `Err` is the reason it
/// is denied whoever asks.
pub fn target<'r>(
    rules: &'r RouteRules,
    request: &Request<'_>,
) -> Result<Target<'r>, &'static str> {
    let rule = rules
        .find(request.method, request.resource)
        .ok_or("no route rule")?;
    let method_arn = MethodArn::parse(request.method_arn).ok_or("malformed method ARN")?;
    if !method_arn.names(request.method, request.resource, request.path_parameters) {
        return Err("the event's method, route, parameters and ARN disagree");
    }
    // API Gateway sends the caller's address (or, for its console's and
    // CLI's test invocations, a placeholder: no address, as when the field
    // is empty); anything else in its place is a crafted event, whether or
    // not a policy reads it.
    if !request.source_ip.is_empty()
        && request.source_ip != TEST_INVOKE_SOURCE_IP
        && request.source_ip.parse::<IpAddr>().is_err()
    {
        return Err("sourceIp is not an IP address");
    }
    let tenant_id = if rule.is_tenant_scoped() {
        match request
            .path_parameters
            .get(TENANT_PARAM)
            .map(|t| TenantId::parse(t))
        {
            Some(Ok(t)) => Some(t),
            _ => return Err("tenant id missing or malformed"),
        }
    } else {
        None
    };
    Ok(Target {
        rule,
        method_arn,
        tenant_id,
    })
}

/// Whether the request goes to the sign-up route.
pub fn is_sign_up(target: &Result<Target<'_>, &'static str>) -> bool {
    target
        .as_ref()
        .is_ok_and(|t| t.rule.self_rule == Some(SelfRule::SignUp))
}

/// The route, if `user` may be judged on it at all: a route no rule or
/// tenant id allows, a tenant's SCIM route (its directory's token only),
/// or a tenant other than the one the token's issuer is bound to, is a
/// Deny that reads nothing.
pub fn admissible<'t, 'r>(
    caller: &VerifiedCaller,
    target: &'t Result<Target<'r>, &'static str>,
    user: UserId,
) -> Result<&'t Target<'r>, Decision> {
    let target = target.as_ref().map_err(|reason| deny(user, None, reason))?;
    if target.rule.self_rule == Some(SelfRule::Directory) {
        let reason = "a tenant's SCIM routes take its directory's token only";
        return Err(deny(user, target.tenant_id, reason));
    }
    if caller
        .tenant
        .is_some_and(|bound| target.tenant_id != Some(bound))
    {
        let reason = "the token's issuer is bound to another tenant";
        return Err(deny(user, target.tenant_id, reason));
    }
    Ok(target)
}

/// The decision for `caller` (user `user_id`) making `request`, which
/// goes to `target`, over what is `held` of them and the policy set.
pub fn judge(
    rules: &RouteRules,
    caller: &VerifiedCaller,
    user_id: UserId,
    request: &Request<'_>,
    target: &Target<'_>,
    held: Held<'_>,
    policies: &Policies,
) -> Decision {
    let inputs = held.inputs;
    let standing = inputs
        .read
        .standing_with(target.tenant_id.as_ref(), held.own);
    let facts = || facts(caller, request, target);
    // A self rule lets the caller act on themselves without the
    // permission; the policy then allows only this request's ARN (their own
    // id in it) beyond what their permissions allow.
    let judgement = policies.judge(
        &standing,
        target.rule.permission.as_str(),
        target.rule.is_self(&user_id, request.path_parameters),
        facts,
    );
    if let Verdict::Error { message, .. } = &judgement.verdict {
        tracing::warn!(error = %message, "policy evaluation failed: denied");
    }
    if !judgement.allowed {
        return Decision::Deny {
            user_id,
            tenant_id: target.tenant_id,
            reason: judgement.reason,
            policies: judgement.verdict.determining().to_vec(),
        };
    }
    let user = standing.user.expect("an allowed caller exists");
    let grant = standing.counted_grant();
    // The clock the judgement read, for what the global roles give and
    // whether their end still counts: never an Allow that rested on them
    // without their end.
    let now = judgement.at;
    let holdings = Holdings {
        tenant: target.tenant_id.as_ref(),
        tenant_permissions: grant.map_or(&[], |g| &g.effective_permissions),
        global_permissions: user.global_permissions(now),
        bound: caller.tenant.is_some(),
    };
    let mut allow = Allow::judged(user_id, target.tenant_id, user, grant, &holdings, judgement);
    let parts =
        AllowParts::kept_or_new(inputs, rules, &holdings, &allow, &target.method_arn.prefix);
    allow.resources = crate::iam_policy::allow_list(
        rules,
        policies,
        &standing,
        &parts.reach,
        user_id,
        &target.method_arn,
        facts,
    );
    allow.context = parts.context.clone();
    Decision::Allow(Box::new(allow))
}

/// The request as the event has it, for the policies that read it.
fn facts(caller: &VerifiedCaller, request: &Request<'_>, target: &Target<'_>) -> Facts {
    Facts {
        source_ip: request.source_ip.to_string(),
        time: Facts::time_now(),
        method: request.method.to_ascii_uppercase(),
        // The path as the method ARN has it (checked against the route and
        // parameters in `target`; no stage prefix), in the one spelling
        // policies see: ids upper case, segments decoded.
        path: Facts::canonical_path(&format!("/{}", target.method_arn.path)),
        route: request.resource.to_string(),
        amr: caller.amr.clone(),
        acr: caller.acr.clone(),
        scope: caller.scope.clone(),
    }
}

impl Allow {
    /// The Allow a `judgement` gives, before its resources and context:
    /// who, where, with what, until when (as of the clock the judgement
    /// and `holdings` read).
    fn judged(
        user_id: UserId,
        tenant_id: Option<TenantId>,
        user: &User,
        grant: Option<&TenantGrant>,
        holdings: &Holdings<'_>,
        judgement: Judgement,
    ) -> Self {
        let now = judgement.at;
        Allow {
            user_id,
            tenant_id,
            tenant_grant_id: grant.map(|g| g.tenant_grant_id),
            roles: judgement.roles.iter().map(|r| r.to_string()).collect(),
            policies: judgement.verdict.determining().to_vec(),
            permissions: judgement.permissions,
            tenant_permissions: holdings.tenant_permissions.to_vec(),
            tenant_permissions_until: grant.and_then(|g| g.expires_at),
            global_permissions: holdings.global_permissions.to_vec(),
            // The global roles' end counts while there are roles it ends
            // (a role with no permissions may still let a policy through);
            // once it has passed it takes nothing more away, and an end in
            // the past would tell the backend the caller's access has
            // ended when their grant still holds.
            global_permissions_until: user
                .roles_expire_at
                .filter(|_| !user.global_roles(now).is_empty()),
            resources: Default::default(),
            context: CallerContext::none(),
        }
    }
}

/// What every Allow built from one standing shares, whatever the request:
/// what the caller's holdings reach ([`Reach`]: the rules they allow, the
/// wildcards those give) and what the backend is told of the caller
/// ([`CallerContext`]). Worked out with the first Allow and kept with
/// the cached inputs ([`Inputs::parts`]); used for another only when it
/// says the same of the caller under the same API stage (a grant or
/// global roles that ended since, or another stage, work it out anew).
#[derive(Debug, PartialEq, Eq)]
pub struct AllowParts {
    /// The Allow it was built for (its caller fields), and the stage.
    first: Allow,
    prefix: String,
    reach: Reach,
    context: Arc<CallerContext>,
}

impl AllowParts {
    fn new(rules: &RouteRules, holdings: &Holdings<'_>, allow: &Allow, prefix: &str) -> Self {
        Self {
            first: Allow {
                resources: Default::default(),
                policies: Vec::new(),
                ..allow.clone()
            },
            prefix: prefix.to_string(),
            reach: Reach::new(rules, holdings, prefix),
            context: Arc::new(CallerContext::new(allow)),
        }
    }

    fn fit(&self, allow: &Allow, prefix: &str, bound: bool) -> bool {
        self.prefix == prefix && self.reach.bound == bound && self.first.same_caller(allow)
    }

    /// The parts kept with `inputs` when they fit `allow`, else worked out
    /// (and kept, if none were).
    fn kept_or_new(
        inputs: &Inputs,
        rules: &RouteRules,
        holdings: &Holdings<'_>,
        allow: &Allow,
        prefix: &str,
    ) -> Arc<Self> {
        match inputs.parts.0.get() {
            Some(parts) if parts.fit(allow, prefix, holdings.bound) => parts.clone(),
            kept => {
                let built = Arc::new(Self::new(rules, holdings, allow, prefix));
                if kept.is_none() {
                    let _ = inputs.parts.0.set(built.clone());
                }
                built
            }
        }
    }
}

/// A caller that is not one: a Deny that reads nothing.
pub fn deny(user_id: UserId, tenant_id: Option<TenantId>, reason: &'static str) -> Decision {
    Decision::Deny {
        user_id,
        tenant_id,
        reason,
        policies: Vec::new(),
    }
}

/// The decision for the holder of a valid token whose identity is linked
/// to nobody, on the sign-up route: allowed (that route only) when the
/// issuer is open to sign-up, the token carries an email the issuer
/// verified, and, for an issuer bound to a tenant, the address is in one
/// of the domains its tenant speaks for (`emailDomains`): a tenant's IdP
/// vouches for nobody else's addresses. It may link to an existing user
/// with the address (their verified primary one) only where the issuer is
/// authoritative for its domain.
/// Otherwise the identity is what it was, linked to nobody: `Unauthorized`
/// with the reason (for the log).
pub fn sign_up(
    caller: &VerifiedCaller,
    profile: &IssuerProfile,
    target: &Target<'_>,
    rules: &RouteRules,
) -> Result<Decision, Failure> {
    let refuse = |reason: &str| {
        Err(Failure::Unauthorized(format!(
            "identity linked to no user, and not signing up: {reason}"
        )))
    };
    let Who::Identity {
        id,
        issuer,
        subject,
    } = &caller.who
    else {
        return refuse("sign-up is for identities");
    };
    if profile.sign_up == SignUp::Off {
        return refuse("the issuer is not open to sign-up");
    }
    let Some(email) = caller.email.as_deref().filter(|_| caller.email_verified) else {
        return refuse("sign-up needs an email the issuer verified");
    };
    let domain = email
        .rsplit_once('@')
        .map_or("", |(_, d)| d)
        .to_ascii_lowercase();
    let authoritative = profile.email_domains.contains(&domain);
    if profile.tenant.is_some() && !authoritative {
        return refuse(
            "a tenant's own IdP signs up only addresses of its tenant's domains (emailDomains)",
        );
    }
    Ok(Decision::SignUp(Box::new(crate::decision::SignUp {
        identity_id: *id,
        issuer: issuer.clone(),
        subject: subject.clone(),
        email: email.to_string(),
        tenant_id: profile.tenant,
        link_by_email: authoritative,
        resources: sign_up_resources(target, rules),
    })))
}

/// The sign-up route, and the `"self": "caller"` read on its path (the
/// caller's own details): what API Gateway may reuse a sign-up answer for
/// until its cache entry for the token and the path ends.
fn sign_up_resources(target: &Target<'_>, rules: &RouteRules) -> Vec<String> {
    let mut resources = vec![target.method_arn.arn()];
    if let Some(own) = rules
        .find("GET", &target.rule.resource)
        .filter(|r| r.method == "GET" && r.self_rule == Some(SelfRule::Caller))
    {
        let read = MethodArn {
            method: own.method.clone(),
            ..target.method_arn.clone()
        };
        resources.push(read.arn());
    }
    resources
}
