//! Tenant writes: create with a name guard, rename with a guard swap, and a
//! cascading delete of the tenant, its guard, its grants and their links.

use crate::error::{Error, Result};
use crate::input::NewTenant;
use crate::items::{now, Tenant, TenantNameGuard};
use crate::keys;
use crate::store::Store;
use crate::values::{TenantId, TenantName};

use super::{actor_string, guard_not_held, STALE_ROLE_RETRIES};

impl Store {
    /// Creates a tenant and its name guard. `Conflict { field: "name" }` if
    /// the name is taken (case-insensitively: names are lower-cased).
    pub async fn create_tenant(&self, new: &NewTenant, actor: Option<&str>) -> Result<Tenant> {
        let at = now();
        let tenant = Tenant {
            tenant_id: TenantId::generate(),
            name: new.name.clone(),
            version: 1,
            created_at: at.clone(),
            updated_at: at.clone(),
            updated_by: actor_string(actor),
        };
        let guard = TenantNameGuard {
            name: tenant.name.clone(),
            tenant_id: tenant.tenant_id,
            version: 1,
            created_at: at.clone(),
            updated_at: at,
        };
        let mut txn = self.transaction();
        txn.create(&tenant, "tenantId")?.create(&guard, "name")?;
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
            .ok_or_else(|| Error::not_found("tenant"))?;
        if current.version != expected_version {
            return Err(Error::PreconditionFailed {
                resource: "tenant".into(),
            });
        }
        if current.name == *name {
            return Ok(current);
        }
        let at = now();
        let renamed = Tenant {
            name: name.clone(),
            version: expected_version + 1,
            updated_at: at.clone(),
            updated_by: actor_string(actor),
            ..current.clone()
        };
        let guard = TenantNameGuard {
            name: name.clone(),
            tenant_id: *id,
            version: 1,
            created_at: at.clone(),
            updated_at: at,
        };
        let mut txn = self.transaction();
        txn.replace(&renamed, expected_version, "tenant")?
            .delete_owned(
                &keys::tenant_name_guard(&current.name),
                "tenantId",
                &id.to_string(),
                guard_not_held(),
            )?
            .create(&guard, "name")?;
        txn.execute(self).await?;
        Ok(renamed)
    }

    /// Deletes a tenant, its name guard, its grants and their RoleMember
    /// links. Idempotent: a tenant that is already gone still has any grants
    /// left by an interrupted delete removed. Returns whether the tenant
    /// existed.
    pub async fn delete_tenant(&self, id: &TenantId) -> Result<bool> {
        let mut existed = false;
        let mut attempt = 0;
        // First the tenant and its guard, so no grant can be added (grant
        // writes check that the tenant exists).
        while let Some(tenant) = self.get::<Tenant>(&keys::tenant(id), true).await? {
            let mut txn = self.transaction();
            txn.delete_current(&tenant, "tenant")?.delete_owned(
                &keys::tenant_name_guard(&tenant.name),
                "tenantId",
                &id.to_string(),
                guard_not_held(),
            )?;
            match txn.execute(self).await {
                Ok(()) => {
                    existed = true;
                    break;
                }
                // Renamed or deleted meanwhile: look again.
                Err(Error::PreconditionFailed { .. } | Error::NotFound { .. })
                    if attempt < STALE_ROLE_RETRIES =>
                {
                    attempt += 1
                }
                Err(e) => return Err(e),
            }
        }
        self.delete_grants_listed(|page| async move { self.tenant_members(id, &page).await })
            .await?;
        Ok(existed)
    }
}
