//! Item types of the table as plain serde structs, converted with
//! `serde_dynamo`. The same structs decode `GetItem`/`Query` results and
//! DynamoDB Stream images (`aws_lambda_events` carries images as
//! `serde_dynamo::Item`). Key attributes and `Type` are added from `keys` on
//! the way in, so a struct can never disagree with its key.

use std::collections::{BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::model::keys::{attr, IndexKey, PrimaryKey};
use crate::model::values::Permission;

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
    UserIdentity,
    Role,
    RoleRef,
    TenantGrant,
    RoleMember,
    Policy,
    PolicyCounts,
    PolicyRef,
    UserLookup,
    MemberLookup,
    IdempotencyRecord,
    Invitation,
    InvitationRef,
    Change,
    Revocations,
    RevokingWrites,
    DirectoryToken,
    DirectoryUser,
    DirectoryValue,
    DirectoryGroup,
    TenantPolicies,
    TenantPolicyDigest,
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
            Self::UserIdentity => "UserIdentity",
            Self::Role => "Role",
            Self::RoleRef => "RoleRef",
            Self::TenantGrant => "TenantGrant",
            Self::RoleMember => "RoleMember",
            Self::Policy => "Policy",
            Self::PolicyCounts => "PolicyCounts",
            Self::PolicyRef => "PolicyRef",
            Self::UserLookup => "UserLookup",
            Self::MemberLookup => "MemberLookup",
            Self::IdempotencyRecord => "IdempotencyRecord",
            Self::Invitation => "Invitation",
            Self::InvitationRef => "InvitationRef",
            Self::Change => "Change",
            Self::Revocations => "Revocations",
            Self::RevokingWrites => "RevokingWrites",
            Self::DirectoryToken => "DirectoryToken",
            Self::DirectoryUser => "DirectoryUser",
            Self::DirectoryValue => "DirectoryValue",
            Self::DirectoryGroup => "DirectoryGroup",
            Self::TenantPolicies => "TenantPolicies",
            Self::TenantPolicyDigest => "TenantPolicyDigest",
        }
    }

    /// The type a `Type` attribute names.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    pub const ALL: [Self; 29] = [
        Self::Tenant,
        Self::TenantName,
        Self::User,
        Self::UserEmail,
        Self::EmailAddress,
        Self::UserPhone,
        Self::UserPreferredUsername,
        Self::UserIdentity,
        Self::Role,
        Self::RoleRef,
        Self::TenantGrant,
        Self::RoleMember,
        Self::Policy,
        Self::PolicyCounts,
        Self::PolicyRef,
        Self::UserLookup,
        Self::MemberLookup,
        Self::IdempotencyRecord,
        Self::Invitation,
        Self::InvitationRef,
        Self::Change,
        Self::Revocations,
        Self::RevokingWrites,
        Self::DirectoryToken,
        Self::DirectoryUser,
        Self::DirectoryValue,
        Self::DirectoryGroup,
        Self::TenantPolicies,
        Self::TenantPolicyDigest,
    ];
}

/// What tells one incarnation of an item from another under the same key:
/// a grant's key is (tenant, user) and a role's (scope, name), and both
/// start again at version 1 when re-created, so every condition that checks
/// a version also checks this attribute.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Incarnation {
    pub attr: &'static str,
    pub value: String,
}

impl Incarnation {
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
    fn incarnation(&self) -> Incarnation;

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

mod directory;
mod grant;
mod guard;
mod invitation;
mod policy;
mod revocations;
mod role;
mod tenant;
mod user;

pub use directory::{
    hex_digest, DirectoryEmail, DirectoryGroup, DirectoryMember, DirectoryToken, DirectoryUser,
    DirectoryValue, EXTERNAL_ID, GROUP_NAME, MEMBER_VALUE_MAX, USER_NAME, WORK_EMAIL,
};
pub use grant::TenantGrant;
pub use guard::{
    EmailOfUser, Guard, GuardKind, IdentityOfUser, NameOfTenant, PhoneOfUser, TenantNameGuard,
    UserEmailGuard, UserIdentityGuard, UserPhoneGuard, UserPreferredUsernameGuard, UsernameOfUser,
};
pub use invitation::{Invitation, InvitationRef};
pub use policy::{Policy, PolicyCounts, PolicyRef, TenantPolicies, TenantPolicyDigest};
pub use revocations::{
    Revocations, Revoked, Revokee, TakesAway, BATCH_ENTRIES, REPLICA_LAG, REVOCATIONS_KEPT,
};
pub use role::{Role, RoleMember, RoleRef};
pub use tenant::Tenant;
pub use user::{EmailAddress, LinkedIdentity, MemberLookup, User, UserGuards, UserLookup};

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
    UserIdentity(UserIdentityGuard),
    Role(Role),
    RoleRef(RoleRef),
    TenantGrant(TenantGrant),
    RoleMember(RoleMember),
    Policy(Policy),
    PolicyCounts(PolicyCounts),
    PolicyRef(PolicyRef),
    TenantPolicies(TenantPolicies),
    TenantPolicyDigest(TenantPolicyDigest),
    UserLookup(UserLookup),
    MemberLookup(MemberLookup),
    Invitation(Invitation),
    InvitationRef(InvitationRef),
    Revocations(Revocations),
    DirectoryGroup(DirectoryGroup),
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
            AnyItem::UserIdentity($e) => Some($f),
            AnyItem::Role($e) => Some($f),
            AnyItem::RoleRef($e) => Some($f),
            AnyItem::TenantGrant($e) => Some($f),
            AnyItem::RoleMember($e) => Some($f),
            AnyItem::Policy($e) => Some($f),
            AnyItem::PolicyCounts($e) => Some($f),
            AnyItem::PolicyRef($e) => Some($f),
            AnyItem::TenantPolicies($e) => Some($f),
            AnyItem::TenantPolicyDigest($e) => Some($f),
            AnyItem::UserLookup($e) => Some($f),
            AnyItem::MemberLookup($e) => Some($f),
            AnyItem::Invitation($e) => Some($f),
            AnyItem::InvitationRef($e) => Some($f),
            AnyItem::Revocations($e) => Some($f),
            AnyItem::DirectoryGroup($e) => Some($f),
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

    pub fn incarnation(&self) -> Option<Incarnation> {
        each!(self, e => e.incarnation())
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
            Some("UserIdentity") => Self::UserIdentity(serde_dynamo::from_item(image)?),
            Some("Role") => Self::Role(serde_dynamo::from_item(image)?),
            Some("RoleRef") => Self::RoleRef(serde_dynamo::from_item(image)?),
            Some("TenantGrant") => Self::TenantGrant(serde_dynamo::from_item(image)?),
            Some("RoleMember") => Self::RoleMember(serde_dynamo::from_item(image)?),
            Some("Policy") => Self::Policy(serde_dynamo::from_item(image)?),
            Some("PolicyCounts") => Self::PolicyCounts(serde_dynamo::from_item(image)?),
            Some("PolicyRef") => Self::PolicyRef(serde_dynamo::from_item(image)?),
            Some("TenantPolicies") => Self::TenantPolicies(serde_dynamo::from_item(image)?),
            Some("TenantPolicyDigest") => Self::TenantPolicyDigest(serde_dynamo::from_item(image)?),
            Some("UserLookup") => Self::UserLookup(serde_dynamo::from_item(image)?),
            Some("MemberLookup") => Self::MemberLookup(serde_dynamo::from_item(image)?),
            Some("Invitation") => Self::Invitation(serde_dynamo::from_item(image)?),
            Some("InvitationRef") => Self::InvitationRef(serde_dynamo::from_item(image)?),
            Some("Revocations") => Self::Revocations(serde_dynamo::from_item(image)?),
            Some("DirectoryGroup") => Self::DirectoryGroup(serde_dynamo::from_item(image)?),
            _ => Self::Other(item_type),
        })
    }
}

#[cfg(test)]
mod tests;
