//! The OpenAPI 3.1 document of the API: the paths come from the handlers'
//! `#[utoipa::path]` annotations as the router registers them (one list,
//! `handlers::with_handlers!`), and this adds what every route shares: the bearer
//! token, the error statuses any request can meet, and the write headers;
//! `rules` states the rules the API enforces on every parameter and field,
//! `headers` the headers its responses carry.

use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, ContentBuilder, OpenApi, Ref, RefOr, Required, ResponseBuilder};
use utoipa::{Modify, OpenApi as _, PartialSchema, ToSchema};

use crate::change::REASON_HEADER;

mod headers;
mod rules;
use crate::error::ErrorBody;
pub use rules::ULID_PATTERN;

/// The document's fixed parts; `handlers::api` adds the paths.
#[derive(utoipa::OpenApi)]
#[openapi(info(
    title = "Authorization provisioning API",
    description = "Tenants, users, roles, tenant grants, invitations and policies of the multi-tenant authorization system. Every request carries a bearer token that API Gateway's authorizer verifies; a write that would give a permission the caller does not hold is a 403 naming it.",
    license(name = "Apache-2.0", identifier = "Apache-2.0"),
))]
struct Base;

/// What every operation shares.
struct Shared;

/// Statuses any request can meet, beside those its handler documents. API
/// Gateway answers some itself (a missing or refused token, a denied route,
/// an unknown one, a throttled or timed-out one), in the same error shape:
/// the template's gateway responses give them the API's `ErrorBody`.
const SHARED_ERRORS: [(&str, &str); 8] = [
    (
        "400",
        "A field or parameter breaks a rule: `error.field` names it",
    ),
    (
        "401",
        "No verified caller (`unauthenticated`, with `WWW-Authenticate: Bearer error=\"invalid_token\"` from API Gateway): the token is missing, malformed, expired, from an untrusted issuer or names nobody; or the request carries no authorizer context",
    ),
    (
        "403",
        "The route is denied (API Gateway, with the authorizer's refusal: `invalid_path` for a malformed tenant id, else `forbidden` and why where that reveals nothing), or the write would give a permission the caller lacks or holds for less time than the write gives it (`error.permission` names it, `error.heldUntil` when the caller's holding of it ends), or API Gateway reused an answer past its `accessUntil` (`forbidden`: the caller's grant or global roles ended since)",
    ),
    (
        "404",
        "No such resource, or no such route or method (`not_found`)",
    ),
    (
        "429",
        "Too many requests (`rate_limited`): more writes that take access away than one caller may make in one scope (20 in 10 s in a tenant, or platform-wide) or than a tenant's callers may make together (40 in 10 s), or API Gateway's throttling; nothing was changed: retry after `Retry-After`",
    ),
    ("500", "An internal error (never a partial write)"),
    (
        "503",
        "A retryable fault or a lost race: retry after `Retry-After`",
    ),
    (
        "504",
        "From API Gateway: the API did not answer in time (`unavailable`, with `Retry-After`); a write may have been made: retry with the same `Idempotency-Key`",
    ),
];

/// Operations whose body may be left out (`Option<JsonBody<_>>`).
const OPTIONAL_BODIES: [&str; 2] = ["acceptInvitation", "declineInvitation"];

/// The `authorize` tag's routes only read: no idempotency record, no
/// change history.
const READ_ONLY_TAG: &str = "authorize";

impl Modify for Shared {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        let mut schemas = Vec::new();
        ErrorBody::schemas(&mut schemas);
        for (name, schema) in schemas {
            components.schemas.insert(name, schema);
        }
        components
            .schemas
            .insert(ErrorBody::name().into_owned(), ErrorBody::schema());
        openapi.security = Some(vec![SecurityRequirement::new(
            "bearer",
            Vec::<String>::new(),
        )]);
        for item in openapi.paths.paths.values_mut() {
            let writes = [
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for operation in writes.into_iter().flatten() {
                if operation
                    .operation_id
                    .as_deref()
                    .is_some_and(|id| OPTIONAL_BODIES.contains(&id))
                {
                    if let Some(RefOr::T(body)) = operation.request_body.as_mut() {
                        body.required = Some(utoipa::openapi::Required::False);
                    }
                }
                let read_only = operation
                    .tags
                    .as_ref()
                    .is_some_and(|tags| tags.iter().any(|t| t == READ_ONLY_TAG));
                if !read_only {
                    add_write_headers(operation);
                }
            }
            let all = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ];
            for operation in all.into_iter().flatten() {
                add_shared_errors(operation);
            }
        }
    }
}

fn header(name: &str, description: &str) -> RefOr<Parameter> {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(description))
        .schema(Some(utoipa::openapi::schema::Object::with_type(
            utoipa::openapi::Type::String,
        )))
        .build()
        .into()
}

fn error_content() -> utoipa::openapi::Content {
    ContentBuilder::new()
        .schema(Some(RefOr::Ref(Ref::from_schema_name(ErrorBody::name()))))
        .build()
}

fn respond(operation: &mut Operation, status: &str, description: &str, content: Content) {
    operation
        .responses
        .responses
        .entry(status.to_string())
        .or_insert_with(|| {
            ResponseBuilder::new()
                .description(description)
                .content("application/json", content)
                .build()
                .into()
        });
}

fn add_write_headers(operation: &mut Operation) {
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    parameters.push(header(
        "Idempotency-Key",
        "A repeat within the window gets the first answer again (`Idempotent-Replayed: true`); the same key with another request is a 422",
    ));
    parameters.push(header(
        REASON_HEADER,
        "Why the change is made, recorded in its history: UTF-8, percent-encoded as `encodeURIComponent` writes it (a `%` not followed by two hex digits stands for itself), or a top-level `reason` string in the JSON body; required to delete a tenant or a user (400 naming `reason`)",
    ));
    respond(
        operation,
        "422",
        "The Idempotency-Key was used with another request within the window",
        error_content(),
    );
}

fn add_shared_errors(operation: &mut Operation) {
    for (status, description) in SHARED_ERRORS {
        respond(operation, status, description, error_content());
    }
    if operation.request_body.is_some() {
        respond(
            operation,
            "413",
            "The body is larger than the API accepts",
            error_content(),
        );
        respond(
            operation,
            "415",
            "The body is not `application/json`",
            error_content(),
        );
    }
}

/// The whole document, as JSON (the rules add keywords, such as a body's
/// `oneOf` beside its properties, that the typed model does not hold).
pub fn document() -> serde_json::Value {
    let (_, api) = crate::handlers::api().split_for_parts();
    let mut document = Base::openapi();
    document.merge(api);
    Shared.modify(&mut document);
    let mut json = serde_json::to_value(&document).expect("the document serializes");
    rules::apply(&mut json);
    headers::apply(&mut json);
    json
}
