//! A Cedar policy as stored (a global one as its own item, a tenant's in
//! its tenant's set), its PolicyRef (the policy by id), and the global
//! set's counts every write of a global policy moves.

use serde::{Deserialize, Serialize};

use super::{Entity, Incarnation, ItemType, Stamp};
use crate::model::keys::{self, attr, IndexKey, PrimaryKey};
use crate::model::values::{PolicyId, PolicyName, TenantId, Text};

/// A Cedar policy: its name, id and statement (see `cedar`). Without a
/// statement it is metadata only and decides nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub policy_id: PolicyId,
    pub name: PolicyName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Text>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// The tenant the statement confines it to (`resource in
    /// Tenant::"..."`), as the check on write found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<TenantId>,
    /// Kept in a tenant's own set but written by a platform administrator
    /// (`POST /policies`): the tenant's routes read it, and never change
    /// or delete it (a restriction the platform put on the tenant).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub platform: bool,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl Entity for Policy {
    const TYPE: ItemType = ItemType::Policy;
    fn key(&self) -> PrimaryKey {
        keys::policy(&self.name)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("policyId", &self.policy_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::policy_by_id(&self.policy_id))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A policy id's owner: written with the policy, so that no two policies
/// share an id (the create's condition), and read consistently to find a
/// policy by id (then the policy by its name). Known by the name it
/// points at: ids are chosen by callers and reused after a delete, so a
/// condition on a ref read earlier must tell it from the ref of a policy
/// created since under the same id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRef {
    pub policy_id: PolicyId,
    pub name: PolicyName,
    /// The tenant whose set holds it (`TenantPolicies`); none for a
    /// policy stored as its own item (a global one, or a tenant's stored
    /// by an earlier version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<TenantId>,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl PolicyRef {
    /// The ref that resolves `policy`'s id to its name, written at `at`.
    pub fn of(policy: &Policy, at: &str) -> Self {
        Self {
            policy_id: policy.policy_id.clone(),
            name: policy.name.clone(),
            tenant_id: None,
            stamp: Stamp::new(at),
        }
    }

    /// The ref of `policy`, held in `tenant`'s set.
    pub fn in_tenant(policy: &Policy, tenant: TenantId, at: &str) -> Self {
        Self {
            tenant_id: Some(tenant),
            ..Self::of(policy, at)
        }
    }
}

impl Entity for PolicyRef {
    const TYPE: ItemType = ItemType::PolicyRef;
    fn key(&self) -> PrimaryKey {
        keys::policy_ref(&self.policy_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("name", &self.name)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// The policy set's counts, written in the transaction of every policy
/// write: how many policies there are and how many have a statement (the
/// set the authorizer evaluates, bounded by `cedar::POLICIES_MAX` in that
/// same transaction). Its `version` moves with every policy write, so an
/// authorizer that holds the set as of a version reloads it only when the
/// version has moved, and one that finds no statement reads nothing more.
/// Written by the first policy write that finds it missing, from a count of
/// the policies (a table from before it); the audit checks its counts.
/// Signed: counts a bug or a restore left below zero still decode (the
/// authorizer then reads the policies, and the audit rewrites them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyCounts {
    pub policies: i64,
    pub statements: i64,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl PolicyCounts {
    /// The counts of `policies`. Their first version is the time in
    /// milliseconds, not 1: counts deleted and written again never repeat
    /// a version an authorizer holds a set under.
    pub fn of(policies: &[Policy], at: &str) -> Self {
        let millis = crate::clock::now_millis();
        Self {
            policies: policies.len() as i64,
            statements: policies.iter().filter(|p| p.statement.is_some()).count() as i64,
            stamp: Stamp {
                version: millis,
                ..Stamp::new(at)
            },
        }
    }

    /// Whether they say that no policy has a statement (so the set is
    /// empty without reading it).
    pub fn none_stated(&self) -> bool {
        self.statements == 0
    }
}

impl Entity for PolicyCounts {
    const TYPE: ItemType = ItemType::PolicyCounts;
    fn key(&self) -> PrimaryKey {
        keys::policy_counts()
    }
    /// There is one set, with one incarnation.
    fn incarnation(&self) -> Incarnation {
        Incarnation::new(attr::TYPE, ItemType::PolicyCounts.as_str())
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A policy's change reaches the instances with the policy set's refresh.
impl super::TakesAway for Policy {}

/// A tenant's own policies, in one item beside the tenant
/// (`TENANT#{t}` / `POLICY_SET`): an instance reads it in the same request
/// as the caller's user, tenant and grant the first time it decides for
/// the tenant, and again only when its digest
/// ([`TenantPolicyDigest`]) says the version moved, so no instance holds
/// any tenant's set but those it decides for, and a decision pays for the
/// set's bytes only when it changed. Names are unique in the set; ids
/// platform-wide (each has its PolicyRef). Its version moves with every
/// write to it, and an instance compiles a set once per version. Bounded by
/// `cedar::TENANT_POLICIES_MAX` statements and `TENANT_POLICIES_BYTES` of
/// item, checked before the write, which is conditioned on the version
/// read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantPolicies {
    pub tenant_id: TenantId,
    #[serde(default)]
    pub policies: Vec<Policy>,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl TenantPolicies {
    /// How many of its policies have a statement.
    pub fn statements(&self) -> usize {
        self.policies
            .iter()
            .filter(|p| p.statement.is_some())
            .count()
    }

    /// The policy with this id, if the set holds it.
    pub fn by_id(&self, id: &PolicyId) -> Option<&Policy> {
        self.policies.iter().find(|p| p.policy_id == *id)
    }
}

impl Entity for TenantPolicies {
    const TYPE: ItemType = ItemType::TenantPolicies;
    fn key(&self) -> PrimaryKey {
        keys::tenant_policies(&self.tenant_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("tenantId", self.tenant_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Like a global policy's, a change reaches decisions as the caller's
/// standing is read again (the digest is read with it).
impl super::TakesAway for TenantPolicies {}

/// What a decision reads of a tenant's own policies every time, beside
/// them (`TENANT#{t}` / `POLICY_DIGEST`): the set's version and how many
/// statements it has (0 and 0: no set), a few dozen bytes however large
/// the set. Written with the tenant, and with the set in the transaction
/// of every write to it, so it never says other than the set does. A
/// tenant from before digests has none: its set is then read with each
/// decision, as before, until the audit writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantPolicyDigest {
    pub tenant_id: TenantId,
    /// The set's version (0: the tenant has no set).
    pub set_version: u64,
    /// How many of its policies have a statement.
    pub statements: u64,
    /// Its own stamp (its version the set's, for the audit's conditions).
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl TenantPolicyDigest {
    /// The digest of `set`, written at `at`.
    pub fn of(set: &TenantPolicies, at: &str) -> Self {
        Self {
            tenant_id: set.tenant_id,
            set_version: set.stamp.version,
            statements: set.statements() as u64,
            stamp: Stamp {
                version: set.stamp.version,
                ..Stamp::new(at)
            },
        }
    }

    /// The digest of a tenant without a set.
    pub fn none(tenant_id: TenantId, at: &str) -> Self {
        Self {
            tenant_id,
            set_version: 0,
            statements: 0,
            stamp: Stamp {
                version: 0,
                ..Stamp::new(at)
            },
        }
    }
}

impl Entity for TenantPolicyDigest {
    const TYPE: ItemType = ItemType::TenantPolicyDigest;
    fn key(&self) -> PrimaryKey {
        keys::tenant_policy_digest(&self.tenant_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("tenantId", self.tenant_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}
