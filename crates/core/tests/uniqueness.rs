//! Uniqueness rules, races and optimistic locking, enforced by DynamoDB Local
//! through condition expressions: a losing write is a `Conflict` naming the
//! field (or `PreconditionFailed`) and leaves the table exactly as it was.

use crate::common;

use authz_core::model::input::NewUser;
use authz_core::model::items::ItemType;
use authz_core::model::values::{TenantName, Text};
use authz_core::testing::{
    new_policy, new_role, new_tenant, new_user, new_user_with, policy, role, tenant, user,
};
use authz_core::{Error, Resource};
use common::store;

fn conflict(field: &str) -> Error {
    Error::conflict(field)
}

#[tokio::test]
async fn a_second_tenant_with_the_same_name_conflicts_case_insensitively() {
    let (table, store) = store().await;
    tenant(&store, "acme").await;
    let before = table.keys().await;
    let again = new_tenant("ACME");
    assert_eq!(
        store.create_tenant(&again, None).await.unwrap_err(),
        conflict("name")
    );
    assert_eq!(
        table.keys().await,
        before,
        "the failed write changed nothing"
    );
}

#[tokio::test]
async fn a_second_user_with_the_same_email_phone_or_username_conflicts() {
    let (table, store) = store().await;
    let first = new_user_with("jane@example.com", Some("+14155550100"), Some("jane"), &[]);
    store
        .create_user(&first, &authz_core::Caller::OPERATOR)
        .await
        .unwrap();
    let before = table.keys().await;

    let cases = [
        (new_user(" Jane@Example.com", &[]), "email"),
        (
            new_user_with("other@example.com", Some("+14155550100"), None, &[]),
            "phone",
        ),
        (
            new_user_with("other@example.com", Some("+14155550199"), Some("JANE"), &[]),
            "preferredUsername",
        ),
    ];
    for (request, field) in cases {
        let err = store
            .create_user(&request, &authz_core::Caller::OPERATOR)
            .await
            .unwrap_err();
        assert_eq!(err, conflict(field));
        assert_eq!(table.keys().await, before, "{field}: nothing written");
    }
}

#[tokio::test]
async fn role_names_are_unique_per_scope() {
    let (table, store) = store().await;
    role(&store, "tenant", "admin", &["ticket:*"]).await;
    let before = table.keys().await;
    let again = new_role("tenant", "admin", &[]);
    let err = store
        .create_role(&again, &authz_core::Caller::OPERATOR)
        .await
        .unwrap_err();
    assert_eq!(err, conflict("name"));
    assert_eq!(table.keys().await, before);
    // The same name in the other scope is a different role.
    role(&store, "global", "admin", &["*"]).await;
}

#[tokio::test]
async fn policy_names_are_unique() {
    let (table, store) = store().await;
    policy(&store, "ticket-read", None).await;
    let before = table.keys().await;
    let again = new_policy("ticket-read", Some("p-other"), None);
    let err = store.create_policy(&again, None).await.unwrap_err();
    assert_eq!(err, conflict("name"));
    assert_eq!(table.keys().await, before);
}

#[tokio::test]
async fn policy_ids_are_unique() {
    let (table, store) = store().await;
    policy(&store, "ticket-read", Some("p-1")).await;
    let before = table.keys().await;
    let again = new_policy("ticket-write", Some("p-1"), None);
    let err = store.create_policy(&again, None).await.unwrap_err();
    assert_eq!(err, conflict("policyId"));
    assert_eq!(table.keys().await, before);
}

/// 50 tasks create users with the same email at once: exactly one wins, the
/// other 49 get `Conflict { email }` (never `Retryable`), and the table holds
/// exactly one user, one email guard and one address.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_creates_of_one_email_leave_one_user() {
    let (table, store) = store().await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(50));
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let store = store.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                let new = NewUser {
                    given_name: Some(Text::parse(&format!("racer {i}")).unwrap()),
                    ..new_user("race@example.com", &[])
                };
                barrier.wait().await;
                store.create_user(&new, &authz_core::Caller::OPERATOR).await
            })
        })
        .collect();
    let mut wins = 0;
    let mut conflicts = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => wins += 1,
            Err(e) if e == conflict("email") => conflicts += 1,
            Err(e) => panic!("unexpected outcome {e:?}"),
        }
    }
    assert_eq!((wins, conflicts), (1, 49));

    let items = table.scan_all().await;
    let count = |t: ItemType| {
        items
            .iter()
            .filter(|i| i["Type"].as_s().map(String::as_str) == Ok(t.as_str()))
            .count()
    };
    assert_eq!(count(ItemType::User), 1);
    assert_eq!(count(ItemType::UserEmail), 1);
    assert_eq!(count(ItemType::UserLookup), 1);
    assert_eq!(count(ItemType::EmailAddress), 1);
    assert_eq!(count(ItemType::Change), 1, "its creation, once");
    assert_eq!(items.len(), 5);
}

/// The same race on tenant names, where the guard is the only thing that
/// can stop the second create.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_creates_of_one_tenant_name_leave_one_tenant() {
    let (table, store) = store().await;
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                let new = new_tenant("Same");
                store.create_tenant(&new, None).await
            })
        })
        .collect();
    let outcomes: Vec<_> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
    assert!(outcomes
        .iter()
        .filter_map(|o| o.as_ref().err())
        .all(|e| *e == conflict("name")));
    assert_eq!(
        table.keys().await.len(),
        4,
        "one Tenant, its TenantName guard, its policy digest and the record of its creation"
    );
}

#[tokio::test]
async fn a_stale_version_is_refused_and_changes_nothing() {
    let (table, store) = store().await;
    let t = tenant(&store, "before").await;
    let after = TenantName::parse("after").unwrap();
    let renamed = store
        .rename_tenant(&t.tenant_id, &after, 1, Some("admin"))
        .await
        .unwrap();
    assert_eq!(renamed.stamp.version, 2);
    assert_eq!(renamed.updated_by.as_deref(), Some("admin"));
    let snapshot = table.keys().await;

    let err = store
        .rename_tenant(&t.tenant_id, &TenantName::parse("third").unwrap(), 1, None)
        .await
        .unwrap_err();
    assert_eq!(
        err,
        Error::PreconditionFailed {
            resource: authz_core::Resource::Tenant
        }
    );
    assert_eq!(table.keys().await, snapshot);
    assert_eq!(store.tenant(&t.tenant_id).await.unwrap(), Some(renamed));
}

#[tokio::test]
async fn a_rename_swaps_the_guard_and_releases_the_old_name() {
    let (table, store) = store().await;
    let a = tenant(&store, "alpha").await;
    tenant(&store, "beta").await;
    let snapshot = table.keys().await;

    // Renaming onto a taken name conflicts and keeps both guards.
    let err = store
        .rename_tenant(&a.tenant_id, &TenantName::parse("beta").unwrap(), 1, None)
        .await
        .unwrap_err();
    assert_eq!(err, conflict("name"));
    assert_eq!(table.keys().await, snapshot);

    store
        .rename_tenant(&a.tenant_id, &TenantName::parse("gamma").unwrap(), 1, None)
        .await
        .unwrap();
    // "alpha" is free again, "gamma" is not.
    tenant(&store, "alpha").await;
    let taken = new_tenant("gamma");
    assert_eq!(
        store.create_tenant(&taken, None).await.unwrap_err(),
        conflict("name")
    );
    let by_name = store
        .tenant_by_name(&TenantName::parse("gamma").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(by_name.tenant_id, a.tenant_id);
}

/// Concurrent renames of one tenant at the same version: exactly one wins;
/// every other gets PreconditionFailed or Conflict, and exactly one name guard
/// (the winner's) remains.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_renames_at_one_version_have_one_winner() {
    let (table, store) = store().await;
    let t = tenant(&store, "origin").await;
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let name = TenantName::parse(&format!("name-{i}")).unwrap();
                store.rename_tenant(&t.tenant_id, &name, 1, None).await
            })
        })
        .collect();
    let outcomes: Vec<_> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let winners: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for o in outcomes.iter().filter_map(|o| o.as_ref().err()) {
        assert_eq!(
            *o,
            Error::PreconditionFailed {
                resource: authz_core::Resource::Tenant
            }
        );
    }
    let guards: Vec<_> = table
        .keys()
        .await
        .into_iter()
        .filter(|(pk, _)| pk.starts_with("TENANT_NAME#"))
        .collect();
    assert_eq!(guards.len(), 1);
    assert_eq!(guards[0].0, format!("TENANT_NAME#{}", winners[0].name));
}

#[tokio::test]
async fn a_grant_for_a_missing_tenant_user_or_role_is_not_found() {
    let (table, store) = store().await;
    let t = tenant(&store, "t").await;
    let u = user(&store, "u@example.com", &[]).await;
    let r = role(&store, "tenant", "member", &["a:b"]).await;
    let g = role(&store, "global", "root", &["*"]).await;
    let before = table.keys().await;

    let missing_tenant = authz_core::model::values::TenantId::generate();
    let err = store
        .put_tenant_grant(
            &missing_tenant,
            &u.user_id,
            &[r.role_id],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap_err();
    assert_eq!(err, Error::not_found(Resource::Tenant));
    let missing_user = authz_core::model::values::UserId::generate();
    let err = store
        .put_tenant_grant(
            &t.tenant_id,
            &missing_user,
            &[r.role_id],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap_err();
    assert_eq!(err, Error::not_found(Resource::User));
    let missing_role = authz_core::model::values::RoleId::generate();
    let err = store
        .put_tenant_grant(
            &t.tenant_id,
            &u.user_id,
            &[missing_role],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap_err();
    assert_eq!(err, Error::not_found(Resource::RoleById(missing_role)));
    let err = store
        .put_tenant_grant(
            &t.tenant_id,
            &u.user_id,
            &[r.role_id, g.role_id],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Invalid { field, .. } if field == "roles[1]"),
        "{err:?}"
    );
    assert_eq!(table.keys().await, before);
}
