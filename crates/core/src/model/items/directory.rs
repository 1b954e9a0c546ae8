//! A tenant's directory (SCIM 2.0): its bearer tokens (a digest, never the
//! token), the people it provisions as it describes them, and the guards
//! that keep their `userName`, `externalId` and work addresses unique in
//! the tenant.

use serde::{Deserialize, Serialize};

use super::{Entity, Incarnation, ItemType, Stamp};
use crate::model::keys::{self, PrimaryKey};
use crate::model::values::{
    DirectoryGroupId, DirectoryTokenId, DirectoryUserId, RoleId, TenantId, UserId,
};
use crate::policy::ceiling::Holding;

/// A bearer token a tenant's directory presents on its SCIM base. Only
/// the SHA-256 of its secret is stored; `expiresAt` (seconds since the
/// epoch), when set, is enforced by the authorizer on every decision and
/// is the table's TTL attribute, which deletes it later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryToken {
    pub token_id: DirectoryTokenId,
    pub tenant_id: TenantId,
    pub name: String,
    /// Hex SHA-256 of the secret part of the token.
    pub secret_digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// What its creator held in the tenant when they created it: the most
    /// its directory's groups give anyone through it (a token stored
    /// without it gives nothing).
    #[serde(default)]
    pub ceiling: Vec<Holding>,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl DirectoryToken {
    /// Whether it has ended at `now` (seconds since the epoch).
    pub fn expired_at(&self, now: u64) -> bool {
        self.expires_at.is_some_and(|end| end <= now)
    }
}

impl Entity for DirectoryToken {
    const TYPE: ItemType = ItemType::DirectoryToken;
    fn key(&self) -> PrimaryKey {
        keys::directory_token(&self.tenant_id, &self.token_id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("tokenId", self.token_id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A tokens's removal ends what it was trusted with: everything cached
/// about the tenant's callers is let go of (the revocation log's tenant
/// entry), so API Gateway's cached answers for it go too.
impl super::TakesAway for DirectoryToken {
    fn takes_away(
        before: Option<&Self>,
        after: Option<&Self>,
        _now: u64,
    ) -> Option<super::Revokee> {
        let before = before?;
        after
            .is_none()
            .then_some(super::Revokee::Tenant(before.tenant_id))
    }
}

/// One address a directory asserts for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryEmail {
    pub value: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub primary: bool,
}

/// A person as a tenant's directory describes them. What it says is kept
/// here, in the tenant, and never written to the platform's user: a
/// directory renames, re-addresses, suspends or deletes nobody any other
/// tenant relies on. Once a member of the tenant is known to be this
/// person (`userId`: their verified primary address is one the directory
/// asserts), `active` suspends and restores their membership here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryUser {
    pub id: DirectoryUserId,
    pub tenant_id: TenantId,
    pub user_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emails: Vec<DirectoryEmail>,
    /// As the directory last said it; a person it says nothing of is
    /// active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    /// The member of the tenant this person is, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<UserId>,
    /// Whether the directory removed the member's grant (deactivating
    /// them) and has not given it back: with the roles (and the end) it
    /// held then, none perhaps, given back when it reactivates them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held: bool,
    /// The roles (and their end) the member's grant held when the
    /// directory deactivated them: given back when it reactivates them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_roles: Vec<RoleId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_until: Option<u64>,
    /// The roles the directory gives the member now, through the groups
    /// they are in and what a tenant administrator mapped those to: the
    /// directory's to take away again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub given_roles: Vec<RoleId>,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
}

impl DirectoryUser {
    /// Whether the directory has the person active (unless it says
    /// otherwise, they are).
    pub fn is_active(&self) -> bool {
        self.active != Some(false)
    }

    /// The values kept unique in the tenant, as `(attribute, compared
    /// value)`: `userName` and work addresses compared without case,
    /// `externalId` exactly (RFC 7643 `caseExact`).
    pub fn unique_values(&self) -> Vec<(&'static str, String)> {
        let mut values = vec![(USER_NAME, self.user_name.to_lowercase())];
        if let Some(external) = &self.external_id {
            values.push((EXTERNAL_ID, external.clone()));
        }
        for email in &self.emails {
            let value = (WORK_EMAIL, email.value.to_lowercase());
            if !values.contains(&value) {
                values.push(value);
            }
        }
        values
    }

    /// The addresses it asserts, `userName` first, lower case.
    pub fn addresses(&self) -> Vec<String> {
        let mut all = vec![self.user_name.to_lowercase()];
        for email in &self.emails {
            let value = email.value.to_lowercase();
            if !all.contains(&value) {
                all.push(value);
            }
        }
        all
    }
}

/// The guarded attribute names.
pub const USER_NAME: &str = "userName";
pub const EXTERNAL_ID: &str = "externalId";
pub const WORK_EMAIL: &str = "email";
pub const GROUP_NAME: &str = "displayName";

impl Entity for DirectoryUser {
    const TYPE: ItemType = ItemType::DirectoryUser;
    fn key(&self) -> PrimaryKey {
        keys::directory_user(&self.tenant_id, &self.id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("id", self.id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// The person's record takes nothing away by itself: their grant's writes
/// do, and record it.
impl super::TakesAway for DirectoryUser {
    fn takes_away(_: Option<&Self>, _: Option<&Self>, _now: u64) -> Option<super::Revokee> {
        None
    }
}

/// A group of a tenant's directory: its people, and the tenant roles a
/// tenant administrator mapped it to (none until one does). A directory
/// changes its name and members, never its roles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryGroup {
    pub id: DirectoryGroupId,
    pub tenant_id: TenantId,
    pub display_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Its members as the directory names them: a person's SCIM id, or a
    /// value that names nobody here (kept as sent, giving nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<DirectoryMember>,
    /// The tenant roles its members are given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<RoleId>,
    /// The administrator who mapped it, under whose ceiling it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_by: Option<String>,
    #[serde(flatten)]
    pub stamp: Stamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
    /// What the author of its last change may give (`updated_by`'s
    /// ceiling): what recompute settles that change's members under, if
    /// the request that made it ended before it had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ceiling: Vec<Holding>,
}

/// One member of a directory group, as the directory sent it: its `value`
/// (a person's SCIM id here) and the `$ref` it gave, if any (Okta and
/// Entra ID send none: the answer then gives this service's own address
/// for the member). What they take counts against the group's item
/// bound ([`crate::store::directory_groups::GROUP_ITEM_BYTES_MAX`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryMember {
    pub value: String,
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

/// Most characters of a member's `value`: a SCIM id (this service's are
/// 26, a UUID 36). A group of
/// [`crate::store::directory_groups::GROUP_MEMBERS_MAX`] members of ids up
/// to 50 characters fits its item; past that, the item's bound
/// ([`crate::store::directory_groups::GROUP_ITEM_BYTES_MAX`]) holds fewer.
pub const MEMBER_VALUE_MAX: usize = 64;

impl DirectoryGroup {
    /// Whether the person `id` is a member.
    pub fn has(&self, id: &DirectoryUserId) -> bool {
        let id = id.to_string();
        self.members
            .iter()
            .any(|m| m.value.eq_ignore_ascii_case(&id))
    }

    /// The members that are people's ids.
    pub fn people(&self) -> impl Iterator<Item = DirectoryUserId> + '_ {
        self.members
            .iter()
            .filter_map(|m| DirectoryUserId::parse(&m.value).ok())
    }
}

impl Entity for DirectoryGroup {
    const TYPE: ItemType = ItemType::DirectoryGroup;
    fn key(&self) -> PrimaryKey {
        keys::directory_group(&self.tenant_id, &self.id)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("id", self.id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A group's record takes nothing away by itself: its members' grant
/// writes do, and record it.
impl super::TakesAway for DirectoryGroup {
    fn takes_away(_: Option<&Self>, _: Option<&Self>, _now: u64) -> Option<super::Revokee> {
        None
    }
}

/// A value one person (or group) of a tenant's directory holds
/// (`DirectoryValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DirectoryValue {
    pub tenant_id: TenantId,
    pub attribute: String,
    /// Hex SHA-256 of the value as compared.
    pub digest: String,
    /// Its holder: a person's or a group's id.
    pub id: String,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl DirectoryValue {
    /// Hex SHA-256 of `value`.
    pub fn digest_of(value: &str) -> String {
        use sha2::{Digest, Sha256};
        hex_digest(&Sha256::digest(value.as_bytes()))
    }
}

/// Lower-case hex of `bytes`.
pub fn hex_digest(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Entity for DirectoryValue {
    const TYPE: ItemType = ItemType::DirectoryValue;
    fn key(&self) -> PrimaryKey {
        keys::directory_value_guard(&self.tenant_id, &self.attribute, &self.digest)
    }
    fn incarnation(&self) -> Incarnation {
        Incarnation::new("id", &self.id)
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}
