//! Uniqueness guards: an item whose key is a value only one owner may
//! have (a tenant's name, a user's email, phone or preferred username),
//! written with `attribute_not_exists` in the owner's own transaction. One
//! generic item, `Guard<K>`, over what each kind records.

use serde::{Deserialize, Serialize};

use super::{Entity, Incarnation, ItemType, Stamp};
use crate::model::keys::{self, PrimaryKey};
use crate::model::values::{
    Email, IdentityId, Issuer, Phone, PreferredUsername, Subject, TenantId, TenantName, UserId,
};

/// What one kind of guard records: the value and its owner, stored under
/// their own attribute names.
pub trait GuardKind: Serialize + serde::de::DeserializeOwned {
    const TYPE: ItemType;
    /// The guard's key: the value's.
    fn key(&self) -> PrimaryKey;
    /// The owner: a write releases a guard only if it is still theirs.
    fn owner(&self) -> Incarnation;
}

/// A uniqueness guard: what it records, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guard<K> {
    #[serde(flatten)]
    pub held: K,
    #[serde(flatten)]
    pub stamp: Stamp,
}

impl<K> Guard<K> {
    /// The guard of `held`, written at `at`.
    pub fn new(held: K, at: &str) -> Self {
        Self {
            held,
            stamp: Stamp::new(at),
        }
    }
}

impl<K: GuardKind> Entity for Guard<K> {
    const TYPE: ItemType = K::TYPE;
    fn key(&self) -> PrimaryKey {
        self.held.key()
    }
    fn incarnation(&self) -> Incarnation {
        self.held.owner()
    }
    fn version(&self) -> u64 {
        self.stamp.version
    }
}

/// A tenant's name (`TenantName`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NameOfTenant {
    pub name: TenantName,
    pub tenant_id: TenantId,
}

/// A user's email (`UserEmail`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmailOfUser {
    pub email: Email,
    pub user_id: UserId,
}

/// A user's phone number (`UserPhone`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PhoneOfUser {
    pub phone: Phone,
    pub user_id: UserId,
}

/// A user's preferred username (`UserPreferredUsername`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsernameOfUser {
    pub preferred_username: PreferredUsername,
    pub user_id: UserId,
}

/// An identity's link to its user (`UserIdentity`): the identity (by its
/// id, and as issuer and subject) belongs to this user and nobody else. The
/// authorizer reads it to find the user of a token's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityOfUser {
    pub identity_id: IdentityId,
    pub issuer: Issuer,
    pub subject: Subject,
    pub user_id: UserId,
}

impl GuardKind for IdentityOfUser {
    const TYPE: ItemType = ItemType::UserIdentity;
    fn key(&self) -> PrimaryKey {
        keys::user_identity_guard(&self.identity_id)
    }
    fn owner(&self) -> Incarnation {
        Incarnation::new("userId", self.user_id)
    }
}

impl GuardKind for NameOfTenant {
    const TYPE: ItemType = ItemType::TenantName;
    fn key(&self) -> PrimaryKey {
        keys::tenant_name_guard(&self.name)
    }
    fn owner(&self) -> Incarnation {
        Incarnation::new("tenantId", self.tenant_id)
    }
}

impl GuardKind for EmailOfUser {
    const TYPE: ItemType = ItemType::UserEmail;
    fn key(&self) -> PrimaryKey {
        keys::user_email_guard(&self.email)
    }
    fn owner(&self) -> Incarnation {
        Incarnation::new("userId", self.user_id)
    }
}

impl GuardKind for PhoneOfUser {
    const TYPE: ItemType = ItemType::UserPhone;
    fn key(&self) -> PrimaryKey {
        keys::user_phone_guard(&self.phone)
    }
    fn owner(&self) -> Incarnation {
        Incarnation::new("userId", self.user_id)
    }
}

impl GuardKind for UsernameOfUser {
    const TYPE: ItemType = ItemType::UserPreferredUsername;
    fn key(&self) -> PrimaryKey {
        keys::user_preferred_username_guard(&self.preferred_username)
    }
    fn owner(&self) -> Incarnation {
        Incarnation::new("userId", self.user_id)
    }
}

pub type TenantNameGuard = Guard<NameOfTenant>;
pub type UserEmailGuard = Guard<EmailOfUser>;
pub type UserPhoneGuard = Guard<PhoneOfUser>;
pub type UserPreferredUsernameGuard = Guard<UsernameOfUser>;
pub type UserIdentityGuard = Guard<IdentityOfUser>;
