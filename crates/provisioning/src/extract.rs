//! Request extractors with the API's own error bodies: JSON bodies (media
//! type, size, field-named decode errors), the caller from the authorizer
//! context, the expected version of a PATCH, and query parameters.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, OptionalFromRequest, Request};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lambda_http::request::RequestContext;
use serde::de::DeserializeOwned;

use authz_core::clock::now_seconds;
use authz_core::model::values::{Permission, TenantId};
use authz_core::{Caller, Holding, NO_END};

use crate::error::ApiError;
use crate::objects::Objects;

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Largest request body accepted under a tenant's SCIM base, in bytes: a
/// directory's full replace of a group's members (Okta's, 5,000 of them
/// with their `display`) fits.
pub const SCIM_MAX_BODY_BYTES: usize = 1024 * 1024;

/// A JSON request body decoded into `T`. Refuses a non-JSON media type
/// (415), a body over 64 KB (413), and malformed JSON, wrong types and
/// unknown fields (400, naming the field).
#[derive(Debug)]
pub struct JsonBody<T>(pub T);

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let is_json = json_media(req.headers());
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|_| ApiError::invalid("body", "could not be read"))?;
        body(is_json, &bytes)
    }
}

/// Whether the request says its body is JSON (`application/json` or
/// `application/*+json`).
fn json_media(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| {
            let v = v.trim().to_ascii_lowercase();
            v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
        })
        .unwrap_or(false)
}

/// A body read: 415 unless JSON, 413 past the limit, else decoded.
fn body<T: DeserializeOwned>(is_json: bool, bytes: &[u8]) -> Result<JsonBody<T>, ApiError> {
    if !is_json {
        return Err(ApiError::UnsupportedMediaType);
    }
    if bytes.len() > MAX_BODY_BYTES {
        return Err(ApiError::PayloadTooLarge {
            limit: MAX_BODY_BYTES,
        });
    }
    decode(bytes).map(JsonBody)
}

/// An optional JSON body: `None` when the request has none (an empty body,
/// whatever its `Content-Type`), otherwise exactly as [`JsonBody`].
impl<S, T> OptionalFromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, Self::Rejection> {
        let is_json = json_media(req.headers());
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|_| ApiError::invalid("body", "could not be read"))?;
        if bytes.is_empty() {
            return Ok(None);
        }
        body(is_json, &bytes).map(Some)
    }
}

/// Decodes JSON, turning serde's error into `Invalid` with the field path.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid("body", "must be a JSON object"));
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    // Structs from JSON objects only, at any depth (`objects`).
    let result: Result<T, _> = serde_path_to_error::deserialize(Objects(&mut *de));
    let value = result.map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = strip_position(&inner.to_string());
        let field = if let Some(name) = named_field(&message) {
            name
        } else if inner.is_syntax() || inner.is_eof() || path == "." {
            "body".to_string()
        } else {
            path
        };
        let reason = if inner.is_syntax() || inner.is_eof() {
            format!("is not valid JSON ({message})")
        } else {
            message
        };
        ApiError::invalid(field, reason)
    })?;
    de.end().map_err(|e| {
        ApiError::invalid(
            "body",
            format!("is not valid JSON ({})", strip_position(&e.to_string())),
        )
    })?;
    Ok(value)
}

/// serde_json appends " at line L column C": position noise for an API.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// The name in serde's "unknown field `x`, expected ..." and "missing field
/// `x`" messages (reported at the parent's path, so the name is the field).
fn named_field(message: &str) -> Option<String> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("missing field `"))?;
    Some(rest[..rest.find('`')?].to_string())
}

/// A field of the context the authorizer returned (REST or HTTP API), when
/// it is a non-empty string.
fn context_field<'a>(context: Option<&'a RequestContext>, name: &str) -> Option<&'a str> {
    let fields = match context {
        Some(RequestContext::ApiGatewayV1(ctx)) => Some(&ctx.authorizer.fields),
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx.authorizer.as_ref().map(|a| &a.fields),
        _ => None,
    };
    fields
        .and_then(|f| f.get(name))
        .and_then(|v| v.as_str())
        .filter(|v| !v.is_empty())
}

/// Who is calling, from the context the authorizer returned and API Gateway
/// passes in `requestContext.authorizer`: `principalId` (recorded as
/// `updatedBy`), `tenantId` (the tenant it decided for; empty on global
/// routes), `tenantPermissions` (what their grant there gives) and
/// `globalPermissions` (what their global roles give everywhere), each with
/// when it ends (`tenantPermissionsUntil`, `globalPermissionsUntil`: seconds
/// since the epoch, or `never`). Provisioning may trust it because
/// only API Gateway can invoke the function (the template grants no other
/// invoker) and API Gateway always runs the authorizer first. Inserted by
/// [`require_caller`] for every routed request.
#[derive(Debug, Clone)]
pub struct Actor {
    id: String,
    /// The tenant the authorizer decided for.
    tenant: Option<TenantId>,
    /// What their grant there gives.
    grant: Source,
    /// What they hold in every tenant.
    global: Source,
    /// When the authorizer's answer stops being right (`accessUntil`,
    /// seconds since the epoch), if it does and the context says.
    access_until: Option<u64>,
}

/// Permissions from one source, as the context reports them.
#[derive(Debug, Clone)]
struct Source {
    permissions: Vec<Permission>,
    /// When they end (`Some(None)`: never); `None` when the context does
    /// not say (an authorizer from before it did), and then they give
    /// nothing.
    until: Option<Option<u64>>,
}

impl Source {
    fn holding(&self) -> Option<Holding> {
        self.until
            .map(|until| Holding::new(self.permissions.clone(), until))
    }
}

impl Actor {
    pub fn as_deref(&self) -> Option<&str> {
        Some(&self.id)
    }

    /// Whether the caller is `user`.
    pub fn is(&self, user: &authz_core::model::values::UserId) -> bool {
        self.id == user.to_string()
    }

    /// The caller's user id, when it is one.
    pub fn user_id(&self) -> Option<authz_core::model::values::UserId> {
        authz_core::model::values::UserId::parse(&self.id).ok()
    }

    /// The caller of a write in `tenant`: what the authorizer found they
    /// hold there (their grant and their global permissions, each until it
    /// ends), or only their global permissions if it decided for another
    /// tenant.
    pub fn in_tenant(&self, tenant: &TenantId) -> Caller {
        let grant = match self.tenant {
            Some(t) if t == *tenant => self.grant.holding(),
            _ => None,
        };
        let holdings = grant.into_iter().chain(self.global.holding()).collect();
        let caller = Caller::holding(self.id.clone(), holdings);
        // Holding member:write there but not everywhere: one of the
        // tenant's own administrators.
        if self.holds_globally("member:write") {
            caller
        } else {
            caller.as_admin_of(*tenant)
        }
    }

    /// Whether the caller holds `permission` everywhere (their global
    /// permissions give it).
    pub fn holds_globally(&self, permission: &str) -> bool {
        authz_core::model::values::any_covers(&self.global.permissions, permission)
    }

    /// The caller of a global write (users' global roles, roles): their
    /// global permissions, until they end.
    pub fn global(&self) -> Caller {
        Caller::holding(self.id.clone(), self.global.holding().into_iter().collect())
    }

    /// Reads the authorizer context; `Unauthenticated` without one, or
    /// with a field that does not parse.
    fn from_context(context: Option<&RequestContext>) -> Result<Self, ApiError> {
        let field = |name: &str| context_field(context, name);
        let id = field("principalId").ok_or(ApiError::Unauthenticated)?;
        let tenant = field("tenantId")
            .map(TenantId::parse)
            .transpose()
            .map_err(|_| ApiError::Unauthenticated)?;
        // An end as the context says it: absent (`None`), `never`
        // (`Some(None)`), or seconds since the epoch.
        let end = |name: &str| -> Result<Option<Option<u64>>, ApiError> {
            match field(name) {
                None => Ok(None),
                Some(NO_END) => Ok(Some(None)),
                Some(end) => end
                    .parse::<u64>()
                    .map(|e| Some(Some(e)))
                    .map_err(|_| ApiError::Unauthenticated),
            }
        };
        let source = |permissions: &str, until: &str| -> Result<Source, ApiError> {
            let permissions = field(permissions)
                .unwrap_or_default()
                .split(',')
                .filter(|p| !p.is_empty())
                .map(Permission::parse)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| ApiError::Unauthenticated)?;
            Ok(Source {
                permissions,
                until: end(until)?,
            })
        };
        Ok(Self {
            id: id.to_string(),
            tenant,
            grant: source("tenantPermissions", "tenantPermissionsUntil")?,
            global: source("globalPermissions", "globalPermissionsUntil")?,
            access_until: end("accessUntil")?.flatten(),
        })
    }
}

/// Refuses (401) a request that did not come through the authorizer, and
/// (403) one whose answer API Gateway reused past its `accessUntil` (a
/// grant or global roles ended since the authorizer decided), and hands
/// the caller to the handlers.
pub async fn require_caller(mut request: Request, next: Next) -> Response {
    match Actor::from_context(request.extensions().get::<RequestContext>()) {
        Ok(actor) if actor.access_until.is_some_and(|end| end <= now_seconds()) => {
            ApiError::AccessEnded.into_response()
        }
        Ok(actor) => {
            request.extensions_mut().insert(actor);
            next.run(request).await
        }
        Err(e) => e.into_response(),
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Actor {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        match parts.extensions.get::<Actor>() {
            Some(actor) => Ok(actor.clone()),
            None => Self::from_context(parts.extensions.get::<RequestContext>()),
        }
    }
}

/// The address the request came from, as API Gateway saw it
/// (`requestContext.identity.sourceIp`), when it is one: the facts a
/// caller's check about themselves is asked with.
#[derive(Debug, Clone)]
pub struct SourceIp(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for SourceIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let ip = match parts.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV1(ctx)) => ctx.identity.source_ip.clone(),
            Some(RequestContext::ApiGatewayV2(ctx)) => ctx.http.source_ip.clone(),
            _ => None,
        };
        Ok(Self(ip.filter(|ip| ip.parse::<std::net::IpAddr>().is_ok())))
    }
}

/// What the authorizer says of someone signing up (`POST /users/me`,
/// decided for a token whose identity is linked to nobody, from an issuer
/// open to sign-up): the identity, the address the issuer verified, and
/// whether the issuer is authoritative for its domain. Only the authorizer
/// writes it; a caller who is a user already never has it.
#[derive(Debug, Clone)]
pub struct SigningUp {
    pub identity: authz_core::model::input::NewIdentity,
    pub email: authz_core::model::values::Email,
    pub link_by_email: bool,
    /// The tenant the issuer is bound to, if it is: all it speaks for.
    pub tenant: Option<TenantId>,
}

impl<S: Send + Sync> FromRequestParts<S> for SigningUp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let context = parts.extensions.get::<RequestContext>();
        let field = |name: &str| context_field(context, name);
        if field("signUp") != Some("true") {
            return Err(ApiError::NotSigningUp);
        }
        let bad = |_| ApiError::Unauthenticated;
        Ok(Self {
            identity: authz_core::model::input::NewIdentity {
                issuer: authz_core::model::values::Issuer::parse(
                    field("issuer").unwrap_or_default(),
                )
                .map_err(bad)?,
                subject: authz_core::model::values::Subject::parse(
                    field("subject").unwrap_or_default(),
                )
                .map_err(bad)?,
            },
            email: authz_core::model::values::Email::parse(field("email").unwrap_or_default())
                .map_err(bad)?,
            link_by_email: field("linkByEmail") == Some("true"),
            tenant: field("tenantId")
                .filter(|t| !t.is_empty())
                .map(TenantId::parse)
                .transpose()
                .map_err(bad)?,
        })
    }
}

/// `Option<SigningUp>`: `None` for a caller the authorizer did not decide
/// is signing up.
impl<S: Send + Sync> axum::extract::OptionalFromRequestParts<S> for SigningUp {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Option<Self>, ApiError> {
        match <Self as FromRequestParts<S>>::from_request_parts(parts, state).await {
            Ok(signing_up) => Ok(Some(signing_up)),
            Err(ApiError::NotSigningUp) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A tenant's directory calling its SCIM base, as the authorizer decided
/// it (`scimTokenId`, the tenant and the token's end in its context, the
/// token as its principal); the tenant is the one in the path, or the
/// request is refused.
#[derive(Debug, Clone)]
pub struct Directory {
    pub tenant_id: TenantId,
    /// When the token ends (`scimTokenUntil`: seconds since the epoch),
    /// if it does: API Gateway may answer from a decision it cached
    /// before then, so the end is checked here too.
    pub until: Option<u64>,
    /// Who its changes are recorded as: the principal the authorizer
    /// named (`SCIM token {name} ({tokenId})`).
    pub principal: String,
    /// What its creator held when they created it (`scimTokenCeiling`):
    /// the most its groups give anyone through it.
    pub ceiling: Vec<authz_core::policy::ceiling::Holding>,
    /// The user who created it (`scimTokenCreator`), checked on every
    /// request: none for a token from the operator's tools (or a decision
    /// API Gateway cached before the authorizer said it).
    pub creator: Option<authz_core::model::values::UserId>,
}

impl Directory {
    /// The directory's context, if the authorizer decided for one.
    pub fn from_parts(parts: &Parts) -> Option<Self> {
        let context = parts.extensions.get::<RequestContext>();
        let field = |name: &str| context_field(context, name);
        field("scimTokenId")?;
        let until = match field("scimTokenUntil")? {
            authz_core::NO_END => None,
            end => Some(end.parse().ok()?),
        };
        Some(Self {
            tenant_id: TenantId::parse(field("tenantId")?).ok()?,
            until,
            principal: field("principalId")?.to_string(),
            // Absent from an answer cached before it was told: nothing.
            ceiling: match field("scimTokenCeiling") {
                Some(json) => serde_json::from_str(json).ok()?,
                None => Vec::new(),
            },
            creator: field("scimTokenCreator")
                .and_then(|c| authz_core::model::values::UserId::parse(c).ok()),
        })
    }
}

/// Where the API is reached from outside (`https://{Host}/{stage}`), for
/// the URLs it hands out; a relative URL when the request has no `Host`.
#[derive(Debug, Clone)]
pub struct PublicBase(pub String);

impl PublicBase {
    /// The SCIM base of a tenant.
    pub fn scim(&self, tenant: &TenantId) -> String {
        format!("{}/scim/v2/{tenant}", self.0)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for PublicBase {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let host = parts
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .filter(|h| {
                !h.is_empty()
                    && h.chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c))
            });
        // API Gateway's `requestContext.path` carries the stage the
        // route's own path does not.
        let stage = match parts.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV1(ctx)) => ctx
                .path
                .as_deref()
                .and_then(|full| full.strip_suffix(parts.uri.path()))
                .unwrap_or("")
                .to_string(),
            _ => String::new(),
        };
        let base = match host {
            None => stage,
            Some(h) => {
                let local = h.starts_with("127.0.0.1") || h.starts_with("localhost");
                let scheme = if local { "http" } else { "https" };
                format!("{scheme}://{h}{stage}")
            }
        };
        Ok(Self(base))
    }
}

/// A value a path segment holds, parsed for the parameter the route
/// names it by (`{tenantId}`): a malformed one is a 400 naming it.
pub trait PathParam: Sized {
    fn parse_param(name: &str, raw: &str) -> Result<Self, authz_core::model::values::Invalid>;
}

macro_rules! path_params {
    ($($ty:ty),* $(,)?) => {
        $(impl PathParam for $ty {
            fn parse_param(name: &str, raw: &str) -> Result<Self, authz_core::model::values::Invalid> {
                <$ty>::parse_field(name, raw)
            }
        })*
    };
}

path_params!(
    authz_core::model::values::TenantId,
    authz_core::model::values::UserId,
    authz_core::model::values::RoleId,
    authz_core::model::values::PolicyId,
    authz_core::model::values::EmailId,
    authz_core::model::values::IdentityId,
    authz_core::model::values::InvitationId,
    authz_core::model::values::TenantGrantId,
    authz_core::model::values::Email,
    authz_core::model::values::TenantName,
    authz_core::model::values::RoleName,
    authz_core::model::values::RoleScope,
    authz_core::model::values::PolicyName,
    authz_core::model::values::DirectoryTokenId,
    authz_core::model::values::DirectoryUserId,
    authz_core::model::values::DirectoryGroupId,
);

/// The path's parameters, in the route's order, each with its name.
async fn path_params<S: Send + Sync>(
    parts: &mut Parts,
    state: &S,
) -> Result<Vec<(String, String)>, ApiError> {
    axum::extract::Path::<Vec<(String, String)>>::from_request_parts(parts, state)
        .await
        .map(|axum::extract::Path(params)| params)
        .map_err(|_| ApiError::RouteNotFound)
}

fn param<T: PathParam>(params: &[(String, String)], at: usize) -> Result<T, ApiError> {
    let (name, raw) = params.get(at).ok_or(ApiError::RouteNotFound)?;
    Ok(T::parse_param(name, raw)?)
}

/// A route's one path parameter, parsed: `Id(tenant): Id<TenantId>`.
pub struct Id<A>(pub A);

impl<S: Send + Sync, A: PathParam> FromRequestParts<S> for Id<A> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let params = path_params(parts, state).await?;
        Ok(Self(param(&params, 0)?))
    }
}

/// A route's two path parameters, parsed in order:
/// `Ids(tenant, user): Ids<TenantId, UserId>`.
pub struct Ids<A, B>(pub A, pub B);

impl<S: Send + Sync, A: PathParam, B: PathParam> FromRequestParts<S> for Ids<A, B> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let params = path_params(parts, state).await?;
        Ok(Self(param(&params, 0)?, param(&params, 1)?))
    }
}

/// Most digits of a version in `If-Match` (every such number is a `u64`).
pub const VERSION_DIGITS_MAX: usize = 19;

/// The version a PATCH expects: `If-Match: <version>` (quoted or not, `W/`
/// allowed) or `version` in the body; both must agree when both are sent.
pub fn expected_version(headers: &HeaderMap, body_version: Option<u64>) -> Result<u64, ApiError> {
    let header = match headers.get(header::IF_MATCH) {
        None => None,
        Some(raw) => {
            let text = raw.to_str().unwrap_or_default().trim();
            let text = text.strip_prefix("W/").unwrap_or(text);
            let digits = text
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .unwrap_or(text);
            match digits.parse::<u64>() {
                Ok(v)
                    if digits.len() <= VERSION_DIGITS_MAX
                        && digits.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    Some(v)
                }
                _ => {
                    return Err(ApiError::invalid(
                        "If-Match",
                        "must be the resource's version number",
                    ))
                }
            }
        }
    };
    match (header, body_version) {
        (Some(h), Some(b)) if h != b => Err(ApiError::VersionsDisagree),
        (Some(v), _) | (None, Some(v)) => Ok(v),
        (None, None) => Err(ApiError::invalid(
            "version",
            "is required: send If-Match: <version> or \"version\" in the body",
        )),
    }
}

/// The version a write may name (`If-Match` or `version` in the body, as
/// [`expected_version`]), or None when it names none.
pub fn optional_version(
    headers: &HeaderMap,
    body_version: Option<u64>,
) -> Result<Option<u64>, ApiError> {
    if headers.get(header::IF_MATCH).is_none() && body_version.is_none() {
        return Ok(None);
    }
    expected_version(headers, body_version).map(Some)
}

/// Query-string parameters, with unknown and repeated names refused.
#[derive(Debug, Default)]
pub struct QueryParams(HashMap<String, String>);

impl QueryParams {
    pub fn parse(raw: Option<&str>, allowed: &[&str]) -> Result<Self, ApiError> {
        let mut params = HashMap::new();
        for (name, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            if !allowed.contains(&name.as_ref()) {
                return Err(ApiError::invalid(
                    name.to_string(),
                    format!(
                        "is not a query parameter of this route (allowed: {})",
                        allowed.join(", ")
                    ),
                ));
            }
            if params.insert(name.to_string(), value.to_string()).is_some() {
                return Err(ApiError::invalid(name.to_string(), "must be given once"));
            }
        }
        Ok(Self(params))
    }

    /// As [`QueryParams::parse`] for a protocol whose clients send names
    /// in any case and parameters a server may not use (SCIM): each name
    /// matched to `known` without regard to case, others ignored; repeated
    /// ones still refused.
    pub fn parse_lenient(raw: Option<&str>, known: &[&str]) -> Result<Self, ApiError> {
        let mut params = HashMap::new();
        for (name, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            let Some(known) = known.iter().find(|k| k.eq_ignore_ascii_case(&name)) else {
                continue;
            };
            if params
                .insert(known.to_string(), value.to_string())
                .is_some()
            {
                return Err(ApiError::invalid(known.to_string(), "must be given once"));
            }
        }
        Ok(Self(params))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The page a list asks for, when `limit` and `cursor` are its only
    /// query parameters.
    pub fn page_only(raw: Option<&str>) -> Result<authz_core::PageRequest, ApiError> {
        Self::parse(raw, &["limit", "cursor"])?.page()
    }

    /// The `limit` and `cursor` of a list.
    pub fn page(&self) -> Result<authz_core::PageRequest, ApiError> {
        Ok(authz_core::PageRequest::parse(
            self.get("limit"),
            self.get("cursor"),
        )?)
    }
}

/// The paging parameters of every list, as the document shows them
/// (`extract::QueryParams` parses them, refusing unknown ones).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // a description, never built
pub struct PageQuery {
    /// Most items in the page
    /// (the OpenAPI test checks these bounds are the ones the API applies)
    #[param(minimum = 1, maximum = 100, default = 50)]
    limit: Option<u32>,
    /// The previous page's `nextCursor`
    cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bodies::CreateUser;
    use authz_core::Error;

    fn field_of(e: ApiError) -> String {
        match e {
            ApiError::Core(Error::Invalid { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_whole_number_is_an_integer_however_written() {
        #[derive(Debug, serde::Deserialize)]
        struct N {
            n: u64,
            f: Option<f64>,
        }
        assert_eq!(decode::<N>(br#"{"n": 13.0}"#).unwrap().n, 13);
        assert_eq!(decode::<N>(br#"{"n": 1e3}"#).unwrap().n, 1000);
        assert_eq!(decode::<N>(br#"{"n": 1, "f": 2.0}"#).unwrap().f, Some(2.0));
        assert_eq!(decode::<N>(br#"{"n": 1, "f": 2.5}"#).unwrap().f, Some(2.5));
        assert_eq!(field_of(decode::<N>(br#"{"n": 13.5}"#).unwrap_err()), "n");
        assert_eq!(field_of(decode::<N>(br#"{"n": -1.0}"#).unwrap_err()), "n");
    }

    #[test]
    fn decode_errors_name_the_field() {
        assert_eq!(
            field_of(decode::<CreateUser>(br#"{"email": 5}"#).unwrap_err()),
            "email"
        );
        assert_eq!(
            field_of(decode::<CreateUser>(br#"{"email":"a@b.c","roles":[1]}"#).unwrap_err()),
            "roles[0]"
        );
        assert_eq!(
            field_of(decode::<CreateUser>(br#"{"email":"a@b.c","isAdmin":true}"#).unwrap_err()),
            "isAdmin"
        );
        assert_eq!(
            field_of(decode::<CreateUser>(br#"{"email":"#).unwrap_err()),
            "body"
        );
        assert_eq!(field_of(decode::<CreateUser>(b"").unwrap_err()), "body");
        // A struct is read from an object only, at any depth.
        let top = decode::<CreateUser>(br#"["a@b.c"]"#).unwrap_err();
        assert_eq!(field_of(top), "body");
        let nested = decode::<CreateUser>(
            br#"{"email":"a@b.c","identities":[["https://idp.example.com","s"]]}"#,
        )
        .unwrap_err();
        assert_eq!(field_of(nested), "identities[0]");
        let ApiError::Core(authz_core::Error::Invalid { reason, .. }) =
            decode::<CreateUser>(br#"["a@b.c"]"#).unwrap_err()
        else {
            panic!("not Invalid")
        };
        assert!(reason.contains("expected a JSON object"), "{reason}");
        // No internal type name in the message.
        let ApiError::Core(authz_core::Error::Invalid { reason, .. }) =
            decode::<CreateUser>(br#""acme""#).unwrap_err()
        else {
            panic!("not Invalid")
        };
        assert!(
            !reason.contains("CreateUser") && reason.contains("a JSON object"),
            "{reason}"
        );
        // Nothing may follow the object.
        assert_eq!(
            field_of(decode::<CreateUser>(br#"{"email":"a@b.c"} {}"#).unwrap_err()),
            "body"
        );
        assert_eq!(field_of(decode::<CreateUser>(b"[]").unwrap_err()), "body");
        assert_eq!(
            field_of(decode::<CreateUser>(b"{}").unwrap_err()),
            "email",
            "a missing field is named"
        );
    }

    #[test]
    fn versions_come_from_if_match_or_the_body() {
        let mut h = HeaderMap::new();
        assert!(expected_version(&h, None).is_err());
        assert_eq!(expected_version(&h, Some(3)).unwrap(), 3);
        h.insert(header::IF_MATCH, "\"4\"".parse().unwrap());
        assert_eq!(expected_version(&h, None).unwrap(), 4);
        assert!(expected_version(&h, Some(3)).is_err());
        h.insert(header::IF_MATCH, "W/\"5\"".parse().unwrap());
        assert_eq!(expected_version(&h, Some(5)).unwrap(), 5);
        h.insert(header::IF_MATCH, "*".parse().unwrap());
        assert_eq!(
            field_of(expected_version(&h, None).unwrap_err()),
            "If-Match"
        );
    }

    #[test]
    fn unknown_and_repeated_query_parameters_are_refused() {
        assert!(QueryParams::parse(Some("limit=5&cursor=abc"), &["limit", "cursor"]).is_ok());
        assert_eq!(
            field_of(QueryParams::parse(Some("limt=5"), &["limit"]).unwrap_err()),
            "limt"
        );
        assert_eq!(
            field_of(QueryParams::parse(Some("limit=5&limit=6"), &["limit"]).unwrap_err()),
            "limit"
        );
        let lenient =
            QueryParams::parse_lenient(Some("StartIndex=2&aadOptSCIM062020=true"), &["startIndex"])
                .unwrap();
        assert_eq!(lenient.get("startIndex"), Some("2"));
        assert!(
            QueryParams::parse_lenient(Some("count=1&COUNT=2"), &["count"]).is_err(),
            "a name given twice, in any case, is refused"
        );
        let q = QueryParams::parse(Some("limit=500"), &["limit"]).unwrap();
        assert_eq!(field_of(q.page().unwrap_err()), "limit");
    }
}
