//! What people call the things ids name, for answers that list ids: a
//! user by their name and address, a tenant and a role by their names. One
//! eventually consistent BatchGetItem per hundred distinct ids (a page of a
//! list names far fewer); an id whose item is gone is left out.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::model::items::{Entity, PolicyRef, RoleRef, Tenant, User};
use crate::model::keys::{self, PrimaryKey};
use crate::model::values::{PolicyId, RoleId, TenantId, UserId};
use crate::store::{Store, BATCH_GET_KEYS};

/// An id a list names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    User(UserId),
    Tenant(TenantId),
    Role(RoleId),
    Policy(PolicyId),
}

impl Named {
    fn key(&self) -> PrimaryKey {
        match self {
            Named::User(id) => keys::user(id),
            Named::Tenant(id) => keys::tenant(id),
            Named::Role(id) => keys::role_ref(id),
            Named::Policy(id) => keys::policy_ref(id),
        }
    }

    fn id(&self) -> String {
        match self {
            Named::User(id) => id.to_string(),
            Named::Tenant(id) => id.to_string(),
            Named::Role(id) => id.to_string(),
            Named::Policy(id) => id.to_string(),
        }
    }
}

/// How a user is shown: their name and address, or the address alone.
pub fn user_label(user: &User) -> String {
    match user.display_name() {
        Some(name) => format!("{name} <{}>", user.email),
        None => user.email.to_string(),
    }
}

impl Store {
    /// Each of `ids` (duplicates once) by what people call it, keyed by
    /// the id as text.
    pub async fn names(
        &self,
        ids: impl IntoIterator<Item = Named>,
    ) -> Result<BTreeMap<String, String>> {
        let mut seen = std::collections::HashSet::new();
        let ids: Vec<Named> = ids.into_iter().filter(|n| seen.insert(n.key())).collect();
        let mut names = BTreeMap::new();
        for chunk in ids.chunks(BATCH_GET_KEYS) {
            let keys: Vec<PrimaryKey> = chunk.iter().map(Named::key).collect();
            let mut found = self.batch_get(&keys, false).await?;
            for (named, key) in chunk.iter().zip(&keys) {
                let Some(item) = found.remove(key) else {
                    continue;
                };
                let label = match named {
                    Named::User(_) => user_label(&User::from_item(item)?),
                    Named::Tenant(_) => Tenant::from_item(item)?.name.to_string(),
                    Named::Role(_) => RoleRef::from_item(item)?.name.to_string(),
                    Named::Policy(_) => PolicyRef::from_item(item)?.name.to_string(),
                };
                names.insert(named.id(), label);
            }
        }
        Ok(names)
    }
}
