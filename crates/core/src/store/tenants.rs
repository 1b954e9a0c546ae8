//! Tenants: read by id and by name, listed by name, their members listed;
//! created with a name guard and renamed with a guard swap, in one
//! transaction each (deletes are in `deletes.rs`).

use super::write::{actor_string, guard_not_held};
use crate::clock::now;
use crate::error::{Error, Resource, Result};
use crate::model::input::NewTenant;
use crate::model::items::{
    NameOfTenant, Stamp, Tenant, TenantGrant, TenantNameGuard, TenantPolicyDigest,
};
use crate::model::keys::{self, Index};
use crate::model::values::{TenantId, TenantName, TenantNamePrefix, TenantStatus};
use crate::store::history::HistoryOf;
use crate::store::page::{ListScope, Page, PageRequest};
use crate::store::Store;

impl Store {
    /// Tenant by id (GetItem).
    pub async fn tenant(&self, id: &TenantId) -> Result<Option<Tenant>> {
        self.get(&keys::tenant(id), false).await
    }

    /// Tenant by name (GSI1, eventually consistent).
    pub async fn tenant_by_name(&self, name: &TenantName) -> Result<Option<Tenant>> {
        self.query_one(Index::Gsi1, &keys::tenant_by_name(name).pk)
            .await
    }

    /// Tenants whose name starts with `prefix` (empty: all), in name order
    /// (GSI2 lookup list).
    pub async fn list_tenants(
        &self,
        prefix: &TenantNamePrefix,
        page: &PageRequest,
    ) -> Result<Page<Tenant>> {
        let partition = keys::tenant_list_partition();
        let scope = ListScope {
            index: Some(Index::Gsi2),
            partition: &partition,
            sort_prefix: Some(keys::tenant_list_prefix(prefix)).filter(|p| !p.is_empty()),
        };
        self.query(scope, page).await
    }

    /// The grants of a tenant (`begins_with(SK, "USER#")` in its partition).
    pub async fn tenant_members(
        &self,
        tenant_id: &TenantId,
        page: &PageRequest,
    ) -> Result<Page<TenantGrant>> {
        let partition = keys::tenant_partition(tenant_id);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::tenant_members_prefix()),
        };
        self.query(scope, page).await
    }
}

impl Store {
    /// Creates a tenant and its name guard. `Conflict { field: "name" }` if
    /// the name is taken (case-insensitively: names are lower-cased).
    pub async fn create_tenant(&self, new: &NewTenant, actor: Option<&str>) -> Result<Tenant> {
        let at = now();
        let tenant = Tenant {
            tenant_id: TenantId::generate(),
            name: new.name.clone(),
            status: TenantStatus::Active,
            stamp: Stamp::new(&at),
            updated_by: actor_string(actor),
        };
        let guard = TenantNameGuard::new(
            NameOfTenant {
                name: tenant.name.clone(),
                tenant_id: tenant.tenant_id,
            },
            &at,
        );
        let mut txn = self.transaction();
        txn.create(&tenant, "tenantId")?
            .create(&guard, "name")?
            .put(&TenantPolicyDigest::none(tenant.tenant_id, &at))?;
        txn.record_change(
            HistoryOf::Tenant(tenant.tenant_id),
            None,
            Some(&tenant),
            Some(1),
        )?;
        txn.execute(self).await?;
        Ok(tenant)
    }

    /// Renames a tenant at `expected_version`, swapping its name guard in the
    /// same transaction: the old name is released only if the new one is
    /// taken, and only if the guard still belongs to this tenant.
    pub async fn rename_tenant(
        &self,
        id: &TenantId,
        name: &TenantName,
        expected_version: u64,
        actor: Option<&str>,
    ) -> Result<Tenant> {
        let current = self
            .get::<Tenant>(&keys::tenant(id), true)
            .await?
            // Being deleted: gone, for a write.
            .filter(|t| t.status != TenantStatus::Deleting)
            .ok_or_else(|| Error::not_found(Resource::Tenant))?;
        if current.stamp.version != expected_version {
            return Err(Error::PreconditionFailed {
                resource: Resource::Tenant,
            });
        }
        if current.name == *name {
            return Ok(current);
        }
        let at = now();
        let renamed = Tenant {
            name: name.clone(),
            stamp: current.stamp.next(&at),
            updated_by: actor_string(actor),
            ..current.clone()
        };
        let guard = TenantNameGuard::new(
            NameOfTenant {
                name: renamed.name.clone(),
                tenant_id: renamed.tenant_id,
            },
            &at,
        );
        let mut txn = self.transaction();
        txn.replace(&renamed, expected_version, Resource::Tenant)?
            .delete_owned(
                &keys::tenant_name_guard(&current.name),
                "tenantId",
                &id.to_string(),
                guard_not_held(),
            )?
            .create(&guard, "name")?
            .record_change(
                HistoryOf::Tenant(*id),
                Some(&current),
                Some(&renamed),
                Some(renamed.stamp.version),
            )?;
        txn.execute(self).await?;
        Ok(renamed)
    }
}
