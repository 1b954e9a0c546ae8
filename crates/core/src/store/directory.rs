//! A tenant's directory (SCIM): its bearer tokens, created, listed,
//! revoked and checked in one read; and the people it provisions, kept in
//! the tenant with their unique values guarded in the same transaction,
//! and the membership of the member each one is, suspended and restored.

use std::collections::{BTreeSet, HashMap};

use futures::StreamExt;

use rand::RngCore;
use sha2::{Digest, Sha256};

use super::grants::{GrantPrecondition, GrantRoles, Record};
use super::page::ListScope;
use super::tenant_admins::{ADMINISTERS, LEFT_WITHOUT_ADMIN};
use super::write::actor_string;
use crate::clock::{now, now_seconds};
use crate::error::{Error, Resource, Result};
use crate::model::input::GrantSpec;
use crate::model::items::{
    hex_digest, DirectoryEmail, DirectoryGroup, DirectoryToken, DirectoryUser, DirectoryValue,
    Entity, Role, Stamp, Tenant, TenantGrant, User, USER_NAME, WORK_EMAIL,
};
use crate::model::keys;
use crate::model::values::{
    any_covers, DirectoryTokenId, DirectoryUserId, Email, Permission, RoleId, TenantId,
    TenantStatus, UserId, UserStatus,
};
use crate::policy::ceiling::Caller;
use crate::store::history::HistoryOf;
use crate::store::txn::Transaction;
use crate::store::Store;

/// What every directory token starts with: a JWT never does.
pub const TOKEN_PREFIX: &str = "scim_";

/// What creating, using and revoking a directory's token takes.
const MEMBER_WRITE: &str = "member:write";

/// Most tokens a tenant's directory may hold at once.
pub const TOKENS_PER_TENANT_MAX: usize = 10;

/// A token as presented: `scim_{tenantId}_{tokenId}_{secret}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PresentedToken {
    pub tenant_id: TenantId,
    pub token_id: DirectoryTokenId,
    secret: String,
}

impl PresentedToken {
    /// The parts of a directory token; `None` for anything else.
    pub fn parse(token: &str) -> Option<Self> {
        let rest = token.strip_prefix(TOKEN_PREFIX)?;
        let mut parts = rest.splitn(3, '_');
        let tenant_id = TenantId::parse(parts.next()?).ok()?;
        let token_id = DirectoryTokenId::parse(parts.next()?).ok()?;
        let secret = parts.next()?;
        (secret.len() >= 32).then(|| Self {
            tenant_id,
            token_id,
            secret: secret.to_string(),
        })
    }

    /// Whether `token` stores this token's secret.
    fn matches(&self, token: &DirectoryToken) -> bool {
        let digest = hex_digest(&Sha256::digest(self.secret.as_bytes()));
        // Both are digests of secrets: comparing them leaks nothing of one.
        token.tenant_id == self.tenant_id
            && token.token_id == self.token_id
            && token.secret_digest == digest
    }
}

/// What a directory says of a person, checked by the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryPerson {
    pub user_name: String,
    pub external_id: Option<String>,
    pub given_name: Option<String>,
    pub family_name: Option<String>,
    pub display_name: Option<String>,
    pub emails: Vec<DirectoryEmail>,
    /// `None` when the directory says nothing of it: active (RFC 7643's
    /// default, what a `PUT` without it or a `remove` of it leaves).
    pub active: Option<bool>,
}

impl Store {
    /// A new token for `tenant_id`'s directory: the item (the secret's
    /// digest only) and the token, which is never stored or shown again.
    /// `StateConflict { tokens }` past [`TOKENS_PER_TENANT_MAX`].
    pub async fn create_directory_token(
        &self,
        tenant_id: &TenantId,
        name: &str,
        expires_at: Option<u64>,
        caller: &Caller,
    ) -> Result<(DirectoryToken, String)> {
        // A token removes members for as long as it lasts: no longer than
        // its creator may (`Forbidden` naming `member:write`).
        let write = Permission::parse(MEMBER_WRITE).expect("a permission");
        caller.may_give([&write], expires_at)?;
        // Every token of a directory may give every role its groups map
        // (see `Store::map_directory_group`): its creator must hold them
        // all, and what the permits matching them permit, without end.
        let mapped = self.mapped_roles(tenant_id).await?;
        caller.may_give_roles(&mapped, Some(tenant_id), None)?;
        let held = self.directory_tokens(tenant_id).await?;
        if held.len() >= TOKENS_PER_TENANT_MAX {
            return Err(Error::state_conflict(
                "tokens",
                format!(
                    "a tenant's directory holds at most {TOKENS_PER_TENANT_MAX} tokens: revoke one first"
                ),
            ));
        }
        let mut secret = [0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        let secret = hex_digest(&secret);
        let at = now();
        let token = DirectoryToken {
            token_id: DirectoryTokenId::generate(),
            tenant_id: *tenant_id,
            name: name.to_string(),
            secret_digest: hex_digest(&Sha256::digest(secret.as_bytes())),
            expires_at,
            created_by: actor_string(caller.id()),
            ceiling: caller.delegated(),
            stamp: Stamp::new(&at),
        };
        let mut txn = self.transaction();
        txn.require_live(&keys::tenant(tenant_id), Resource::Tenant)?
            .create(&token, "tokenId")?
            .record_change(HistoryOf::Tenant(*tenant_id), None, Some(&token), Some(1))?;
        txn.execute(self).await?;
        let bearer = format!("{TOKEN_PREFIX}{tenant_id}_{}_{secret}", token.token_id);
        Ok((token, bearer))
    }

    /// The tenant's live directory tokens (at most
    /// [`TOKENS_PER_TENANT_MAX`]), oldest first.
    pub async fn directory_tokens(&self, tenant_id: &TenantId) -> Result<Vec<DirectoryToken>> {
        let at = now_seconds();
        let mut all = self.directory_tokens_all(tenant_id).await?;
        all.retain(|t| !t.expired_at(at));
        Ok(all)
    }

    /// The tenant's directory tokens, those that ended awaiting TTL too.
    pub(crate) async fn directory_tokens_all(
        &self,
        tenant_id: &TenantId,
    ) -> Result<Vec<DirectoryToken>> {
        let partition = keys::tenant_partition(tenant_id);
        self.query_all(ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::directory_tokens_prefix()),
        })
        .await
    }

    /// Revokes a token: deleted, with the tenant recorded in the
    /// revocation log so every cached answer resting on it goes.
    /// `NotFound { DirectoryToken }` when there is none.
    pub async fn revoke_directory_token(
        &self,
        tenant_id: &TenantId,
        token_id: &DirectoryTokenId,
    ) -> Result<()> {
        let token = self
            .get::<DirectoryToken>(&keys::directory_token(tenant_id, token_id), true)
            .await?
            .ok_or_else(|| Error::not_found(Resource::DirectoryToken))?;
        let mut txn = self.transaction();
        txn.delete_current(&token, Resource::DirectoryToken)?
            .record_change(
                HistoryOf::Tenant(*tenant_id),
                Some(&token),
                None,
                Some(token.stamp.version),
            )?;
        txn.execute(self).await
    }

    /// The stored token a presented one is, if it is a live tenant's and
    /// has not ended: one BatchGetItem of the tenant and the token.
    pub async fn directory_credential(
        &self,
        presented: &PresentedToken,
    ) -> Result<Option<DirectoryToken>> {
        let tenant_key = keys::tenant(&presented.tenant_id);
        let token_key = keys::directory_token(&presented.tenant_id, &presented.token_id);
        let mut found = self
            .batch_get(&[tenant_key.clone(), token_key.clone()], true)
            .await?;
        let tenant = found
            .remove(&tenant_key)
            .map(Tenant::from_item)
            .transpose()?;
        let token = found
            .remove(&token_key)
            .map(DirectoryToken::from_item)
            .transpose()?;
        let live = tenant.is_some_and(|t| t.status == TenantStatus::Active);
        Ok(token.filter(|t| live && presented.matches(t) && !t.expired_at(now_seconds())))
    }
}

impl Store {
    /// Whether `user_id` may manage `tenant_id`'s members now: active, and
    /// holding `member:write` there through a live grant or their global
    /// roles ([`Store::held_in`]: one consistent BatchGetItem): a
    /// directory's token lasts no longer than its creator may.
    pub async fn may_manage_members(&self, tenant_id: &TenantId, user_id: &UserId) -> Result<bool> {
        let held = self.held_in(tenant_id, user_id).await?;
        Ok(held
            .holdings
            .iter()
            .any(|h| any_covers(&h.permissions, MEMBER_WRITE)))
    }

    /// A person of the tenant's directory, by SCIM id (consistent).
    pub async fn directory_user(
        &self,
        tenant_id: &TenantId,
        id: &DirectoryUserId,
    ) -> Result<Option<DirectoryUser>> {
        self.get(&keys::directory_user(tenant_id, id), true).await
    }

    /// The person holding `value` of `attribute` (`userName`,
    /// `externalId`, `email`) in the tenant's directory: its guard, then
    /// the person (two GetItems).
    pub async fn directory_user_by(
        &self,
        tenant_id: &TenantId,
        attribute: &str,
        value: &str,
    ) -> Result<Option<DirectoryUser>> {
        let compared = match attribute {
            crate::model::items::EXTERNAL_ID => value.to_string(),
            _ => value.to_lowercase(),
        };
        let key = keys::directory_value_guard(
            tenant_id,
            attribute,
            &DirectoryValue::digest_of(&compared),
        );
        let Some(guard) = self.get::<DirectoryValue>(&key, true).await? else {
            return Ok(None);
        };
        match DirectoryUserId::parse(&guard.id) {
            Ok(id) => self.directory_user(tenant_id, &id).await,
            Err(_) => Ok(None),
        }
    }

    /// Every person of the tenant's directory, in id (creation) order.
    /// A window of the tenant's directory in id order (`skip`, `take`), and
    /// how many persons it holds (`Store::query_window`).
    pub async fn directory_users_window(
        &self,
        tenant_id: &TenantId,
        skip: usize,
        take: usize,
    ) -> Result<(Vec<DirectoryUser>, usize)> {
        let partition = keys::tenant_partition(tenant_id);
        let scope = ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::directory_users_prefix()),
        };
        self.query_window(scope, skip, take).await
    }

    pub async fn directory_users(&self, tenant_id: &TenantId) -> Result<Vec<DirectoryUser>> {
        let partition = keys::tenant_partition(tenant_id);
        self.query_all(ListScope {
            index: None,
            partition: &partition,
            sort_prefix: Some(keys::directory_users_prefix()),
        })
        .await
    }

    /// Provisions a person: their record and unique values in one
    /// transaction (`Conflict { userName | externalId | email }` when
    /// another person of the directory holds one), the member they are
    /// found to be, and that membership suspended if they arrive inactive.
    pub async fn create_directory_user(
        &self,
        tenant_id: &TenantId,
        person: &DirectoryPerson,
        caller: &Caller,
    ) -> Result<DirectoryUser> {
        let at = now();
        let record = DirectoryUser {
            id: DirectoryUserId::generate(),
            tenant_id: *tenant_id,
            user_name: person.user_name.clone(),
            external_id: person.external_id.clone(),
            given_name: person.given_name.clone(),
            family_name: person.family_name.clone(),
            display_name: person.display_name.clone(),
            emails: person.emails.clone(),
            active: person.active,
            user_id: None,
            held: false,
            held_roles: Vec::new(),
            held_until: None,
            given_roles: Vec::new(),
            stamp: Stamp::new(&at),
            updated_by: actor_string(caller.id()),
        };
        let (record, grant) = self.member_and_grant(record).await?;
        let write = |grant: Option<&TenantGrant>| {
            let mut record = record.clone();
            hold_if_suspended(&mut record, grant);
            let mut txn = self.transaction();
            txn.require_live(&keys::tenant(tenant_id), Resource::Tenant)?
                .create(&record, "id")?;
            for (attribute, value) in unique_values(&record) {
                txn.create(&guard(&record, attribute, &value, &at), attribute)?;
            }
            txn.record_change(HistoryOf::Tenant(*tenant_id), None, Some(&record), Some(1))?;
            Ok((record, Some(txn)))
        };
        self.commit_person(grant, caller, write).await
    }

    /// Replaces what the directory says of a person (`expected`: the
    /// record as read, whose version the write is conditioned on), with
    /// their unique values moved in the same transaction, then suspends
    /// or restores their membership as `active` says.
    pub async fn replace_directory_user(
        &self,
        expected: &DirectoryUser,
        person: &DirectoryPerson,
        caller: &Caller,
    ) -> Result<DirectoryUser> {
        let at = now();
        let record = DirectoryUser {
            user_name: person.user_name.clone(),
            external_id: person.external_id.clone(),
            given_name: person.given_name.clone(),
            family_name: person.family_name.clone(),
            display_name: person.display_name.clone(),
            emails: person.emails.clone(),
            active: person.active,
            stamp: expected.stamp.next(&at),
            updated_by: actor_string(caller.id()),
            ..expected.clone()
        };
        let (record, grant) = self.member_and_grant(record).await?;
        let before: BTreeSet<_> = unique_values(expected).into_iter().collect();
        let after: BTreeSet<_> = unique_values(&record).into_iter().collect();
        let write = |grant: Option<&TenantGrant>| {
            let mut record = record.clone();
            hold_if_suspended(&mut record, grant);
            let mut txn = self.transaction();
            txn.replace(&record, expected.stamp.version, Resource::DirectoryUser)?;
            for (attribute, value) in before.difference(&after) {
                release(&mut txn, expected, attribute, value, &at)?;
            }
            for (attribute, value) in after.difference(&before) {
                txn.create(&guard(&record, attribute, value, &at), attribute)?;
            }
            txn.record_change(
                HistoryOf::Tenant(record.tenant_id),
                Some(expected),
                Some(&record),
                Some(record.stamp.version),
            )?;
            Ok((record, Some(txn)))
        };
        self.commit_person(grant, caller, write).await
    }

    /// Commits a person's record as `write` builds it for their grant,
    /// then settles their membership. An inactive record ends the grant
    /// in the same transaction (its roles held in the record as the grant
    /// is when it ends): a suspension refused (a conflict, the revoking
    /// limit) changes nothing, so the directory's retry finds the person
    /// as they were, and one that commits leaves no grant behind.
    async fn commit_person(
        &self,
        grant: Option<TenantGrant>,
        caller: &Caller,
        write: impl Fn(Option<&TenantGrant>) -> Result<(DirectoryUser, Option<Transaction>)>,
    ) -> Result<DirectoryUser> {
        let (record, txn) = write(grant.as_ref())?;
        if record.is_active() || grant.is_none() {
            if let Some(txn) = txn {
                txn.execute(self).await?;
            }
            return self.settle_membership(record, grant, caller).await;
        }
        self.end_grant_with(grant, Record::Change, Some(caller), write)
            .await
    }

    /// Deprovisions a person: their record and unique values, and their
    /// membership in this tenant (and nothing of theirs anywhere else).
    pub async fn delete_directory_user(
        &self,
        expected: &DirectoryUser,
        caller: &Caller,
    ) -> Result<()> {
        let at = now();
        let mut txn = self.transaction();
        txn.delete_current(expected, Resource::DirectoryUser)?;
        for (attribute, value) in unique_values(expected) {
            release(&mut txn, expected, attribute, &value, &at)?;
        }
        txn.record_change(
            HistoryOf::Tenant(expected.tenant_id),
            Some(expected),
            None,
            Some(expected.stamp.version),
        )?;
        // The record goes with the membership, in one transaction: a
        // refused delete leaves both for the directory's retry to find.
        // The member is the one a write of the person would find now (a
        // member who came to hold its address since, the link to a user
        // deleted since dropped): deleting a person ends what
        // deactivating them would.
        let (_, grant) = self.member_and_grant(expected.clone()).await?;
        self.end_grant_with(grant, Record::Change, Some(caller), |_| {
            Ok(((), Some(txn.clone())))
        })
        .await
    }

    /// `record` with the member it is now, and that member's grant here
    /// (read consistently): the user it is linked to while that user is
    /// there; otherwise (never linked, or linked to a user deleted since)
    /// whom [`Store::member_of`] finds. A link to a user who is gone is
    /// dropped with what it kept for them (held and given roles were that
    /// user's, never another's). The user is read only when the linked
    /// member has no grant here.
    async fn member_and_grant(
        &self,
        mut record: DirectoryUser,
    ) -> Result<(DirectoryUser, Option<TenantGrant>)> {
        if record.user_id.is_some() {
            let grant = self.grant_of(&record).await?;
            if grant.is_some() || !self.linked_user_gone(&record).await? {
                return Ok((record, grant));
            }
            record = unlinked(record);
        }
        record.user_id = self.member_of(&record.tenant_id, &record).await?;
        let grant = self.grant_of(&record).await?;
        Ok((record, grant))
    }

    /// Whether the user a person is linked to is gone: deleted, or being
    /// deleted (their id is never anyone's again).
    async fn linked_user_gone(&self, record: &DirectoryUser) -> Result<bool> {
        let Some(user_id) = record.user_id else {
            return Ok(false);
        };
        let user = self.get::<User>(&keys::user(&user_id), true).await?;
        Ok(user.is_none_or(|u| u.status == UserStatus::Deleting))
    }

    /// The member of the tenant a person is: a user whose verified
    /// primary address is one the directory asserts, with a grant in the
    /// tenant, and whom no other person of the directory is already. An
    /// address the directory asserts never finds anyone else: not a user
    /// who merely holds it, nor one who is no member here.
    async fn member_of(
        &self,
        tenant_id: &TenantId,
        record: &DirectoryUser,
    ) -> Result<Option<UserId>> {
        for address in record.addresses() {
            let Ok(email) = Email::parse(&address) else {
                continue;
            };
            let Some(user) = self.user_by_verified_primary(&email).await? else {
                continue;
            };
            if self.tenant_grant(tenant_id, &user.user_id).await?.is_none() {
                continue;
            }
            let taken = self
                .directory_user_by(tenant_id, MEMBER, &user.user_id.to_string())
                .await?
                .is_some_and(|other| other.id != record.id);
            if !taken {
                return Ok(Some(user.user_id));
            }
        }
        Ok(None)
    }

    /// Links a member who joined the tenant after its directory wrote
    /// them, without waiting for the directory's next write of them (what
    /// recompute does with a grant's first stream record): the unlinked,
    /// active person whose `userName` or an address is the member's
    /// primary address is linked (the rules of [`Store::member_of`]: a
    /// verified primary address, no other person of the directory that
    /// member already) and settled, given the roles its groups map as far
    /// as each group's last change's author may give them (its `ceiling`).
    /// `Some` with the person linked;
    /// `None` when nobody of the directory is the member, the person is
    /// someone's already, or inactive.
    pub async fn link_joiner(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
    ) -> Result<Option<DirectoryUserId>> {
        let Some(user) = self.get::<User>(&keys::user(user_id), true).await? else {
            return Ok(None);
        };
        let address = user.email.to_string().to_lowercase();
        let mut person = None;
        for attribute in [USER_NAME, WORK_EMAIL] {
            person = self
                .directory_user_by(tenant_id, attribute, &address)
                .await?;
            if person.is_some() {
                break;
            }
        }
        let Some(person) = person.filter(|p| p.is_active()) else {
            return Ok(None);
        };
        if person.user_id.is_some() && !self.linked_user_gone(&person).await? {
            return Ok(None);
        }
        // As the groups that hold the person gave: their authors' ceilings.
        let groups = self.directory_groups(tenant_id).await?;
        let ceiling: Vec<_> = super::directory_groups::groups_of(&person, &groups)
            .filter(|g| !g.roles.is_empty())
            .flat_map(|g| g.ceiling.iter().cloned())
            .collect();
        let caller = Caller::holding("directory link", ceiling);
        let context = crate::store::history::ChangeContext {
            modified_by: Some("directory link".into()),
            reason: Some("the member joined after the directory provisioned them".into()),
            platform: false,
        };
        let given = self.roles_given(&groups).await?;
        let settled = self.settle_people_with(tenant_id, [person.id], &caller, &given);
        let settling = self.settling(*tenant_id, settled);
        Box::pin(crate::store::history::with_context(context, settling)).await?;
        let linked = self.directory_user(tenant_id, &person.id).await?;
        Ok(linked.filter(|p| p.user_id == Some(*user_id)).map(|p| p.id))
    }

    /// `record` linked to the member it is found to be now, if it was not
    /// (someone who joined the tenant after the directory wrote them,
    /// whose group the directory now pushes), or was linked to a user
    /// who is gone since: the record replaced with the link and its guard,
    /// held to the version read; with that member's grant. Unchanged when
    /// no other member is found, or when another write of the person got
    /// there first (that write looked for the member itself).
    async fn linked_now(
        &self,
        record: DirectoryUser,
        caller: &Caller,
    ) -> Result<(DirectoryUser, Option<TenantGrant>)> {
        let (found, grant) = if record.is_active() {
            self.member_and_grant(record.clone()).await?
        } else if self.linked_user_gone(&record).await? {
            // An inactive person is linked by their directory's next write
            // of them, not here; a link to a user who is gone is dropped.
            (unlinked(record.clone()), None)
        } else {
            let grant = self.grant_of(&record).await?;
            return Ok((record, grant));
        };
        if found.user_id == record.user_id {
            return Ok((record, grant));
        }
        let at = now();
        let linked = DirectoryUser {
            stamp: record.stamp.next(&at),
            updated_by: actor_string(caller.id()),
            ..found
        };
        let mut txn = self.transaction();
        txn.replace(&linked, record.stamp.version, Resource::DirectoryUser)?;
        if let Some(gone) = record.user_id {
            release(
                &mut txn,
                &record,
                MEMBER,
                &gone.to_string().to_lowercase(),
                &at,
            )?;
        }
        if let Some(user_id) = linked.user_id {
            txn.create(
                &guard(&linked, MEMBER, &user_id.to_string().to_lowercase(), &at),
                MEMBER,
            )?;
        }
        txn.record_change(
            HistoryOf::Tenant(record.tenant_id),
            Some(&record),
            Some(&linked),
            Some(linked.stamp.version),
        )?;
        match txn.execute(self).await {
            Ok(()) => Ok((linked, grant)),
            Err(Error::PreconditionFailed { .. } | Error::Conflict { .. }) => {
                let grant = self.grant_of(&record).await?;
                Ok((record, grant))
            }
            Err(e) => Err(e),
        }
    }

    /// The grant of the member a person is, consistently.
    async fn grant_of(&self, record: &DirectoryUser) -> Result<Option<TenantGrant>> {
        match record.user_id {
            None => Ok(None),
            Some(user) => {
                self.get(&keys::tenant_grant(&record.tenant_id, &user), true)
                    .await
            }
        }
    }

    /// Brings the member's grant where the record says: removed while
    /// inactive (its roles held in the record), given back with the held
    /// roles when active again, and holding the roles of the groups they
    /// are in (as a tenant administrator mapped them) while dropping those
    /// the directory gave and no longer does. Each change is a grant write
    /// like any other: history, recompute, and a revocation when it takes
    /// something away.
    pub(crate) async fn settle_membership(
        &self,
        record: DirectoryUser,
        grant: Option<TenantGrant>,
        caller: &Caller,
    ) -> Result<DirectoryUser> {
        let groups = if record.user_id.is_some() && record.is_active() {
            self.group_roles(&record.tenant_id).await?
        } else {
            GroupRoles::default()
        };
        self.settle_with(record, grant, caller, &groups).await
    }

    /// [`Store::settle_membership`] with what the tenant's groups give
    /// read already. Another settle of the same person (recompute's, from
    /// the stream record of the change this one settles) may commit
    /// first: the person has moved since it was read, and this one
    /// settles again from what that one left (settling is idempotent), so
    /// the request that entailed it never fails for it.
    async fn settle_with(
        &self,
        record: DirectoryUser,
        grant: Option<TenantGrant>,
        caller: &Caller,
        groups: &GroupRoles,
    ) -> Result<DirectoryUser> {
        let (mut record, mut grant, mut attempt) = (record, grant, 1);
        loop {
            let settled = Box::pin(self.settle_once(record.clone(), grant, caller, groups)).await;
            match settled {
                Err(Error::PreconditionFailed {
                    resource: Resource::DirectoryUser,
                }) if attempt < SETTLE_ATTEMPTS => {
                    let Some(fresh) = self.directory_user(&record.tenant_id, &record.id).await?
                    else {
                        return Ok(record);
                    };
                    grant = self.grant_of(&fresh).await?;
                    record = fresh;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    /// One settle of [`Store::settle_with`], from `record` as read.
    async fn settle_once(
        &self,
        record: DirectoryUser,
        grant: Option<TenantGrant>,
        caller: &Caller,
        groups: &GroupRoles,
    ) -> Result<DirectoryUser> {
        let Some(user_id) = record.user_id else {
            return Ok(record);
        };
        if !record.is_active() {
            if let Some(grant) = grant {
                self.delete_grant_record(grant, Record::Change, Some(caller))
                    .await?;
            }
            return Ok(record);
        }
        // The write is the operator's, recorded as the caller's: the held
        // roles were the member's before, and a role the groups add is
        // checked here against the caller's ceiling. It is one of the
        // tenant's own (the directory acts for the tenant): it never takes
        // the last administrator's member:write away.
        let acting = Caller::operator(caller.id().unwrap_or("scim")).as_admin_of(record.tenant_id);
        let grant = match grant {
            // A membership whose end has passed while suspended is over:
            // nothing is given back (never for longer than it was held).
            // Given back only if nobody made them a member meanwhile (an
            // invitation accepted, an administrator): a grant made since
            // is theirs, never replaced by the held roles.
            None if record.held && record.held_until.is_none_or(|end| end > now_seconds()) => {
                let held = self.live_roles(record.held_roles.iter().copied()).await?;
                let spec = GrantSpec {
                    roles: held.iter().map(|r| r.role_id).collect(),
                    expires_at: record.held_until,
                };
                let given = self.put_grant(
                    &record.tenant_id,
                    &user_id,
                    &spec,
                    GrantPrecondition::Absent,
                    &acting,
                );
                match Box::pin(given).await {
                    Ok(written) => Some(written.grant),
                    Err(Error::AlreadyExists { .. }) => self.grant_of(&record).await?,
                    Err(e) => return Err(e),
                }
            }
            other => other,
        };
        // A mapping gives what its administrator held; a role the grant
        // lacks is added only as far as the caller may give it too (a
        // directory's token, what its creator held): the rest is withheld.
        let mut desired: Vec<RoleId> = match &grant {
            Some(grant) => groups
                .of(&record.id)
                .into_iter()
                .filter(|role| grant.roles.contains(role) || groups.given_by(caller, role, grant))
                .collect(),
            None => groups.of(&record.id),
        };
        let mut kept_administration = false;
        loop {
            let changes = record.held || record.given_roles != desired;
            let settled = DirectoryUser {
                held: false,
                held_roles: Vec::new(),
                held_until: None,
                given_roles: desired.clone(),
                stamp: record.stamp.next(&now()),
                ..record.clone()
            };
            let write_record = |txn: &mut Transaction| -> Result<()> {
                if changes {
                    txn.replace(&settled, record.stamp.version, Resource::DirectoryUser)?;
                }
                Ok(())
            };
            if let Some(grant) = &grant {
                let stale: Vec<RoleId> = record
                    .given_roles
                    .iter()
                    .filter(|r| !desired.contains(r))
                    .copied()
                    .collect();
                let moves = grant.roles.iter().any(|r| stale.contains(r))
                    || desired.iter().any(|r| !grant.roles.contains(r));
                if moves {
                    // The grant and the person in one transaction, the
                    // roles worked out from the grant as the write reads
                    // it and the person held to the version read: a
                    // settle that raced another (the request's and
                    // recompute's) changes nothing and is retried, never
                    // leaving a role nobody takes back.
                    let roles = GrantRoles::Settling(&stale, &desired);
                    // Boxed: the write's future is large, and a group's
                    // change settles eight at once.
                    let write =
                        self.write_grant(&record.tenant_id, &user_id, roles, &acting, write_record);
                    match Box::pin(write).await {
                        Ok(_) => return Ok(if changes { settled } else { record }),
                        Err(Error::NotFound {
                            resource: Resource::TenantGrant,
                        }) => {}
                        // The tenant's last administrator keeps the roles
                        // that make them one (still counted as given, so a
                        // later settle takes them once another
                        // administrator exists); the rest go.
                        // Only roles the grant holds are kept: none is
                        // given back that someone removed by hand.
                        Err(e @ Error::StateConflict { .. })
                            if !kept_administration && is_last_admin(&e) =>
                        {
                            let administering: Vec<RoleId> = self
                                .live_roles(stale.iter().copied())
                                .await?
                                .into_iter()
                                .filter(|r| any_covers(&r.permissions, ADMINISTERS))
                                .map(|r| r.role_id)
                                .filter(|r| grant.roles.contains(r))
                                .collect();
                            if administering.is_empty() {
                                return Err(e);
                            }
                            tracing::warn!(
                                tenant = %record.tenant_id,
                                user = %user_id,
                                "a directory change would leave the tenant without an administrator: the roles that make them one are kept"
                            );
                            desired.extend(administering);
                            kept_administration = true;
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            if !changes {
                return Ok(record);
            }
            let mut txn = self.transaction();
            write_record(&mut txn)?;
            txn.execute(self).await?;
            return Ok(settled);
        }
    }

    /// Those of `roles` that still exist, once each, in order: a role
    /// deleted since a group was mapped to it gives nothing.
    async fn live_roles(&self, roles: impl Iterator<Item = RoleId>) -> Result<Vec<Role>> {
        let mut live: Vec<Role> = Vec::new();
        for id in roles {
            if live.iter().any(|r| r.role_id == id) {
                continue;
            }
            if let Some(role) = self.role_by_id_consistent(&id).await? {
                live.push(role);
            }
        }
        Ok(live)
    }

    /// What the tenant's groups give each person: the groups are read
    /// once, and each mapped role's existence once.
    async fn group_roles(&self, tenant_id: &TenantId) -> Result<GroupRoles> {
        let groups = self.directory_groups(tenant_id).await?;
        self.roles_given(&groups).await
    }

    /// What `groups` give each person, each mapped role's existence read
    /// once.
    async fn roles_given(&self, groups: &[DirectoryGroup]) -> Result<GroupRoles> {
        let live = self
            .live_roles(groups.iter().flat_map(|g| g.roles.iter().copied()))
            .await?;
        let mut given: HashMap<DirectoryUserId, Vec<RoleId>> = HashMap::new();
        for group in groups {
            let roles: Vec<RoleId> = group
                .roles
                .iter()
                .filter(|r| live.iter().any(|l| l.role_id == **r))
                .copied()
                .collect();
            if roles.is_empty() {
                continue;
            }
            for person in group.people() {
                let theirs = given.entry(person).or_default();
                for role in &roles {
                    if !theirs.contains(role) {
                        theirs.push(*role);
                    }
                }
            }
        }
        Ok(GroupRoles { given, live })
    }

    /// Settles the membership of each of `people` (those still there),
    /// [`SETTLE_CONCURRENCY`] at a time, over one read of what the
    /// tenant's groups give. Called within [`Store::settling`] by the
    /// write that entails it, so a large group's change is one revoking
    /// write, not one per member.
    pub(crate) async fn settle_people(
        &self,
        tenant_id: &TenantId,
        people: impl IntoIterator<Item = DirectoryUserId>,
        caller: &Caller,
    ) -> Result<()> {
        let groups = self.group_roles(tenant_id).await?;
        self.settle_people_with(tenant_id, people, caller, &groups)
            .await
    }

    /// [`Store::settle_people`] with what the tenant's groups give read
    /// already.
    async fn settle_people_with(
        &self,
        tenant_id: &TenantId,
        people: impl IntoIterator<Item = DirectoryUserId>,
        caller: &Caller,
        groups: &GroupRoles,
    ) -> Result<()> {
        // Every settle runs to its end, even past another's failure: one
        // dropped mid-flight could commit its grant without recording
        // whom it took something from.
        let settled: Vec<Result<()>> = futures::stream::iter(people)
            .map(|id| async move {
                let Some(record) = self.directory_user(tenant_id, &id).await? else {
                    return Ok(());
                };
                let (record, grant) = self.linked_now(record, caller).await?;
                Box::pin(self.settle_with(record, grant, caller, groups)).await?;
                Ok(())
            })
            .buffer_unordered(SETTLE_CONCURRENCY)
            .collect()
            .await;
        settled.into_iter().collect()
    }
}

/// How many members' grants one group change settles at once.
const SETTLE_CONCURRENCY: usize = 8;

/// How many times one person's settle starts again from a fresh read
/// when another settle of them committed first.
const SETTLE_ATTEMPTS: u32 = 5;

/// The roles the tenant's groups give each person they hold, in the order
/// the groups and their mappings name them, once each, deleted roles left
/// out; and those roles as they are.
#[derive(Debug, Default)]
struct GroupRoles {
    given: HashMap<DirectoryUserId, Vec<RoleId>>,
    live: Vec<Role>,
}

impl GroupRoles {
    fn of(&self, person: &DirectoryUserId) -> Vec<RoleId> {
        self.given.get(person).cloned().unwrap_or_default()
    }

    /// Whether `caller` may add `role` to `grant` (for as long as the
    /// grant lasts); a role it may not is withheld, and logged.
    fn given_by(&self, caller: &Caller, role: &RoleId, grant: &TenantGrant) -> bool {
        let Some(role) = self.live.iter().find(|r| r.role_id == *role) else {
            return false;
        };
        let allowed = caller
            .may_give_roles([role], Some(&grant.tenant_id), grant.expires_at)
            .is_ok();
        if !allowed {
            tracing::warn!(
                role = %role.role_id,
                caller = caller.id().unwrap_or_default(),
                "a directory group's role withheld: the caller may not give it"
            );
        }
        allowed
    }
}

/// The attribute that keeps one member to one person of the directory.
const MEMBER: &str = "member";

/// A person's unique values, with the member they are.
pub(crate) fn unique_values(record: &DirectoryUser) -> Vec<(&'static str, String)> {
    let mut values = record.unique_values();
    if let Some(user) = record.user_id {
        // Compared as `directory_user_by` compares it: lower case.
        values.push((MEMBER, user.to_string().to_lowercase()));
    }
    values
}

fn guard(record: &DirectoryUser, attribute: &str, value: &str, at: &str) -> DirectoryValue {
    DirectoryValue {
        tenant_id: record.tenant_id,
        attribute: attribute.to_string(),
        digest: DirectoryValue::digest_of(value),
        id: record.id.to_string(),
        stamp: Stamp::new(at),
    }
}

/// Adds to `txn` the delete of `record`'s guard of `value`, held to its
/// owner.
fn release(
    txn: &mut Transaction,
    record: &DirectoryUser,
    attribute: &str,
    value: &str,
    at: &str,
) -> Result<()> {
    let key = guard(record, attribute, value, at).key();
    txn.delete_owned(
        &key,
        "id",
        &record.id.to_string(),
        Error::internal("a directory value guard changed owner"),
    )?;
    Ok(())
}

/// Whether a grant write was refused for leaving the tenant without an
/// administrator (`Store::keep_a_tenant_admin`, naming the roles a settle
/// takes away).
fn is_last_admin(err: &Error) -> bool {
    matches!(err, Error::StateConflict { field, reason }
        if field == "roles" && reason == LEFT_WITHOUT_ADMIN)
}

/// `record` linked to nobody, with nothing kept for the member it was.
fn unlinked(record: DirectoryUser) -> DirectoryUser {
    DirectoryUser {
        user_id: None,
        held: false,
        held_roles: Vec::new(),
        held_until: None,
        given_roles: Vec::new(),
        ..record
    }
}

/// An inactive member's grant's roles and end, kept in the record before
/// the grant goes.
fn hold_if_suspended(record: &mut DirectoryUser, grant: Option<&TenantGrant>) {
    if let (false, Some(grant)) = (record.is_active(), grant) {
        record.held = true;
        record.held_roles = grant.roles.clone();
        record.held_until = grant.expires_at;
    }
}
