//! The stream consumer: keeps `effectivePermissions` right when what they
//! were computed from changes.
//!
//! - A Role whose `permissions` changed, or a removed Role: every holder
//!   found through its RoleMember links is recomputed (a removed role is
//!   dropped from the holder with its link). A role that lost a permission
//!   (or was removed) is then recorded as revoked (`Revokee::Role`): what
//!   any cache read of its holders before is stale.
//! - A User whose global `roles` changed, or a TenantGrant whose `roles`
//!   changed: that one item is verified and repaired if needed.
//! - A Tenant or User marked `deleting`: its grants and their links are
//!   removed a page at a time, then the item itself (the delete that the
//!   API call accepted but did not finish within its budget).
//! - A user's LOOKUP entry whose email or name changed: the entries that
//!   list the user in each of their tenants' member search are rewritten.
//! - A MODIFY that changed only `effectivePermissions`, `version` and
//!   `updatedAt` is this function's own write coming back: skipped.
//! - The revocations item gaining entries: API Gateway's authorizer cache
//!   of every protected stage is flushed once every authorizer instance
//!   has had time to read them, at most once per interval, alongside the
//!   batch's other records (`flush`).
//!
//! Records are processed in order; at the first one that fails, processing
//! stops and its sequence number is reported in `batchItemFailures`, so
//! Lambda retries from there. Fan-out works a page of holders at a time,
//! with bounded concurrency, and starts no new page when less than
//! [`MIN_REMAINING`] of the invocation is left.

pub mod audit;
pub mod flush;
pub mod management;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use aws_lambda_events::dynamodb::{Event, EventRecord};
use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use futures::stream::{FuturesUnordered, StreamExt};
use serde_dynamo::AttributeValue;

use authz_core::model::items::{AnyItem, DirectoryGroup};
use authz_core::model::keys::Holder;
use authz_core::model::values::{RoleId, TenantId, TenantStatus, UserId, UserStatus};
use authz_core::runtime::metrics::name;
use authz_core::{Deletion, Error, PageRequest, Recomputed, Store};

/// No new page of holders is started with less than this left in the invocation.
pub const MIN_REMAINING: Duration = Duration::from_secs(10);
/// Default fan-out concurrency (`RECOMPUTE_CONCURRENCY`): pages of up to
/// 100 holders recomputed at once.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Attributes whose change alone marks this function's own writes.
const OWN_WRITE_ATTRIBUTES: &[&str] = &["effectivePermissions", "version", "updatedAt"];

/// Settings of one consumer.
#[derive(Debug, Clone)]
pub struct Settings {
    pub concurrency: usize,
    /// API Gateway's authorizer cache, flushed after revocations (`None`:
    /// no API to flush, as in most tests).
    pub flush: Option<flush::CacheFlush>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            flush: None,
        }
    }
}

/// Most pages a fan-out may have in flight.
pub const MAX_CONCURRENCY: usize = 256;

impl Settings {
    /// Reads the settings through `lookup` (the process environment in the
    /// binary, a map in tests): `RECOMPUTE_CONCURRENCY`, pages in flight,
    /// 1 to [`MAX_CONCURRENCY`] (default [`DEFAULT_CONCURRENCY`]).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, authz_core::runtime::config::ConfigError> {
        const VAR: &str = "RECOMPUTE_CONCURRENCY";
        let concurrency = match lookup(VAR) {
            None => DEFAULT_CONCURRENCY,
            Some(v) => v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_CONCURRENCY).contains(n))
                .ok_or_else(|| {
                    authz_core::runtime::config::ConfigError::new(
                        VAR,
                        format!("must be a whole number from 1 to {MAX_CONCURRENCY}"),
                    )
                })?,
        };
        Ok(Self {
            concurrency,
            flush: None,
        })
    }

    /// Flushes API Gateway's authorizer cache after revocations.
    pub fn with_flush(mut self, flush: Option<flush::CacheFlush>) -> Self {
        self.flush = flush;
        self
    }
}

/// What a record asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// Recompute every holder of a role; `narrowed` when it lost a
    /// permission or was removed (its holders lose something).
    Role {
        role_id: RoleId,
        narrowed: bool,
    },
    /// Verify one holder.
    Holder(Holder),
    /// A member joined a tenant (a grant's first record): verify them,
    /// and link the person of the tenant's directory they are, if one
    /// waits for them (`Store::link_joiner`).
    Joined(Holder),
    /// Finish deleting a tenant: its grants, then the tenant.
    DeleteTenant(TenantId),
    /// Finish deleting a user: its tenant grants, then the user.
    DeleteUser(UserId),
    /// A grant that ended and that DynamoDB's TTL removed: its links and
    /// its member entry go (each only while no grant of that holder has
    /// come back).
    EndedGrant {
        holder: Holder,
        tenant_grant_id: authz_core::model::values::TenantGrantId,
        roles: Vec<RoleId>,
    },
    /// A user's email or name changed: the entries that list them in the
    /// member search of each of their tenants are rewritten.
    Relisted(Box<authz_core::model::items::UserLookup>),
    /// Revocations were recorded, the newest at this time (milliseconds
    /// since the epoch): API Gateway's cache is flushed after it.
    Revoked {
        latest: u64,
    },
    /// A directory group that gives roles changed (its members or its
    /// roles) or went: the grants of those it touched are settled again,
    /// in case the request that changed it ended before it had.
    DirectoryGroup {
        before: Option<Box<DirectoryGroup>>,
        after: Option<Box<DirectoryGroup>>,
    },
    Nothing,
}

/// Whether a REMOVE record is DynamoDB's TTL deleting an expired item.
fn removed_by_ttl(record: &EventRecord) -> bool {
    record.event_name == "REMOVE"
        && record
            .user_identity
            .as_ref()
            .is_some_and(|u| u.type_ == "Service" && u.principal_id == "dynamodb.amazonaws.com")
}

/// Why a record could not be processed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("stream image does not decode: {0}")]
    Decode(Error),
    #[error(transparent)]
    Store(#[from] Error),
    #[error("out of time: {done} of the role's holders done")]
    OutOfTime { done: usize },
    #[error("out of time: the delete's grants are not all removed yet")]
    DeleteUnfinished,
}

/// Only `effectivePermissions`, `version` and `updatedAt` differ.
fn only_own_attributes_changed(old: &serde_dynamo::Item, new: &serde_dynamo::Item) -> bool {
    let (old, new): (
        &std::collections::HashMap<String, AttributeValue>,
        &std::collections::HashMap<String, AttributeValue>,
    ) = (old.as_ref(), new.as_ref());
    let keys: std::collections::HashSet<&String> = old.keys().chain(new.keys()).collect();
    keys.into_iter()
        .filter(|k| old.get(*k) != new.get(*k))
        .all(|k| OWN_WRITE_ATTRIBUTES.contains(&k.as_str()))
}

/// Decides what a record asks for, from its images alone.
pub fn work_for(record: &EventRecord) -> Result<Work, RecordError> {
    let old = &record.change.old_image;
    let new = &record.change.new_image;
    let decode = |image: &serde_dynamo::Item| -> Result<Option<AnyItem>, RecordError> {
        if AsRef::<std::collections::HashMap<String, AttributeValue>>::as_ref(image).is_empty() {
            return Ok(None);
        }
        AnyItem::from_image(image.clone())
            .map(Some)
            .map_err(RecordError::Decode)
    };
    if record.event_name == "MODIFY" && only_own_attributes_changed(old, new) {
        return Ok(Work::Nothing);
    }
    let (old, new) = (decode(old)?, decode(new)?);
    Ok(match (old, new) {
        (_, Some(AnyItem::Tenant(t))) if t.status == TenantStatus::Deleting => {
            Work::DeleteTenant(t.tenant_id)
        }
        (_, Some(AnyItem::User(u))) if u.status == UserStatus::Deleting => {
            Work::DeleteUser(u.user_id)
        }
        (Some(AnyItem::Role(before)), Some(AnyItem::Role(after)))
            if before.permissions != after.permissions =>
        {
            Work::Role {
                role_id: after.role_id,
                narrowed: before
                    .permissions
                    .iter()
                    .any(|p| !after.permissions.contains(p)),
            }
        }
        (Some(AnyItem::Role(before)), None) => Work::Role {
            role_id: before.role_id,
            narrowed: true,
        },
        (before, Some(AnyItem::User(after))) => match before {
            Some(AnyItem::User(b)) if b.roles == after.roles => Work::Nothing,
            _ => Work::Holder(Holder::Global {
                user_id: after.user_id,
            }),
        },
        (Some(AnyItem::UserLookup(before)), Some(AnyItem::UserLookup(after)))
            if before.email != after.email || before.name != after.name =>
        {
            Work::Relisted(Box::new(after))
        }
        (before, Some(AnyItem::Revocations(after))) => match (before, after.latest_at()) {
            (Some(AnyItem::Revocations(b)), _) if b.seq >= after.seq => Work::Nothing,
            (_, Some(latest)) => Work::Revoked { latest },
            (_, None) => Work::Nothing,
        },
        (Some(AnyItem::TenantGrant(ended)), None) if removed_by_ttl(record) => Work::EndedGrant {
            holder: ended.holder(),
            tenant_grant_id: ended.tenant_grant_id,
            roles: ended.roles,
        },
        (before, Some(AnyItem::TenantGrant(after))) => match before {
            Some(AnyItem::TenantGrant(b)) if b.roles == after.roles => Work::Nothing,
            None => Work::Joined(after.holder()),
            _ => Work::Holder(after.holder()),
        },
        (before @ Some(AnyItem::DirectoryGroup(_)), after)
        | (before, after @ Some(AnyItem::DirectoryGroup(_))) => {
            let group = |item| match item {
                Some(AnyItem::DirectoryGroup(g)) => Some(Box::new(g)),
                _ => None,
            };
            let (before, after) = (group(before), group(after));
            // A group that gives nothing, before or after, touches nobody.
            let gives =
                |g: &Option<Box<DirectoryGroup>>| g.as_ref().is_some_and(|g| !g.roles.is_empty());
            if gives(&before) || gives(&after) {
                Work::DirectoryGroup { before, after }
            } else {
                Work::Nothing
            }
        }
        _ => Work::Nothing,
    })
}

/// Recomputes every holder of a role, a page (up to 100 RoleMember links)
/// at a time, with up to `settings.concurrency` pages in flight: each page
/// is one consistent BatchGetItem of its holders, a consistent read per
/// distinct role and a transaction per up to 100 actions
/// (`Store::recompute_holders`). No page is started with less than
/// [`MIN_REMAINING`] left; holders already right are not written, so a retry
/// after running out of time resumes cheaply.
pub async fn fan_out(
    store: &Store,
    role_id: &RoleId,
    settings: Settings,
    deadline: SystemTime,
) -> Result<usize, RecordError> {
    let mut page = PageRequest::with_limit(authz_core::store::page::MAX_LIMIT);
    let mut in_flight = FuturesUnordered::new();
    let (mut done, mut more, mut out_of_time) = (0usize, true, false);
    while more || !in_flight.is_empty() {
        while more && in_flight.len() < settings.concurrency.max(1) {
            if remaining(deadline) < MIN_REMAINING {
                (more, out_of_time) = (false, true);
                break;
            }
            let links = store.role_members(role_id, &page).await?;
            let next = links.next_cursor.clone();
            in_flight.push(recompute_page(store, links.items));
            match page.next(next) {
                Some(p) => page = p,
                None => more = false,
            }
        }
        if let Some(result) = in_flight.next().await {
            done += result?;
        }
    }
    if out_of_time {
        return Err(RecordError::OutOfTime { done });
    }
    Ok(done)
}

/// One page of a role's holders; links whose holder is gone are removed.
async fn recompute_page(
    store: &Store,
    links: Vec<authz_core::model::items::RoleMember>,
) -> Result<usize, RecordError> {
    let holders: Vec<Holder> = links.iter().map(|l| l.holder()).collect();
    let outcomes = store.recompute_holders(&holders).await?;
    count_holders(&outcomes);
    let orphans: Vec<authz_core::model::items::RoleMember> = links
        .into_iter()
        .zip(&outcomes)
        .filter(|(_, o)| **o == Recomputed::Gone)
        .map(|(link, _)| link)
        .collect();
    store.delete_orphan_links(&orphans).await?;
    Ok(holders.len())
}

/// Holders recomputed (those still there) and those rewritten.
fn count_holders(outcomes: &[Recomputed]) {
    let there = outcomes.iter().filter(|o| **o != Recomputed::Gone).count();
    let written = outcomes
        .iter()
        .filter(|o| **o == Recomputed::Repaired)
        .count();
    metrics::counter!(name::HOLDERS_RECOMPUTED).increment(there as u64);
    metrics::counter!(name::HOLDERS_WRITTEN).increment(written as u64);
}

fn remaining(deadline: SystemTime) -> Duration {
    deadline
        .duration_since(authz_core::clock::system_now())
        .unwrap_or_default()
}

/// The invocation's deadline from the Runtime API's `Lambda-Runtime-Deadline-Ms`.
/// AWS sends milliseconds since the epoch; `cargo lambda watch` sends the
/// milliseconds remaining (e.g. `600000`). A value that is already in the
/// past and no longer than Lambda's 15-minute maximum is read as the latter,
/// so a local run gets its budget instead of a deadline in 1970.
pub fn deadline_from(raw_ms: u64, now: SystemTime) -> SystemTime {
    const MAX_INVOCATION: Duration = Duration::from_secs(15 * 60);
    let absolute = SystemTime::UNIX_EPOCH + Duration::from_millis(raw_ms);
    let relative = Duration::from_millis(raw_ms);
    if absolute < now && relative <= MAX_INVOCATION {
        now + relative
    } else {
        absolute
    }
}

/// Processes one record.
pub async fn process(
    store: &Store,
    record: &EventRecord,
    settings: &Settings,
    deadline: SystemTime,
) -> Result<Work, RecordError> {
    let work = work_for(record)?;
    match &work {
        Work::Role { role_id, narrowed } => {
            let started = std::time::Instant::now();
            let holders = fan_out(store, role_id, settings.clone(), deadline).await?;
            metrics::histogram!(name::FAN_OUT_DURATION)
                .record(started.elapsed().as_secs_f64() * 1000.0);
            metrics::histogram!(name::FAN_OUT_HOLDERS).record(holders as f64);
            // Its holders are rewritten: a cache that read one before may
            // still hold what the role gave.
            if *narrowed {
                store
                    .record_revocations(&[authz_core::model::items::Revokee::Role(*role_id)])
                    .await;
            }
        }
        Work::Holder(holder) => {
            let outcome = store.recompute_holder(holder).await?;
            count_holders(std::slice::from_ref(&outcome));
        }
        Work::Joined(holder) => {
            let outcome = store.recompute_holder(holder).await?;
            count_holders(std::slice::from_ref(&outcome));
            if let Holder::Grant { tenant_id, user_id } = holder {
                // Boxed: a settle's future is large (a grant write's).
                Box::pin(store.link_joiner(tenant_id, user_id)).await?;
            }
        }
        Work::EndedGrant {
            holder,
            tenant_grant_id,
            roles,
        } => {
            let at = authz_core::clock::now();
            let links: Vec<authz_core::model::items::RoleMember> = roles
                .iter()
                .map(|role| {
                    authz_core::model::items::RoleMember::new(
                        *role,
                        *holder,
                        Some(*tenant_grant_id),
                        &at,
                    )
                })
                .collect();
            store.delete_orphan_links(&links).await?;
            if let Holder::Grant { tenant_id, user_id } = holder {
                store
                    .unlist_ended(tenant_id, user_id, tenant_grant_id)
                    .await?;
            }
        }
        Work::Relisted(entry) => {
            store.relist_memberships(entry).await?;
        }
        Work::DeleteTenant(id) => {
            let deadline = deadline.checked_sub(MIN_REMAINING).unwrap_or(deadline);
            if let Deletion::Running(_) = store.finish_tenant_deletion(id, deadline).await? {
                return Err(RecordError::DeleteUnfinished);
            }
        }
        Work::DeleteUser(id) => {
            let deadline = deadline.checked_sub(MIN_REMAINING).unwrap_or(deadline);
            if let Deletion::Running(_) = store.finish_user_deletion(id, deadline).await? {
                return Err(RecordError::DeleteUnfinished);
            }
        }
        Work::DirectoryGroup { before, after } => {
            // Boxed: a settle's future is large (grant writes').
            Box::pin(store.settle_group_record(before.as_deref(), after.as_deref())).await?;
        }
        // Flushed by the batch (`handle`), once for all it carries.
        Work::Revoked { .. } | Work::Nothing => {}
    }
    Ok(work)
}

/// Handles a batch: records in order; the first failure (and so every record
/// after it) is reported for Lambda to retry. The protected stages' caches
/// are flushed alongside, once for the newest revocation the batch carries
/// (when no flush sent already covers it).
pub async fn handle(
    store: &Store,
    event: Event,
    settings: Settings,
    deadline: SystemTime,
) -> DynamoDbEventResponse {
    let latest = event
        .records
        .iter()
        .filter_map(|r| match work_for(r) {
            Ok(Work::Revoked { latest }) => Some(latest),
            _ => None,
        })
        .max();
    let flush = async {
        match (latest, &settings.flush) {
            (Some(latest), Some(flush)) => flush.after(store, latest).await,
            _ => false,
        }
    };
    let (_, response) = tokio::join!(flush, handle_records(store, &event, &settings, deadline));
    response
}

async fn handle_records(
    store: &Store,
    event: &Event,
    settings: &Settings,
    deadline: SystemTime,
) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (index, record) in event.records.iter().enumerate() {
        // The recorder keeps at most 100 values of a histogram between
        // flushes, and a batch may hold up to 1,000 role changes.
        if index > 0 && index % 100 == 0 {
            authz_core::runtime::metrics::flush();
        }
        let sequence = record.change.sequence_number.clone().unwrap_or_default();
        match process(store, record, settings, deadline).await {
            Ok(work) => {
                *counts
                    .entry(match work {
                        Work::Role { .. } => "role",
                        Work::Holder(_) | Work::Joined(_) | Work::EndedGrant { .. } => "holder",
                        Work::Relisted(_) => "relisted",
                        Work::DeleteTenant(_) | Work::DeleteUser(_) => "delete",
                        Work::Revoked { .. } => "revoked",
                        Work::DirectoryGroup { .. } => "group",
                        Work::Nothing => "skipped",
                    })
                    .or_default() += 1;
            }
            Err(e) => {
                tracing::error!(sequence = %sequence, event_id = %record.event_id, error = %e, "record failed; reporting it for retry");
                let mut failure = DynamoDbBatchItemFailure::default();
                failure.item_identifier = Some(sequence);
                response.batch_item_failures.push(failure);
                break;
            }
        }
    }
    let processed: usize = counts.values().sum();
    metrics::counter!(name::RECORDS_PROCESSED).increment(processed as u64);
    metrics::counter!(name::RECORDS_FAILED).increment(response.batch_item_failures.len() as u64);
    tracing::info!(
        records = event.records.len(),
        ?counts,
        failed = response.batch_item_failures.len(),
        "batch"
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrency_is_read_and_checked_at_start_up() {
        let with = |v: Option<&str>| {
            Settings::from_lookup(|_| v.map(str::to_string)).map(|s| s.concurrency)
        };
        assert_eq!(with(None), Ok(DEFAULT_CONCURRENCY));
        assert_eq!(with(Some(" 32 ")), Ok(32));
        for bad in ["0", "257", "eight", ""] {
            let e = with(Some(bad)).unwrap_err();
            assert_eq!(e.var, "RECOMPUTE_CONCURRENCY", "{bad:?}");
        }
    }

    #[test]
    fn deadlines_are_read_as_epoch_or_as_remaining_time() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000);
        let epoch_ms = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_millis() as u64
        };
        // AWS: an absolute deadline, used as is.
        let aws = now + Duration::from_secs(300);
        assert_eq!(deadline_from(epoch_ms(aws), now), aws);
        // cargo lambda watch: ten minutes remaining.
        assert_eq!(deadline_from(600_000, now), now + Duration::from_secs(600));
        // An absolute deadline that has passed stays passed.
        let passed = now - Duration::from_secs(1);
        assert_eq!(deadline_from(epoch_ms(passed), now), passed);
        // Nothing longer than Lambda's maximum is taken as remaining time.
        assert_eq!(
            deadline_from(16 * 60 * 1000, now),
            SystemTime::UNIX_EPOCH + Duration::from_secs(16 * 60)
        );
    }
}
