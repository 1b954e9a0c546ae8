//! The user search and a tenant's member search: an id, an identity
//! (`issuer subject`), an email prefix or a name prefix, answered a page at
//! a time from the lookup entries' index partitions (the platform's
//! `LIST#USER…` for the users with a status, a tenant's `LIST#MEMBER…` for
//! its members), never a scan; and the member entries kept right when a
//! user's email or name changes.

use futures::stream::{self, StreamExt, TryStreamExt};

use crate::error::{from_sdk, Error, Result};
use crate::model::items::{Entity, Item, MemberLookup, TenantGrant, User, UserLookup};
use crate::model::keys::{self, attr, Index, PrimaryKey};
use crate::model::values::{
    EmailPrefix, Invalid, Issuer, Subject, TenantGrantId, TenantId, UserId, UserStatus,
};
use crate::store::page::{ListScope, Page, PageRequest};
use crate::store::Store;

/// Whom a search looks among.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Among {
    /// Every user with this status.
    Users(UserStatus),
    /// The members of this tenant, whatever their status.
    Members(TenantId),
}

/// Member entries rewritten at once after a rename.
const RELIST_CONCURRENCY: usize = 8;

impl Store {
    /// The users `q` finds among `among`, a page of their ids at a time
    /// (the caller reads the users, or the grants, it needs): one user by
    /// id or by identity (`issuer subject`, which the identity's guard
    /// finds), the users whose email starts with `q` when it has an `@`,
    /// otherwise those whose name starts with it and then those whose
    /// email does, each list with its own cursor (`{name}.{email}`, `!`
    /// for one that is done). Only the single user is not yet known to be
    /// among `among`; what no identity or address can be finds nobody.
    pub async fn search(
        &self,
        among: Among,
        q: Option<&str>,
        page: &PageRequest,
    ) -> Result<Page<UserId>> {
        let q = q.unwrap_or_default().trim();
        if q.is_empty() {
            return Err(Invalid::new(
                "q",
                "is required: a user id, an issuer and a subject, an email or a name prefix",
            )
            .into());
        }
        let one = |id: Option<UserId>| Page {
            items: id.into_iter().collect(),
            next_cursor: None,
        };
        if let Ok(id) = UserId::parse(q) {
            return Ok(one(Some(id)));
        }
        if let Some((issuer, subject)) = q
            .split_once(char::is_whitespace)
            .filter(|(i, _)| i.contains("://"))
        {
            let found = match (Issuer::parse(issuer.trim()), Subject::parse(subject.trim())) {
                (Ok(issuer), Ok(subject)) => self.user_by_identity(&issuer, &subject).await?,
                _ => None,
            };
            return Ok(one(found.map(|u| u.user_id)));
        }
        if q.contains('@') {
            return match EmailPrefix::parse_field("q", q) {
                Ok(prefix) => self.listed_by_email(among, &prefix, page).await,
                Err(_) => Ok(one(None)),
            };
        }
        let (by_name, by_email) = match page.cursor.as_deref() {
            None => (Some(None), Some(None)),
            Some(both) => {
                let (n, e) = both
                    .split_once('.')
                    .ok_or_else(|| Invalid::new("cursor", "is not a cursor of this list"))?;
                let side = |c: &str| match c {
                    "!" => None,
                    c => Some(Some(c.to_string())),
                };
                (side(n), side(e))
            }
        };
        let request = |cursor: Option<String>| PageRequest {
            limit: page.limit,
            cursor,
        };
        let mut ids: Vec<UserId> = Vec::new();
        let mut next_name = None;
        if let Some(cursor) = by_name {
            let found = self.listed_by_name(among, q, &request(cursor)).await?;
            ids.extend(found.items);
            next_name = found.next_cursor;
        }
        let mut next_email = None;
        if let (Some(cursor), Ok(prefix)) = (by_email, EmailPrefix::parse_field("q", q)) {
            let found = self
                .listed_by_email(among, &prefix, &request(cursor))
                .await?;
            for id in found.items {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            next_email = found.next_cursor;
        }
        let next_cursor = match (&next_name, &next_email) {
            (None, None) => None,
            _ => Some(format!(
                "{}.{}",
                next_name.as_deref().unwrap_or("!"),
                next_email.as_deref().unwrap_or("!")
            )),
        };
        Ok(Page {
            items: ids,
            next_cursor,
        })
    }

    /// Those of `ids` who are users with `status`, in their order (one
    /// BatchGetItem per hundred): the index lags the table, so an entry's
    /// user may be gone or have another status by now.
    pub async fn users_with_status(&self, ids: &[UserId], status: UserStatus) -> Result<Vec<User>> {
        let mut users = Vec::new();
        for chunk in ids.chunks(crate::store::BATCH_GET_KEYS) {
            let keys: Vec<PrimaryKey> = chunk.iter().map(keys::user).collect();
            let mut found = self.batch_get(&keys, false).await?;
            for key in &keys {
                if let Some(item) = found.remove(key) {
                    let user = User::from_item(item)?;
                    if user.status == status {
                        users.push(user);
                    }
                }
            }
        }
        Ok(users)
    }

    /// Ids whose entries' email starts with `prefix` (empty: all), in
    /// email order (GSI2).
    pub(crate) async fn listed_by_email(
        &self,
        among: Among,
        prefix: &EmailPrefix,
        page: &PageRequest,
    ) -> Result<Page<UserId>> {
        let partition = match among {
            Among::Users(status) => keys::user_list_partition(status),
            Among::Members(tenant) => keys::member_list_partition(&tenant),
        };
        let scope = ListScope {
            index: Some(Index::Gsi2),
            partition: &partition,
            sort_prefix: Some(keys::user_list_prefix(prefix)).filter(|p| !p.is_empty()),
        };
        self.listed(among, scope, page).await
    }

    /// Ids whose entries' name (given, then family) starts with `prefix`,
    /// case and spacing aside, in name order (GSI1). Users without a name
    /// are not in this list.
    async fn listed_by_name(
        &self,
        among: Among,
        prefix: &str,
        page: &PageRequest,
    ) -> Result<Page<UserId>> {
        let partition = match among {
            Among::Users(status) => keys::user_name_partition(status),
            Among::Members(tenant) => keys::member_name_partition(&tenant),
        };
        let prefix = keys::user_name_key(prefix);
        let scope = ListScope {
            index: Some(Index::Gsi1),
            partition: &partition,
            sort_prefix: Some(prefix.as_str()).filter(|p| !p.is_empty()),
        };
        self.listed(among, scope, page).await
    }

    async fn listed(
        &self,
        among: Among,
        scope: ListScope<'_>,
        page: &PageRequest,
    ) -> Result<Page<UserId>> {
        fn ids<E>(page: Page<E>, id: impl Fn(&E) -> UserId) -> Page<UserId> {
            Page {
                items: page.items.iter().map(id).collect(),
                next_cursor: page.next_cursor,
            }
        }
        Ok(match among {
            Among::Users(_) => ids(self.query::<UserLookup>(scope, page).await?, |e| e.user_id),
            Among::Members(_) => ids(self.query::<MemberLookup>(scope, page).await?, |e| {
                e.user_id
            }),
        })
    }

    /// Lists the user `entry` describes anew in the member search of each
    /// tenant they are a member of (their grants through GSI1, a page at a
    /// time): each entry is rewritten only while it lists that grant and
    /// was written from an older user, so a late or repeated record
    /// changes nothing, and an entry whose grant ended is not brought
    /// back. How many entries were rewritten.
    pub async fn relist_memberships(&self, entry: &UserLookup) -> Result<usize> {
        let mut page = PageRequest::with_limit(crate::store::page::MAX_LIMIT);
        let mut written = 0;
        loop {
            let grants = self.user_grants(&entry.user_id, &page).await?;
            written += stream::iter(grants.items.iter().map(|g| self.relist(g, entry)))
                .buffer_unordered(RELIST_CONCURRENCY)
                .try_fold(0, |n, done| async move { Ok(n + usize::from(done)) })
                .await?;
            match page.next(grants.next_cursor) {
                Some(next) => page = next,
                None => return Ok(written),
            }
        }
    }

    /// One member entry rewritten (see [`Store::relist_memberships`]).
    async fn relist(&self, grant: &TenantGrant, entry: &UserLookup) -> Result<bool> {
        let lookup = MemberLookup::of(grant, entry);
        let item: Item = lookup.to_item()?;
        let sent = self
            .client
            .put_item()
            .table_name(&*self.table)
            .set_item(Some(item))
            .condition_expression("attribute_exists(#pk) AND #grant = :grant AND #v < :v")
            .expression_attribute_names("#pk", attr::PK)
            .expression_attribute_names("#grant", "tenantGrantId")
            .expression_attribute_names("#v", attr::VERSION)
            .expression_attribute_values(
                ":grant",
                aws_sdk_dynamodb::types::AttributeValue::S(grant.tenant_grant_id.to_string()),
            )
            .expression_attribute_values(
                ":v",
                aws_sdk_dynamodb::types::AttributeValue::N(lookup.stamp.version.to_string()),
            )
            .send()
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(from_sdk("PutItem", e)),
        }
    }

    /// Removes the member entry of a grant DynamoDB's TTL removed, while
    /// it still lists that grant (not one given again since).
    pub async fn unlist_ended(
        &self,
        tenant_id: &TenantId,
        user_id: &UserId,
        ended: &TenantGrantId,
    ) -> Result<()> {
        let mut txn = self.transaction();
        txn.delete_owned(
            &keys::member_lookup(tenant_id, user_id),
            "tenantGrantId",
            &ended.to_string(),
            Error::PreconditionFailed {
                resource: crate::error::Resource::TenantGrant,
            },
        )?;
        match txn.execute(self).await {
            Ok(()) | Err(Error::PreconditionFailed { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
