//! What the authorizer answers API Gateway: the REST API's IAM policy
//! response, the HTTP API's simple response, and the backend-facing context
//! both carry.

use std::sync::{Arc, LazyLock};

use authz_core::model::values::Permission;
use authz_core::NO_END;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::decision::{Allow, Decision};

/// The refusal a client is shown for a Deny's reason (the reason itself is
/// logged, never shown): a stable `code` and a message that reveals
/// nothing the caller could not learn anyway. A malformed id in the path
/// is named; a policy's `forbid`, an account that is not active and access
/// that has ended are told to the caller they concern; every other reason
/// (no grant here, the permission not held, a tenant deleted, a crafted
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
            let mut ctx = a.context.map.clone();
            ctx.insert("policies".into(), json!(policy_ids(a)));
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
            // What its groups may give through it, as JSON (the context
            // holds strings only).
            ctx.insert(
                "scimTokenCeiling".into(),
                json!(serde_json::to_string(&d.ceiling).expect("holdings serialize")),
            );
            // Its creator, whose standing the backend checks: a token lasts
            // no longer than they may manage the tenant's members.
            if let Some(creator) = &d.created_by {
                ctx.insert("scimTokenCreator".into(), json!(creator));
            }
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

/// What the backend is told of a caller: an Allow's context but for the
/// policies that allowed it (`policies`, last), the same for every request
/// their standing allows, so it is built once per standing
/// (`judge::AllowParts`); and the whole context of an Allow no policy
/// allowed (`policies` empty, most of them), written as JSON then too, so
/// that such an Allow is sent without writing any of it again.
#[derive(Debug)]
pub struct CallerContext {
    pub map: Map<String, Value>,
    /// `map` and `"policies": ""`, as JSON.
    json: Box<RawValue>,
}

impl PartialEq for CallerContext {
    fn eq(&self, other: &Self) -> bool {
        self.map == other.map
    }
}

impl Eq for CallerContext {}

impl CallerContext {
    pub fn new(a: &Allow) -> Self {
        let map = caller_context(a);
        let json = ContextJson {
            map: &map,
            policies: "",
        };
        let json = serde_json::value::to_raw_value(&json).expect("a context serializes");
        Self { map, json }
    }

    /// No caller's: what an Allow holds until its caller's is set.
    pub fn none() -> Arc<Self> {
        static NONE: LazyLock<Arc<CallerContext>> = LazyLock::new(|| {
            Arc::new(CallerContext {
                map: Map::new(),
                json: serde_json::value::to_raw_value(&Map::new()).expect("{} serializes"),
            })
        });
        NONE.clone()
    }
}

/// [`CallerContext::map`] of an Allow's caller.
fn caller_context(a: &Allow) -> Map<String, Value> {
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
    // When this answer stops being right: API Gateway may reuse it past
    // then (its result cache is not told), so the backend refuses a
    // request from then on.
    ctx.insert("accessUntil".into(), until(a.access_until()));
    ctx
}

/// What API Gateway receives for a decision, serialized once: an answer
/// keeps it, and the runtime sends it as it is.
pub type Response = Arc<RawValue>;

/// The REST API response for a decision: the shape of
/// `aws_lambda_events`' `ApiGatewayCustomAuthorizerResponse` (the tests
/// below read it back with the library's type), serialized straight from
/// the decision: building a value first copied every resource and the
/// context key by key, and the runtime then serialized it again.
pub fn rest_response(decision: &Decision, method_arn: &str) -> Response {
    let (effect, resource, principal_id) = match decision {
        Decision::Allow(a) => (
            "Allow",
            Resource::Allowed(&a.resources),
            a.user_id.to_string(),
        ),
        Decision::SignUp(s) => (
            "Allow",
            Resource::Listed(&s.resources),
            format!("signup:{}", s.identity_id),
        ),
        Decision::Directory(d) => ("Allow", Resource::Listed(&d.resources), d.principal()),
        Decision::Deny { user_id, .. } => ("Deny", Resource::One(method_arn), user_id.to_string()),
    };
    serialized(&RestResponse {
        principal_id,
        policy_document: PolicyDocument {
            version: "2012-10-17",
            statement: [Statement {
                action: ["execute-api:Invoke"],
                effect,
                resource,
            }],
        },
        context: Context(decision),
        usage_identifier_key: None,
    })
}

/// The HTTP API (payload 2.0) simple response for a decision: the shape
/// of `aws_lambda_events`' `ApiGatewayV2CustomAuthorizerSimpleResponse`,
/// serialized like the REST response.
pub fn simple_response(decision: &Decision) -> Response {
    let is_authorized = matches!(
        decision,
        Decision::Allow(_) | Decision::SignUp(_) | Decision::Directory(_)
    );
    serialized(&SimpleResponse {
        is_authorized,
        context: Context(decision),
    })
}

fn serialized(response: &impl Serialize) -> Response {
    Arc::from(serde_json::value::to_raw_value(response).expect("a response serializes"))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RestResponse<'a> {
    principal_id: String,
    policy_document: PolicyDocument<'a>,
    context: Context<'a>,
    usage_identifier_key: Option<()>,
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct PolicyDocument<'a> {
    version: &'static str,
    statement: [Statement<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct Statement<'a> {
    action: [&'static str; 1],
    effect: &'static str,
    resource: Resource<'a>,
}

/// A statement's resources: an Allow's (its caller's patterns written
/// once), a sign-up's or a directory's list, or a Deny's one ARN.
enum Resource<'a> {
    Allowed(&'a crate::iam_policy::Resources),
    Listed(&'a [String]),
    One(&'a str),
}

impl Serialize for Resource<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Allowed(resources) => resources.serialize(s),
            Self::Listed(list) => list.serialize(s),
            Self::One(arn) => [arn].serialize(s),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SimpleResponse<'a> {
    is_authorized: bool,
    context: Context<'a>,
}

/// A decision's [`context`], serialized without being built: an Allow's
/// is its caller's (kept with the standing), then its policies.
struct Context<'a>(&'a Decision);

impl Serialize for Context<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Decision::Allow(a) if a.policies.is_empty() => a.context.json.serialize(s),
            Decision::Allow(a) => ContextJson {
                map: &a.context.map,
                policies: &policy_ids(a),
            }
            .serialize(s),
            other => context(other).serialize(s),
        }
    }
}

/// An Allow's context: its caller's, then the policies that allowed it.
struct ContextJson<'a> {
    map: &'a Map<String, Value>,
    policies: &'a str,
}

impl Serialize for ContextJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.map.len() + 1))?;
        for (key, value) in self.map {
            map.serialize_entry(key, value)?;
        }
        map.serialize_entry("policies", self.policies)?;
        map.end()
    }
}

/// The ids of the policies that allowed an Allow, comma-separated.
fn policy_ids(a: &Allow) -> String {
    a.policies
        .iter()
        .map(|p| p.policy_id.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
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
            resources: crate::iam_policy::Resources {
                listed: vec![ARN.into(), format!("{ARN}/*")],
                patterns: None,
            },
            policies: Vec::new(),
            context: CallerContext::none(),
        };
        allow.context = Arc::new(CallerContext::new(&allow));
        Decision::Allow(Box::new(allow))
    }

    /// The response is what the library's type reads and writes, field for
    /// field: API Gateway reads the same document.
    #[test]
    fn a_rest_response_is_the_librarys_shape() {
        let deny = Decision::Deny {
            user_id: UserId::generate(),
            tenant_id: None,
            reason: "permission not held",
            policies: Vec::new(),
        };
        // An Allow a policy let through names it; one none did sends the
        // context written with its standing.
        let mut permitted = allow();
        if let Decision::Allow(a) = &mut permitted {
            a.policies = vec![authz_core::policy::cedar::Determining {
                policy_id: "01J8Z0E2Z8D2A3J7A7Y2H9GQ9P".into(),
                name: "office \"hours\"".into(),
            }];
        }
        for (decision, effect, resources) in [
            (allow(), IamPolicyEffect::Allow, 2),
            (permitted, IamPolicyEffect::Allow, 2),
            (deny, IamPolicyEffect::Deny, 1),
        ] {
            let value: Value = serde_json::from_str(rest_response(&decision, ARN).get()).unwrap();
            let typed: ApiGatewayCustomAuthorizerResponse<Map<String, Value>> =
                serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_value(&typed).unwrap(), value);
            let statement = &typed.policy_document.statement[0];
            assert_eq!(statement.effect, effect);
            assert_eq!(statement.action, vec!["execute-api:Invoke"]);
            assert_eq!(statement.resource.len(), resources);
            assert_eq!(typed.context, context(&decision));
            if let Decision::Allow(a) = &decision {
                let ids = a.policies.first().map_or("", |p| p.policy_id.as_str());
                assert_eq!(typed.context["policies"], ids);
                assert_eq!(typed.context["userId"], a.user_id.to_string());
            }
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
            let value: Value = serde_json::from_str(simple_response(&decision).get()).unwrap();
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
        assert_eq!(ctx["accessUntil"], "1900000000");
        assert!(ctx.values().all(Value::is_string));
    }

    /// An answer is right until the first end that can take something
    /// away: the grant's, unless global roles holding `*` outlast it; the
    /// global roles' when they end first.
    #[test]
    fn an_answer_is_right_until_the_first_end_that_takes_something_away() {
        let Decision::Allow(mut a) = allow() else {
            unreachable!()
        };
        assert_eq!(a.access_until(), Some(1_900_000_000));
        a.global_permissions = vec![Permission::parse("ticket:*").unwrap()];
        assert_eq!(a.access_until(), Some(1_900_000_000), "not everything");
        a.global_permissions = vec![Permission::parse("*").unwrap()];
        assert_eq!(a.access_until(), None, "a platform admin's grant ends");
        a.global_permissions_until = Some(1_950_000_000);
        assert_eq!(a.access_until(), Some(1_950_000_000));
        a.global_permissions_until = Some(1_800_000_000);
        assert_eq!(a.access_until(), Some(1_800_000_000), "global first");
        a.tenant_permissions_until = None;
        assert_eq!(a.access_until(), Some(1_800_000_000));
        a.global_permissions_until = None;
        assert_eq!(a.access_until(), None, "nothing ends");
    }
}
