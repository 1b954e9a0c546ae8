//! DynamoDB cost, as DynamoDB Local reports it with `ReturnConsumedCapacity`:
//! requests and read units per authorizer decision (uncached, cached), next
//! to the calculated check (role-to-permission items) with 1, 3 and 10 roles; and requests and
//! units for provisioning writes.

use std::time::Duration;

use authz_core::model::values::{TenantId, TenantName};
use authz_core::testing::{new_permissions, new_user, new_user_with};
use authz_core::Store;

use crate::meter::{Meter, Usage};
use crate::world::{self, World};

/// A named measurement of requests and units.
#[derive(Debug, Clone)]
pub struct Cost {
    pub what: String,
    pub usage: Usage,
    /// The goal the issue set for it, and whether it was met.
    pub goal: Option<(&'static str, bool)>,
}

fn cost(what: impl Into<String>, usage: Usage) -> Cost {
    Cost {
        what: what.into(),
        usage,
        goal: None,
    }
}

impl Cost {
    fn goal(self, goal: &'static str, met: bool) -> Cost {
        Cost {
            goal: Some((goal, met)),
            ..self
        }
    }
}

/// Decisions: uncached on a tenant route and on a global route, cached.
pub async fn decisions(world: &World, meter: &Meter, metered: &Store) -> Result<Vec<Cost>, String> {
    let token = world::token(&world.user);
    let mut out = Vec::new();

    let uncached = world::authorizer(metered.clone(), Duration::ZERO);
    let event = world::rest_event(&world.tenant, &token);
    // An instance's first decision also reads the policy set's counts, in
    // the same request (reported below); the decisions measured here are
    // those of a running instance.
    meter.reset();
    authorizer::handler::handle_value(&uncached, &event)
        .await
        .map_err(|e| e.to_string())?;
    let first = cost(
        "an instance's first decision (its inputs and the policy set's counts, no statement)",
        meter.usage(),
    );
    meter.reset();
    let answer = authorizer::handler::handle_value(&uncached, &event)
        .await
        .map_err(|e| e.to_string())?;
    if answer["policyDocument"]["Statement"][0]["Effect"] != "Allow" {
        return Err(format!("the benchmark decision was not an Allow: {answer}"));
    }
    out.push(cost(
        "uncached decision, tenant route (grant + user)",
        meter.usage(),
    ));

    let mut global = event.clone();
    global["resource"] = serde_json::json!("/tenants");
    global["path"] = serde_json::json!("/tenants");
    global["pathParameters"] = serde_json::json!({});
    global["methodArn"] =
        serde_json::json!("arn:aws:execute-api:us-east-1:123456789012:abcdef123/prod/GET/tenants");
    meter.reset();
    authorizer::handler::handle_value(&uncached, &global)
        .await
        .map_err(|e| e.to_string())?;
    out.push(cost(
        "uncached decision, global route (user)",
        meter.usage(),
    ));

    let cached = world::authorizer(metered.clone(), Duration::from_secs(60));
    authorizer::handler::handle_value(&cached, &event)
        .await
        .map_err(|e| e.to_string())?;
    meter.reset();
    authorizer::handler::handle_value(&cached, &event)
        .await
        .map_err(|e| e.to_string())?;
    out.push(cost(
        "cached decision (within CACHE_TTL_SECONDS)",
        meter.usage(),
    ));
    out.push(first);

    // An issuer that names users by identity: its first sight of one reads
    // the identity's link, then every uncached decision is one request.
    let by_identity = world::identity_authorizer(metered.clone(), Duration::ZERO);
    let linked = world::rest_event(&world.tenant, &world::token_for(world::SUBJECT));
    authorizer::handler::handle_value(&by_identity, &event)
        .await
        .map_err(|e| e.to_string())
        .ok();
    meter.reset();
    let seen = authorizer::handler::handle_value(&by_identity, &linked)
        .await
        .map_err(|e| e.to_string())?;
    if seen["policyDocument"]["Statement"][0]["Effect"] != "Allow" {
        return Err(format!("the identity's decision was not an Allow: {seen}"));
    }
    let first_sight = meter.usage();
    meter.reset();
    authorizer::handler::handle_value(&by_identity, &linked)
        .await
        .map_err(|e| e.to_string())?;
    let known = meter.usage();
    out.push(
        cost(
            "uncached decision, the instance's first sight of an identity (its link + grant + user)",
            first_sight,
        )
        .goal(
            "≤ 1 more request",
            first_sight.requests <= known.requests + 1,
        ),
    );
    out.push(
        cost(
            "uncached decision, an identity the instance knows (grant + user)",
            known,
        )
        .goal("1 request", known.requests == 1),
    );

    // 1,000 uncached decisions over 10 refresh intervals of 100 ms: the
    // requests include the background refreshes (the counts, unmoved).
    let refreshing = world::authorizer(metered.clone(), Duration::ZERO).with_policies(
        Duration::from_millis(100),
        authorizer::DEFAULT_ANSWER_CACHING,
    );
    authorizer::handler::handle_value(&refreshing, &event)
        .await
        .map_err(|e| e.to_string())?;
    meter.reset();
    for i in 0..1000 {
        authorizer::handler::handle_value(&refreshing, &event)
            .await
            .map_err(|e| e.to_string())?;
        if i % 100 == 99 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Let the last reload finish.
    tokio::time::sleep(Duration::from_millis(200)).await;
    out.push(cost(
        "1,000 uncached decisions, the policy set's counts read every 100 ms",
        meter.usage(),
    ));
    Ok(out)
}

/// The calculated check (`calculated_check`) for a user with `roles` roles.
pub async fn calculated_check(
    client_for_setup: &aws_sdk_dynamodb::Client,
    meter: &Meter,
    metered: &aws_sdk_dynamodb::Client,
    roles: usize,
) -> Result<Cost, String> {
    let table = format!(
        "calculated-check-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    crate::calculated_check::create_table(client_for_setup, &table).await?;
    crate::calculated_check::populate(client_for_setup, &table, "u1", roles, 5).await?;
    meter.reset();
    let allowed =
        crate::calculated_check::has_permission(metered, &table, "u1", "member:read").await?;
    if !allowed {
        return Err("the calculated check did not find the permission".into());
    }
    Ok(cost(
        format!("calculated check, {roles} role(s)"),
        meter.usage(),
    ))
}

/// Provisioning writes through the store, as the API makes them.
pub async fn writes(world: &World, meter: &Meter, metered: &Store) -> Result<Vec<Cost>, String> {
    let mut out = Vec::new();
    let e = |e: authz_core::Error| e.to_string();

    meter.reset();
    let user = metered
        .create_user(
            &new_user("erin@example.com", &[]),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(e)?;
    out.push(cost("create user (email)", meter.usage()));

    meter.reset();
    metered
        .create_user(
            &new_user_with("fay@example.com", Some("+14155550100"), Some("fay"), &[]),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(e)?;
    out.push(cost("create user (email, phone, username)", meter.usage()));

    meter.reset();
    metered
        .put_tenant_grant(
            &world.tenant,
            &user.user_id,
            &[world.role],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(e)?;
    out.push(cost("grant (new, 1 role)", meter.usage()));

    meter.reset();
    metered
        .put_tenant_grant(
            &world.tenant,
            &user.user_id,
            &[world.role],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(e)?;
    out.push(cost("grant (replace, 1 role)", meter.usage()));

    let tenant = world
        .store
        .tenant(&world.tenant)
        .await
        .map_err(e)?
        .ok_or("the bench tenant")?;
    meter.reset();
    metered
        .rename_tenant(
            &world.tenant,
            &TenantName::parse("acme-renamed").map_err(|e| e.to_string())?,
            tenant.stamp.version,
            None,
        )
        .await
        .map_err(e)?;
    out.push(cost("rename tenant", meter.usage()));

    let role = world
        .store
        .role_by_id_consistent(&world.role)
        .await
        .map_err(e)?
        .ok_or("the bench role")?;
    meter.reset();
    metered
        .update_role(
            &world.role,
            &new_permissions(&["tenant:read", "member:read", "member:write"]),
            role.stamp.version,
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(e)?;
    out.push(cost(
        "update role permissions (holders: by the stream)",
        meter.usage(),
    ));
    out.extend(directory(world, meter, metered).await?);
    Ok(out)
}

/// A tenant's directory over SCIM, through the provisioning API as API
/// Gateway calls it with the directory token's context and the bodies
/// Okta documents: a create that finds a member by address and one that
/// finds nobody, a deactivation (the member's grant removed: a revoking
/// write, counted against the directory's and the tenant's limits) and a
/// reactivation (given back), in a tenant whose directory has no group.
/// Each row counts every request the handler sends.
async fn directory(world: &World, meter: &Meter, metered: &Store) -> Result<Vec<Cost>, String> {
    let mut out = Vec::new();
    // A reader, not an administrator (the tenant's last one could not be
    // suspended by its directory).
    verified_member(world, "gil@example.com", "scim-reader", "tenant:read").await?;
    // The token's creator, a tenant administrator: every request checks
    // they may still manage the tenant's members.
    let creator = verified_member(world, "ada@example.com", "scim-admins", "member:write").await?;
    let scim = Scim::new(metered.clone(), &world.tenant, &creator)?;
    // Okta's create (its SCIM 2.0 guide), for a member and for nobody.
    let okta_user = |user_name: &str| {
        serde_json::json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
            "userName": user_name,
            "name": {"givenName": "Gil", "familyName": "Bench"},
            "emails": [{"primary": true, "value": user_name, "type": "work"}],
            "displayName": "Gil Bench",
            "locale": "en-US",
            "externalId": format!("00u{}", user_name.len()),
            "groups": [],
            "password": "1mz050nq",
            "active": true
        })
    };
    let active = |on: bool| {
        serde_json::json!({
            "schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
            "Operations": [{"op": "replace", "value": {"active": on}}]
        })
    };

    meter.reset();
    let created = scim
        .send("POST", "/Users", Some(okta_user("gil@example.com")), 201)
        .await?;
    out.push(cost(
        "SCIM create user, Okta's body (a member found by address)",
        meter.usage(),
    ));
    let id = created["id"]
        .as_str()
        .ok_or("the created person has an id")?;
    meter.reset();
    scim.send("POST", "/Users", Some(okta_user("nobody@example.com")), 201)
        .await?;
    out.push(cost(
        "SCIM create user, Okta's body (no member found)",
        meter.usage(),
    ));

    meter.reset();
    scim.send("PATCH", &format!("/Users/{id}"), Some(active(false)), 200)
        .await?;
    out.push(cost(
        "SCIM deactivate, Okta's PATCH (the member's grant removed)",
        meter.usage(),
    ));
    meter.reset();
    scim.send("PATCH", &format!("/Users/{id}"), Some(active(true)), 200)
        .await?;
    out.push(cost(
        "SCIM reactivate, Okta's PATCH (the member's grant given back)",
        meter.usage(),
    ));
    Ok(out)
}

/// A user whose address `email` is verified, a member of the world's
/// tenant through a new tenant role `role` that gives `permission`.
async fn verified_member(
    world: &World,
    email: &str,
    role: &str,
    permission: &str,
) -> Result<authz_core::model::values::UserId, String> {
    let e = |e: authz_core::Error| e.to_string();
    let mut user = new_user(email, &[]);
    user.email_verified = true;
    let user = world
        .store
        .create_user(&user, &authz_core::Caller::OPERATOR)
        .await
        .map_err(e)?;
    let role = world
        .store
        .create_role(
            &authz_core::testing::new_role("tenant", role, &[permission]),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(e)?;
    world
        .store
        .put_tenant_grant(
            &world.tenant,
            &user.user_id,
            &[role.role_id],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(e)?;
    Ok(user.user_id)
}

/// The provisioning API under a tenant's SCIM base, called as API Gateway
/// calls it for a token of the tenant's directory.
struct Scim {
    app: provisioning::App,
    tenant: TenantId,
    creator: authz_core::model::values::UserId,
}

impl Scim {
    fn new(
        store: Store,
        tenant: &TenantId,
        creator: &authz_core::model::values::UserId,
    ) -> Result<Self, String> {
        let rules = concat!(env!("CARGO_MANIFEST_DIR"), "/../../route_rules");
        let statement_rules = provisioning::StatementRules::load(
            &format!("{rules}/schema.cedarschema"),
            &format!("{rules}/provisioning.json"),
            authz_core::policy::cedar::AnswerCaching {
                keyed_on_source_ip: false,
                result_ttl_seconds: 300,
            },
        )
        .map_err(|e| e.to_string())?;
        Ok(Self {
            app: provisioning::app(store, statement_rules),
            tenant: *tenant,
            creator: *creator,
        })
    }

    /// Sends `method` to `path` under the base with `body`; its answer,
    /// which must have status `expect`.
    async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<serde_json::Value>,
        expect: u16,
    ) -> Result<serde_json::Value, String> {
        use tower::ServiceExt;
        let path = format!("/scim/v2/{}{path}", self.tenant);
        let mut event: serde_json::Value = serde_json::from_str(include_str!(
            "../../../events/provisioning-create-tenant.json"
        ))
        .map_err(|e| e.to_string())?;
        let headers = serde_json::json!({
            "Host": "0123456789.execute-api.us-east-1.amazonaws.com",
            "Accept": "application/scim+json",
            "Content-Type": "application/scim+json",
        });
        let multi: serde_json::Map<String, serde_json::Value> = headers
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), serde_json::json!([v])))
            .collect();
        event["httpMethod"] = serde_json::json!(method);
        event["path"] = serde_json::json!(path);
        event["resource"] = serde_json::json!(path);
        event["pathParameters"] = serde_json::Value::Null;
        event["headers"] = headers;
        event["multiValueHeaders"] = serde_json::Value::Object(multi);
        event["body"] = body.map_or(
            serde_json::Value::Null,
            |b| serde_json::json!(b.to_string()),
        );
        event["requestContext"]["path"] = serde_json::json!(format!("/prod{path}"));
        event["requestContext"]["httpMethod"] = serde_json::json!(method);
        // What the authorizer passes for a directory's token.
        event["requestContext"]["authorizer"] = serde_json::json!({
            "principalId": "SCIM token bench (01J8YZZQ3V8PZKQ0ZKX4C2M7FM)",
            "userId": "",
            "tenantId": self.tenant.to_string(),
            "scimTokenId": "01J8YZZQ3V8PZKQ0ZKX4C2M7FM",
            "scimTokenName": "bench",
            "scimTokenUntil": "never",
            "scimTokenCeiling": r#"[{"permissions":["*"],"until":null}]"#,
            "scimTokenCreator": self.creator.to_string(),
            "integrationLatency": 3,
        });
        let request =
            lambda_http::request::from_str(&event.to_string()).map_err(|e| e.to_string())?;
        let response = self
            .app
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| format!("{e:?}"))?;
        let status = response.status().as_u16();
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
        if status != expect {
            return Err(format!("{method} {path}: {status}, not {expect}: {answer}"));
        }
        Ok(answer)
    }
}
