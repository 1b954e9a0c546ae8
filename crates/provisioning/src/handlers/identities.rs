//! The identities linked to a user: `/users/{userId}/identities[/{identityId}]`
//! and `/users/by-identity?issuer=&subject=`. A token whose identity is
//! linked to a user acts as that user, so linking is giving them all the
//! user holds (the caller must hold it all); unlinking is never limited.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::model::values::{IdentityId, Issuer, Subject, UserId};
use authz_core::store::PolicyCache;
use authz_core::{Resource, Store};

use crate::bodies::LinkIdentity;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Actor, Id, Ids, JsonBody, QueryParams};
use crate::views::{resource, IdentityView, ListView, UserView};

type ApiResult = Result<Response, ApiError>;

/// The identities linked to the user (at most 10, so one page).
#[utoipa::path(
    get,
    path = "/users/{userId}/identities",
    operation_id = "listIdentities",
    tag = "identities",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 200, description = "The user's identities, oldest first", body = ListView<IdentityView>),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
)]
pub async fn list(State(store): State<Store>, Id(user_id): Id<UserId>) -> ApiResult {
    let user = store
        .user(&user_id)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    Ok(Json(ListView::<IdentityView>::all(user.identities)).into_response())
}

/// 201: the identity is linked; a token that carries it now acts as the
/// user. 409 `identity` when it is linked to anyone already; 403 naming a
/// permission the user holds that the caller does not (linking gives it
/// all to whoever controls the identity).
#[utoipa::path(
    post,
    path = "/users/{userId}/identities",
    operation_id = "linkIdentity",
    tag = "identities",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    request_body = LinkIdentity,
    responses(
        (status = 201, description = "The identity, linked", body = IdentityView),
        (status = 400, description = "An issuer or subject that breaks a rule, or the most identities a user may have", body = ErrorBody),
        (status = 403, description = "The user holds a permission the caller does not", body = ErrorBody),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "The identity is linked to a user already (`identity`)", body = ErrorBody),
    ),
)]
pub async fn link(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Id(user_id): Id<UserId>,
    actor: Actor,
    JsonBody(request): JsonBody<LinkIdentity>,
) -> ApiResult {
    let identity = request.validate()?;
    // Whoever controls the identity gets what the permits matching the
    // user's roles permit too: the caller must hold that as well.
    let caller = actor
        .global()
        .with_permits(policies.role_keyed_permits(&store).await?);
    let linked = store.link_identity(&user_id, &identity, &caller).await?;
    Ok((StatusCode::CREATED, Json(IdentityView::from(linked))).into_response())
}

/// 204: the identity is unlinked; its tokens act as nobody.
#[utoipa::path(
    delete,
    path = "/users/{userId}/identities/{identityId}",
    operation_id = "unlinkIdentity",
    tag = "identities",
    params(
        ("userId" = String, Path, description = "The user id"),
        ("identityId" = String, Path, description = "The identity id"),
    ),
    responses(
        (status = 204, description = "Unlinked"),
        (status = 404, description = "No such user, or the identity is not linked to them", body = ErrorBody),
    ),
)]
pub async fn unlink(
    State(store): State<Store>,
    Ids(user_id, identity_id): Ids<UserId, IdentityId>,
    actor: Actor,
) -> ApiResult {
    store
        .unlink_identity(&user_id, &identity_id, actor.as_deref())
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The user an identity is linked to.
#[utoipa::path(
    get,
    path = "/users/by-identity",
    operation_id = "getUserByIdentity",
    tag = "identities",
    params(
        ("issuer" = String, Query, description = "The issuer, as its tokens' `iss`"),
        ("subject" = String, Query, description = "The subject the issuer names the user by"),
    ),
    responses(
        (status = 200, description = "The user the identity is linked to", body = UserView),
        (status = 400, description = "A missing or malformed issuer or subject", body = ErrorBody),
        (status = 404, description = "The identity is linked to nobody", body = ErrorBody),
    ),
)]
pub async fn by_identity(State(store): State<Store>, RawQuery(query): RawQuery) -> ApiResult {
    let params = QueryParams::parse(query.as_deref(), &["issuer", "subject"])?;
    let required = |name: &str| {
        params
            .get(name)
            .ok_or_else(|| ApiError::invalid(name, "is required"))
    };
    let issuer = Issuer::parse(required("issuer")?)?;
    let subject = Subject::parse(required("subject")?)?;
    let user = store
        .user_by_identity(&issuer, &subject)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    Ok(resource(
        StatusCode::OK,
        Some(user.stamp.version),
        UserView::from(user),
    ))
}
