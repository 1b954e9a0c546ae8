//! Shared set-up for the core crate's tests against DynamoDB Local: a fresh
//! table per test (the fixtures written to it are `authz_core::testing`'s).

#![allow(dead_code)]

use authz_core::Store;
use testkit::TestTable;

/// A store on a table of its own, under provisioning's policy (the
/// function that makes these writes and reads).
pub async fn store() -> (TestTable, Store) {
    let table = TestTable::create().await;
    let store = Store::new(table.client_for("provisioning"), table.name.clone());
    (table, store)
}
