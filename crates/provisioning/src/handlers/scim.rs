//! SCIM 2.0 (RFC 7643, RFC 7644) for a tenant's directory, at
//! `/scim/v2/{tenantId}/...`: the discovery documents and `Users`, read
//! and written as Okta and Entra ID send them (capitalised ops, booleans as
//! strings, pathless replaces with dotted keys, value-filtered paths).
//! Lists answer `eq` filters (joined by `and`) on `userName`,
//! `externalId`, `id` and the addresses from the tenant's guards, never a
//! scan; every other filter is `invalidFilter`. Errors are SCIM error
//! bodies, their status from the API's one mapping (`ApiError::described`).

use axum::body::Bytes;
use axum::extract::{FromRef, FromRequestParts, Path, RawQuery, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use scim_v2::filter::AttrPath;
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::{Directory, PublicBase, QueryParams};
use authz_core::model::items::{DirectoryEmail, DirectoryUser, EXTERNAL_ID, USER_NAME, WORK_EMAIL};
use authz_core::model::values::{DirectoryUserId, TenantId};
use authz_core::store::directory::DirectoryPerson;
use authz_core::{Caller, Error, Resource, Store};

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const CONFIG_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig";
const RESOURCE_TYPE_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ResourceType";
const SCHEMA_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Schema";
const MEDIA_TYPE: &str = "application/scim+json";

/// Most results a list answers at once (`count`), and the default.
pub const PAGE_MAX: usize = 100;
/// Longest string value kept, in characters.
const VALUE_MAX: usize = 256;
/// Most addresses kept per person.
const EMAILS_MAX: usize = 10;

type ScimResult = Result<Response, ScimError>;

/// A SCIM error body: `status` as a string, `scimType` where RFC 7644
/// §3.12 names one.
#[derive(Debug)]
pub struct ScimError {
    status: StatusCode,
    scim_type: Option<&'static str>,
    detail: String,
    /// Seconds to wait before sending it again (a 429 or 503).
    retry_after: Option<u64>,
}

impl ScimError {
    fn new(status: StatusCode, scim_type: Option<&'static str>, detail: impl Into<String>) -> Self {
        Self {
            status,
            scim_type,
            detail: detail.into(),
            retry_after: None,
        }
    }

    fn bad(scim_type: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Some(scim_type), detail)
    }

    fn not_found() -> Self {
        ApiError::not_found(Resource::DirectoryUser).into()
    }
}

impl From<ApiError> for ScimError {
    fn from(e: ApiError) -> Self {
        let (status, _, message, _) = e.described();
        let scim_type = match &e {
            ApiError::Core(Error::Conflict { .. }) => Some("uniqueness"),
            ApiError::Core(Error::Invalid { .. }) => Some("invalidValue"),
            // RFC 7644 §3.12 gives a 413 no scimType.
            ApiError::UnsupportedMediaType => Some("invalidSyntax"),
            _ => None,
        };
        // A directory's changes that take access away count against the
        // revoking-write limit as an administrator's do: it is told when
        // to send them again, as for a storage fault.
        let retry_after = match &e {
            ApiError::Core(Error::RateLimited { retry_after, .. }) => Some((*retry_after).max(1)),
            ApiError::Core(Error::Retryable { .. }) => Some(1),
            _ => None,
        };
        Self {
            retry_after,
            ..Self::new(status, scim_type, message)
        }
    }
}

impl From<Error> for ScimError {
    fn from(e: Error) -> Self {
        ApiError::from(e).into()
    }
}

impl IntoResponse for ScimError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "schemas": [ERROR_SCHEMA],
            "status": self.status.as_u16().to_string(),
            "detail": self.detail,
        });
        if let Some(t) = self.scim_type {
            body["scimType"] = json!(t);
        }
        let mut response = scim_json(self.status, &body, None);
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A refusal of a request no route takes: in SCIM's shape under a SCIM
/// base (a directory reads only SCIM errors there), the API's elsewhere.
pub fn or_scim(uri: &axum::http::Uri, error: ApiError) -> Response {
    if uri.path().starts_with("/scim/v2/") {
        ScimError::from(error).into_response()
    } else {
        error.into_response()
    }
}

/// A request no route's path takes: under a SCIM base, a search across
/// resource types (`POST /.search`, which this service does not offer:
/// 501, as RFC 7644 §3.12 says) or a SCIM 404; elsewhere the API's 404.
pub fn unrouted(method: &axum::http::Method, uri: &axum::http::Uri) -> Response {
    let path = uri.path();
    if path.starts_with("/scim/v2/")
        && method == axum::http::Method::POST
        && path.ends_with("/.search")
    {
        return ScimError::new(
            StatusCode::NOT_IMPLEMENTED,
            None,
            "searching with POST /.search is not offered: list each resource type with GET and a filter",
        )
        .into_response();
    }
    or_scim(uri, ApiError::RouteNotFound)
}

/// A SCIM answer: `application/scim+json`, with the resource's version as
/// a weak `ETag` when it has one.
pub(crate) fn scim_json(status: StatusCode, body: &Value, version: Option<u64>) -> Response {
    let mut response = (status, body.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
    if let Some(v) = version {
        if let Ok(etag) = HeaderValue::from_str(&weak_etag(v)) {
            headers.insert(header::ETAG, etag);
        }
    }
    response
}

pub(crate) fn weak_etag(version: u64) -> String {
    format!("W/\"{version}\"")
}

/// The caller of a SCIM route: the directory of the tenant in the path
/// (403 for any other caller or tenant), and the base its URLs are under.
pub struct ScimCaller {
    directory: Directory,
    pub(crate) tenant_id: TenantId,
    pub(crate) base: String,
    /// The `{id}` of the route, when it has one.
    pub(crate) id: Option<String>,
}

impl ScimCaller {
    /// Who the directory's changes are recorded as, giving through its
    /// groups no more than the token's creator held, and, as one of the
    /// tenant's own administrators, never leaving it without one.
    pub(crate) fn caller(&self) -> Caller {
        Caller::holding(
            self.directory.principal.clone(),
            self.directory.ceiling.clone(),
        )
        .as_admin_of(self.tenant_id)
    }

    /// The route's `{id}` as the resource's id: one that does not parse
    /// names no resource (404, `resource`).
    pub(crate) fn id_of<T: crate::extract::PathParam>(
        &self,
        resource: Resource,
    ) -> Result<T, ScimError> {
        self.id
            .as_deref()
            .and_then(|id| T::parse_param("id", id).ok())
            .ok_or_else(|| ApiError::not_found(resource).into())
    }

    async fn current(&self, store: &Store) -> Result<DirectoryUser, ScimError> {
        store
            .directory_user(
                &self.tenant_id,
                &self.id_of::<DirectoryUserId>(Resource::DirectoryUser)?,
            )
            .await?
            .ok_or_else(ScimError::not_found)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ScimCaller
where
    Store: FromRef<S>,
{
    type Rejection = ScimError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ScimError> {
        let Path(params) = Path::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(|_| ScimError::not_found())?;
        let param = |name: &str| {
            params
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let refused = || {
            ScimError::new(
                StatusCode::FORBIDDEN,
                None,
                "this SCIM base is for its tenant's directory token only",
            )
        };
        let directory = Directory::from_parts(parts).ok_or_else(refused)?;
        if directory
            .until
            .is_some_and(|end| end <= authz_core::clock::now_seconds())
        {
            return Err(ScimError::new(
                StatusCode::UNAUTHORIZED,
                None,
                "the directory's token has ended: create another",
            ));
        }
        let tenant_id = param("tenantId")
            .and_then(|t| TenantId::parse(&t).ok())
            .filter(|t| *t == directory.tenant_id)
            .ok_or_else(refused)?;
        // A token acts for its creator: once they may no longer manage
        // the tenant's members (removed, narrowed, suspended), neither
        // may it, whatever API Gateway cached.
        if let Some(creator) = &directory.creator {
            if !Store::from_ref(state)
                .may_manage_members(&tenant_id, creator)
                .await?
            {
                return Err(ScimError::new(
                    StatusCode::UNAUTHORIZED,
                    None,
                    "the directory's token was created by someone who may no longer manage this tenant's members: an administrator creates another",
                ));
            }
        }
        let PublicBase(base) = PublicBase::from_request_parts(parts, state)
            .await
            .unwrap_or_else(|never| match never {});
        Ok(Self {
            base: format!("{base}/scim/v2/{tenant_id}"),
            directory,
            tenant_id,
            id: param("id"),
        })
    }
}

/// A request body as SCIM sends it: JSON (`application/scim+json` or
/// `application/json`), an object.
pub(crate) fn body_of(headers: &HeaderMap, bytes: &[u8]) -> Result<Map<String, Value>, ScimError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            let v = v.trim().to_ascii_lowercase();
            v == "application/json" || v == MEDIA_TYPE
        });
    if !json {
        return Err(ApiError::UnsupportedMediaType.into());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ScimError::bad(
            "invalidSyntax",
            "the body must be a JSON object",
        )),
        Err(e) => Err(ScimError::bad(
            "invalidSyntax",
            format!("the body is not JSON: {e}"),
        )),
    }
}

/// The attribute of `object` named `name`, whatever its case (RFC 7643
/// §2.1: attribute names are case-insensitive).
pub(crate) fn attr<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
        .filter(|v| !v.is_null())
}

/// A string attribute: at most [`VALUE_MAX`] characters, no control
/// characters; `None` when absent or empty.
pub(crate) fn text(object: &Map<String, Value>, name: &str) -> Result<Option<String>, ScimError> {
    let Some(value) = attr(object, name) else {
        return Ok(None);
    };
    let Some(s) = value.as_str() else {
        return Err(ScimError::bad(
            "invalidValue",
            format!("{name} must be a string"),
        ));
    };
    let s = s.trim();
    if s.chars().count() > VALUE_MAX || s.chars().any(char::is_control) {
        return Err(ScimError::bad(
            "invalidValue",
            format!("{name} must be at most {VALUE_MAX} characters, without control characters"),
        ));
    }
    Ok((!s.is_empty()).then(|| s.to_string()))
}

/// A boolean as SCIM clients send it: `true`, or `"True"` (Entra ID's
/// default), in any case.
pub(crate) fn boolean(value: &Value, name: &str) -> Result<bool, ScimError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(ScimError::bad(
            "invalidValue",
            format!("{name} must be a boolean"),
        )),
    }
}

/// What a User resource says of a person; attributes this service does
/// not keep (titles, phone numbers, the enterprise extension) are ignored.
fn person(object: &Map<String, Value>) -> Result<DirectoryPerson, ScimError> {
    let user_name = text(object, "userName")?
        .ok_or_else(|| ScimError::bad("invalidValue", "userName is required"))?;
    let name = match attr(object, "name") {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(ScimError::bad("invalidValue", "name must be an object")),
    };
    let emails = match attr(object, "emails") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(email)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect(),
        Some(_) => return Err(ScimError::bad("invalidValue", "emails must be an array")),
    };
    if emails.len() > EMAILS_MAX {
        return Err(ScimError::bad(
            "invalidValue",
            format!("at most {EMAILS_MAX} emails are kept per user"),
        ));
    }
    let active = attr(object, "active")
        .map(|v| boolean(v, "active"))
        .transpose()?;
    Ok(DirectoryPerson {
        user_name,
        external_id: text(object, "externalId")?,
        given_name: text(&name, "givenName")?,
        family_name: text(&name, "familyName")?,
        display_name: text(object, "displayName")?,
        emails,
        active,
    })
}

fn email(value: &Value) -> Result<Option<DirectoryEmail>, ScimError> {
    let Value::Object(e) = value else {
        return Err(ScimError::bad(
            "invalidValue",
            "each of emails must be an object",
        ));
    };
    let Some(address) = text(e, "value")? else {
        return Ok(None);
    };
    if !address.contains('@') {
        return Err(ScimError::bad(
            "invalidValue",
            format!("emails.value {address:?} is not an email address"),
        ));
    }
    Ok(Some(DirectoryEmail {
        value: address,
        kind: text(e, "type")?,
        primary: attr(e, "primary")
            .map(|v| boolean(v, "emails.primary"))
            .transpose()?
            .unwrap_or(false),
    }))
}

/// The User resource of a person.
fn user_view(r: &DirectoryUser, base: &str) -> Value {
    let mut view = json!({
        "schemas": [USER_SCHEMA],
        "id": r.id.to_string(),
        "userName": r.user_name,
        "meta": {
            "resourceType": "User",
            "created": r.stamp.created_at,
            "lastModified": r.stamp.updated_at,
            "version": weak_etag(r.stamp.version),
            "location": format!("{base}/Users/{}", r.id),
        },
    });
    if let Some(active) = r.active {
        view["active"] = json!(active);
    }
    if let Some(e) = &r.external_id {
        view["externalId"] = json!(e);
    }
    let mut name = Map::new();
    if let Some(g) = &r.given_name {
        name.insert("givenName".into(), json!(g));
    }
    if let Some(f) = &r.family_name {
        name.insert("familyName".into(), json!(f));
    }
    if !name.is_empty() {
        view["name"] = Value::Object(name);
    }
    if let Some(d) = &r.display_name {
        view["displayName"] = json!(d);
    }
    if !r.emails.is_empty() {
        view["emails"] = json!(r
            .emails
            .iter()
            .map(|e| {
                let mut v = json!({"value": e.value, "primary": e.primary});
                if let Some(k) = &e.kind {
                    v["type"] = json!(k);
                }
                v
            })
            .collect::<Vec<_>>());
    }
    view
}

/// The version `If-Match` names, if it names one (`W/"3"`, `"3"`, `*`).
fn if_match(headers: &HeaderMap) -> Result<Option<u64>, ScimError> {
    let Some(raw) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    let text = raw.to_str().unwrap_or_default().trim();
    if text == "*" {
        return Ok(None);
    }
    let text = text.strip_prefix("W/").unwrap_or(text);
    text.trim_matches('"')
        .parse::<u64>()
        .map(Some)
        .map_err(|_| ScimError::bad("invalidValue", "If-Match must be an ETag this service gave"))
}

/// `PreconditionFailed` unless `If-Match`, when sent, names `version`.
pub(crate) fn check_version(
    headers: &HeaderMap,
    version: u64,
    resource: Resource,
) -> Result<(), ScimError> {
    match if_match(headers)? {
        Some(v) if v != version => {
            Err(ApiError::Core(Error::PreconditionFailed { resource }).into())
        }
        _ => Ok(()),
    }
}

/// A list's query: its filter, and its page as RFC 7644 §3.4.2.4 says (a
/// `startIndex` below 1 is 1; a `count` above the maximum is the maximum).
pub(crate) struct ListQuery {
    pub filter: Option<String>,
    pub start: usize,
    pub count: usize,
    /// `attributes` and `excludedAttributes`.
    pub projection: Projection,
}

/// What `attributes` and `excludedAttributes` ask of each resource (RFC
/// 7644 §3.4.2.5): `id`, `schemas` and `meta` are always returned.
#[derive(Debug, Default)]
pub(crate) struct Projection {
    only: Option<Vec<String>>,
    except: Vec<String>,
}

/// Attribute names as listed (`name.givenName`, or with the schema's URN
/// before them), lower case, without the URN.
fn attribute_list(raw: Option<&str>) -> Vec<String> {
    raw.unwrap_or_default()
        .split(',')
        .map(|a| {
            let a = a.trim().to_ascii_lowercase();
            match a.rfind(':') {
                Some(i) => a[i + 1..].to_string(),
                None => a,
            }
        })
        .filter(|a| !a.is_empty())
        .collect()
}

impl Projection {
    fn parse(attributes: Option<&str>, excluded: Option<&str>) -> Self {
        let only = attribute_list(attributes);
        Self {
            only: (!only.is_empty()).then_some(only),
            except: attribute_list(excluded),
        }
    }

    /// Whether a resource answered under it has `name` (top level).
    pub(crate) fn returns(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        let listed = |list: &[String]| {
            list.iter()
                .any(|a| *a == name || a.starts_with(&format!("{name}.")))
        };
        let wanted = self.only.as_deref().is_none_or(listed);
        let dropped = self.except.contains(&name);
        wanted && !dropped
    }

    /// `view` with what it leaves out removed.
    pub(crate) fn apply(&self, mut view: Value) -> Value {
        let Value::Object(object) = &mut view else {
            return view;
        };
        object.retain(|key, value| {
            if matches!(key.as_str(), "id" | "schemas" | "meta") {
                return true;
            }
            if !self.returns(key) {
                return false;
            }
            let key = key.to_ascii_lowercase();
            if let Value::Object(sub) = value {
                sub.retain(|k, _| {
                    let path = format!("{key}.{}", k.to_ascii_lowercase());
                    let wanted = self
                        .only
                        .as_deref()
                        .is_none_or(|only| only.contains(&key) || only.contains(&path));
                    wanted && !self.except.contains(&path)
                });
            }
            true
        });
        view
    }
}

impl ListQuery {
    pub(crate) fn parse(query: Option<&str>) -> Result<Self, ScimError> {
        // Names without regard to case (`startindex`, Entra ID's tenant URL
        // flag as `aadOptSCIM062020`); a parameter this service does not
        // use (that flag, `sortBy` where sorting is not offered) is ignored,
        // as a directory's list must not fail on it.
        let params = QueryParams::parse_lenient(
            query,
            &[
                "filter",
                "startIndex",
                "count",
                "attributes",
                "excludedAttributes",
            ],
        )
        .map_err(ScimError::from)?;
        let number = |name: &str| -> Result<Option<usize>, ScimError> {
            params
                .get(name)
                .map(|v| {
                    v.trim().parse::<i64>().map_err(|_| {
                        ScimError::bad("invalidValue", format!("{name} must be an integer"))
                    })
                })
                .transpose()
                .map(|n| n.map(|n| n.max(0) as usize))
        };
        Ok(Self {
            filter: params.get("filter").map(str::to_string),
            start: number("startIndex")?.unwrap_or(1).max(1),
            count: number("count")?.unwrap_or(PAGE_MAX).min(PAGE_MAX),
            projection: Projection::parse(
                params.get("attributes"),
                params.get("excludedAttributes"),
            ),
        })
    }

    /// The page of `all` this query asks for, as a ListResponse.
    pub(crate) fn page<T>(&self, all: &[T], view: impl Fn(&T) -> Value) -> Value {
        let from = self.start - 1;
        self.window(
            &all[from.min(all.len())..(from + self.count).min(all.len())],
            all.len(),
            view,
        )
    }

    /// The list of `window`, the page's resources already cut from the
    /// `total` that match.
    pub(crate) fn window<T>(
        &self,
        window: &[T],
        total: usize,
        view: impl Fn(&T) -> Value,
    ) -> Value {
        let page = window
            .iter()
            .map(|item| self.projection.apply(view(item)))
            .collect();
        list_of(page, total, self.start)
    }
}

/// The operations of a PATCH request body (RFC 7644 §3.5.2).
pub(crate) fn patch_operations(body: &Map<String, Value>) -> Result<&Vec<Value>, ScimError> {
    let schemas_ok = attr(body, "schemas")
        .and_then(Value::as_array)
        .is_some_and(|s| s.iter().any(|v| v == PATCH_SCHEMA));
    if !schemas_ok {
        return Err(ScimError::bad(
            "invalidSyntax",
            format!("schemas must list {PATCH_SCHEMA}"),
        ));
    }
    match attr(body, "Operations") {
        Some(Value::Array(operations)) => Ok(operations),
        _ => Err(ScimError::bad(
            "invalidSyntax",
            "Operations must be an array",
        )),
    }
}

/// A SCIM Group resource (RFC 7643 §4.2): members by their SCIM ids.
#[derive(ToSchema)]
#[allow(dead_code)]
#[schema(as = ScimGroup)]
pub struct ScimGroupDoc {
    schemas: Vec<String>,
    #[schema(rename = "displayName")]
    display_name: String,
    #[schema(rename = "externalId")]
    external_id: Option<String>,
    members: Option<Vec<ScimMemberDoc>>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ScimMemberDoc {
    /// A user's SCIM id.
    value: String,
}

/// A SCIM User resource, as this service reads and answers it (RFC 7643
/// §4.1; other attributes are accepted and not kept).
#[derive(ToSchema)]
#[allow(dead_code)]
#[schema(as = ScimUser)]
pub struct ScimUserDoc {
    schemas: Vec<String>,
    #[schema(rename = "userName")]
    user_name: String,
    #[schema(rename = "externalId")]
    external_id: Option<String>,
    name: Option<ScimNameDoc>,
    #[schema(rename = "displayName")]
    display_name: Option<String>,
    emails: Option<Vec<ScimEmailDoc>>,
    /// `false` suspends the member's access to this tenant; a boolean or
    /// `"True"`/`"False"`.
    active: Option<bool>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ScimNameDoc {
    #[schema(rename = "givenName")]
    given_name: Option<String>,
    #[schema(rename = "familyName")]
    family_name: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ScimEmailDoc {
    value: String,
    r#type: Option<String>,
    primary: Option<bool>,
}

/// A PATCH request (RFC 7644 §3.5.2).
#[derive(ToSchema)]
#[allow(dead_code)]
#[schema(as = ScimPatch)]
pub struct ScimPatchDoc {
    schemas: Vec<String>,
    #[schema(rename = "Operations")]
    operations: Vec<ScimOperationDoc>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ScimOperationDoc {
    /// `add`, `replace` or `remove`, in any case.
    op: String,
    path: Option<String>,
    value: Option<serde_json::Value>,
}

/// A SCIM list (`ListResponse`) or discovery document.
#[derive(ToSchema)]
#[allow(dead_code)]
#[schema(as = ScimDocument)]
pub struct ScimDocumentDoc {
    schemas: Vec<String>,
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/ServiceProviderConfig",
    operation_id = "scimServiceProviderConfig",
    tag = "scim",
    params(("tenantId" = String, Path, description = "The tenant id")),
    responses((status = 200, description = "What this SCIM service supports", body = ScimDocumentDoc)),
)]
pub async fn service_provider_config(scim: ScimCaller) -> ScimResult {
    let config = json!({
        "schemas": [CONFIG_SCHEMA],
        "documentationUri": "https://github.com/authz/authz/blob/main/docs/scim.md",
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": PAGE_MAX},
        "changePassword": {"supported": false},
        "sort": {"supported": false},
        "etag": {"supported": true},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "OAuth Bearer Token",
            "description": "A token of the tenant's directory (POST /tenants/{tenantId}/scim-tokens)",
            "primary": true,
        }],
        "meta": {
            "resourceType": "ServiceProviderConfig",
            "location": format!("{}/ServiceProviderConfig", scim.base),
        },
    });
    Ok(scim_json(StatusCode::OK, &config, None))
}

fn user_resource_type(base: &str) -> Value {
    json!({
        "schemas": [RESOURCE_TYPE_SCHEMA],
        "id": "User",
        "name": "User",
        "endpoint": "/Users",
        "description": "A person of the tenant's directory",
        "schema": USER_SCHEMA,
        "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/User")},
    })
}

pub(crate) fn group_resource_type(base: &str) -> Value {
    json!({
        "schemas": [RESOURCE_TYPE_SCHEMA],
        "id": "Group",
        "name": "Group",
        "endpoint": "/Groups",
        "description": "A group of the tenant's directory",
        "schema": GROUP_SCHEMA,
        "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/Group")},
    })
}

fn group_schema(base: &str) -> Value {
    let sub = |name: &str, kind: &str, mutability: &str| {
        json!({
            "name": name, "type": kind, "multiValued": false, "required": false,
            "caseExact": false, "mutability": mutability, "returned": "default",
            "uniqueness": "none", "description": name,
        })
    };
    json!({
        "schemas": [SCHEMA_SCHEMA],
        "id": GROUP_SCHEMA,
        "name": "Group",
        "description": "A group of the tenant's directory",
        "attributes": [
            {
                "name": "displayName", "type": "string", "multiValued": false, "required": true,
                "caseExact": false, "mutability": "readWrite", "returned": "default",
                "uniqueness": "server", "description": "The group's name, unique in the directory",
            },
            {
                "name": "members", "type": "complex", "multiValued": true, "required": false,
                "mutability": "readWrite", "returned": "default", "uniqueness": "none",
                "description": "The group's users, by their SCIM ids",
                "subAttributes": [sub("value", "string", "immutable"), sub("$ref", "reference", "immutable")],
            },
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{GROUP_SCHEMA}")},
    })
}

pub(crate) fn list_of(resources: Vec<Value>, total: usize, start: usize) -> Value {
    json!({
        "schemas": [LIST_SCHEMA],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": resources.len(),
        "Resources": resources,
    })
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/ResourceTypes",
    operation_id = "scimResourceTypes",
    tag = "scim",
    params(("tenantId" = String, Path, description = "The tenant id")),
    responses((status = 200, description = "The resource types served", body = ScimDocumentDoc)),
)]
pub async fn resource_types(scim: ScimCaller) -> ScimResult {
    let types = vec![
        user_resource_type(&scim.base),
        group_resource_type(&scim.base),
    ];
    Ok(scim_json(StatusCode::OK, &list_of(types, 2, 1), None))
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/ResourceTypes/{id}",
    operation_id = "scimResourceType",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The resource type (`User`)"),
    ),
    responses((status = 200, description = "The resource type", body = ScimDocumentDoc)),
)]
pub async fn resource_type(scim: ScimCaller) -> ScimResult {
    match scim.id.as_deref() {
        Some("User") => Ok(scim_json(
            StatusCode::OK,
            &user_resource_type(&scim.base),
            None,
        )),
        Some("Group") => Ok(scim_json(
            StatusCode::OK,
            &group_resource_type(&scim.base),
            None,
        )),
        _ => Err(ScimError::new(
            StatusCode::NOT_FOUND,
            None,
            "no such resource type",
        )),
    }
}

fn user_schema(base: &str) -> Value {
    let attribute = |name: &str, kind: &str, required: bool, uniqueness: &str, exact: bool| {
        json!({
            "name": name, "type": kind, "multiValued": false, "required": required,
            "caseExact": exact, "mutability": "readWrite", "returned": "default",
            "uniqueness": uniqueness, "description": name,
        })
    };
    let sub = |name: &str, kind: &str| {
        json!({
            "name": name, "type": kind, "multiValued": false, "required": false,
            "caseExact": false, "mutability": "readWrite", "returned": "default",
            "uniqueness": "none", "description": name,
        })
    };
    json!({
        "schemas": [SCHEMA_SCHEMA],
        "id": USER_SCHEMA,
        "name": "User",
        "description": "A person of the tenant's directory",
        "attributes": [
            attribute("userName", "string", true, "server", false),
            {
                "name": "name", "type": "complex", "multiValued": false, "required": false,
                "mutability": "readWrite", "returned": "default", "uniqueness": "none",
                "description": "name",
                "subAttributes": [sub("givenName", "string"), sub("familyName", "string")],
            },
            attribute("displayName", "string", false, "none", false),
            {
                "name": "emails", "type": "complex", "multiValued": true, "required": false,
                "mutability": "readWrite", "returned": "default", "uniqueness": "none",
                "description": "Addresses, unique among the tenant directory's people",
                "subAttributes": [sub("value", "string"), sub("type", "string"), sub("primary", "boolean")],
            },
            attribute("active", "boolean", false, "none", false),
        ],
        "meta": {"resourceType": "Schema", "location": format!("{base}/Schemas/{USER_SCHEMA}")},
    })
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/Schemas",
    operation_id = "scimSchemas",
    tag = "scim",
    params(("tenantId" = String, Path, description = "The tenant id")),
    responses((status = 200, description = "The schemas served", body = ScimDocumentDoc)),
)]
pub async fn schemas(scim: ScimCaller) -> ScimResult {
    let all = vec![user_schema(&scim.base), group_schema(&scim.base)];
    Ok(scim_json(StatusCode::OK, &list_of(all, 2, 1), None))
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/Schemas/{id}",
    operation_id = "scimSchema",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The schema URN"),
    ),
    responses((status = 200, description = "The schema", body = ScimDocumentDoc)),
)]
pub async fn schema(scim: ScimCaller) -> ScimResult {
    match scim.id.as_deref() {
        Some(USER_SCHEMA) => Ok(scim_json(StatusCode::OK, &user_schema(&scim.base), None)),
        Some(GROUP_SCHEMA) => Ok(scim_json(StatusCode::OK, &group_schema(&scim.base), None)),
        _ => Err(ScimError::new(
            StatusCode::NOT_FOUND,
            None,
            "no such schema",
        )),
    }
}

#[utoipa::path(
    post,
    path = "/scim/v2/{tenantId}/Users",
    operation_id = "scimCreateUser",
    tag = "scim",
    params(("tenantId" = String, Path, description = "The tenant id")),
    request_body = ScimUserDoc,
    responses(
        (status = 201, description = "The person, provisioned", body = ScimUserDoc),
        (status = 409, description = "Another person of the directory has this userName, externalId or address (`uniqueness`)", body = crate::error::ErrorBody),
    ),
)]
pub async fn create_user(
    State(store): State<Store>,
    scim: ScimCaller,
    headers: HeaderMap,
    bytes: Bytes,
) -> ScimResult {
    let body = body_of(&headers, &bytes)?;
    let person = person(&body)?;
    let created = store
        .create_directory_user(&scim.tenant_id, &person, &scim.caller())
        .await?;
    let mut response = scim_json(
        StatusCode::CREATED,
        &user_view(&created, &scim.base),
        Some(created.stamp.version),
    );
    if let Ok(location) = HeaderValue::from_str(&format!("{}/Users/{}", scim.base, created.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/Users/{id}",
    operation_id = "scimGetUser",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The person's SCIM id"),
    ),
    responses((status = 200, description = "The person (inactive ones too)", body = ScimUserDoc)),
)]
pub async fn get_user(
    State(store): State<Store>,
    scim: ScimCaller,
    RawQuery(query): RawQuery,
) -> ScimResult {
    let query = ListQuery::parse(query.as_deref())?;
    let current = scim.current(&store).await?;
    Ok(scim_json(
        StatusCode::OK,
        &query.projection.apply(user_view(&current, &scim.base)),
        Some(current.stamp.version),
    ))
}

#[utoipa::path(
    put,
    path = "/scim/v2/{tenantId}/Users/{id}",
    operation_id = "scimReplaceUser",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The person's SCIM id"),
    ),
    request_body = ScimUserDoc,
    responses(
        (status = 200, description = "The person as replaced", body = ScimUserDoc),
        (status = 409, description = "Another person of the directory has this userName, externalId or address (`uniqueness`)", body = crate::error::ErrorBody),
        (status = 412, description = "If-Match names another version", body = crate::error::ErrorBody),
    ),
)]
pub async fn replace_user(
    State(store): State<Store>,
    scim: ScimCaller,
    headers: HeaderMap,
    bytes: Bytes,
) -> ScimResult {
    let current = scim.current(&store).await?;
    check_version(&headers, current.stamp.version, Resource::DirectoryUser)?;
    let body = body_of(&headers, &bytes)?;
    let person = person(&body)?;
    replaced(&store, &scim, &current, &person).await
}

async fn replaced(
    store: &Store,
    scim: &ScimCaller,
    current: &DirectoryUser,
    person: &DirectoryPerson,
) -> ScimResult {
    let written = store
        .replace_directory_user(current, person, &scim.caller())
        .await?;
    Ok(scim_json(
        StatusCode::OK,
        &user_view(&written, &scim.base),
        Some(written.stamp.version),
    ))
}

#[utoipa::path(
    patch,
    path = "/scim/v2/{tenantId}/Users/{id}",
    operation_id = "scimPatchUser",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The person's SCIM id"),
    ),
    request_body = ScimPatchDoc,
    responses(
        (status = 200, description = "The person as patched", body = ScimUserDoc),
        (status = 412, description = "If-Match names another version", body = crate::error::ErrorBody),
    ),
)]
pub async fn patch_user(
    State(store): State<Store>,
    scim: ScimCaller,
    headers: HeaderMap,
    bytes: Bytes,
) -> ScimResult {
    let current = scim.current(&store).await?;
    check_version(&headers, current.stamp.version, Resource::DirectoryUser)?;
    let body = body_of(&headers, &bytes)?;
    let operations = patch_operations(&body)?;
    let Value::Object(mut view) = user_view(&current, &scim.base) else {
        unreachable!("a user view is an object")
    };
    for operation in operations {
        crate::handlers::scim_patch::apply(
            &crate::handlers::scim_patch::USER,
            &mut view,
            operation,
        )?;
    }
    let person = person(&view)?;
    replaced(&store, &scim, &current, &person).await
}

#[utoipa::path(
    delete,
    path = "/scim/v2/{tenantId}/Users/{id}",
    operation_id = "scimDeleteUser",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("id" = String, Path, description = "The person's SCIM id"),
    ),
    responses((status = 204, description = "The person is deprovisioned: their membership here ends")),
)]
pub async fn delete_user(
    State(store): State<Store>,
    scim: ScimCaller,
    headers: HeaderMap,
) -> ScimResult {
    let current = scim.current(&store).await?;
    check_version(&headers, current.stamp.version, Resource::DirectoryUser)?;
    store
        .delete_directory_user(&current, &scim.caller())
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[utoipa::path(
    get,
    path = "/scim/v2/{tenantId}/Users",
    operation_id = "scimListUsers",
    tag = "scim",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("filter" = Option<String>, Query, description = "`eq` comparisons joined by `and`, one of them on `userName`, `externalId`, `id` or an address (`emails[type eq \"work\"].value`)"),
        ("startIndex" = Option<u64>, Query, description = "1-based index of the first result"),
        ("count" = Option<u64>, Query, description = "Most results (at most 100)"),
    ),
    responses((status = 200, description = "A ListResponse", body = ScimDocumentDoc)),
)]
pub async fn list_users(
    State(store): State<Store>,
    scim: ScimCaller,
    RawQuery(query): RawQuery,
) -> ScimResult {
    let query = ListQuery::parse(query.as_deref())?;
    let list = match &query.filter {
        Some(filter) => {
            let matched: Vec<DirectoryUser> =
                crate::handlers::scim_patch::filtered(&store, &scim.tenant_id, filter)
                    .await?
                    .into_iter()
                    .collect();
            query.page(&matched, |r| user_view(r, &scim.base))
        }
        // Without a filter, only the page's window is read.
        None => {
            let (window, total) = store
                .directory_users_window(&scim.tenant_id, query.start - 1, query.count)
                .await?;
            query.window(&window, total, |r| user_view(r, &scim.base))
        }
    };
    Ok(scim_json(StatusCode::OK, &list, None))
}

/// The guarded attributes a filter can look a person up by.
pub(crate) fn guarded(path: &AttrPath) -> Option<&'static str> {
    let name = path.name.to_ascii_lowercase();
    let sub = path.sub_attr.as_deref().map(str::to_ascii_lowercase);
    match (name.as_str(), sub.as_deref()) {
        ("username", None) => Some(USER_NAME),
        ("externalid", None) => Some(EXTERNAL_ID),
        ("emails", None | Some("value")) => Some(WORK_EMAIL),
        _ => None,
    }
}

impl ScimError {
    pub(crate) fn invalid_filter(detail: impl Into<String>) -> Self {
        Self::bad("invalidFilter", detail)
    }

    pub(crate) fn invalid_value(detail: impl Into<String>) -> Self {
        Self::bad("invalidValue", detail)
    }

    pub(crate) fn mutability(detail: impl Into<String>) -> Self {
        Self::bad("mutability", detail)
    }

    pub(crate) fn invalid_path(detail: impl Into<String>) -> Self {
        Self::bad("invalidPath", detail)
    }

    pub(crate) fn invalid_syntax(detail: impl Into<String>) -> Self {
        Self::bad("invalidSyntax", detail)
    }

    pub(crate) fn with_type(mut self, scim_type: &'static str) -> Self {
        self.scim_type = Some(scim_type);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_past_the_revoking_write_limit_is_told_when_to_retry() {
        let limited = ApiError::Core(Error::RateLimited {
            what: "writes that take access away (20 per 10 s)".into(),
            retry_after: 7,
        });
        let response = ScimError::from(limited).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "7");
        assert_eq!(response.headers()[header::CONTENT_TYPE], MEDIA_TYPE);
        let conflict = ScimError::from(ApiError::Core(Error::conflict("userName"))).into_response();
        assert!(conflict.headers().get(header::RETRY_AFTER).is_none());
    }
}
