//! Change history, newest first: `/users/{userId}/history`,
//! `/tenants/{tenantId}/history`, `/roles/{roleId}/history`,
//! `/tenants/{tenantId}/members/{userId}/history`,
//! `/policies/{policyId}/history`. Readable after the resource is deleted.

use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::model::values::{PolicyId, RoleId, TenantId, UserId};
use authz_core::store::history::{Feed, FeedFilter, HistoryOf};
use authz_core::Store;

use crate::error::ApiError;
use crate::extract::{Id, Ids, PageQuery, QueryParams};
use crate::views::{ChangeView, ListView};

type ApiResult = Result<Response, ApiError>;

async fn list(store: &Store, of: HistoryOf, query: Option<&str>) -> ApiResult {
    let asked = QueryParams::page_only(query)?;
    let page = store.history(of, &asked).await?;
    let view = ListView::<ChangeView>::from_page(page)
        .named(store, crate::views::change_names)
        .await?;
    Ok(Json(view).into_response())
}

#[utoipa::path(
    get,
    path = "/users/{userId}/history",
    operation_id = "getUserHistory",
    tag = "history",
    params(
        ("userId" = String, Path, description = "The user id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the user's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn user(
    State(store): State<Store>,
    Id(id): Id<UserId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    list(&store, HistoryOf::User(id), query.as_deref()).await
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/history",
    operation_id = "getTenantHistory",
    tag = "history",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the tenant's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn tenant(
    State(store): State<Store>,
    Id(id): Id<TenantId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    list(&store, HistoryOf::Tenant(id), query.as_deref()).await
}

#[utoipa::path(
    get,
    path = "/roles/{roleId}/history",
    operation_id = "getRoleHistory",
    tag = "history",
    params(
        ("roleId" = String, Path, description = "The role id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the role's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn role(
    State(store): State<Store>,
    Id(id): Id<RoleId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    list(&store, HistoryOf::Role(id), query.as_deref()).await
}

#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/members/{userId}/history",
    operation_id = "getMemberHistory",
    tag = "history",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("userId" = String, Path, description = "The user id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the grant's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn grant(
    State(store): State<Store>,
    Ids(tenant, user): Ids<TenantId, UserId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let of = HistoryOf::Grant(tenant, user);
    list(&store, of, query.as_deref()).await
}

#[utoipa::path(
    get,
    path = "/policies/{policyId}/history",
    operation_id = "getPolicyHistory",
    tag = "history",
    params(
        ("policyId" = String, Path, description = "The policy id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the policy's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn policy(
    State(store): State<Store>,
    Id(id): Id<PolicyId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    list(&store, HistoryOf::Policy(id), query.as_deref()).await
}

/// A feed's filters from the query: `actor` (who: a user id, as
/// `modifiedBy` says it), `kind` (`tenant`, `user`, `role`, `grant`,
/// `policy`), `from` and `to` (RFC 3339).
fn feed_filter(params: &QueryParams) -> Result<FeedFilter, ApiError> {
    let instant = |name: &str| -> Result<Option<u64>, ApiError> {
        params
            .get(name)
            .map(|raw| {
                authz_core::clock::parse_rfc3339_millis(raw)
                    .map(|t| t.max(0) as u64)
                    .ok_or_else(|| {
                        ApiError::invalid(
                            name,
                            "must be an RFC 3339 date-time (2026-11-01T00:00:00Z)",
                        )
                    })
            })
            .transpose()
    };
    let kind = params
        .get("kind")
        .map(|k| {
            ["tenant", "user", "role", "grant", "policy"]
                .contains(&k)
                .then(|| k.to_string())
                .ok_or_else(|| {
                    ApiError::invalid("kind", "must be tenant, user, role, grant or policy")
                })
        })
        .transpose()?;
    let actor = params
        .get("actor")
        .map(|a| {
            let a = a.trim();
            (!a.is_empty() && a.len() <= ACTOR_MAX)
                .then(|| a.to_string())
                .ok_or_else(|| {
                    ApiError::invalid("actor", "must be a user id (or who else made changes)")
                })
        })
        .transpose()?;
    // `from` after `to` is an empty stretch: nothing changed in it.
    let (from, to) = (instant("from")?, instant("to")?);
    Ok(FeedFilter {
        actor,
        kind,
        from,
        to,
    })
}

/// The longest `actor` a feed filters by (a user id, or an operator's name).
pub const ACTOR_MAX: usize = 300;

async fn feed(store: &Store, feed: Feed, query: Option<&str>) -> ApiResult {
    let params = QueryParams::parse(query, &["actor", "kind", "from", "to", "limit", "cursor"])?;
    let filter = feed_filter(&params)?;
    let page = store.feed(feed, &filter, &params.page()?).await?;
    let view = ListView::<ChangeView>::from_page(page)
        .named(store, crate::views::change_names)
        .await?;
    Ok(Json(view).into_response())
}

/// Every change on the platform, newest first: who made it, what changed
/// and why, with the names of the users, tenants, roles and policies it
/// names; filtered by who (`actor`), what (`kind`) and when (`from`,
/// `to`). Without `from` it looks back 24 months; a page over a quiet
/// stretch may hold fewer items than `limit`, with a cursor to go on.
#[utoipa::path(
    get,
    path = "/history",
    operation_id = "getPlatformFeed",
    tag = "history",
    params(
        ("actor" = Option<String>, Query, description = "Only changes made by this caller (a user id)"),
        ("kind" = Option<String>, Query, description = "Only changes of tenant, user, role, grant or policy"),
        ("from" = Option<String>, Query, description = "Only changes at or after (RFC 3339)"),
        ("to" = Option<String>, Query, description = "Only changes before (RFC 3339)"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the platform's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn platform(State(store): State<Store>, RawQuery(query): RawQuery) -> ApiResult {
    feed(&store, Feed::Platform, query.as_deref()).await
}

/// A tenant's changes and its members' grants', newest first, filtered as
/// the platform's feed is.
#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/changes",
    operation_id = "getTenantFeed",
    tag = "history",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("actor" = Option<String>, Query, description = "Only changes made by this caller (a user id)"),
        ("kind" = Option<String>, Query, description = "Only changes of the tenant or of grants"),
        ("from" = Option<String>, Query, description = "Only changes at or after (RFC 3339)"),
        ("to" = Option<String>, Query, description = "Only changes before (RFC 3339)"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the tenant's changes, newest first", body = ListView<ChangeView>),
    ),
)]
pub async fn tenant_feed(
    State(store): State<Store>,
    Id(tenant_id): Id<TenantId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    feed(&store, Feed::Tenant(tenant_id), query.as_deref()).await
}
