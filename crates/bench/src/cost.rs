//! DynamoDB cost, as DynamoDB Local reports it with `ReturnConsumedCapacity`:
//! requests and read units per authorizer decision (uncached, cached), next
//! to the calculated check (role-to-permission items) with 1, 3 and 10 roles; and requests and
//! units for provisioning writes.

use std::time::Duration;

use authz_core::model::values::TenantName;
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

/// A tenant's directory over SCIM, through the store as the SCIM routes
/// call it: a create that finds a member by address and one that finds
/// nobody, a deactivation (the member's grant removed) and a reactivation
/// (given back), in a tenant whose directory has no group.
async fn directory(world: &World, meter: &Meter, metered: &Store) -> Result<Vec<Cost>, String> {
    use authz_core::store::directory::DirectoryPerson;
    let e = |e: authz_core::Error| e.to_string();
    let mut out = Vec::new();
    let mut member = new_user("gil@example.com", &[]);
    member.email_verified = true;
    let member = world
        .store
        .create_user(&member, &authz_core::Caller::OPERATOR)
        .await
        .map_err(e)?;
    world
        .store
        .put_tenant_grant(
            &world.tenant,
            &member.user_id,
            &[world.role],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .map_err(e)?;
    let person = |user_name: &str, active: Option<bool>| DirectoryPerson {
        user_name: user_name.to_string(),
        external_id: Some(format!("ext-{user_name}")),
        given_name: Some("Gil".into()),
        family_name: None,
        display_name: None,
        emails: Vec::new(),
        active,
    };
    let directory = authz_core::Caller::operator("SCIM token bench");

    meter.reset();
    let created = metered
        .create_directory_user(
            &world.tenant,
            &person("gil@example.com", Some(true)),
            &directory,
        )
        .await
        .map_err(e)?;
    out.push(cost(
        "SCIM create user (a member found by address)",
        meter.usage(),
    ));
    meter.reset();
    metered
        .create_directory_user(
            &world.tenant,
            &person("nobody@example.com", Some(true)),
            &directory,
        )
        .await
        .map_err(e)?;
    out.push(cost("SCIM create user (no member found)", meter.usage()));

    meter.reset();
    let off = metered
        .replace_directory_user(
            &created,
            &person("gil@example.com", Some(false)),
            &directory,
        )
        .await
        .map_err(e)?;
    out.push(cost(
        "SCIM deactivate (the member's grant removed)",
        meter.usage(),
    ));
    meter.reset();
    metered
        .replace_directory_user(&off, &person("gil@example.com", Some(true)), &directory)
        .await
        .map_err(e)?;
    out.push(cost(
        "SCIM reactivate (the member's grant given back)",
        meter.usage(),
    ));
    Ok(out)
}
