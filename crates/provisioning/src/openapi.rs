//! The OpenAPI 3.1 document of the API: the paths come from the handlers'
//! `#[utoipa::path]` annotations as the router registers them (one list,
//! `handlers::api`), and this adds what every route shares: the bearer
//! token, the error statuses any request can meet, and the write headers.

use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Required, ResponseBuilder};
use utoipa::{Modify, OpenApi as _, PartialSchema, ToSchema};

use crate::change::REASON_HEADER;
use crate::error::ErrorBody;

/// The document's fixed parts; `handlers::api` adds the paths.
#[derive(utoipa::OpenApi)]
#[openapi(info(
    title = "Authorization provisioning API",
    description = "Tenants, users, roles, tenant grants, invitations and policies of the multi-tenant authorization system. Every request carries a bearer token that API Gateway's authorizer verifies; a write that would confer a permission the caller does not hold is a 403 naming it.",
    license(name = "Apache-2.0", identifier = "Apache-2.0"),
))]
struct Base;

/// What every operation shares.
struct Shared;

/// Statuses any request can meet, beside those its handler documents.
const SHARED_ERRORS: [(&str, &str); 5] = [
    (
        "400",
        "A field or parameter breaks a rule: `error.field` names it",
    ),
    (
        "401",
        "No verified caller: the request did not come through the authorizer",
    ),
    (
        "403",
        "The caller lacks a permission the request needs: `error.permission` names it",
    ),
    ("500", "An internal error (never a partial write)"),
    (
        "503",
        "A retryable fault or a lost race: retry after `Retry-After`",
    ),
];

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
                add_write_headers(operation);
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
            if let Some(patch) = item.patch.as_mut() {
                patch.parameters.get_or_insert_with(Vec::new).push(header(
                    "If-Match",
                    "The version the change expects, as its ETag (or `version` in the body)",
                ));
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

fn add_write_headers(operation: &mut Operation) {
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    parameters.push(header(
        "Idempotency-Key",
        "A repeat within the window gets the first answer again (`Idempotent-Replayed: true`); the same key with another request is a 422",
    ));
    parameters.push(header(
        REASON_HEADER,
        "Why the change is made, recorded in its history",
    ));
}

fn add_shared_errors(operation: &mut Operation) {
    let error = ContentBuilder::new()
        .schema(Some(RefOr::Ref(Ref::from_schema_name(ErrorBody::name()))))
        .build();
    for (status, description) in SHARED_ERRORS {
        operation
            .responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| {
                ResponseBuilder::new()
                    .description(description)
                    .content("application/json", error.clone())
                    .build()
                    .into()
            });
    }
}

/// The paging parameters of every list, as the document shows them
/// (`extract::QueryParams` parses them, refusing unknown ones).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // a description, never built
pub struct PageQuery {
    /// Most items in the page
    /// (`authz_core::page`'s bounds; the OpenAPI test checks they agree)
    #[param(minimum = 1, maximum = 100, default = 50)]
    limit: Option<u32>,
    /// The previous page's `nextCursor`
    cursor: Option<String>,
}

/// The whole document.
pub fn document() -> OpenApi {
    let (_, api) = crate::handlers::api().split_for_parts();
    let mut document = Base::openapi();
    document.merge(api);
    Shared.modify(&mut document);
    document
}
