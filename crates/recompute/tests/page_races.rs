//! Races of a fan-out page with other writers, at exactly the point between
//! the page's reads and its writes: a grant replaced (the page's
//! transaction is refused as a whole and redone holder by holder), a member
//! removed and re-added with the same role (the new grant's link is not
//! deleted as an orphan), and an admin re-added as a viewer under the same
//! key and version (the page's write does not land on the new grant).

use std::time::{Duration, SystemTime};

use authz_core::model::values::{RoleId, TenantId, UserId};
use authz_core::testing::{new_permissions, role, tenant, user};
use authz_core::Store;
use testkit::{BeforeFirst, RequestCounter, TestTable};

#[tokio::test]
async fn a_page_that_loses_a_race_is_redone_holder_by_holder() {
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("provisioning"), table.name.clone());
    let tenant = tenant(&store, "acme").await.tenant_id;
    let (viewer, editor) = (
        role(&store, "tenant", "viewer", &["doc:read"]).await,
        role(&store, "tenant", "editor", &["doc:write"]).await,
    );
    let mut users = Vec::new();
    for i in 0..30 {
        let user = user(&store, &format!("u{i}@example.com"), &[])
            .await
            .user_id;
        store
            .put_tenant_grant(
                &tenant,
                &user,
                &[viewer.role_id],
                &authz_core::Caller::OPERATOR,
            )
            .await
            .unwrap();
        users.push(user);
    }
    let changes = new_permissions(&["doc:read", "doc:list"]);
    store
        .update_role(
            &viewer.role_id,
            &changes,
            viewer.stamp.version,
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();

    // Before the page's first transaction leaves, another writer (on its
    // own client and thread) regrants one user with both roles.
    let (name, user, roles) = (
        table.name.clone(),
        users[7],
        vec![viewer.role_id, editor.role_id],
    );
    let regrant = BeforeFirst::new("TransactWriteItems", move || async move {
        let config = testkit::function_config("provisioning").await;
        Store::new(aws_sdk_dynamodb::Client::new(&config), name)
            .put_tenant_grant(&tenant, &user, &roles, &authz_core::Caller::OPERATOR)
            .await
            .unwrap();
    });
    let counter = RequestCounter::new();
    let config = testkit::function_config("recompute").await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&config)
        .interceptor(regrant.clone())
        .interceptor(counter.clone())
        .build();
    let racing = Store::new(
        aws_sdk_dynamodb::Client::from_conf(conf),
        table.name.clone(),
    );
    let deadline = authz_core::clock::system_now() + Duration::from_secs(300);
    let done = recompute::fan_out(
        &racing,
        &viewer.role_id,
        recompute::Settings::default(),
        deadline,
    )
    .await
    .unwrap();
    assert_eq!(done, 30);
    assert!(regrant.fired(), "the other writer went first");
    // The page's transaction, then one per holder that still needed it.
    assert!(
        counter.count("TransactWriteItems") > 1,
        "{:?}",
        counter.counts()
    );
    for (i, user) in users.iter().enumerate() {
        let grant = store.tenant_grant(&tenant, user).await.unwrap().unwrap();
        let expected: &[&str] = if i == 7 {
            &["doc:list", "doc:read", "doc:write"]
        } else {
            &["doc:list", "doc:read"]
        };
        let got: Vec<&str> = grant
            .effective_permissions
            .iter()
            .map(|p| p.as_str())
            .collect();
        assert_eq!(got, expected, "grant of user {i}");
    }
}

/// Provisioning's store on a fresh client (for an action on its own runtime).
async fn provisioning(table: String) -> Store {
    let config = testkit::function_config("provisioning").await;
    Store::new(aws_sdk_dynamodb::Client::new(&config), table)
}

async fn tenant_role_user(store: &Store, permissions: &[&str]) -> (TenantId, RoleId, UserId) {
    let tenant = tenant(store, "acme").await.tenant_id;
    let role = role(store, "tenant", "agent", permissions).await.role_id;
    let user = user(store, "u@example.com", &[]).await.user_id;
    (tenant, role, user)
}

async fn set_permissions(store: &Store, role: RoleId, permissions: &[&str]) {
    let current = store.role_by_id_consistent(&role).await.unwrap().unwrap();
    let changes = new_permissions(permissions);
    store
        .update_role(
            &role,
            &changes,
            current.stamp.version,
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
}

fn far() -> SystemTime {
    authz_core::clock::system_now() + Duration::from_secs(300)
}

/// A member is removed and added again with the same role while a fan-out
/// page holds the old grant: the page finds the old grant gone, but the
/// link it would delete as an orphan now belongs to the new grant, so it
/// stays, and the role's next change still reaches the member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_re_added_mid_page_keeps_the_link_and_follows_the_role() {
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("provisioning"), table.name.clone());
    let (tenant, role, user) = tenant_role_user(&store, &["doc:read"]).await;
    store
        .put_tenant_grant(&tenant, &user, &[role], &authz_core::Caller::OPERATOR)
        .await
        .unwrap();

    let name = table.name.clone();
    let remove = testkit::BeforeFirst::new("BatchGetItem", move || async move {
        let store = provisioning(name).await;
        store.delete_tenant_grant(&tenant, &user).await.unwrap();
    });
    let name = table.name.clone();
    let re_add = testkit::BeforeFirst::new("TransactWriteItems", move || async move {
        let store = provisioning(name).await;
        store
            .put_tenant_grant(&tenant, &user, &[role], &authz_core::Caller::OPERATOR)
            .await
            .unwrap();
    });
    let conf =
        aws_sdk_dynamodb::config::Builder::from(&testkit::function_config("recompute").await)
            .interceptor(remove.clone())
            .interceptor(re_add.clone())
            .build();
    let racing = Store::new(
        aws_sdk_dynamodb::Client::from_conf(conf),
        table.name.clone(),
    );
    recompute::fan_out(&racing, &role, recompute::Settings::default(), far())
        .await
        .unwrap();
    assert!(
        remove.fired() && re_add.fired(),
        "both writers acted mid-page"
    );

    let grant = store.tenant_grant(&tenant, &user).await.unwrap().unwrap();
    let links = store
        .role_members(&role, &authz_core::PageRequest::default())
        .await
        .unwrap();
    assert_eq!(links.items.len(), 1, "the new grant's link survived");
    assert_eq!(links.items[0].tenant_grant_id, Some(grant.tenant_grant_id));

    set_permissions(&store, role, &["doc:read", "doc:write"]).await;
    let recompute = Store::new(table.client_for("recompute"), table.name.clone());
    recompute::fan_out(&recompute, &role, recompute::Settings::default(), far())
        .await
        .unwrap();
    let grant = store.tenant_grant(&tenant, &user).await.unwrap().unwrap();
    let got: Vec<&str> = grant
        .effective_permissions
        .iter()
        .map(|p| p.as_str())
        .collect();
    assert_eq!(got, ["doc:read", "doc:write"], "the grant follows the role");
}

/// An admin is removed and re-added as a viewer between a fan-out page's
/// read and its write. The new grant has the old one's key and version 1,
/// but not its id: the page's write, conditioned on the grant it read, does
/// not land on it, and the re-added member keeps only the viewer's
/// permissions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_write_never_lands_on_a_re_created_grant() {
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("provisioning"), table.name.clone());
    let (tenant, admin, user) = tenant_role_user(&store, &["doc:*"]).await;
    let viewer = role(&store, "tenant", "viewer", &["doc:read"])
        .await
        .role_id;
    store
        .put_tenant_grant(&tenant, &user, &[admin], &authz_core::Caller::OPERATOR)
        .await
        .unwrap();
    set_permissions(&store, admin, &["doc:*", "billing:*"]).await;

    let name = table.name.clone();
    let replace = testkit::BeforeFirst::new("TransactWriteItems", move || async move {
        let store = provisioning(name).await;
        store.delete_tenant_grant(&tenant, &user).await.unwrap();
        let again = store
            .put_tenant_grant(&tenant, &user, &[viewer], &authz_core::Caller::OPERATOR)
            .await
            .unwrap();
        assert_eq!(
            again.grant.stamp.version, 1,
            "the new grant starts at version 1"
        );
    });
    let conf =
        aws_sdk_dynamodb::config::Builder::from(&testkit::function_config("recompute").await)
            .interceptor(replace.clone())
            .build();
    let racing = Store::new(
        aws_sdk_dynamodb::Client::from_conf(conf),
        table.name.clone(),
    );
    recompute::fan_out(&racing, &admin, recompute::Settings::default(), far())
        .await
        .unwrap();
    assert!(replace.fired());

    let grant = store.tenant_grant(&tenant, &user).await.unwrap().unwrap();
    assert_eq!(grant.roles, vec![viewer]);
    let got: Vec<&str> = grant
        .effective_permissions
        .iter()
        .map(|p| p.as_str())
        .collect();
    assert_eq!(
        got,
        ["doc:read"],
        "no admin permissions on the viewer's grant"
    );
}
