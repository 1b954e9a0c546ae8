//! The bootstrap creates the platform-admin role and user once, and running
//! it again (or concurrently) changes nothing.

use crate::common;

use common::Api;
use provisioning::bootstrap::{ensure_admin, ensure_identity};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_is_idempotent() {
    let api = Api::new().await;
    let (role, user) = ensure_admin(&api.store, "Admin@Example.com").await.unwrap();
    assert_eq!(role.name.as_str(), "platform-admin");
    assert_eq!(
        role.permissions
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["*"]
    );
    assert_eq!(user.email.as_str(), "admin@example.com");
    assert_eq!(user.roles, vec![role.role_id]);
    assert_eq!(user.effective_permissions, role.permissions);
    let snapshot = api.snapshot().await;

    let (a, b) = tokio::join!(
        ensure_admin(&api.store, "admin@example.com"),
        ensure_admin(&api.store, "admin@example.com")
    );
    for (again_role, again_user) in [a.unwrap(), b.unwrap()] {
        assert_eq!(again_role, role);
        assert_eq!(again_user, user);
    }
    assert_eq!(api.snapshot().await, snapshot, "nothing new written");
    // The policy set's counts are there (so an authorizer's first decision
    // is one request): counting again reads them and nothing more.
    let counts = api.store.policy_counts(true).await.unwrap().unwrap();
    assert_eq!((counts.policies, counts.statements), (0, 0));
    api.counter.reset();
    api.store.count_policies().await.unwrap();
    assert_eq!(
        api.counter.counts().into_iter().collect::<Vec<_>>(),
        [("GetItem".to_string(), 1)]
    );

    // An existing user without the role gets it added.
    let other = api.user("ops@example.com").await;
    let (_, promoted) = ensure_admin(&api.store, "ops@example.com").await.unwrap();
    assert_eq!(promoted.user_id.to_string(), other);
    assert_eq!(promoted.roles, vec![role.role_id]);
    assert!(ensure_admin(&api.store, "not an email").await.is_err());
}

/// A deployment whose administrators were lost another way than the API
/// (here its role narrowed and its last admin suspended, written straight
/// to the table) is recovered by running the bootstrap again.
#[tokio::test]
async fn the_bootstrap_recovers_a_locked_out_deployment() {
    let api = Api::new().await;
    let (role, user) = ensure_admin(&api.store, "admin@example.com").await.unwrap();
    let mut narrowed = role.clone();
    narrowed.permissions = vec![authz_core::model::values::Permission::parse("user:read").unwrap()];
    let mut suspended = user.clone();
    suspended.status = authz_core::model::values::UserStatus::Suspended;
    suspended.roles_expire_at = Some(1);
    api.table.seed(&[narrowed]).await;
    api.table.seed(&[suspended]).await;

    let (role, user) = ensure_admin(&api.store, "admin@example.com").await.unwrap();
    assert_eq!(
        role.permissions
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["*"]
    );
    assert_eq!(user.status, authz_core::model::values::UserStatus::Active);
    assert_eq!(user.roles_expire_at, None);
    assert!(user.roles.contains(&role.role_id));
}

/// The admin's identity at a trusted issuer is linked by the bootstrap
/// (tokens from it then sign the admin in); running it again changes
/// nothing; an identity that is someone else's is never moved to the admin.
#[tokio::test]
async fn the_bootstrap_links_the_admins_identity_once_and_never_takes_anothers() {
    let api = Api::new().await;
    let identity = provisioning::bodies::LinkIdentity {
        issuer: "https://idp.example.com".into(),
        subject: "admin-subject".into(),
    }
    .validate()
    .unwrap();
    let (_, admin) = ensure_admin(&api.store, "admin@example.com").await.unwrap();
    let linked = ensure_identity(&api.store, &admin, &identity)
        .await
        .unwrap();
    assert_eq!(linked.identities.len(), 1);
    let found = api
        .store
        .user_by_identity(&identity.issuer, &identity.subject)
        .await
        .unwrap()
        .expect("the identity names the admin");
    assert_eq!(found.user_id, admin.user_id);
    let snapshot = api.snapshot().await;
    let (_, again) = ensure_admin(&api.store, "admin@example.com").await.unwrap();
    assert_eq!(
        ensure_identity(&api.store, &again, &identity)
            .await
            .unwrap(),
        linked
    );
    assert_eq!(api.snapshot().await, snapshot, "nothing new written");

    // Dana's identity stays Dana's.
    let dana = api
        .post(
            "/users",
            serde_json::json!({"email": "dana@example.com", "identities": [
                {"issuer": "https://idp.example.com", "subject": "dana"}
            ]}),
        )
        .await;
    assert_eq!(dana.status, 201, "{}", dana.body);
    let hers = provisioning::bodies::LinkIdentity {
        issuer: "https://idp.example.com".into(),
        subject: "dana".into(),
    }
    .validate()
    .unwrap();
    let snapshot = api.snapshot().await;
    let taken = ensure_identity(&api.store, &linked, &hers)
        .await
        .unwrap_err();
    assert!(
        matches!(&taken, authz_core::Error::Conflict { field } if field == "identity"),
        "{taken:?}"
    );
    assert_eq!(api.snapshot().await, snapshot, "nothing changed");
}
