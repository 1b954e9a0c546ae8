//! The only place key strings are built and parsed (the table's layout and
//! this project's extensions to it, docs/table.md). Everything else asks this module for a key and
//! gets typed ids back when it parses one.
//!
//! Components are validated value types, which can never contain `#`,
//! whitespace or control characters, so no escaping is needed and every key
//! parses back to exactly the values it was built from.

use std::fmt;

use crate::model::values::{
    ChangeId, DirectoryGroupId, DirectoryTokenId, DirectoryUserId, Email, EmailId, EmailPrefix,
    IdentityId, Invalid, InvitationId, NamePrefix, Phone, PolicyId, PolicyName, PreferredUsername,
    RoleId, RoleName, RoleScope, TenantGrantId, TenantId, TenantName, TenantNamePrefix, UserId,
    UserStatus,
};

/// Attribute names of the table's keys and indexes.
pub mod attr {
    pub const PK: &str = "PK";
    pub const SK: &str = "SK";
    pub const GSI1PK: &str = "GSI1PK";
    pub const GSI1SK: &str = "GSI1SK";
    pub const GSI2PK: &str = "GSI2PK";
    pub const GSI2SK: &str = "GSI2SK";
    pub const TYPE: &str = "Type";
    /// Every entity's version (`Stamp`).
    pub const VERSION: &str = "version";
    /// On a user: until when (milliseconds since the epoch) the user's own
    /// writes yield to an administrator's revoking write under way.
    pub const FENCED_UNTIL: &str = "fencedUntil";
}

const TENANT: &str = "TENANT#";
const TENANT_NAME: &str = "TENANT_NAME#";
const USER: &str = "USER#";
const USER_EMAIL: &str = "USER_EMAIL#";
const USER_PHONE: &str = "USER_PHONE#";
const USER_PREFERREDUSERNAME: &str = "USER_PREFERREDUSERNAME#";
const USER_IDENTITY: &str = "USER_IDENTITY#";
const ROLE_SCOPE: &str = "ROLE_SCOPE#";
const ROLE_NAME: &str = "ROLE_NAME#";
const ROLE: &str = "ROLE#";
const TENANT_GRANT: &str = "TENANT_GRANT#";
const GLOBAL: &str = "GLOBAL";
const POLICY_NAME: &str = "POLICY_NAME#";
const POLICY: &str = "POLICY#";
const POLICY_COUNTS: &str = "POLICY_COUNTS";
const REVOCATIONS: &str = "REVOCATIONS";
const MEMBER: &str = "MEMBER#";
const MEMBER_TENANT: &str = "MEMBER#TENANT#";
const MEMBER_GLOBAL_USER: &str = "MEMBER#GLOBAL#USER#";
const LIST_TENANT: &str = "LIST#TENANT";
const LIST_USER: &str = "LIST#USER#";
const LIST_USER_NAME: &str = "LIST#USER_NAME#";
const LIST_MEMBER: &str = "LIST#MEMBER#";
const LIST_MEMBER_NAME: &str = "LIST#MEMBER_NAME#";
const MEMBER_LOOKUP: &str = "MEMBER_LOOKUP#";
const LOOKUP: &str = "LOOKUP";
const EMAIL: &str = "EMAIL#";
const INVITATION: &str = "INVITATION#";
const INVITEE: &str = "INVITEE#";
const HISTORY: &str = "HISTORY#";
const CHANGE: &str = "CHANGE#";
const IDEMPOTENCY: &str = "IDEMPOTENCY#";
const RATE: &str = "RATE#";
const FEED: &str = "FEED#";
const FEED_TENANT: &str = "FEED#TENANT#";
const REVOKING: &str = "REVOKING#";
const SCIM_TOKEN: &str = "SCIM_TOKEN#";
const POLICY_SET: &str = "POLICY_SET";
const POLICY_DIGEST: &str = "POLICY_DIGEST";
const SCIM_USER: &str = "SCIM_USER#";
const SCIM_GROUP: &str = "SCIM_GROUP#";
const SCIM_VALUE: &str = "SCIM_VALUE#";

/// The table's secondary indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    Gsi1,
    Gsi2,
}

impl Index {
    /// The index name as the table defines it.
    pub fn name(self) -> &'static str {
        match self {
            Index::Gsi1 => "GSI1",
            Index::Gsi2 => "GSI2",
        }
    }

    /// The (partition, sort) attribute names of this index.
    pub fn attrs(self) -> (&'static str, &'static str) {
        match self {
            Index::Gsi1 => (attr::GSI1PK, attr::GSI1SK),
            Index::Gsi2 => (attr::GSI2PK, attr::GSI2SK),
        }
    }
}

/// A base-table key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PrimaryKey {
    pub pk: String,
    pub sk: String,
}

impl PrimaryKey {
    fn same(s: String) -> Self {
        Self {
            pk: s.clone(),
            sk: s,
        }
    }
}

impl fmt::Display for PrimaryKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.pk, self.sk)
    }
}

/// A secondary-index key of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexKey {
    pub pk: String,
    pub sk: String,
}

impl IndexKey {
    fn same(s: String) -> Self {
        Self {
            pk: s.clone(),
            sk: s,
        }
    }
}

/// Who holds a role, as recorded in a RoleMember link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Holder {
    /// The user holds the role through a grant in this tenant.
    Grant {
        tenant_id: TenantId,
        user_id: UserId,
    },
    /// The user holds the role as a global role.
    Global { user_id: UserId },
}

// ---- Tenants ----------------------------------------------------------------

/// `TENANT#{tenantId}` / same.
pub fn tenant(id: &TenantId) -> PrimaryKey {
    PrimaryKey::same(format!("{TENANT}{id}"))
}

/// GSI1 on the Tenant item: `TENANT_NAME#{name}` / same (lookup by name).
pub fn tenant_by_name(name: &TenantName) -> IndexKey {
    IndexKey::same(format!("{TENANT_NAME}{name}"))
}

/// The TenantName uniqueness guard: `TENANT_NAME#{name}` / same.
pub fn tenant_name_guard(name: &TenantName) -> PrimaryKey {
    PrimaryKey::same(format!("{TENANT_NAME}{name}"))
}

/// GSI2 lookup list of tenants: `LIST#TENANT` / `{name}`.
pub fn tenant_list_entry(name: &TenantName) -> IndexKey {
    IndexKey {
        pk: tenant_list_partition(),
        sk: name.to_string(),
    }
}

pub fn tenant_list_partition() -> String {
    LIST_TENANT.to_string()
}

/// The `begins_with` argument for tenants whose name starts with `prefix`
/// (the list's sort key is the bare name).
pub fn tenant_list_prefix(prefix: &TenantNamePrefix) -> &str {
    prefix.as_str()
}

/// Sort-key prefix of the grants in a tenant's item collection.
pub fn tenant_members_prefix() -> &'static str {
    USER
}

// ---- Users and guards ---------------------------------------------------------

/// `USER#{userId}` / same.
pub fn user(id: &UserId) -> PrimaryKey {
    PrimaryKey::same(format!("{USER}{id}"))
}

/// An idempotency record: `IDEMPOTENCY#{caller}#{key}` / same. Keys are
/// per caller, so one caller's key never answers another's request.
pub fn idempotency(caller: &str, key: &str) -> PrimaryKey {
    PrimaryKey::same(format!("{IDEMPOTENCY}{caller}#{key}"))
}

/// A user's entry in the lists by status: `USER#{userId}` / `LOOKUP`.
pub fn user_lookup(id: &UserId) -> PrimaryKey {
    PrimaryKey {
        pk: format!("{USER}{id}"),
        sk: LOOKUP.to_string(),
    }
}

/// GSI2 lookup list of users by status: `LIST#USER#{status}` / `{email}`
/// (on the user's LOOKUP item, not on the User item).
pub fn user_list_entry(status: UserStatus, email: &Email) -> IndexKey {
    IndexKey {
        pk: user_list_partition(status),
        sk: email.to_string(),
    }
}

pub fn user_list_partition(status: UserStatus) -> String {
    format!("{LIST_USER}{status}")
}

/// The `begins_with` argument for users whose email starts with `prefix`
/// (the list's sort key is the bare address).
pub fn user_list_prefix(prefix: &EmailPrefix) -> &str {
    prefix.as_str()
}

/// Most characters of a name the name list keeps: at 4 bytes each, with
/// the user id, under the 1,024 bytes an index sort key may hold.
pub const USER_NAME_KEY_MAX: usize = 200;

/// A name as the name list sorts and searches it: lower case, each run of
/// whitespace one `_`, without `#` or control characters (a key component
/// holds none), its first [`USER_NAME_KEY_MAX`] characters (a search is
/// cut the same way); empty when nothing is left.
pub fn user_name_key(name: &str) -> String {
    name.split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| *c != '#' && !c.is_control())
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
        .chars()
        .take(USER_NAME_KEY_MAX)
        .collect()
}

/// GSI1 lookup list of users by status and name: `LIST#USER_NAME#{status}`
/// / `{name key}#{userId}` (on the user's LOOKUP item, when they have a
/// name).
pub fn user_name_entry(status: UserStatus, name_key: &str, user_id: &UserId) -> IndexKey {
    IndexKey {
        pk: user_name_partition(status),
        sk: format!("{name_key}#{user_id}"),
    }
}

pub fn user_name_partition(status: UserStatus) -> String {
    format!("{LIST_USER_NAME}{status}")
}

/// One of a user's email addresses: `USER#{userId}` / `EMAIL#{emailId}`
/// (the email records, in the user's partition; see docs/table.md).
pub fn email_address(user_id: &UserId, email_id: &EmailId) -> PrimaryKey {
    PrimaryKey {
        pk: user_partition(user_id),
        sk: format!("{EMAIL}{email_id}"),
    }
}

/// The partition of a user's own items (the user, its LOOKUP entry, its
/// email addresses).
pub fn user_partition(user_id: &UserId) -> String {
    format!("{USER}{user_id}")
}

/// Sort-key prefix of a user's email addresses.
pub fn email_addresses_prefix() -> &'static str {
    EMAIL
}

/// `USER_EMAIL#{email}` / same.
pub fn user_email_guard(email: &Email) -> PrimaryKey {
    PrimaryKey::same(format!("{USER_EMAIL}{email}"))
}

/// `USER_IDENTITY#{identityId}` / same: an identity's link to its user,
/// the guard that keeps it to one.
pub fn user_identity_guard(id: &IdentityId) -> PrimaryKey {
    PrimaryKey::same(format!("{USER_IDENTITY}{id}"))
}

/// `USER_PHONE#{phone}` / same.
pub fn user_phone_guard(phone: &Phone) -> PrimaryKey {
    PrimaryKey::same(format!("{USER_PHONE}{phone}"))
}

/// `USER_PREFERREDUSERNAME#{preferredUsername}` / same.
pub fn user_preferred_username_guard(username: &PreferredUsername) -> PrimaryKey {
    PrimaryKey::same(format!("{USER_PREFERREDUSERNAME}{username}"))
}

// ---- Roles ----------------------------------------------------------------------

/// `ROLE_SCOPE#{scope}` / `ROLE_NAME#{name}`.
pub fn role(scope: RoleScope, name: &RoleName) -> PrimaryKey {
    PrimaryKey {
        pk: role_scope_partition(scope),
        sk: format!("{ROLE_NAME}{name}"),
    }
}

pub fn role_scope_partition(scope: RoleScope) -> String {
    format!("{ROLE_SCOPE}{scope}")
}

/// Sort-key prefix of the roles in a scope's item collection whose name
/// starts with `prefix` (every role: empty).
pub fn role_name_prefix(prefix: &NamePrefix) -> String {
    format!("{ROLE_NAME}{prefix}")
}

/// GSI1 on the Role item: `ROLE#{roleId}` / same (lookup by id).
pub fn role_by_id(id: &RoleId) -> IndexKey {
    IndexKey::same(format!("{ROLE}{id}"))
}

/// The RoleRef item: `ROLE#{roleId}` / same (consistent lookup by id).
pub fn role_ref(id: &RoleId) -> PrimaryKey {
    PrimaryKey::same(format!("{ROLE}{id}"))
}

/// A RoleMember link: `ROLE#{roleId}` / `MEMBER#TENANT#{t}#USER#{u}` or
/// `MEMBER#GLOBAL#USER#{u}`. Shares the RoleRef's partition, so one Query
/// with `begins_with(SK, "MEMBER#")` pages through a role's holders.
pub fn role_member(role_id: &RoleId, holder: &Holder) -> PrimaryKey {
    let sk = match holder {
        Holder::Grant { tenant_id, user_id } => {
            format!("{MEMBER_TENANT}{tenant_id}#{USER}{user_id}")
        }
        Holder::Global { user_id } => format!("{MEMBER_GLOBAL_USER}{user_id}"),
    };
    PrimaryKey {
        pk: format!("{ROLE}{role_id}"),
        sk,
    }
}

/// The item of a holder: its grant, or the user for global roles.
pub fn holder(holder: &Holder) -> PrimaryKey {
    match holder {
        Holder::Grant { tenant_id, user_id } => tenant_grant(tenant_id, user_id),
        Holder::Global { user_id } => user(user_id),
    }
}

/// The partition of a role's RoleMember links (and its RoleRef).
pub fn role_members_partition(role_id: &RoleId) -> String {
    format!("{ROLE}{role_id}")
}

/// Sort-key prefix of a role's RoleMember links.
pub fn role_members_prefix() -> &'static str {
    MEMBER
}

/// Sort-key prefix of a role's RoleMember links of grants in one tenant.
pub fn role_members_in_tenant_prefix(tenant_id: &TenantId) -> String {
    format!("{MEMBER_TENANT}{tenant_id}#")
}

// ---- Tenant grants -------------------------------------------------------------

/// `TENANT#{tenantId}` / `USER#{userId}`.
pub fn tenant_grant(tenant_id: &TenantId, user_id: &UserId) -> PrimaryKey {
    PrimaryKey {
        pk: format!("{TENANT}{tenant_id}"),
        sk: format!("{USER}{user_id}"),
    }
}

/// GSI1 on the grant: `USER#{userId}` / `TENANT#{tenantId}`.
pub fn tenant_grant_by_user(user_id: &UserId, tenant_id: &TenantId) -> IndexKey {
    IndexKey {
        pk: user_grants_partition(user_id),
        sk: format!("{TENANT}{tenant_id}"),
    }
}

/// GSI1 partition holding a user's grants.
pub fn user_grants_partition(user_id: &UserId) -> String {
    format!("{USER}{user_id}")
}

/// GSI2 on the grant: `TENANT_GRANT#{tenantGrantId}` / same.
pub fn tenant_grant_by_id(id: &TenantGrantId) -> IndexKey {
    IndexKey::same(format!("{TENANT_GRANT}{id}"))
}

/// A member's entry in their tenant's member search: `TENANT#{tenantId}` /
/// `MEMBER_LOOKUP#{userId}` (beside their grant, which both index keys
/// of the table already serve).
pub fn member_lookup(tenant_id: &TenantId, user_id: &UserId) -> PrimaryKey {
    PrimaryKey {
        pk: tenant_partition(tenant_id),
        sk: format!("{MEMBER_LOOKUP}{user_id}"),
    }
}

/// GSI2 list of a tenant's members by email: `LIST#MEMBER#{tenantId}` /
/// `{email}` (on the member's MEMBER_LOOKUP item).
pub fn member_list_entry(tenant_id: &TenantId, email: &Email) -> IndexKey {
    IndexKey {
        pk: member_list_partition(tenant_id),
        sk: email.to_string(),
    }
}

pub fn member_list_partition(tenant_id: &TenantId) -> String {
    format!("{LIST_MEMBER}{tenant_id}")
}

/// GSI1 list of a tenant's members by name: `LIST#MEMBER_NAME#{tenantId}`
/// / `{name key}#{userId}` (when the member has a name; the key as
/// [`user_name_key`] makes it).
pub fn member_name_entry(tenant_id: &TenantId, name_key: &str, user_id: &UserId) -> IndexKey {
    IndexKey {
        pk: member_name_partition(tenant_id),
        sk: format!("{name_key}#{user_id}"),
    }
}

pub fn member_name_partition(tenant_id: &TenantId) -> String {
    format!("{LIST_MEMBER_NAME}{tenant_id}")
}

/// The partition of a tenant's item collection (the Tenant and its grants).
pub fn tenant_partition(id: &TenantId) -> String {
    format!("{TENANT}{id}")
}

// ---- A tenant's directory (SCIM) ------------------------------------------------------

/// One of a tenant directory's bearer tokens: `TENANT#{tenantId}` /
/// `SCIM_TOKEN#{tokenId}` (its digest, never the token).
pub fn directory_token(tenant_id: &TenantId, token_id: &DirectoryTokenId) -> PrimaryKey {
    PrimaryKey {
        pk: tenant_partition(tenant_id),
        sk: format!("{SCIM_TOKEN}{token_id}"),
    }
}

/// Sort-key prefix of a tenant's directory tokens.
pub fn directory_tokens_prefix() -> &'static str {
    SCIM_TOKEN
}

/// A person a tenant's directory provisions: `TENANT#{tenantId}` /
/// `SCIM_USER#{id}`.
pub fn directory_user(tenant_id: &TenantId, id: &DirectoryUserId) -> PrimaryKey {
    PrimaryKey {
        pk: tenant_partition(tenant_id),
        sk: format!("{SCIM_USER}{id}"),
    }
}

/// Sort-key prefix of the people a tenant's directory provisions.
pub fn directory_users_prefix() -> &'static str {
    SCIM_USER
}

/// A group of a tenant's directory: `TENANT#{tenantId}` /
/// `SCIM_GROUP#{id}`.
pub fn directory_group(tenant_id: &TenantId, id: &DirectoryGroupId) -> PrimaryKey {
    PrimaryKey {
        pk: tenant_partition(tenant_id),
        sk: format!("{SCIM_GROUP}{id}"),
    }
}

/// Sort-key prefix of a tenant directory's groups.
pub fn directory_groups_prefix() -> &'static str {
    SCIM_GROUP
}

/// The guard of one value a tenant's directory keeps unique among its
/// people (`userName`, `externalId`, a work address):
/// `SCIM_VALUE#{tenantId}#{attribute}#{digest}` / same. `digest` is the
/// hex SHA-256 of the value as compared (`userName` and addresses lower
/// case), so any value the directory sends makes a key.
pub fn directory_value_guard(tenant_id: &TenantId, attribute: &str, digest: &str) -> PrimaryKey {
    PrimaryKey::same(format!("{SCIM_VALUE}{tenant_id}#{attribute}#{digest}"))
}

// ---- Invitations ------------------------------------------------------------------

/// A pending invitation of an address to a tenant, in the tenant's
/// partition: `TENANT#{tenantId}` / `INVITATION#{email}` (one per address
/// and tenant).
pub fn invitation(tenant_id: &TenantId, email: &Email) -> PrimaryKey {
    PrimaryKey {
        pk: tenant_partition(tenant_id),
        sk: format!("{INVITATION}{email}"),
    }
}

/// Sort-key prefix of the invitations in a tenant's partition.
pub fn tenant_invitations_prefix() -> &'static str {
    INVITATION
}

/// GSI1 on the invitation: `INVITEE#{email}` / `TENANT#{tenantId}` (an
/// address's invitations across tenants).
pub fn invitation_by_invitee(email: &Email, tenant_id: &TenantId) -> IndexKey {
    IndexKey {
        pk: invitee_partition(email),
        sk: format!("{TENANT}{tenant_id}"),
    }
}

/// GSI1 partition of an address's invitations.
pub fn invitee_partition(email: &Email) -> String {
    format!("{INVITEE}{email}")
}

/// The InvitationRef: `INVITATION#{invitationId}` / same (by id,
/// consistently).
pub fn invitation_ref(id: &InvitationId) -> PrimaryKey {
    PrimaryKey::same(format!("{INVITATION}{id}"))
}

// ---- History ------------------------------------------------------------------------

/// A tenant's history partition: `HISTORY#TENANT#{tenantId}`.
pub fn tenant_history(id: &TenantId) -> String {
    format!("{HISTORY}{TENANT}{id}")
}

/// A user's history partition: `HISTORY#USER#{userId}`.
pub fn user_history(id: &UserId) -> String {
    format!("{HISTORY}{USER}{id}")
}

/// A role's history partition: `HISTORY#ROLE#{roleId}`.
pub fn role_history(id: &RoleId) -> String {
    format!("{HISTORY}{ROLE}{id}")
}

/// A tenant grant's history partition (by tenant and user, so it spans
/// the grant's incarnations): `HISTORY#TENANT#{t}#USER#{u}`.
pub fn grant_history(tenant_id: &TenantId, user_id: &UserId) -> String {
    format!("{HISTORY}{TENANT}{tenant_id}#{USER}{user_id}")
}

/// A policy's history partition: `HISTORY#POLICY#{policyId}`.
pub fn policy_history(id: &PolicyId) -> String {
    format!("{HISTORY}{POLICY}{id}")
}

/// The ids of what a history partition is the history of, `(tenant,
/// user, role, policy)`, each present when its kind has it.
pub type HistoryIds = (
    Option<TenantId>,
    Option<UserId>,
    Option<RoleId>,
    Option<PolicyId>,
);

/// What a history partition is the history of.
pub fn parse_history(partition: &str) -> Option<HistoryIds> {
    let rest = partition.strip_prefix(HISTORY)?;
    if let Some(rest) = rest.strip_prefix(TENANT) {
        return Some(match rest.split_once(&format!("#{USER}")) {
            Some((t, u)) => (
                Some(TenantId::parse(t).ok()?),
                Some(UserId::parse(u).ok()?),
                None,
                None,
            ),
            None => (Some(TenantId::parse(rest).ok()?), None, None, None),
        });
    }
    if let Some(u) = rest.strip_prefix(USER) {
        return Some((None, Some(UserId::parse(u).ok()?), None, None));
    }
    if let Some(r) = rest.strip_prefix(ROLE) {
        return Some((None, None, Some(RoleId::parse(r).ok()?), None));
    }
    let p = rest.strip_prefix(POLICY)?;
    Some((None, None, None, Some(PolicyId::parse(p).ok()?)))
}

/// The platform's change feed for one month (`yyyy-mm`), on GSI1:
/// `FEED#{month}` / `{changeId}` (a ULID: time-ordered).
pub fn change_feed_entry(month: &str, id: &ChangeId) -> IndexKey {
    IndexKey {
        pk: change_feed(month),
        sk: id.to_string(),
    }
}

pub fn change_feed(month: &str) -> String {
    format!("{FEED}{month}")
}

/// The month of a platform feed partition (`FEED#2026-11`: `2026-11`).
pub fn change_feed_month(partition: &str) -> Option<&str> {
    partition
        .strip_prefix(FEED)
        .filter(|m| !m.starts_with("TENANT#"))
}

/// A tenant's change feed (its own changes and its grants'), on GSI2:
/// `FEED#TENANT#{tenantId}` / `{changeId}`.
pub fn tenant_change_feed_entry(tenant_id: &TenantId, id: &ChangeId) -> IndexKey {
    IndexKey {
        pk: tenant_change_feed(tenant_id),
        sk: id.to_string(),
    }
}

pub fn tenant_change_feed(tenant_id: &TenantId) -> String {
    format!("{FEED_TENANT}{tenant_id}")
}

/// One change in a history partition: `{partition}` / `CHANGE#{changeId}`
/// (change ids are time-ordered ULIDs).
pub fn change(history: &str, id: &ChangeId) -> PrimaryKey {
    PrimaryKey {
        pk: history.to_string(),
        sk: format!("{CHANGE}{id}"),
    }
}

/// Sort-key prefix of the changes in a history partition.
pub fn changes_prefix() -> &'static str {
    CHANGE
}

// ---- Policies -----------------------------------------------------------------

/// `GLOBAL` / `POLICY_NAME#{name}`.
pub fn policy(name: &PolicyName) -> PrimaryKey {
    PrimaryKey {
        pk: policies_partition(),
        sk: format!("{POLICY_NAME}{name}"),
    }
}

pub fn policies_partition() -> String {
    GLOBAL.to_string()
}

/// A tenant's own policies, in one item: `TENANT#{tenantId}` /
/// `POLICY_SET`.
pub fn tenant_policies(tenant_id: &TenantId) -> PrimaryKey {
    PrimaryKey {
        pk: tenant_partition(tenant_id),
        sk: POLICY_SET.to_string(),
    }
}

/// What a decision reads of a tenant's own policies each time, beside
/// them: `TENANT#{tenantId}` / `POLICY_DIGEST`.
pub fn tenant_policy_digest(tenant_id: &TenantId) -> PrimaryKey {
    PrimaryKey {
        pk: tenant_partition(tenant_id),
        sk: POLICY_DIGEST.to_string(),
    }
}

/// `GLOBAL` / `POLICY_COUNTS`: the policy set's counts and version, beside the
/// policies (outside their `POLICY_NAME#` prefix).
pub fn policy_counts() -> PrimaryKey {
    PrimaryKey {
        pk: policies_partition(),
        sk: POLICY_COUNTS.to_string(),
    }
}

/// A caller's count of revoking writes in one scope and window:
/// `RATE#{caller digest}` / `REVOKING#{tenantId or GLOBAL}#{window}`.
pub fn revoking_writes(caller_digest: &str, tenant: Option<&TenantId>, window: u64) -> PrimaryKey {
    let scope = tenant.map_or_else(|| GLOBAL.to_string(), |t| t.to_string());
    PrimaryKey {
        pk: format!("{RATE}{caller_digest}"),
        sk: format!("{REVOKING}{scope}#{window}"),
    }
}

/// A tenant's count of revoking writes in one window, whoever made them:
/// `RATE#TENANT#{tenantId}` / `REVOKING#{window}`, or, in the set of
/// windows shifted by half a window, `REVOKING#SHIFTED#{window}`.
pub fn tenant_revoking_writes(tenant: &TenantId, window: u64, shifted: bool) -> PrimaryKey {
    let set = if shifted { "SHIFTED#" } else { "" };
    PrimaryKey {
        pk: format!("{RATE}{TENANT}{tenant}"),
        sk: format!("{REVOKING}{set}{window}"),
    }
}

/// `GLOBAL` / `REVOCATIONS`: the latest revocations, which every
/// authorizer instance reads every few seconds.
pub fn revocations() -> PrimaryKey {
    PrimaryKey {
        pk: GLOBAL.to_string(),
        sk: REVOCATIONS.to_string(),
    }
}

/// `POLICY_NAME#{prefix}`: the `begins_with` argument for listing by prefix.
pub fn policy_name_prefix(prefix: &NamePrefix) -> String {
    format!("{POLICY_NAME}{prefix}")
}

/// GSI1 on the Policy item: `POLICY#{policyId}` / same.
pub fn policy_by_id(id: &PolicyId) -> IndexKey {
    IndexKey::same(format!("{POLICY}{id}"))
}

/// The PolicyRef item: `POLICY#{policyId}` / same, on the base table (the
/// id's uniqueness guard, and a consistent lookup by id).
pub fn policy_ref(id: &PolicyId) -> PrimaryKey {
    PrimaryKey::same(format!("{POLICY}{id}"))
}

// ---- Parsing -----------------------------------------------------------------------

/// What a base-table key points at, with its typed components.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedKey {
    Tenant(TenantId),
    TenantNameGuard(TenantName),
    User(UserId),
    UserEmailGuard(Email),
    EmailAddress(UserId, EmailId),
    UserPhoneGuard(Phone),
    UserPreferredUsernameGuard(PreferredUsername),
    UserIdentityGuard(IdentityId),
    Role(RoleScope, RoleName),
    RoleRef(RoleId),
    RoleMember(RoleId, Holder),
    TenantGrant(TenantId, UserId),
    Policy(PolicyName),
    PolicyCounts,
    Revocations,
    PolicyRef(PolicyId),
    Invitation(TenantId, Email),
    InvitationRef(InvitationId),
}

/// A key string that is not one this table lays out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a key of this table: ({pk}, {sk}): {reason}")]
pub struct KeyError {
    pub pk: String,
    pub sk: String,
    pub reason: String,
}

/// Parses a base-table key back into what it identifies.
pub fn parse(pk: &str, sk: &str) -> Result<ParsedKey, KeyError> {
    let err = |reason: String| KeyError {
        pk: pk.to_string(),
        sk: sk.to_string(),
        reason,
    };
    let inv = |e: Invalid| err(e.to_string());
    let same = || {
        if pk == sk {
            Ok(())
        } else {
            Err(err("PK and SK must be equal for this item".into()))
        }
    };

    if let Some(rest) = pk.strip_prefix(TENANT_NAME) {
        same()?;
        return TenantName::parse_field("PK", rest)
            .map(ParsedKey::TenantNameGuard)
            .map_err(inv);
    }
    if let Some(tenant) = pk.strip_prefix(TENANT) {
        let tenant_id = TenantId::parse_field("PK", tenant).map_err(inv)?;
        if pk == sk {
            return Ok(ParsedKey::Tenant(tenant_id));
        }
        if let Some(user) = sk.strip_prefix(USER) {
            let user_id = UserId::parse_field("SK", user).map_err(inv)?;
            return Ok(ParsedKey::TenantGrant(tenant_id, user_id));
        }
        if let Some(email) = sk.strip_prefix(INVITATION) {
            let email = Email::parse_field("SK", email).map_err(inv)?;
            return Ok(ParsedKey::Invitation(tenant_id, email));
        }
        return Err(err("unknown sort key in a tenant partition".into()));
    }
    if let Some(rest) = pk.strip_prefix(USER_EMAIL) {
        same()?;
        return Email::parse_field("PK", rest)
            .map(ParsedKey::UserEmailGuard)
            .map_err(inv);
    }
    if let Some(rest) = pk.strip_prefix(USER_PHONE) {
        same()?;
        return Phone::parse_field("PK", rest)
            .map(ParsedKey::UserPhoneGuard)
            .map_err(inv);
    }
    if let Some(rest) = pk.strip_prefix(USER_IDENTITY) {
        same()?;
        return IdentityId::parse_field("PK", rest)
            .map(ParsedKey::UserIdentityGuard)
            .map_err(inv);
    }
    if let Some(rest) = pk.strip_prefix(USER_PREFERREDUSERNAME) {
        same()?;
        return PreferredUsername::parse_field("PK", rest)
            .map(ParsedKey::UserPreferredUsernameGuard)
            .map_err(inv);
    }
    if let Some(rest) = pk.strip_prefix(USER) {
        let user_id = UserId::parse_field("PK", rest).map_err(inv)?;
        if let Some(email) = sk.strip_prefix(EMAIL) {
            let email_id = EmailId::parse_field("SK", email).map_err(inv)?;
            return Ok(ParsedKey::EmailAddress(user_id, email_id));
        }
        same()?;
        return Ok(ParsedKey::User(user_id));
    }
    if let Some(scope) = pk.strip_prefix(ROLE_SCOPE) {
        let scope = RoleScope::parse_field("PK", scope).map_err(inv)?;
        let name = sk
            .strip_prefix(ROLE_NAME)
            .ok_or_else(|| err("a role's SK starts with ROLE_NAME#".into()))?;
        let name = RoleName::parse_field("SK", name).map_err(inv)?;
        return Ok(ParsedKey::Role(scope, name));
    }
    if let Some(role) = pk.strip_prefix(ROLE) {
        let role_id = RoleId::parse_field("PK", role).map_err(inv)?;
        if pk == sk {
            return Ok(ParsedKey::RoleRef(role_id));
        }
        if let Some(user) = sk.strip_prefix(MEMBER_GLOBAL_USER) {
            let user_id = UserId::parse_field("SK", user).map_err(inv)?;
            return Ok(ParsedKey::RoleMember(role_id, Holder::Global { user_id }));
        }
        if let Some(rest) = sk.strip_prefix(MEMBER_TENANT) {
            let (tenant, user) = rest
                .split_once(&format!("#{USER}"))
                .ok_or_else(|| err("a tenant member link's SK is MEMBER#TENANT#t#USER#u".into()))?;
            let tenant_id = TenantId::parse_field("SK", tenant).map_err(inv)?;
            let user_id = UserId::parse_field("SK", user).map_err(inv)?;
            return Ok(ParsedKey::RoleMember(
                role_id,
                Holder::Grant { tenant_id, user_id },
            ));
        }
        return Err(err("unknown sort key in a role partition".into()));
    }
    if let Some(rest) = pk.strip_prefix(INVITATION) {
        same()?;
        return InvitationId::parse_field("PK", rest)
            .map(ParsedKey::InvitationRef)
            .map_err(inv);
    }
    if let Some(rest) = pk.strip_prefix(POLICY) {
        same()?;
        return PolicyId::parse_field("PK", rest)
            .map(ParsedKey::PolicyRef)
            .map_err(inv);
    }
    if pk == GLOBAL {
        if sk == POLICY_COUNTS {
            return Ok(ParsedKey::PolicyCounts);
        }
        if sk == REVOCATIONS {
            return Ok(ParsedKey::Revocations);
        }
        let name = sk
            .strip_prefix(POLICY_NAME)
            .ok_or_else(|| err("a policy's SK starts with POLICY_NAME#".into()))?;
        return PolicyName::parse_field("SK", name)
            .map(ParsedKey::Policy)
            .map_err(inv);
    }
    Err(err("unknown partition key prefix".into()))
}

#[cfg(test)]
mod tests;
