//! Shared set-up for the core crate's tests against DynamoDB Local: a fresh
//! table per test and small builders for valid inputs.

#![allow(dead_code)]

use authz_core::input::{CreatePolicy, CreateRole, CreateTenant, CreateUser};
use authz_core::items::{Role, Tenant, User};
use authz_core::Store;
use testkit::TestTable;

/// A store on a table of its own, under provisioning's policy (the
/// function that makes these writes and reads).
pub async fn store() -> (TestTable, Store) {
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("provisioning"), table.name.clone());
    (table, store)
}

pub async fn tenant(store: &Store, name: &str) -> Tenant {
    let new = CreateTenant { name: name.into() }.validate().unwrap();
    store.create_tenant(&new, Some("test")).await.unwrap()
}

pub async fn user(store: &Store, email: &str) -> User {
    let new = CreateUser {
        email: email.into(),
        ..Default::default()
    }
    .validate()
    .unwrap();
    store
        .create_user(&new, &authz_core::Caller::operator("test"))
        .await
        .unwrap()
}

pub async fn role(store: &Store, scope: &str, name: &str, permissions: &[&str]) -> Role {
    let new = CreateRole {
        name: name.into(),
        scope: scope.into(),
        permissions: permissions.iter().map(|p| p.to_string()).collect(),
        description: None,
    }
    .validate()
    .unwrap();
    store
        .create_role(&new, &authz_core::Caller::operator("test"))
        .await
        .unwrap()
}

pub async fn policy(store: &Store, name: &str, id: Option<&str>) -> authz_core::items::Policy {
    let new = CreatePolicy {
        name: name.into(),
        policy_id: id.map(str::to_string),
        description: None,
        statement: None,
    }
    .validate()
    .unwrap();
    store.create_policy(&new, Some("test")).await.unwrap()
}
