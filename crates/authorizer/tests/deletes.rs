//! Deleting a tenant or a user of any size: its members are denied from the
//! moment the delete returns, the API call answers within its budget, and
//! the cleanup (run here as the stream consumer runs it, under recompute's
//! policy) leaves nothing of it behind.

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use authz_core::model::items::{RoleMember, Stamp, TenantGrant, User};
use authz_core::model::keys::attr;
use authz_core::model::values::{
    Permission, RoleId, TenantGrantId, TenantId, TenantStatus, UserId, UserStatus,
};
use authz_core::{Deletion, Error, Store, INLINE_DELETE_BUDGET};
use common::*;

const MEMBERS: usize = 3_000;
/// Roles the members are spread over.
const ROLES: usize = 8;

fn far() -> SystemTime {
    authz_core::clock::system_now() + Duration::from_secs(900)
}

async fn decide(w: &World, user: UserId, method: &str, resource: &str, tenant: TenantId) -> Value {
    let params = params_for(resource, tenant);
    let token = format!("Bearer {}", token(&user.to_string()));
    w.call(rest_event(method, resource, &params, Some(&token)))
        .await
        .unwrap_or_else(|e| panic!("{method} {resource}: {e:?}"))
}

/// Every item that names `id` in a key attribute, but its change history.
async fn items_naming(w: &World, id: &str) -> Vec<HashMap<String, String>> {
    w.table
        .scan_all()
        .await
        .into_iter()
        .map(|item| {
            item.into_iter()
                .filter_map(|(k, v)| v.as_s().ok().map(|s| (k, s.clone())))
                .collect::<HashMap<_, _>>()
        })
        // Change history outlives what it describes, by design.
        .filter(|item| item.get(attr::TYPE).map(String::as_str) != Some("Change"))
        .filter(|item| {
            [attr::PK, attr::SK, "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"]
                .iter()
                .any(|k| item.get(*k).is_some_and(|v| v.contains(id)))
        })
        .collect()
}

fn recompute_store(w: &World) -> Store {
    Store::new(w.table.client_for("recompute"), w.table.name.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_of_three_thousand_members_is_closed_at_once_and_emptied_in_the_background() {
    // No decision cache: "at once" means the next uncached decision.
    let w = World::new(Duration::ZERO, None).await;
    let (big, kept) = (w.tenant("big").await, w.tenant("kept").await);
    let mut roles: Vec<RoleId> = Vec::new();
    for i in 0..ROLES {
        roles.push(
            w.role("tenant", &format!("member-{i}"), &["member:read"])
                .await,
        );
    }
    let root = w.role("global", "platform-admin", &["*"]).await;
    let platform = w.user("root@example.com", &[root]).await;
    // The members, their grants in one tenant and the grants' role links
    // are seeded (the delete is what is tested): grants in one tenant all
    // check the tenant item, so through the API they would go one at a
    // time under the conflict layer.
    let members: Vec<UserId> = (0..MEMBERS).map(|_| UserId::generate()).collect();
    let people: Vec<User> = members
        .iter()
        .enumerate()
        .map(|(i, id)| authz_core::testing::user_item(*id, &format!("m{i}@example.com"), &[]))
        .collect();
    w.table.seed(&people).await;
    let at = authz_core::clock::now();
    let grants: Vec<TenantGrant> = members
        .iter()
        .enumerate()
        .map(|(i, user)| TenantGrant {
            tenant_grant_id: TenantGrantId::generate(),
            tenant_id: big,
            user_id: *user,
            roles: vec![roles[i % ROLES]],
            effective_permissions: vec![Permission::parse("member:read").unwrap()],
            stamp: Stamp::new(&at),
            expires_at: None,
            updated_by: None,
        })
        .collect();
    let links: Vec<RoleMember> = grants
        .iter()
        .map(|g| RoleMember::new(g.roles[0], g.holder(), Some(g.tenant_grant_id), &at))
        .collect();
    w.table.seed(&grants).await;
    w.table.seed(&links).await;
    w.grant(kept, members[0], &[roles[0]]).await;
    let route = "/tenants/{tenantId}/members";
    assert_eq!(
        effect(&decide(&w, members[0], "GET", route, big).await),
        "Allow"
    );

    // Each grant is a transaction of at least the conflict window, 8 at a
    // time: 3,000 cannot all go within the API call's budget.
    let accepted = w
        .store
        .delete_tenant(&big, INLINE_DELETE_BUDGET, None)
        .await
        .unwrap();
    let Deletion::Running(tombstone) = accepted else {
        panic!("3,000 grants removed within the inline budget: the test no longer tests the background path");
    };
    assert_eq!(tombstone.status, TenantStatus::Deleting);
    let shown = w.store.tenant(&big).await.unwrap().unwrap();
    assert_eq!(
        shown.status,
        TenantStatus::Deleting,
        "GET says a cleanup runs"
    );

    // Denied at once, in the deleted tenant only.
    for member in [members[0], members[MEMBERS - 1]] {
        assert_eq!(effect(&decide(&w, member, "GET", route, big).await), "Deny");
    }
    assert_eq!(
        effect(&decide(&w, members[0], "GET", route, kept).await),
        "Allow"
    );
    // Global permissions are not a grant in the tenant: a platform admin can
    // still look at it.
    assert_eq!(
        effect(&decide(&w, platform, "GET", "/tenants/{tenantId}", big).await),
        "Allow"
    );
    // Nothing new attaches to it, nor can it be renamed.
    let late = w
        .store
        .put_tenant_grant(&big, &platform, &[roles[0]], &authz_core::Caller::OPERATOR)
        .await;
    assert!(
        matches!(&late, Err(Error::NotFound { resource }) if *resource == authz_core::Resource::Tenant),
        "{late:?}"
    );

    // The stream consumer's part, under recompute's policy.
    let done = recompute_store(&w)
        .finish_tenant_deletion(&big, far())
        .await
        .unwrap();
    assert_eq!(done, Deletion::Done);
    let left = items_naming(&w, &big.to_string()).await;
    assert!(
        left.is_empty(),
        "{} items left, e.g. {:?}",
        left.len(),
        left.first()
    );
    assert!(w.store.tenant(&big).await.unwrap().is_none());
    // The members themselves, and their grant elsewhere, are untouched.
    assert!(w.store.user(&members[MEMBERS - 1]).await.unwrap().is_some());
    assert_eq!(
        effect(&decide(&w, members[0], "GET", route, kept).await),
        "Allow"
    );
    // Running the cleanup again (a retried stream record) changes nothing.
    assert_eq!(
        recompute_store(&w)
            .finish_tenant_deletion(&big, far())
            .await
            .unwrap(),
        Deletion::Done
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_with_many_grants_is_denied_at_once_and_emptied_in_the_background() {
    let w = World::new(Duration::ZERO, None).await;
    let role = w.role("tenant", "member", &["member:read"]).await;
    let global = w.role("global", "role-reader", &["role:read"]).await;
    let user = w.user("many@example.com", &[global]).await;
    let mut tenants = Vec::new();
    for i in 0..40 {
        let t = w.tenant(&format!("t{i}")).await;
        w.grant(t, user, &[role]).await;
        tenants.push(t);
    }
    let route = "/tenants/{tenantId}/members";
    assert_eq!(
        effect(&decide(&w, user, "GET", route, tenants[7]).await),
        "Allow"
    );

    // A zero budget leaves every grant to the background.
    let accepted = w
        .store
        .delete_user(&user, Duration::ZERO, None)
        .await
        .unwrap();
    let Deletion::Running(tombstone) = accepted else {
        panic!("nothing can be removed within a zero budget");
    };
    assert_eq!(tombstone.status, UserStatus::Deleting);
    assert!(tombstone.roles.is_empty() && tombstone.effective_permissions.is_empty());
    for t in [tenants[0], tenants[39]] {
        assert_eq!(effect(&decide(&w, user, "GET", route, t).await), "Deny");
    }
    assert_eq!(
        effect(&decide(&w, user, "GET", "/roles", tenants[0]).await),
        "Deny"
    );
    // Its email is free at once; it can get no new grant.
    let again = w.user("many@example.com", &[]).await;
    assert_ne!(again, user);
    let late = w
        .store
        .put_tenant_grant(&tenants[0], &user, &[role], &authz_core::Caller::OPERATOR)
        .await;
    assert!(
        matches!(&late, Err(Error::NotFound { resource }) if *resource == authz_core::Resource::User),
        "{late:?}"
    );

    let done = recompute_store(&w)
        .finish_user_deletion(&user, far())
        .await
        .unwrap();
    assert_eq!(done, Deletion::Done);
    let left = items_naming(&w, &user.to_string()).await;
    assert!(
        left.is_empty(),
        "{} items left, e.g. {:?}",
        left.len(),
        left.first()
    );
    // The tenants stay.
    assert!(w.store.tenant(&tenants[39]).await.unwrap().is_some());
}
