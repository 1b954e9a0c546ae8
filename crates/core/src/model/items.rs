//! Item types of the table as plain serde structs, converted with
//! `serde_dynamo`. The same structs decode `GetItem`/`Query` results and
//! DynamoDB Stream images (`aws_lambda_events` carries images as
//! `serde_dynamo::Item`). Key attributes and `Type` are added from `keys` on
//! the way in, so a struct can never disagree with its key.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::keys::{self, attr, Holder, IndexKey, PrimaryKey};
use crate::model::values::{
    Email, EmailId, InvitationId, Permission, Phone, PolicyId, PolicyName, PreferredUsername,
    RoleId, RoleName, RoleScope, TenantGrantId, TenantId, TenantName, TenantStatus, Text, UserId,
    UserStatus,
};

/// An item as the SDK sends and receives it.
pub type Item = HashMap<String, AttributeValue>;

/// The `Type` attribute every item carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ItemType {
    Tenant,
    TenantName,
    User,
    UserEmail,
    EmailAddress,
    UserPhone,
    UserPreferredUsername,
    Role,
    RoleRef,
    TenantGrant,
    RoleMember,
    Policy,
    PolicyCounts,
    PolicyRef,
    UserLookup,
    IdempotencyRecord,
    Invitation,
    InvitationRef,
    Change,
}

impl ItemType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tenant => "Tenant",
            Self::TenantName => "TenantName",
            Self::User => "User",
            Self::UserEmail => "UserEmail",
            Self::EmailAddress => "EmailAddress",
            Self::UserPhone => "UserPhone",
            Self::UserPreferredUsername => "UserPreferredUsername",
            Self::Role => "Role",
            Self::RoleRef => "RoleRef",
            Self::TenantGrant => "TenantGrant",
            Self::RoleMember => "RoleMember",
            Self::Policy => "Policy",
            Self::PolicyCounts => "PolicyCounts",
            Self::PolicyRef => "PolicyRef",
            Self::UserLookup => "UserLookup",
            Self::IdempotencyRecord => "IdempotencyRecord",
            Self::Invitation => "Invitation",
            Self::InvitationRef => "InvitationRef",
            Self::Change => "Change",
        }
    }

    /// The type a `Type` attribute names.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    pub const ALL: [Self; 19] = [
        Self::Tenant,
        Self::TenantName,
        Self::User,
        Self::UserEmail,
        Self::EmailAddress,
        Self::UserPhone,
        Self::UserPreferredUsername,
        Self::Role,
        Self::RoleRef,
        Self::TenantGrant,
        Self::RoleMember,
        Self::Policy,
        Self::PolicyCounts,
        Self::PolicyRef,
        Self::UserLookup,
        Self::IdempotencyRecord,
        Self::Invitation,
        Self::InvitationRef,
        Self::Change,
    ];
}

/// The current time as RFC 3339 (UTC, second precision or finer).
pub fn now() -> String {
    aws_smithy_types::DateTime::from(std::time::SystemTime::now())
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .expect("the system clock is within RFC 3339's range")
}

/// The current time in seconds since the epoch (what `expiresAt`, the
/// table's TTL attribute, holds).
pub fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// Seconds since the epoch as RFC 3339 (UTC).
pub fn rfc3339(epoch_seconds: u64) -> String {
    aws_smithy_types::DateTime::from_secs(epoch_seconds.try_into().unwrap_or(i64::MAX))
        .fmt(aws_smithy_types::date_time::Format::DateTime)
        .unwrap_or_default()
}

/// What tells one incarnation of an item from another under the same key:
/// a grant's key is (tenant, user) and a role's (scope, name), and both
/// start again at version 1 when re-created, so every condition that checks
/// a version also checks this attribute.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    pub attr: &'static str,
    pub value: String,
}

impl Identity {
    pub fn new(attr: &'static str, value: impl ToString) -> Self {
        Self {
            attr,
            value: value.to_string(),
        }
    }
}

/// What each item type below carries about its own writes: the
/// optimistic-locking version (1 when created, one more on each write) and
/// when it was created and last written (RFC 3339). Each struct flattens
/// it, so it is stored as three top-level attributes, `version`
/// (a Number), `createdAt` and `updatedAt`, as when each struct spelled
/// them out: its tests hold the attribute map to that.
///
/// A flattened struct is read through serde's buffered `Content`, which
/// `serde_dynamo` fills from `deserialize_any`: a Number arrives as an
/// `i64` (a `u64` past `i64::MAX`), both of which a `u64` accepts; the
/// item's other unknown attributes (keys, `Type`) are buffered too, and
/// then dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Stamp {
    pub version: u64,
    pub created_at: String,
    pub updated_at: String,
}

impl Stamp {
    /// Version 1, created and written at `at`.
    pub fn new(at: &str) -> Self {
        Self {
            version: 1,
            created_at: at.into(),
            updated_at: at.into(),
        }
    }

    /// The stamp of the next write, at `at`: one version on, created when
    /// it was.
    pub fn next(&self, at: &str) -> Self {
        Self {
            version: self.version + 1,
            created_at: self.created_at.clone(),
            updated_at: at.into(),
        }
    }
}

/// A stored item type: knows its `Type`, its key and its index keys.
pub trait Entity: Serialize + DeserializeOwned {
    const TYPE: ItemType;

    fn key(&self) -> PrimaryKey;

    /// The attribute and value that identify this incarnation of the item.
    fn identity(&self) -> Identity;

    fn gsi1(&self) -> Option<IndexKey> {
        None
    }

    fn gsi2(&self) -> Option<IndexKey> {
        None
    }

    /// The optimistic-locking version of this item.
    fn version(&self) -> u64;

    /// The item with its key attributes and `Type`.
    fn to_item(&self) -> Result<Item> {
        let mut item: Item = serde_dynamo::to_item(self)?;
        let s = |v: String| AttributeValue::S(v);
        let key = self.key();
        item.insert(attr::PK.into(), s(key.pk));
        item.insert(attr::SK.into(), s(key.sk));
        if let Some(k) = self.gsi1() {
            item.insert(attr::GSI1PK.into(), s(k.pk));
            item.insert(attr::GSI1SK.into(), s(k.sk));
        }
        if let Some(k) = self.gsi2() {
            item.insert(attr::GSI2PK.into(), s(k.pk));
            item.insert(attr::GSI2SK.into(), s(k.sk));
        }
        item.insert(attr::TYPE.into(), s(Self::TYPE.as_str().into()));
        Ok(item)
    }

    /// Decodes an item read from the table, checking its `Type`.
    fn from_item(item: Item) -> Result<Self> {
        match item.get(attr::TYPE) {
            Some(AttributeValue::S(t)) if t == Self::TYPE.as_str() => {}
            other => {
                return Err(Error::internal(format!(
                    "expected a {} item, found Type {other:?}",
                    Self::TYPE.as_str()
                )))
            }
        }
        Ok(serde_dynamo::from_item(item)?)
    }
}

/// The union of the permissions of some roles, sorted and without
/// duplicates: what `effectivePermissions` stores.
pub fn union_permissions<'a>(roles: impl IntoIterator<Item = &'a Role>) -> Vec<Permission> {
    roles
        .into_iter()
        .flat_map(|r| r.permissions.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

// ---- Tenants ----------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tenant {
    pub tenant_id: TenantId,
    pub name: TenantName,
    /// Items written before statuses existed read as `active`.
    #[serde(default)]
    pub status: TenantStatus,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl Entity for Tenant {
    const TYPE: ItemType = ItemType::Tenant;
    fn key(&self) -> PrimaryKey {
        keys::tenant(&self.tenant_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("tenantId", self.tenant_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::tenant_by_name(&self.name))
    }
    fn gsi2(&self) -> Option<IndexKey> {
        Some(keys::tenant_list_entry(&self.name))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Uniqueness guard for a tenant name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantNameGuard {
    pub name: TenantName,
    pub tenant_id: TenantId,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl TenantNameGuard {
    /// The guard of `tenant`'s name, written at `at`.
    pub fn of(tenant: &Tenant, at: &str) -> Self {
        Self {
            name: tenant.name.clone(),
            tenant_id: tenant.tenant_id,
            stamp: Stamp::new(at),
        }
    }
}

impl Entity for TenantNameGuard {
    const TYPE: ItemType = ItemType::TenantName;
    fn key(&self) -> PrimaryKey {
        keys::tenant_name_guard(&self.name)
    }
    fn identity(&self) -> Identity {
        Identity::new("tenantId", self.tenant_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

// ---- Users -------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct User {
    pub user_id: UserId,
    pub email: Email,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<Phone>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_username: Option<PreferredUsername>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_name: Option<Text>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family_name: Option<Text>,
    pub status: UserStatus,
    /// Global role ids.
    #[serde(default)]
    pub roles: Vec<RoleId>,
    /// Union of the global roles' permissions.
    #[serde(default)]
    pub effective_permissions: Vec<Permission>,
    /// When the global roles end, in seconds since the epoch: from that
    /// instant they give nothing. Not the table's TTL attribute: the user
    /// stays; the roles stay listed (and linked) until changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles_expire_at: Option<u64>,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl User {
    /// Whether the global roles have ended at `now` (seconds since the
    /// epoch).
    pub fn roles_ended_at(&self, now: u64) -> bool {
        self.roles_expire_at.is_some_and(|end| end <= now)
    }

    /// The global roles that count at `now`: none once they have ended.
    pub fn global_roles(&self, now: u64) -> &[RoleId] {
        if self.roles_ended_at(now) {
            &[]
        } else {
            &self.roles
        }
    }

    /// What the global roles give at `now`: nothing once they have ended.
    pub fn global_permissions(&self, now: u64) -> &[Permission] {
        if self.roles_ended_at(now) {
            &[]
        } else {
            &self.effective_permissions
        }
    }
}

impl Entity for User {
    const TYPE: ItemType = ItemType::User;
    fn key(&self) -> PrimaryKey {
        keys::user(&self.user_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("userId", self.user_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A user's entry in the lists of users by status (the LOOKUP item).
/// It alone carries the GSI2 key, and is written only when the user's
/// email or status changes: the User item, which recompute rewrites when a
/// global role changes, is in no index, so a fan-out to every user writes
/// nothing to the one `LIST#USER#active` index partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserLookup {
    pub user_id: UserId,
    pub email: Email,
    pub status: UserStatus,
    /// The stamp of the User item it was written from.
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl UserLookup {
    pub fn of(user: &User) -> Self {
        Self {
            user_id: user.user_id,
            email: user.email.clone(),
            status: user.status,
            stamp: user.stamp.clone(),
        }
    }

    /// Whether `next` must rewrite the entry `before` was listed under.
    pub fn changes(before: &User, next: &User) -> bool {
        before.email != next.email || before.status != next.status
    }
}

impl Entity for UserLookup {
    const TYPE: ItemType = ItemType::UserLookup;
    fn key(&self) -> PrimaryKey {
        keys::user_lookup(&self.user_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("userId", self.user_id)
    }
    fn gsi2(&self) -> Option<IndexKey> {
        Some(keys::user_list_entry(self.status, &self.email))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Uniqueness guard for an email (`UserEmail`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserEmailGuard {
    pub email: Email,
    pub user_id: UserId,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl UserEmailGuard {
    pub fn new(email: &Email, user_id: UserId, at: &str) -> Self {
        Self {
            email: email.clone(),
            user_id,
            stamp: Stamp::new(at),
        }
    }
}

impl Entity for UserEmailGuard {
    const TYPE: ItemType = ItemType::UserEmail;
    fn key(&self) -> PrimaryKey {
        keys::user_email_guard(&self.email)
    }
    fn identity(&self) -> Identity {
        Identity::new("userId", self.user_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// One of a user's email addresses (see docs/table.md). Its
/// `UserEmail` guard is written and released in the same transaction; the
/// primary one's address is the User's `email`. A pending verification code
/// is stored only as its SHA-256, with its expiry (seconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmailAddress {
    pub email_id: EmailId,
    pub user_id: UserId,
    pub email: Email,
    pub is_primary: bool,
    pub is_verified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_expires_at: Option<u64>,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl EmailAddress {
    /// The record of a user's `email` as its first address: primary, not
    /// yet verified, under a new id.
    pub fn primary_of(user: &User, at: &str) -> Self {
        Self {
            email_id: EmailId::generate(),
            user_id: user.user_id,
            email: user.email.clone(),
            is_primary: true,
            is_verified: false,
            verified_at: None,
            code_hash: None,
            code_expires_at: None,
            stamp: Stamp::new(at),
        }
    }
}

impl Entity for EmailAddress {
    const TYPE: ItemType = ItemType::EmailAddress;
    fn key(&self) -> PrimaryKey {
        keys::email_address(&self.user_id, &self.email_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("emailId", self.email_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Uniqueness guard for a phone number (`UserPhone`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserPhoneGuard {
    pub phone: Phone,
    pub user_id: UserId,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl UserPhoneGuard {
    pub fn new(phone: &Phone, user_id: UserId, at: &str) -> Self {
        Self {
            phone: phone.clone(),
            user_id,
            stamp: Stamp::new(at),
        }
    }
}

impl Entity for UserPhoneGuard {
    const TYPE: ItemType = ItemType::UserPhone;
    fn key(&self) -> PrimaryKey {
        keys::user_phone_guard(&self.phone)
    }
    fn identity(&self) -> Identity {
        Identity::new("userId", self.user_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Uniqueness guard for a preferred username (`UserPreferredUsername`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserPreferredUsernameGuard {
    pub preferred_username: PreferredUsername,
    pub user_id: UserId,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl UserPreferredUsernameGuard {
    pub fn new(name: &PreferredUsername, user_id: UserId, at: &str) -> Self {
        Self {
            preferred_username: name.clone(),
            user_id,
            stamp: Stamp::new(at),
        }
    }
}

impl Entity for UserPreferredUsernameGuard {
    const TYPE: ItemType = ItemType::UserPreferredUsername;
    fn key(&self) -> PrimaryKey {
        keys::user_preferred_username_guard(&self.preferred_username)
    }
    fn identity(&self) -> Identity {
        Identity::new("userId", self.user_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

// ---- Roles -------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Role {
    pub role_id: RoleId,
    pub name: RoleName,
    pub scope: RoleScope,
    #[serde(default)]
    pub permissions: Vec<Permission>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Text>,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl Entity for Role {
    const TYPE: ItemType = ItemType::Role;
    fn key(&self) -> PrimaryKey {
        keys::role(self.scope, &self.name)
    }
    fn identity(&self) -> Identity {
        Identity::new("roleId", self.role_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::role_by_id(&self.role_id))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Resolves a role id to its base-table key with a consistent read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleRef {
    pub role_id: RoleId,
    pub scope: RoleScope,
    pub name: RoleName,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl RoleRef {
    /// The ref that resolves `role`'s id to its key, written at `at`.
    pub fn of(role: &Role, at: &str) -> Self {
        Self {
            role_id: role.role_id,
            scope: role.scope,
            name: role.name.clone(),
            stamp: Stamp::new(at),
        }
    }
}

impl Entity for RoleRef {
    const TYPE: ItemType = ItemType::RoleRef;
    fn key(&self) -> PrimaryKey {
        keys::role_ref(&self.role_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("roleId", self.role_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Records that a holder (a grant or a user's global roles) holds a role, so
/// a role change finds its holders without a scan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoleMember {
    pub role_id: RoleId,
    /// Set for a tenant grant, absent for a global role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<TenantId>,
    pub user_id: UserId,
    /// The grant the link belongs to (a re-created grant has another id, and
    /// rewrites its links); absent for a global role, and on links written
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_grant_id: Option<TenantGrantId>,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl RoleMember {
    /// The link of `holder` (with its grant's id, for a grant) to a role.
    pub fn new(
        role_id: RoleId,
        holder: Holder,
        tenant_grant_id: Option<TenantGrantId>,
        at: &str,
    ) -> Self {
        let (tenant_id, user_id) = match holder {
            Holder::Grant { tenant_id, user_id } => (Some(tenant_id), user_id),
            Holder::Global { user_id } => (None, user_id),
        };
        Self {
            role_id,
            tenant_id,
            user_id,
            tenant_grant_id,
            stamp: Stamp::new(at),
        }
    }

    pub fn holder(&self) -> Holder {
        match self.tenant_id {
            Some(tenant_id) => Holder::Grant {
                tenant_id,
                user_id: self.user_id,
            },
            None => Holder::Global {
                user_id: self.user_id,
            },
        }
    }
}

impl Entity for RoleMember {
    const TYPE: ItemType = ItemType::RoleMember;
    fn key(&self) -> PrimaryKey {
        keys::role_member(&self.role_id, &self.holder())
    }
    fn identity(&self) -> Identity {
        match self.tenant_grant_id {
            Some(id) => Identity::new("tenantGrantId", id),
            None => Identity::new("userId", self.user_id),
        }
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

// ---- Tenant grants -------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantGrant {
    pub tenant_grant_id: TenantGrantId,
    pub tenant_id: TenantId,
    pub user_id: UserId,
    #[serde(default)]
    pub roles: Vec<RoleId>,
    #[serde(default)]
    pub effective_permissions: Vec<Permission>,
    /// When the grant ends, in seconds since the epoch (the table's TTL
    /// attribute): from that instant the authorizer treats it as absent;
    /// DynamoDB's TTL deletes it later and the stream consumer then
    /// removes its links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl TenantGrant {
    pub fn holder(&self) -> Holder {
        Holder::Grant {
            tenant_id: self.tenant_id,
            user_id: self.user_id,
        }
    }

    /// Whether it has ended at `now` (seconds since the epoch).
    pub fn expired_at(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|end| end <= now)
    }
}

impl Entity for TenantGrant {
    const TYPE: ItemType = ItemType::TenantGrant;
    fn key(&self) -> PrimaryKey {
        keys::tenant_grant(&self.tenant_id, &self.user_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("tenantGrantId", self.tenant_grant_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::tenant_grant_by_user(&self.user_id, &self.tenant_id))
    }
    fn gsi2(&self) -> Option<IndexKey> {
        Some(keys::tenant_grant_by_id(&self.tenant_grant_id))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

// ---- Policies -------------------------------------------------------------------

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
    fn identity(&self) -> Identity {
        Identity::new("policyId", &self.policy_id)
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
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl PolicyRef {
    /// The ref that resolves `policy`'s id to its name, written at `at`.
    pub fn of(policy: &Policy, at: &str) -> Self {
        Self {
            policy_id: policy.policy_id.clone(),
            name: policy.name.clone(),
            stamp: Stamp::new(at),
        }
    }
}

impl Entity for PolicyRef {
    const TYPE: ItemType = ItemType::PolicyRef;
    fn key(&self) -> PrimaryKey {
        keys::policy_ref(&self.policy_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("name", &self.name)
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
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
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
    fn identity(&self) -> Identity {
        Identity::new(attr::TYPE, ItemType::PolicyCounts.as_str())
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

// ---- Invitations -------------------------------------------------------------------------

/// A pending invitation of an address to a tenant with tenant roles, one
/// per address and tenant. `expiresAt` (seconds since the epoch) is
/// enforced on accept and is the table's TTL attribute, which deletes it
/// (and its ref) after it lapses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invitation {
    pub invitation_id: InvitationId,
    pub tenant_id: TenantId,
    pub email: Email,
    pub roles: Vec<RoleId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invited_by: Option<String>,
    /// The user whose ceiling the invitation was made under (none for the
    /// operator's tools, and invitations made before this was recorded):
    /// they must still hold what it confers when it is accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inviter: Option<UserId>,
    pub expires_at: u64,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl Entity for Invitation {
    const TYPE: ItemType = ItemType::Invitation;
    fn key(&self) -> PrimaryKey {
        keys::invitation(&self.tenant_id, &self.email)
    }
    fn identity(&self) -> Identity {
        Identity::new("invitationId", self.invitation_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        Some(keys::invitation_by_invitee(&self.email, &self.tenant_id))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// Where an invitation is, by its id (a consistent read, like a RoleRef).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InvitationRef {
    pub invitation_id: InvitationId,
    pub tenant_id: TenantId,
    pub email: Email,
    pub expires_at: u64,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl InvitationRef {
    pub fn of(invitation: &Invitation) -> Self {
        Self {
            invitation_id: invitation.invitation_id,
            tenant_id: invitation.tenant_id,
            email: invitation.email.clone(),
            expires_at: invitation.expires_at,
            stamp: Stamp::new(&invitation.stamp.created_at),
        }
    }
}

impl Entity for InvitationRef {
    const TYPE: ItemType = ItemType::InvitationRef;
    fn key(&self) -> PrimaryKey {
        keys::invitation_ref(&self.invitation_id)
    }
    fn identity(&self) -> Identity {
        Identity::new("invitationId", self.invitation_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

// ---- Any item (stream images) ---------------------------------------------------------

/// An item of any type, as found in a stream image or a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyItem {
    Tenant(Tenant),
    TenantName(TenantNameGuard),
    User(User),
    UserEmail(UserEmailGuard),
    EmailAddress(EmailAddress),
    UserPhone(UserPhoneGuard),
    UserPreferredUsername(UserPreferredUsernameGuard),
    Role(Role),
    RoleRef(RoleRef),
    TenantGrant(TenantGrant),
    RoleMember(RoleMember),
    Policy(Policy),
    PolicyCounts(PolicyCounts),
    PolicyRef(PolicyRef),
    UserLookup(UserLookup),
    Invitation(Invitation),
    InvitationRef(InvitationRef),
    /// An item whose `Type` this code does not know (ignored, not failed).
    Other(Option<String>),
}

/// Calls `$f` on the typed item inside an [`AnyItem`]: `Some` of it, or
/// `None` for `Other`.
macro_rules! each {
    ($item:expr, $e:ident => $f:expr) => {
        match $item {
            AnyItem::Tenant($e) => Some($f),
            AnyItem::TenantName($e) => Some($f),
            AnyItem::User($e) => Some($f),
            AnyItem::UserEmail($e) => Some($f),
            AnyItem::EmailAddress($e) => Some($f),
            AnyItem::UserPhone($e) => Some($f),
            AnyItem::UserPreferredUsername($e) => Some($f),
            AnyItem::Role($e) => Some($f),
            AnyItem::RoleRef($e) => Some($f),
            AnyItem::TenantGrant($e) => Some($f),
            AnyItem::RoleMember($e) => Some($f),
            AnyItem::Policy($e) => Some($f),
            AnyItem::PolicyCounts($e) => Some($f),
            AnyItem::PolicyRef($e) => Some($f),
            AnyItem::UserLookup($e) => Some($f),
            AnyItem::Invitation($e) => Some($f),
            AnyItem::InvitationRef($e) => Some($f),
            AnyItem::Other(_) => None,
        }
    };
}

impl AnyItem {
    /// Decodes an item read with the SDK (a scan).
    pub fn decode(item: Item) -> Result<Self> {
        Self::from_image(item.into())
    }

    pub fn key(&self) -> Option<PrimaryKey> {
        each!(self, e => e.key())
    }

    pub fn version(&self) -> Option<u64> {
        each!(self, e => e.version())
    }

    pub fn identity(&self) -> Option<Identity> {
        each!(self, e => e.identity())
    }

    /// The item as stored (`None` for `Other`).
    pub fn to_item(&self) -> Result<Option<Item>> {
        each!(self, e => e.to_item()).transpose()
    }

    /// Its `Type`.
    pub fn type_name(&self) -> &'static str {
        fn of<E: Entity>(_: &E) -> &'static str {
            E::TYPE.as_str()
        }
        each!(self, e => of(e)).unwrap_or("?")
    }

    /// Decodes a stream image (`aws_lambda_events`' `serde_dynamo::Item`).
    pub fn from_image(image: serde_dynamo::Item) -> Result<Self> {
        #[derive(Deserialize)]
        struct TypeOnly {
            #[serde(rename = "Type")]
            item_type: Option<String>,
        }
        let TypeOnly { item_type } = serde_dynamo::from_item(image.clone())?;
        Ok(match item_type.as_deref() {
            Some("Tenant") => Self::Tenant(serde_dynamo::from_item(image)?),
            Some("TenantName") => Self::TenantName(serde_dynamo::from_item(image)?),
            Some("User") => Self::User(serde_dynamo::from_item(image)?),
            Some("UserEmail") => Self::UserEmail(serde_dynamo::from_item(image)?),
            Some("EmailAddress") => Self::EmailAddress(serde_dynamo::from_item(image)?),
            Some("UserPhone") => Self::UserPhone(serde_dynamo::from_item(image)?),
            Some("UserPreferredUsername") => {
                Self::UserPreferredUsername(serde_dynamo::from_item(image)?)
            }
            Some("Role") => Self::Role(serde_dynamo::from_item(image)?),
            Some("RoleRef") => Self::RoleRef(serde_dynamo::from_item(image)?),
            Some("TenantGrant") => Self::TenantGrant(serde_dynamo::from_item(image)?),
            Some("RoleMember") => Self::RoleMember(serde_dynamo::from_item(image)?),
            Some("Policy") => Self::Policy(serde_dynamo::from_item(image)?),
            Some("PolicyCounts") => Self::PolicyCounts(serde_dynamo::from_item(image)?),
            Some("PolicyRef") => Self::PolicyRef(serde_dynamo::from_item(image)?),
            Some("UserLookup") => Self::UserLookup(serde_dynamo::from_item(image)?),
            Some("Invitation") => Self::Invitation(serde_dynamo::from_item(image)?),
            Some("InvitationRef") => Self::InvitationRef(serde_dynamo::from_item(image)?),
            _ => Self::Other(item_type),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(perms: &[&str]) -> Role {
        Role {
            role_id: RoleId::generate(),
            name: RoleName::parse("r").unwrap(),
            scope: RoleScope::Tenant,
            permissions: perms
                .iter()
                .map(|p| Permission::parse(p).unwrap())
                .collect(),
            description: None,
            stamp: Stamp::new(&now()),
            updated_by: None,
        }
    }

    #[test]
    fn tenant_item_matches_the_adr_example() {
        let t = Tenant {
            tenant_id: TenantId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9C").unwrap(),
            name: TenantName::parse("acme").unwrap(),
            status: TenantStatus::Active,
            stamp: Stamp::new("2025-09-10T00:00:00Z"),
            updated_by: None,
        };
        let item = t.to_item().unwrap();
        let s = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
        assert_eq!(
            s("PK").as_deref(),
            Some("TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C")
        );
        assert_eq!(
            s("SK").as_deref(),
            Some("TENANT#01J8Z0E2Z8D2A3J7A7Y2H9GQ9C")
        );
        assert_eq!(s("GSI1PK").as_deref(), Some("TENANT_NAME#acme"));
        assert_eq!(s("GSI1SK").as_deref(), Some("TENANT_NAME#acme"));
        assert_eq!(s("Type").as_deref(), Some("Tenant"));
        assert_eq!(s("tenantId").as_deref(), Some("01J8Z0E2Z8D2A3J7A7Y2H9GQ9C"));
        assert_eq!(s("name").as_deref(), Some("acme"));
        assert_eq!(
            item.get("version")
                .and_then(|v| v.as_n().ok())
                .map(String::as_str),
            Some("1")
        );
        assert!(
            !item.contains_key("updatedBy"),
            "None fields are left out, not NULL"
        );
        assert_eq!(s("status").as_deref(), Some("active"));
        assert_eq!(Tenant::from_item(item.clone()).unwrap(), t);
        // An item written before tenants had a status reads as active.
        let mut old = item;
        old.remove("status");
        assert_eq!(Tenant::from_item(old).unwrap(), t);
    }

    #[test]
    fn grant_roles_are_a_list_of_strings() {
        let g = TenantGrant {
            tenant_grant_id: TenantGrantId::generate(),
            tenant_id: TenantId::generate(),
            user_id: UserId::generate(),
            roles: vec![RoleId::generate(), RoleId::generate()],
            effective_permissions: vec![],
            expires_at: Some(1_900_000_000),
            stamp: Stamp::new(&now()),
            updated_by: None,
        };
        let item = g.to_item().unwrap();
        assert_eq!(item["expiresAt"].as_n().unwrap(), "1900000000");
        let roles = item["roles"].as_l().unwrap();
        assert_eq!(roles.len(), 2);
        assert!(roles.iter().all(|r| r.as_s().is_ok()));
        assert_eq!(TenantGrant::from_item(item).unwrap(), g);
    }

    #[test]
    fn from_item_checks_the_type() {
        let t = role(&[]).to_item().unwrap();
        let err = Tenant::from_item(t).unwrap_err();
        assert!(matches!(err, Error::Internal { .. }), "{err:?}");
    }

    #[test]
    fn stream_images_decode_into_the_same_structs() {
        let r = role(&["ticket:read"]);
        let image: serde_dynamo::Item = serde_dynamo::to_item(&r).unwrap();
        let mut image: HashMap<String, serde_dynamo::AttributeValue> = image.into();
        image.insert(
            "Type".into(),
            serde_dynamo::AttributeValue::S("Role".into()),
        );
        match AnyItem::from_image(image.into()).unwrap() {
            AnyItem::Role(decoded) => assert_eq!(decoded, r),
            other => panic!("decoded as {other:?}"),
        }
        let mut unknown: HashMap<String, serde_dynamo::AttributeValue> = HashMap::new();
        unknown.insert(
            "Type".into(),
            serde_dynamo::AttributeValue::S("Invoice".into()),
        );
        assert_eq!(
            AnyItem::from_image(unknown.into()).unwrap(),
            AnyItem::Other(Some("Invoice".into()))
        );
    }

    #[test]
    fn union_is_sorted_and_deduplicated() {
        let a = role(&["ticket:read", "ticket:write"]);
        let b = role(&["ticket:read", "admin:*"]);
        let perms: Vec<String> = union_permissions([&a, &b])
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(perms, ["admin:*", "ticket:read", "ticket:write"]);
    }

    /// A User with every optional field set, and its attributes as the
    /// code writes them, spelled out.
    fn full_user() -> (User, HashMap<String, AttributeValue>) {
        let user = User {
            user_id: UserId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9D").unwrap(),
            email: Email::parse("ann@example.com").unwrap(),
            phone: Some(Phone::parse("+15555550100").unwrap()),
            preferred_username: Some(PreferredUsername::parse("ann").unwrap()),
            given_name: Some(Text::parse("Ann").unwrap()),
            family_name: Some(Text::parse("Lee").unwrap()),
            status: UserStatus::Active,
            roles: vec![RoleId::parse("01J8Z0E2Z8D2A3J7A7Y2H9GQ9E").unwrap()],
            effective_permissions: vec![Permission::parse("ticket:read").unwrap()],
            roles_expire_at: Some(1_900_000_000),
            stamp: Stamp {
                version: 7,
                created_at: "2025-09-10T00:00:00Z".into(),
                updated_at: "2025-09-11T12:30:00Z".into(),
            },
            updated_by: Some("ops".into()),
        };
        let s = |v: &str| AttributeValue::S(v.into());
        let n = |v: &str| AttributeValue::N(v.into());
        let attributes = HashMap::from([
            ("userId".to_string(), s("01J8Z0E2Z8D2A3J7A7Y2H9GQ9D")),
            ("email".into(), s("ann@example.com")),
            ("phone".into(), s("+15555550100")),
            ("preferredUsername".into(), s("ann")),
            ("givenName".into(), s("Ann")),
            ("familyName".into(), s("Lee")),
            ("status".into(), s("active")),
            (
                "roles".into(),
                AttributeValue::L(vec![s("01J8Z0E2Z8D2A3J7A7Y2H9GQ9E")]),
            ),
            (
                "effectivePermissions".into(),
                AttributeValue::L(vec![s("ticket:read")]),
            ),
            ("rolesExpireAt".into(), n("1900000000")),
            ("version".into(), n("7")),
            ("createdAt".into(), s("2025-09-10T00:00:00Z")),
            ("updatedAt".into(), s("2025-09-11T12:30:00Z")),
            ("updatedBy".into(), s("ops")),
        ]);
        (user, attributes)
    }

    #[test]
    fn stored_attributes_are_spelled_out() {
        let (user, attributes) = full_user();
        let written: Item = serde_dynamo::to_item(&user).unwrap();
        assert_eq!(written, attributes);
        // Without its optional fields: those attributes are left out.
        let mut bare = user.clone();
        (bare.phone, bare.preferred_username) = (None, None);
        (bare.given_name, bare.family_name) = (None, None);
        (bare.roles_expire_at, bare.updated_by) = (None, None);
        let mut bare_attributes = attributes.clone();
        for name in [
            "phone",
            "preferredUsername",
            "givenName",
            "familyName",
            "rolesExpireAt",
            "updatedBy",
        ] {
            bare_attributes.remove(name);
        }
        let written: Item = serde_dynamo::to_item(&bare).unwrap();
        assert_eq!(written, bare_attributes);
    }

    #[test]
    fn stored_attributes_read_back() {
        let (user, attributes) = full_user();
        // As read from the table, with its key attributes and Type.
        let mut stored = attributes.clone();
        stored.extend(
            user.to_item()
                .unwrap()
                .into_iter()
                .filter(|(k, _)| !attributes.contains_key(k)),
        );
        assert_eq!(User::from_item(stored.clone()).unwrap(), user);
        // And as a stream image.
        let image: serde_dynamo::Item = stored.clone().into();
        assert_eq!(
            AnyItem::from_image(image).unwrap(),
            AnyItem::User(user.clone())
        );
        // The largest version there is, past an i64.
        stored.insert("version".into(), AttributeValue::N(u64::MAX.to_string()));
        assert_eq!(User::from_item(stored.clone()).unwrap().version(), u64::MAX);
        // A version that is not a whole number is refused.
        stored.insert("version".into(), AttributeValue::N("1.5".into()));
        assert!(User::from_item(stored.clone()).is_err());
        stored.insert("version".into(), AttributeValue::S("1".into()));
        assert!(User::from_item(stored.clone()).is_err());
        stored.remove("version");
        assert!(User::from_item(stored).is_err());
    }

    /// Every stamped type stores its stamp as three top-level attributes
    /// (and JSON fields, which the history's diff reads), never as a map,
    /// and reads it back.
    #[test]
    fn every_stamped_type_stores_its_stamp_flat() {
        fn check<E: Entity + PartialEq + std::fmt::Debug>(entity: &E, stamp: &Stamp) {
            let item = entity.to_item().unwrap();
            let what = E::TYPE.as_str();
            assert!(!item.contains_key("stamp"), "{what}: {item:?}");
            assert_eq!(
                item.get("version").and_then(|v| v.as_n().ok()),
                Some(&stamp.version.to_string()),
                "{what}"
            );
            assert_eq!(
                item.get("createdAt").and_then(|v| v.as_s().ok()),
                Some(&stamp.created_at),
                "{what}"
            );
            assert_eq!(
                item.get("updatedAt").and_then(|v| v.as_s().ok()),
                Some(&stamp.updated_at),
                "{what}"
            );
            assert_eq!(&E::from_item(item).unwrap(), entity, "{what}");
            let json = serde_json::to_value(entity).unwrap();
            assert!(json.get("stamp").is_none(), "{what}: {json}");
            assert_eq!(json["version"], stamp.version, "{what}");
            assert_eq!(json["createdAt"], stamp.created_at.as_str(), "{what}");
            assert_eq!(json["updatedAt"], stamp.updated_at.as_str(), "{what}");
        }
        let created = "2025-09-10T00:00:00Z";
        let stamp = Stamp::new(created).next("2025-09-11T12:30:00Z");
        assert_eq!(
            stamp,
            Stamp {
                version: 2,
                created_at: created.into(),
                updated_at: "2025-09-11T12:30:00Z".into(),
            }
        );
        let fresh = Stamp::new(created);
        let (user, _) = full_user();
        let tenant = Tenant {
            tenant_id: TenantId::generate(),
            name: TenantName::parse("acme").unwrap(),
            status: TenantStatus::Active,
            stamp: stamp.clone(),
            updated_by: Some("ops".into()),
        };
        let role = Role {
            stamp: stamp.clone(),
            ..role(&["ticket:read"])
        };
        let grant = TenantGrant {
            tenant_grant_id: TenantGrantId::generate(),
            tenant_id: tenant.tenant_id,
            user_id: user.user_id,
            roles: vec![role.role_id],
            effective_permissions: role.permissions.clone(),
            expires_at: Some(1_900_000_000),
            stamp: stamp.clone(),
            updated_by: None,
        };
        let policy = Policy {
            policy_id: PolicyId::parse("p-abc123").unwrap(),
            name: PolicyName::parse("p").unwrap(),
            description: None,
            statement: Some("permit(principal, action, resource);".into()),
            tenant_id: Some(tenant.tenant_id),
            stamp: stamp.clone(),
            updated_by: None,
        };
        let invitation = Invitation {
            invitation_id: InvitationId::generate(),
            tenant_id: tenant.tenant_id,
            email: user.email.clone(),
            roles: vec![role.role_id],
            invited_by: None,
            inviter: Some(user.user_id),
            expires_at: 1_900_000_000,
            stamp: stamp.clone(),
        };
        let phone = user.phone.clone().unwrap();
        let username = user.preferred_username.clone().unwrap();
        let link = RoleMember::new(role.role_id, grant.holder(), None, created);
        check(&tenant, &stamp);
        check(&TenantNameGuard::of(&tenant, created), &fresh);
        check(&user, &user.stamp);
        check(&UserLookup::of(&user), &user.stamp);
        check(
            &UserEmailGuard::new(&user.email, user.user_id, created),
            &fresh,
        );
        check(&EmailAddress::primary_of(&user, created), &fresh);
        check(&UserPhoneGuard::new(&phone, user.user_id, created), &fresh);
        let guard = UserPreferredUsernameGuard::new(&username, user.user_id, created);
        check(&guard, &fresh);
        check(&role, &stamp);
        check(&RoleRef::of(&role, created), &fresh);
        check(&link, &fresh);
        check(&grant, &stamp);
        check(&policy, &stamp);
        check(&PolicyRef::of(&policy, created), &fresh);
        check(&invitation, &stamp);
        check(&InvitationRef::of(&invitation), &fresh);
    }

    #[test]
    fn role_member_holder_roundtrips() {
        let user_id = UserId::generate();
        let tenant_id = TenantId::generate();
        let m = RoleMember::new(
            RoleId::generate(),
            Holder::Grant { tenant_id, user_id },
            Some(TenantGrantId::generate()),
            &now(),
        );
        assert_eq!(m.holder(), Holder::Grant { tenant_id, user_id });
        let item = m.to_item().unwrap();
        assert!(item["SK"].as_s().unwrap().starts_with("MEMBER#TENANT#"));
        assert_eq!(RoleMember::from_item(item).unwrap(), m);
    }
}
