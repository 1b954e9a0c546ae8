//! A page of holders recomputed together loses a race: between the page's
//! batch read and its transaction, another writer replaces one of the
//! grants. The transaction is refused as a whole, the page is redone holder
//! by holder from fresh reads, and every grant ends right, including the
//! one that changed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

use authz_core::input::{CreateRole, CreateTenant, CreateUser, UpdateRole};
use authz_core::values::{RoleId, TenantId, UserId};
use authz_core::Store;
use testkit::{RequestCounter, TestTable};

/// Before the first TransactWriteItems leaves, regrants one user with both
/// roles (another writer, on its own client and thread).
#[derive(Debug, Clone)]
struct RegrantFirst {
    done: Arc<AtomicBool>,
    table: String,
    tenant: TenantId,
    user: UserId,
    roles: Vec<RoleId>,
}

impl Intercept for RegrantFirst {
    fn name(&self) -> &'static str {
        "RegrantFirst"
    }

    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let is_txn = cfg
            .load::<Metadata>()
            .is_some_and(|m| m.name() == "TransactWriteItems");
        if !is_txn || self.done.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let me = self.clone();
        std::thread::spawn(move || {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(async move {
                    let config = testkit::function_config("provisioning").await;
                    let store = Store::new(aws_sdk_dynamodb::Client::new(&config), me.table);
                    store
                        .put_tenant_grant(&me.tenant, &me.user, &me.roles, None)
                        .await
                        .unwrap();
                })
        })
        .join()
        .unwrap();
        Ok(())
    }
}

#[tokio::test]
async fn a_page_that_loses_a_race_is_redone_holder_by_holder() {
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("provisioning"), table.name.clone());
    let tenant = store
        .create_tenant(
            &CreateTenant {
                name: "acme".into(),
            }
            .validate()
            .unwrap(),
            None,
        )
        .await
        .unwrap()
        .tenant_id;
    let role = |name: &str, permission: &str| {
        let new = CreateRole {
            name: name.into(),
            scope: "tenant".into(),
            permissions: vec![permission.into()],
            description: None,
        }
        .validate()
        .unwrap();
        let store = store.clone();
        async move { store.create_role(&new, None).await.unwrap() }
    };
    let (viewer, editor) = (
        role("viewer", "doc:read").await,
        role("editor", "doc:write").await,
    );
    let mut users = Vec::new();
    for i in 0..30 {
        let new = CreateUser {
            email: format!("u{i}@example.com"),
            ..Default::default()
        }
        .validate()
        .unwrap();
        let user = store.create_user(&new, None).await.unwrap().user_id;
        store
            .put_tenant_grant(&tenant, &user, &[viewer.role_id], None)
            .await
            .unwrap();
        users.push(user);
    }
    let changes = UpdateRole {
        permissions: Some(vec!["doc:read".into(), "doc:list".into()]),
        ..Default::default()
    }
    .validate()
    .unwrap();
    store
        .update_role(&viewer.role_id, &changes, viewer.version, None)
        .await
        .unwrap();

    let counter = RequestCounter::new();
    let config = testkit::function_config("recompute").await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&config)
        .interceptor(RegrantFirst {
            done: Arc::new(AtomicBool::new(false)),
            table: table.name.clone(),
            tenant,
            user: users[7],
            roles: vec![viewer.role_id, editor.role_id],
        })
        .interceptor(counter.clone())
        .build();
    let racing = Store::new(
        aws_sdk_dynamodb::Client::from_conf(conf),
        table.name.clone(),
    );
    let deadline = SystemTime::now() + Duration::from_secs(300);
    let done = recompute::fan_out(
        &racing,
        &viewer.role_id,
        recompute::Settings::default(),
        deadline,
    )
    .await
    .unwrap();
    assert_eq!(done, 30);
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
