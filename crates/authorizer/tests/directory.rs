//! A tenant directory's SCIM token at the authorizer: an Allow on its own
//! tenant's SCIM routes after one read, and refused on another tenant's
//! base, on every other route, with a wrong secret, once ended and once
//! revoked; and no user reaches a SCIM route whatever they hold.

use std::time::Duration;

use authorizer::Failure;
use authz_core::Caller;
use serde_json::Value;

use crate::common::*;

const USERS: &str = "/scim/v2/{tenantId}/Users";
const USER: &str = "/scim/v2/{tenantId}/Users/{id}";
const MEMBERS: &str = "/tenants/{tenantId}/members";

fn refused(result: Result<Value, Failure>) -> String {
    match result {
        Err(Failure::Unauthorized(reason)) => reason,
        other => panic!("expected Unauthorized, got {other:?}"),
    }
}

/// The decision names the token's creator, whose standing the backend
/// checks on each request (a token lasts no longer than they may manage
/// the tenant's members); a token from the operator's tools names none.
#[tokio::test]
async fn a_directory_tokens_decision_names_its_creator() {
    let world = World::new(Duration::from_secs(60), None).await;
    let a = world.tenant("directory-creator").await;
    let admin = "01J8YZZQ3V8PZKQ0ZKX4C2M7FM";
    let writes = authz_core::model::values::Permission::parse("member:write").unwrap();
    let creator = Caller::holding(admin, vec![authz_core::Holding::new(vec![writes], None)]);
    let mut named = Vec::new();
    for caller in [creator, Caller::OPERATOR] {
        let (_, secret) = world
            .store
            .create_directory_token(&a, "Okta", None, &caller)
            .await
            .unwrap();
        let allowed = world
            .call(rest_event(
                "GET",
                USERS,
                &params_for(USERS, a),
                Some(&format!("Bearer {secret}")),
            ))
            .await
            .unwrap();
        assert_eq!(effect(&allowed), "Allow", "{allowed}");
        named.push(allowed["context"]["scimTokenCreator"].clone());
    }
    assert_eq!(named, vec![Value::from(admin), Value::Null]);
}

#[tokio::test]
async fn a_directory_token_opens_its_tenants_scim_base_and_nothing_else() {
    let world = World::new(Duration::from_secs(60), None).await;
    let a = world.tenant("directory-a").await;
    let b = world.tenant("directory-b").await;
    let (token, secret) = world
        .store
        .create_directory_token(&a, "Okta", None, &Caller::OPERATOR)
        .await
        .unwrap();
    let bearer = format!("Bearer {secret}");

    world.counter.reset();
    let allowed = world
        .call(rest_event(
            "GET",
            USERS,
            &params_for(USERS, a),
            Some(&bearer),
        ))
        .await
        .unwrap();
    assert_eq!(effect(&allowed), "Allow", "{allowed}");
    assert_eq!(
        world.counter.counts().into_iter().collect::<Vec<_>>(),
        vec![("BatchGetItem".to_string(), 1)],
        "one read, as a user's uncached decision"
    );
    assert_eq!(
        allowed["principalId"],
        format!("SCIM token Okta ({})", token.token_id)
    );
    assert_eq!(allowed["context"]["tenantId"], a.to_string());
    assert_eq!(
        allowed["context"]["scimTokenId"],
        token.token_id.to_string()
    );
    assert_eq!(allowed["context"]["userId"], "");
    // What its groups may give through it: its creator's holdings (the
    // operator's tools hold everything, without end).
    let ceiling: Value =
        serde_json::from_str(allowed["context"]["scimTokenCeiling"].as_str().unwrap()).unwrap();
    assert_eq!(
        ceiling,
        serde_json::json!([{"permissions": ["*"], "until": null}])
    );
    // The answer covers this tenant's SCIM routes, and only those.
    let resources: Vec<String> = allowed["policyDocument"]["Statement"][0]["Resource"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect();
    assert!(resources
        .iter()
        .any(|r| r.ends_with(&format!("/PATCH/scim/v2/{a}/Users/*"))));
    assert!(
        resources
            .iter()
            .all(|r| r.contains(&format!("/scim/v2/{a}/"))),
        "{resources:?}"
    );

    // Another tenant's SCIM base.
    let reason = refused(
        world
            .call(rest_event(
                "GET",
                USERS,
                &params_for(USERS, b),
                Some(&bearer),
            ))
            .await,
    );
    assert!(reason.contains("another tenant"), "{reason}");
    // A route that is not a SCIM route, in its own tenant.
    let reason = refused(
        world
            .call(rest_event(
                "GET",
                MEMBERS,
                &params_for(MEMBERS, a),
                Some(&bearer),
            ))
            .await,
    );
    assert!(reason.contains("SCIM routes only"), "{reason}");
    // The right shape with a wrong secret, or a malformed token.
    let forged = format!("Bearer {}{}", &secret[..secret.len() - 4], "0000");
    refused(
        world
            .call(rest_event(
                "GET",
                USERS,
                &params_for(USERS, a),
                Some(&forged),
            ))
            .await,
    );
    refused(
        world
            .call(rest_event(
                "GET",
                USERS,
                &params_for(USERS, a),
                Some("Bearer scim_nothing"),
            ))
            .await,
    );

    // Revoked: refused at the next decision.
    world
        .store
        .revoke_directory_token(&a, &token.token_id)
        .await
        .unwrap();
    let reason = refused(
        world
            .call(rest_event(
                "PATCH",
                USER,
                &params_for(USER, a),
                Some(&bearer),
            ))
            .await,
    );
    assert!(reason.contains("revoked"), "{reason}");
}

#[tokio::test]
async fn an_ended_token_is_refused() {
    let world = World::new(Duration::from_secs(60), None).await;
    let a = world.tenant("directory-ended").await;
    let end = now() + 2;
    let (_, secret) = world
        .store
        .create_directory_token(&a, "Entra", Some(end), &Caller::OPERATOR)
        .await
        .unwrap();
    let bearer = format!("Bearer {secret}");
    let event = rest_event("GET", USERS, &params_for(USERS, a), Some(&bearer));
    assert_eq!(effect(&world.call(event.clone()).await.unwrap()), "Allow");
    while now() < end {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    refused(world.call(event).await);
}

#[tokio::test]
async fn no_user_reaches_a_scim_route_whatever_they_hold() {
    let world = World::new(Duration::from_secs(60), None).await;
    let a = world.tenant("directory-users").await;
    let everything = world.role("global", "directory-everything", &["*"]).await;
    let admin = world
        .user("everything@example.com", &[everything])
        .await
        .to_string();
    let bearer = format!("Bearer {}", token(&admin));
    let denied = world
        .call(rest_event(
            "GET",
            USERS,
            &params_for(USERS, a),
            Some(&bearer),
        ))
        .await
        .unwrap();
    assert_eq!(effect(&denied), "Deny", "{denied}");
    // Nor does an Allow of theirs elsewhere cover one.
    let allowed = world
        .call(rest_event(
            "GET",
            MEMBERS,
            &params_for(MEMBERS, a),
            Some(&bearer),
        ))
        .await
        .unwrap();
    assert_eq!(effect(&allowed), "Allow");
    let listed = allowed["policyDocument"]["Statement"][0]["Resource"].to_string();
    assert!(
        listed.contains("scim-tokens") && !listed.contains("/scim/v2/"),
        "{listed}"
    );
}
