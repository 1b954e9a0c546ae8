//! The drift audit: every tenant grant and user checked against the union of
//! its roles' permissions (consistent reads), with an optional repair. An
//! admin operation, so a parallel Scan is acceptable here.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use futures::stream::{self, StreamExt};

use authz_core::items::{Entity, TenantGrant, User};
use authz_core::keys::Holder;
use authz_core::{HolderState, Result, Store};

/// Scan segments run in parallel.
const SEGMENTS: i32 = 4;

/// One holder whose stored fields differ from its roles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub holder: Holder,
    pub stored: Vec<String>,
    pub expected: Vec<String>,
}

/// The audit's findings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub checked: usize,
    pub drifted: Vec<Drift>,
    pub repaired: usize,
}

async fn scan_segment(store: &Store, segment: i32) -> Result<Vec<HashMap<String, AttributeValue>>> {
    let mut items = Vec::new();
    let mut start = None;
    loop {
        let out = store
            .client()
            .scan()
            .table_name(store.table())
            .segment(segment)
            .total_segments(SEGMENTS)
            .filter_expression("#t IN (:grant, :user)")
            .expression_attribute_names("#t", "Type")
            .expression_attribute_values(":grant", AttributeValue::S("TenantGrant".into()))
            .expression_attribute_values(":user", AttributeValue::S("User".into()))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| authz_core::error::classify("Scan", e))?;
        items.extend(out.items.unwrap_or_default());
        start = out.last_evaluated_key;
        if start.is_none() {
            return Ok(items);
        }
    }
}

/// Checks every holder; with `repair`, recomputes the ones that drift.
pub async fn run(store: &Store, repair: bool) -> Result<Report> {
    let segments =
        futures::future::try_join_all((0..SEGMENTS).map(|s| scan_segment(store, s))).await?;
    let mut holders = Vec::new();
    for item in segments.into_iter().flatten() {
        match item
            .get("Type")
            .and_then(|t| t.as_s().ok())
            .map(String::as_str)
        {
            Some("TenantGrant") => holders.push(TenantGrant::from_item(item)?.holder()),
            Some("User") => holders.push(Holder::Global {
                user_id: User::from_item(item)?.user_id,
            }),
            _ => {}
        }
    }
    let checked = holders.len();
    let results: Vec<Result<Option<Drift>>> = stream::iter(holders)
        .map(|holder| async move {
            let Some(state): Option<HolderState> = store.holder_state(&holder).await? else {
                return Ok(None);
            };
            let expected = store.expected_for(&state.roles).await?;
            if expected.roles == state.roles
                && expected.effective_permissions == state.effective_permissions
            {
                return Ok(None);
            }
            Ok(Some(Drift {
                holder,
                stored: state
                    .effective_permissions
                    .iter()
                    .map(|p| p.to_string())
                    .collect(),
                expected: expected
                    .effective_permissions
                    .iter()
                    .map(|p| p.to_string())
                    .collect(),
            }))
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut report = Report {
        checked,
        ..Default::default()
    };
    for r in results {
        if let Some(drift) = r? {
            report.drifted.push(drift);
        }
    }
    if repair {
        for drift in &report.drifted {
            store.recompute_holder(&drift.holder).await?;
            report.repaired += 1;
        }
    }
    Ok(report)
}
