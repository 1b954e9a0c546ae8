//! SCIM `Groups` for a tenant's directory: the directory's groups, their
//! names and members, as Okta (`remove` by `members[value eq ...]` then
//! `add`, or a full `replace`) and Entra ID (`Remove` listing the members,
//! `displayName eq` with `excludedAttributes=members`) send them. The
//! roles a group gives are a tenant administrator's mapping
//! (`/tenants/{tenantId}/scim-groups`), never the directory's to set.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::scim::{
    attr, body_of, check_version, scim_json, text, weak_etag, ListQuery, ScimCaller, ScimError,
    GROUP_SCHEMA,
};
use super::scim_patch::{apply, GROUP};
use authz_core::model::items::{DirectoryGroup, DirectoryMember};
use authz_core::model::values::DirectoryGroupId;
use authz_core::store::directory_groups::DirectoryGroupSpec;
use authz_core::{Resource, Store};

type ScimResult = Result<Response, ScimError>;

/// A list page that answers the groups' members holds at most this many
/// groups (each item up to 400 KB read) and, past its first group, this
/// many members in all (about 2.6 MB of JSON).
const GROUPS_PER_PAGE_WITH_MEMBERS: usize = 10;
const MEMBERS_PER_PAGE: usize = 20_000;

/// The Group resource of a group (without `members` when asked so).
fn group_view(g: &DirectoryGroup, base: &str, members: bool) -> Value {
    let mut view = json!({
        "schemas": [GROUP_SCHEMA],
        "id": g.id.to_string(),
        "displayName": g.display_name,
        "meta": {
            "resourceType": "Group",
            "created": g.stamp.created_at,
            "lastModified": g.stamp.updated_at,
            "version": weak_etag(g.stamp.version),
            "location": format!("{base}/Groups/{}", g.id),
        },
    });
    if let Some(e) = &g.external_id {
        view["externalId"] = json!(e);
    }
    if members {
        view["members"] = json!(g
            .members
            .iter()
            .map(|m| {
                let reference = m
                    .reference
                    .clone()
                    .unwrap_or_else(|| format!("{base}/Users/{}", m.value));
                json!({"value": m.value, "$ref": reference})
            })
            .collect::<Vec<_>>());
    }
    view
}

/// What a Group resource says: its name and members (by their SCIM ids).
///
/// A member's `$ref` is kept only when it is not this service's own
/// address for the member (`base`), which every answer gives anyway: a
/// PATCH, applied to the group as answered, sends those back.
fn group_spec(object: &Map<String, Value>, base: &str) -> Result<DirectoryGroupSpec, ScimError> {
    let display_name = text(object, "displayName")?
        .ok_or_else(|| ScimError::invalid_value("displayName is required"))?;
    let mut members = Vec::new();
    match attr(object, "members") {
        None => {}
        Some(Value::Array(list)) => {
            // Values already kept, compared without case: a group of
            // thousands is read in one pass, not a pass per member.
            let mut seen = std::collections::HashSet::with_capacity(list.len());
            for m in list {
                let Some(value) = m.get("value").and_then(Value::as_str) else {
                    return Err(ScimError::invalid_value(format!(
                        "members: {m} has no value (a user's id)"
                    )));
                };
                let value = value.trim();
                // Kept as sent: a value that names no person of this
                // directory gives nothing.
                if seen.insert(value.to_ascii_lowercase()) {
                    members.push(DirectoryMember {
                        value: value.to_string(),
                        reference: text(m.as_object().expect("has a value"), "$ref")?
                            .filter(|r| *r != format!("{base}/Users/{value}")),
                    });
                }
            }
        }
        Some(_) => return Err(ScimError::invalid_value("members must be an array")),
    }
    Ok(DirectoryGroupSpec {
        display_name,
        external_id: text(object, "externalId")?,
        members,
    })
}

async fn current(store: &Store, scim: &ScimCaller) -> Result<DirectoryGroup, ScimError> {
    let id: DirectoryGroupId = scim.id_of(Resource::DirectoryGroup)?;
    store
        .directory_group(&scim.tenant_id, &id)
        .await?
        .ok_or_else(|| crate::error::ApiError::not_found(Resource::DirectoryGroup).into())
}

fn answer(status: StatusCode, group: &DirectoryGroup, base: &str) -> Response {
    scim_json(
        status,
        &group_view(group, base, true),
        Some(group.stamp.version),
    )
}

#[utoipa::path(
    post,
    path = "/scim/v2/{tenantId}/Groups",
    operation_id = "scimCreateGroup",
    tag = "scim",
    params(("tenantId" = String, Path, description = "The tenant id")),
    request_body = super::scim::ScimGroupDoc,
    responses(
        (status = 201, description = "The group", body = super::scim::ScimGroupDoc),
        (status = 409, description = "The directory has a group of this name (`uniqueness`)", body = crate::error::ErrorBody),
    ),
)]
pub async fn create_group(
    State(store): State<Store>,
    scim: ScimCaller,
    headers: HeaderMap,
    bytes: Bytes,
) -> ScimResult {
    let spec = group_spec(&body_of(&headers, &bytes)?, &scim.base)?;
    let group = store
        .create_directory_group(&scim.tenant_id, &spec, &scim.caller())
        .await?;
    let mut response = answer(StatusCode::CREATED, &group, &scim.base);
    if let Ok(location) = HeaderValue::from_str(&format!("{}/Groups/{}", scim.base, group.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/Groups",
    operation_id = "scimListGroups",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("filter" = Option<String>, Query, description = "`displayName eq \"...\"` or `id eq \"...\"`"),
        ("startIndex" = Option<u64>, Query, description = "1-based index of the first result"),
        ("count" = Option<u64>, Query, description = "Most results (at most 100)"),
        ("excludedAttributes" = Option<String>, Query, description = "`members` leaves them out"),
    ),
    responses((status = 200, description = "A ListResponse", body = super::scim::ScimDocumentDoc)),
)]
pub async fn list_groups(
    State(store): State<Store>,
    scim: ScimCaller,
    RawQuery(query): RawQuery,
) -> ScimResult {
    let query = ListQuery::parse(query.as_deref())?;
    // Members are read only when they are answered.
    let members = query.projection.returns("members");
    let view = |g: &DirectoryGroup| group_view(g, &scim.base, members);
    let groups: Vec<DirectoryGroup> = match &query.filter {
        // Without a filter, only the page's window is read: with their
        // members, a shorter one (RFC 7644 §3.4.2.4 lets a page hold fewer
        // than `count`), cut to a number of members the answer can carry
        // (a group holds up to 5,000; Lambda answers at most 6 MB).
        None => {
            let take = if members {
                query.count.min(GROUPS_PER_PAGE_WITH_MEMBERS)
            } else {
                query.count
            };
            let (mut window, total) = store
                .directory_groups_window(&scim.tenant_id, query.start - 1, take)
                .await?;
            if members {
                let mut carried = 0;
                let fits = window
                    .iter()
                    .take_while(|g| {
                        carried += g.members.len();
                        carried <= MEMBERS_PER_PAGE
                    })
                    .count();
                window.truncate(fits.max(1));
            }
            return Ok(scim_json(
                StatusCode::OK,
                &query.window(&window, total, view),
                None,
            ));
        }
        Some(filter) => {
            let (attribute, value) = group_filter(filter)?;
            let found = match attribute {
                GroupKey::Name => {
                    store
                        .directory_group_by_name(&scim.tenant_id, &value)
                        .await?
                }
                GroupKey::Id => match DirectoryGroupId::parse(&value) {
                    Ok(id) => store.directory_group(&scim.tenant_id, &id).await?,
                    Err(_) => None,
                },
            };
            found.into_iter().collect()
        }
    };
    Ok(scim_json(StatusCode::OK, &query.page(&groups, view), None))
}

enum GroupKey {
    Name,
    Id,
}

/// A group list's filter: one `eq` on `displayName` or `id`.
fn group_filter(filter: &str) -> Result<(GroupKey, String), ScimError> {
    use scim_v2::filter::{AttrExp, CompValue, CompareOp, Filter};
    let parsed: Filter = super::scim_patch::normalized(filter)
        .parse()
        .map_err(|e| ScimError::invalid_filter(format!("filter {filter:?}: {e}")))?;
    match parsed {
        Filter::Attr(AttrExp::Comparison(path, CompareOp::Eq, CompValue::Str(value)))
            if path.sub_attr.is_none() && path.uri.is_none() =>
        {
            match path.name.to_ascii_lowercase().as_str() {
                "displayname" => Ok((GroupKey::Name, value)),
                "id" => Ok((GroupKey::Id, value)),
                _ => Err(ScimError::invalid_filter(
                    "groups are found by displayName eq or id eq only (from an index: no scans)",
                )),
            }
        }
        _ => Err(ScimError::invalid_filter(
            "groups are found by displayName eq or id eq only (from an index: no scans)",
        )),
    }
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/Groups/{id}",
    operation_id = "scimGetGroup",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The group's SCIM id"),
        ("excludedAttributes" = Option<String>, Query, description = "`members` leaves them out"),
    ),
    responses((status = 200, description = "The group", body = super::scim::ScimGroupDoc)),
)]
pub async fn get_group(
    State(store): State<Store>,
    scim: ScimCaller,
    RawQuery(query): RawQuery,
) -> ScimResult {
    let query = ListQuery::parse(query.as_deref())?;
    let group = current(&store, &scim).await?;
    Ok(scim_json(
        StatusCode::OK,
        &query.projection.apply(group_view(
            &group,
            &scim.base,
            query.projection.returns("members"),
        )),
        Some(group.stamp.version),
    ))
}

#[utoipa::path(
    put,
    path = "/scim/v2/{tenantId}/Groups/{id}",
    operation_id = "scimReplaceGroup",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The group's SCIM id"),
    ),
    request_body = super::scim::ScimGroupDoc,
    responses(
        (status = 200, description = "The group as replaced", body = super::scim::ScimGroupDoc),
        (status = 412, description = "If-Match names another version", body = crate::error::ErrorBody),
    ),
)]
pub async fn replace_group(
    State(store): State<Store>,
    scim: ScimCaller,
    headers: HeaderMap,
    bytes: Bytes,
) -> ScimResult {
    let group = current(&store, &scim).await?;
    check_version(&headers, group.stamp.version, Resource::DirectoryGroup)?;
    let spec = group_spec(&body_of(&headers, &bytes)?, &scim.base)?;
    let written = store
        .replace_directory_group(&group, &spec, &scim.caller())
        .await?;
    Ok(answer(StatusCode::OK, &written, &scim.base))
}

#[utoipa::path(
    patch,
    path = "/scim/v2/{tenantId}/Groups/{id}",
    operation_id = "scimPatchGroup",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The group's SCIM id"),
    ),
    request_body = super::scim::ScimPatchDoc,
    responses(
        (status = 200, description = "The group as patched", body = super::scim::ScimGroupDoc),
        (status = 412, description = "If-Match names another version", body = crate::error::ErrorBody),
    ),
)]
pub async fn patch_group(
    State(store): State<Store>,
    scim: ScimCaller,
    headers: HeaderMap,
    bytes: Bytes,
) -> ScimResult {
    let group = current(&store, &scim).await?;
    check_version(&headers, group.stamp.version, Resource::DirectoryGroup)?;
    let body = body_of(&headers, &bytes)?;
    let operations = super::scim::patch_operations(&body)?;
    let Value::Object(mut view) = group_view(&group, &scim.base, true) else {
        unreachable!("a group view is an object")
    };
    for operation in operations {
        apply(&GROUP, &mut view, operation)?;
    }
    let spec = group_spec(&view, &scim.base)?;
    let written = store
        .replace_directory_group(&group, &spec, &scim.caller())
        .await?;
    Ok(answer(StatusCode::OK, &written, &scim.base))
}

#[utoipa::path(
    delete,
    path = "/scim/v2/{tenantId}/Groups/{id}",
    operation_id = "scimDeleteGroup",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The group's SCIM id"),
    ),
    responses((status = 204, description = "The group is deleted; its members lose the roles it gave")),
)]
pub async fn delete_group(
    State(store): State<Store>,
    scim: ScimCaller,
    headers: HeaderMap,
) -> ScimResult {
    let group = current(&store, &scim).await?;
    check_version(&headers, group.stamp.version, Resource::DirectoryGroup)?;
    store.delete_directory_group(&group, &scim.caller()).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
