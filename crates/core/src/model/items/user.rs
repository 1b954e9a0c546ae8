//! A user (with the identities linked to them), the lookup entry that
//! lists them, and their email addresses.

use serde::{Deserialize, Serialize};

use super::guard::{EmailOfUser, IdentityOfUser, PhoneOfUser, UsernameOfUser};
use super::{Entity, Incarnation, ItemType, Stamp};
use crate::model::keys::{self, IndexKey, PrimaryKey};
use crate::model::values::{
    Email, EmailId, IdentityId, Issuer, Permission, Phone, PreferredUsername, RoleId, Subject,
    TenantGrantId, TenantId, Text, UserId, UserStatus,
};

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
    /// The identities linked to the user, each with its `UserIdentity`
    /// guard written and removed in the same transaction. The authorizer
    /// reads them with the user on every uncached decision: an identity it
    /// remembers as this user's counts only while it is listed here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub identities: Vec<LinkedIdentity>,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

/// An identity linked to a user, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LinkedIdentity {
    pub identity_id: IdentityId,
    pub issuer: Issuer,
    pub subject: Subject,
    pub linked_at: String,
}

/// What the uniqueness guards a user holds record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserGuards {
    pub email: EmailOfUser,
    pub phone: Option<PhoneOfUser>,
    pub username: Option<UsernameOfUser>,
    pub identities: Vec<IdentityOfUser>,
}

impl User {
    /// The guards the user holds: their email, their phone and preferred
    /// username when they have them, and each linked identity.
    pub fn guards(&self) -> UserGuards {
        let user_id = self.user_id;
        UserGuards {
            email: EmailOfUser {
                email: self.email.clone(),
                user_id,
            },
            phone: self
                .phone
                .clone()
                .map(|phone| PhoneOfUser { phone, user_id }),
            username: self
                .preferred_username
                .clone()
                .map(|preferred_username| UsernameOfUser {
                    preferred_username,
                    user_id,
                }),
            identities: self
                .identities
                .iter()
                .map(|i| IdentityOfUser {
                    identity_id: i.identity_id,
                    issuer: i.issuer.clone(),
                    subject: i.subject.clone(),
                    user_id,
                })
                .collect(),
        }
    }

    /// Whether the identity is linked to this user.
    pub fn has_identity(&self, id: &IdentityId) -> bool {
        self.identities.iter().any(|i| i.identity_id == *id)
    }

    /// Whether `next` (this user after a write) holds less than this: no
    /// longer active, a global role gone, its roles ending sooner, an
    /// identity unlinked. Such a write is a revocation: caches must let go
    /// of what they hold for the user.
    pub fn loses_in(&self, next: &User, now: u64) -> bool {
        let kept = next.global_roles(now);
        let ends_sooner = match (self.roles_expire_at, next.roles_expire_at) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(old), Some(new)) => new < old,
        };
        (self.status == UserStatus::Active && next.status != UserStatus::Active)
            || self.global_roles(now).iter().any(|r| !kept.contains(r))
            || (ends_sooner && !self.global_roles(now).is_empty())
            || self
                .identities
                .iter()
                .any(|i| !next.has_identity(&i.identity_id))
    }

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
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("userId", self.user_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A user's entry in the lists of users by status (the LOOKUP item): by
/// email (GSI2) and, when they have a name, by name (GSI1). It alone
/// carries these index keys, and is written only when the user's email,
/// name or status changes: the User item, which recompute rewrites when a
/// global role changes, is in no index, so a fan-out to every user writes
/// nothing to the `LIST#USER#active` index partitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserLookup {
    pub user_id: UserId,
    pub email: Email,
    pub status: UserStatus,
    /// Given and family name, as one (none when the user has neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The stamp of the User item it was written from.
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl User {
    /// The user's name as people read it (given, then family), if any.
    pub fn display_name(&self) -> Option<String> {
        let parts: Vec<&str> = [&self.given_name, &self.family_name]
            .into_iter()
            .flatten()
            .map(|t| t.as_ref().trim())
            .filter(|t| !t.is_empty())
            .collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    }
}

impl UserLookup {
    pub fn of(user: &User) -> Self {
        Self {
            user_id: user.user_id,
            email: user.email.clone(),
            status: user.status,
            name: user.display_name(),
            stamp: user.stamp.clone(),
        }
    }

    /// Whether `next` must rewrite the entry `before` was listed under.
    pub fn changes(before: &User, next: &User) -> bool {
        before.email != next.email
            || before.status != next.status
            || before.display_name() != next.display_name()
    }
}

impl Entity for UserLookup {
    const TYPE: ItemType = ItemType::UserLookup;
    fn key(&self) -> PrimaryKey {
        keys::user_lookup(&self.user_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("userId", self.user_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        let key = keys::user_name_key(self.name.as_deref()?);
        (!key.is_empty()).then(|| keys::user_name_entry(self.status, &key, &self.user_id))
    }
    fn gsi2(&self) -> Option<IndexKey> {
        Some(keys::user_list_entry(self.status, &self.email))
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A member's entry in their tenant's member search (the MEMBER_LOOKUP
/// item): the user's email (GSI2) and name (GSI1) under the tenant's own
/// partitions of both indexes, so a tenant's search reads its members
/// only. Written with the grant and removed with it; when the user's
/// email or name changes, recompute rewrites the entry of each grant
/// (`Store::relist_memberships`), so the lists lag a rename by the
/// stream's delay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberLookup {
    pub tenant_id: TenantId,
    pub user_id: UserId,
    /// The grant it lists: removing an ended grant's entry never removes
    /// the one of a grant given again since.
    pub tenant_grant_id: TenantGrantId,
    pub email: Email,
    /// Given and family name, as one (none when the user has neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The stamp of the User item it was written from: a rewrite from an
    /// older one is refused.
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl MemberLookup {
    /// The entry of `grant`'s member, as `user` lists them.
    pub fn of(grant: &super::TenantGrant, user: &UserLookup) -> Self {
        Self {
            tenant_id: grant.tenant_id,
            user_id: grant.user_id,
            tenant_grant_id: grant.tenant_grant_id,
            email: user.email.clone(),
            name: user.name.clone(),
            stamp: user.stamp.clone(),
        }
    }
}

impl Entity for MemberLookup {
    const TYPE: ItemType = ItemType::MemberLookup;
    fn key(&self) -> PrimaryKey {
        keys::member_lookup(&self.tenant_id, &self.user_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("tenantGrantId", self.tenant_grant_id)
    }
    fn gsi1(&self) -> Option<IndexKey> {
        let key = keys::user_name_key(self.name.as_deref()?);
        (!key.is_empty()).then(|| keys::member_name_entry(&self.tenant_id, &key, &self.user_id))
    }
    fn gsi2(&self) -> Option<IndexKey> {
        Some(keys::member_list_entry(&self.tenant_id, &self.email))
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
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("emailId", self.email_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A user loses something when they stop being active, lose a global role
/// or its time, or an identity (`User::loses_in`), or are deleted.
impl super::TakesAway for User {
    fn takes_away(before: Option<&Self>, after: Option<&Self>, now: u64) -> Option<super::Revokee> {
        let before = before?;
        let loses = after.is_none_or(|after| before.loses_in(after, now));
        loses.then_some(super::Revokee::User(before.user_id))
    }
}

impl super::TakesAway for EmailAddress {}
