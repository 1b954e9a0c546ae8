//! A key reused is not the same item: a role deleted and re-created under
//! its name starts again at version 1, so a write computed from the old role
//! must not pass the new role's checks. Another writer acts between the
//! write's reads and its transaction (`testkit::BeforeFirst`).

use crate::common;

use authz_core::model::items::Role;
use authz_core::model::values::{RoleName, RoleScope};
use authz_core::testing::{new_permissions, new_role, tenant, user};
use authz_core::{Error, Resource, Store};
use testkit::{BeforeFirst, TestTable};

/// Deletes `old` and creates a role of the same name with `permissions`,
/// on provisioning's client, from the interceptor's thread.
fn recreate(table: &TestTable, old: &Role, permissions: &'static [&'static str]) -> BeforeFirst {
    let (name, old) = (table.name.clone(), old.clone());
    BeforeFirst::new("TransactWriteItems", move || async move {
        let config = testkit::function_config("provisioning").await;
        let store = Store::new(aws_sdk_dynamodb::Client::new(&config), name);
        store.delete_role(&old.role_id).await.unwrap();
        let again = store
            .create_role(
                &new_role("tenant", old.name.as_ref(), permissions),
                &authz_core::Caller::OPERATOR,
            )
            .await
            .unwrap();
        assert_eq!(
            again.stamp.version, old.stamp.version,
            "the new role has the old version"
        );
    })
}

fn racing_store(table: &TestTable, hook: &BeforeFirst) -> Store {
    let conf = table
        .client_for("provisioning")
        .config()
        .to_builder()
        .interceptor(hook.clone())
        .build();
    Store::new(
        aws_sdk_dynamodb::Client::from_conf(conf),
        table.name.clone(),
    )
}

/// A grant of a role that is deleted and re-created under its name before
/// the grant's transaction: the grant never carries the old role's
/// permissions; the role it names is gone, so it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_never_passes_the_check_of_a_re_created_role() {
    let (table, store) = common::store().await;
    let tenant = tenant(&store, "acme").await;
    let user = user(&store, "u@example.com", &[]).await;
    let old = store
        .create_role(
            &new_role("tenant", "agent", &["ticket:read"]),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    let hook = recreate(&table, &old, &["ticket:*"]);
    let racing = racing_store(&table, &hook);
    let outcome = racing
        .put_tenant_grant(
            &tenant.tenant_id,
            &user.user_id,
            &[old.role_id],
            &authz_core::Caller::OPERATOR,
        )
        .await;
    assert!(hook.fired());
    match outcome {
        Err(Error::NotFound { resource }) => assert_eq!(resource, Resource::RoleById(old.role_id)),
        Err(Error::PreconditionFailed { .. }) => {}
        other => panic!("expected the old role to be refused, got {other:?}"),
    }
    assert_eq!(
        store
            .tenant_grant(&tenant.tenant_id, &user.user_id)
            .await
            .unwrap(),
        None,
        "nothing was granted"
    );
}

/// An edit of a role read before it was deleted and re-created under its
/// name never overwrites the new role.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_edit_never_overwrites_a_re_created_role() {
    let (table, store) = common::store().await;
    let old = store
        .create_role(
            &new_role("tenant", "agent", &["ticket:read"]),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    let hook = recreate(&table, &old, &["report:read"]);
    let racing = racing_store(&table, &hook);
    let changes = new_permissions(&["ticket:read", "ticket:delete"]);
    let outcome = racing
        .update_role(
            &old.role_id,
            &changes,
            old.stamp.version,
            &authz_core::Caller::OPERATOR,
        )
        .await;
    assert!(hook.fired());
    assert!(
        matches!(
            outcome,
            Err(Error::PreconditionFailed { .. }) | Err(Error::NotFound { .. })
        ),
        "{outcome:?}"
    );
    let now = store
        .role(RoleScope::Tenant, &RoleName::parse("agent").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_ne!(now.role_id, old.role_id);
    let permissions: Vec<&str> = now.permissions.iter().map(|p| p.as_str()).collect();
    assert_eq!(permissions, ["report:read"], "the new role is intact");
}

/// A policy deleted and re-created under its name and id, without its
/// statement, between a write's read and its transaction: the write was
/// computed from a policy with a statement, so it must not pass on the new
/// one and move the set's counts by a statement that is not there (counts
/// that miss a statement let every authorizer skip the set).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_write_moves_the_counts_by_the_policy_it_finds() {
    use authz_core::model::input::PolicyChanges;
    use authz_core::testing::new_policy;
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("provisioning"), table.name.clone());
    let forbid = "forbid(principal, action, resource);";
    let old = store
        .create_policy(&new_policy("freeze", Some("p-freeze"), Some(forbid)), None)
        .await
        .unwrap();
    let (name, was) = (table.name.clone(), old.clone());
    let recreate = || {
        let (name, was) = (name.clone(), was.clone());
        BeforeFirst::new("TransactWriteItems", move || async move {
            let config = testkit::function_config("provisioning").await;
            let store = Store::new(aws_sdk_dynamodb::Client::new(&config), name);
            store.delete_policy(&was.policy_id).await.unwrap();
            let bare = new_policy(was.name.as_str(), Some(was.policy_id.as_str()), None);
            let again = store.create_policy(&bare, None).await.unwrap();
            assert_eq!(again.stamp.version, was.stamp.version);
        })
    };

    // An edit of the description computed from the old policy would put
    // its statement back at the same version: 412, nothing written.
    let hook = recreate();
    let racing = racing_store(&table, &hook);
    let changes = PolicyChanges {
        description: Some(Some(
            authz_core::model::values::Text::parse_field("description", "edited").unwrap(),
        )),
        ..Default::default()
    };
    let located = authz_core::store::Located {
        policy: old.clone(),
        home: None,
    };
    let edit = racing.update_policy(&located, &changes, 1, None).await;
    assert!(hook.fired());
    assert!(
        matches!(edit, Err(Error::PreconditionFailed { .. })),
        "{edit:?}"
    );
    let now = store.policy_by_id_consistent(&old.policy_id).await.unwrap();
    assert_eq!(now.unwrap().statement, None);
    let counts = store.policy_counts(true).await.unwrap().unwrap();
    assert_eq!((counts.policies, counts.statements), (1, 0));

    // A delete that read the policy with its statement finds it changed,
    // reads it again and deletes what is there.
    store.delete_policy(&old.policy_id).await.unwrap();
    let old = store
        .create_policy(&new_policy("freeze", Some("p-freeze"), Some(forbid)), None)
        .await
        .unwrap();
    let (name, was) = (table.name.clone(), old.clone());
    let hook = {
        BeforeFirst::new("TransactWriteItems", move || async move {
            let config = testkit::function_config("provisioning").await;
            let store = Store::new(aws_sdk_dynamodb::Client::new(&config), name);
            store.delete_policy(&was.policy_id).await.unwrap();
            let bare = new_policy(was.name.as_str(), Some(was.policy_id.as_str()), None);
            store.create_policy(&bare, None).await.unwrap();
        })
    };
    let racing = racing_store(&table, &hook);
    let deleted = racing.delete_policy(&old.policy_id).await.unwrap();
    assert!(hook.fired());
    assert_eq!(
        deleted.statement, None,
        "the policy there when it was deleted"
    );
    let counts = store.policy_counts(true).await.unwrap().unwrap();
    assert_eq!((counts.policies, counts.statements), (0, 0));
}

/// A member renamed between their new grant's read of them and its
/// transaction is listed in the tenant's member search by the new name:
/// the grant is held to the user it read, so it reads them again (the
/// rename's stream record, handled before the grant existed, could not
/// list them). This table has no stream: only the grant's write lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_renamed_while_granted_is_listed_by_the_new_name() {
    use authz_core::model::input::UserChanges;
    use authz_core::model::items::MemberLookup;
    use authz_core::model::keys;
    use authz_core::model::values::Text;

    let (table, store) = common::store().await;
    let tenant = tenant(&store, "acme").await;
    let user = user(&store, "u@example.com", &[]).await;
    let role = store
        .create_role(
            &new_role("tenant", "agent", &["ticket:read"]),
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    let (name, id, version) = (table.name.clone(), user.user_id, user.stamp.version);
    let hook = BeforeFirst::new("TransactWriteItems", move || async move {
        let config = testkit::function_config("provisioning").await;
        let store = Store::new(aws_sdk_dynamodb::Client::new(&config), name);
        let rename = UserChanges {
            given_name: Some(Some(Text::parse_field("givenName", "Zelda").unwrap())),
            ..Default::default()
        };
        store
            .update_user(&id, &rename, Some(version), &authz_core::Caller::OPERATOR)
            .await
            .unwrap();
    });
    let racing = racing_store(&table, &hook);
    racing
        .put_tenant_grant(
            &tenant.tenant_id,
            &user.user_id,
            &[role.role_id],
            &authz_core::Caller::OPERATOR,
        )
        .await
        .unwrap();
    assert!(hook.fired());
    let entry: MemberLookup = store
        .get(&keys::member_lookup(&tenant.tenant_id, &user.user_id), true)
        .await
        .unwrap()
        .expect("the new member is listed");
    assert_eq!(entry.name.as_deref(), Some("Zelda"));
}
