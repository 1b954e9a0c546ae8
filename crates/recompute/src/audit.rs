//! The audit: a consistent, parallel scan of the whole table, checked for
//! every kind of drift: grants whose tenant or user is gone, guards, list
//! entries, role refs and RoleMember links that are stray, wrong or missing,
//! values two owners claim (`authz_core::store::integrity`), and holders whose
//! stored permissions differ from their roles'. With `repair`, each finding
//! is fixed by one conditional transaction. An operator's tool: the Scan is
//! acceptable here, and no function's policy allows it.

use std::collections::{BTreeMap, HashSet};

use futures::stream::{self, StreamExt, TryStreamExt};

use authz_core::model::items::{AnyItem, Entity};
use authz_core::model::keys::Holder;
use authz_core::store::integrity::{self, Finding, Problem};
use authz_core::{Error, HolderState, Result, Store};

/// Scan segments run in parallel.
const SEGMENTS: i32 = 4;

/// Holders checked (or repairs run) at once.
const CONCURRENCY: usize = 16;

/// One holder whose stored fields differ from its roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub holder: Holder,
    pub stored: Vec<String>,
    pub expected: Vec<String>,
}

/// The audit's findings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Items read.
    pub scanned: usize,
    /// Holders (tenant grants and users) checked against their roles.
    pub checked: usize,
    pub drifted: Vec<Drift>,
    /// Everything else found, in repair order.
    pub findings: Vec<Finding>,
    /// Findings and drift fixed.
    pub repaired: usize,
    /// Repairs that did not apply, with why (an item changed since it was
    /// read, or a duplicate that needs a person).
    pub unrepaired: Vec<(String, String)>,
}

impl Report {
    /// Whether anything was found.
    pub fn clean(&self) -> bool {
        self.drifted.is_empty() && self.findings.is_empty()
    }

    /// How many findings of each kind, in repair order.
    pub fn counts(&self) -> BTreeMap<(Problem, &'static str), usize> {
        let mut counts = BTreeMap::new();
        for f in &self.findings {
            *counts.entry((f.problem, f.item_type)).or_default() += 1;
        }
        counts
    }
}

/// Reads the whole table (every item, decoded).
pub async fn scan(store: &Store) -> Result<Vec<AnyItem>> {
    let segments =
        futures::future::try_join_all((0..SEGMENTS).map(|s| store.scan_segment(s, SEGMENTS)))
            .await?;
    Ok(segments.into_iter().flatten().collect())
}

/// A holder's stored permissions against its roles' (consistent reads).
async fn drift_of(store: &Store, holder: Holder) -> Result<Option<Drift>> {
    let Some(state): Option<HolderState> = store.holder_state(&holder).await? else {
        return Ok(None);
    };
    let expected = store.expected_for(&state.roles).await?;
    if expected.roles == state.roles
        && expected.effective_permissions == state.effective_permissions
    {
        return Ok(None);
    }
    let strings = |list: &[authz_core::model::values::Permission]| {
        list.iter().map(|p| p.to_string()).collect::<Vec<_>>()
    };
    Ok(Some(Drift {
        holder,
        stored: strings(&state.effective_permissions),
        expected: strings(&expected.effective_permissions),
    }))
}

/// Whether a repair's error means an item changed since it was read (the
/// repair is skipped; the next audit sees the table as it is then).
fn changed_meanwhile(e: &Error) -> bool {
    matches!(
        e,
        Error::PreconditionFailed { .. } | Error::NotFound { .. } | Error::Conflict { .. }
    )
}

/// Checks everything; with `repair`, fixes what it found: first the
/// findings (orphans, strays, wrong and missing items, in that order), then
/// the holders that drift.
pub async fn run(store: &Store, repair: bool) -> Result<Report> {
    let items = scan(store).await?;
    let findings = integrity::check(&items)?;
    let orphans: HashSet<_> = findings
        .iter()
        .filter(|f| f.problem == Problem::Orphan)
        .map(|f| f.key.clone())
        .collect();
    let holders: Vec<Holder> = items
        .iter()
        .filter_map(|item| match item {
            AnyItem::TenantGrant(g) if !orphans.contains(&g.key()) => Some(g.holder()),
            AnyItem::User(u) => Some(Holder::Global { user_id: u.user_id }),
            _ => None,
        })
        .collect();
    let mut report = Report {
        scanned: items.len(),
        checked: holders.len(),
        ..Default::default()
    };
    drop(items);
    report.drifted = stream::iter(holders)
        .map(|holder| drift_of(store, holder))
        .buffer_unordered(CONCURRENCY)
        .try_filter_map(|d| async move { Ok(d) })
        .try_collect()
        .await?;
    report.findings = findings;
    if !repair {
        return Ok(report);
    }
    // One kind at a time: a stray link of an orphan grant is removed only
    // once the grant is.
    let mut start = 0;
    while start < report.findings.len() {
        let problem = report.findings[start].problem;
        let end = report.findings[start..]
            .iter()
            .position(|f| f.problem != problem)
            .map_or(report.findings.len(), |n| start + n);
        let outcomes: Vec<(String, Option<Result<()>>)> =
            stream::iter(&report.findings[start..end])
                .map(|finding| async move {
                    let outcome = match &finding.repair {
                        Some(repair) => Some(store.repair(repair).await),
                        None => None,
                    };
                    (finding.to_string(), outcome)
                })
                .buffer_unordered(CONCURRENCY)
                .collect()
                .await;
        for (finding, outcome) in outcomes {
            match outcome {
                Some(Ok(())) => report.repaired += 1,
                None => report.unrepaired.push((
                    finding,
                    "two owners claim one value: a person decides".into(),
                )),
                Some(Err(e)) if changed_meanwhile(&e) => report
                    .unrepaired
                    .push((finding, format!("changed since read: {e}"))),
                Some(Err(e)) => return Err(e),
            }
        }
        start = end;
    }
    for drift in &report.drifted {
        match store.recompute_holder(&drift.holder).await {
            Ok(_) => report.repaired += 1,
            Err(e) if changed_meanwhile(&e) => report.unrepaired.push((
                format!("drift {:?}", drift.holder),
                format!("changed since read: {e}"),
            )),
            Err(e) => return Err(e),
        }
    }
    Ok(report)
}
