//! The identities linked to a user: `/users/{userId}/identities[/{identityId}]`
//! and `/users/by-identity?issuer=&subject=`. A token whose identity is
//! linked to a user acts as that user, so linking is giving them all the
//! user holds (the caller must hold it all); unlinking is never limited.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::model::values::{IdentityId, Issuer, Subject, UserId};
use authz_core::{Resource, Store};

use authz_core::model::input::NewUser;
use authz_core::Caller;

use crate::bodies::LinkIdentity;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Actor, JsonBody, QueryParams, SigningUp};
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
pub async fn list(State(store): State<Store>, Path(user): Path<String>) -> ApiResult {
    let user_id = UserId::parse(&user)?;
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
    Path(user): Path<String>,
    actor: Actor,
    JsonBody(request): JsonBody<LinkIdentity>,
) -> ApiResult {
    let user_id = UserId::parse(&user)?;
    let identity = request.validate()?;
    let linked = store
        .link_identity(&user_id, &identity, &actor.global())
        .await?;
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
    Path((user, identity)): Path<(String, String)>,
    actor: Actor,
) -> ApiResult {
    let user_id = UserId::parse(&user)?;
    let identity_id = IdentityId::parse(&identity)?;
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

/// Sign-up on first sign-in: the holder of a token whose identity is
/// linked to nobody, from an issuer open to sign-up (the authorizer
/// decides, and allows this route alone), becomes a user with that
/// identity linked and the address the issuer verified, verified; with no
/// role and no grant. It never joins an existing user because an address
/// matches (409 `email`), unless the issuer is authoritative for the
/// address's domain: then the identity is linked to that user (200).
#[utoipa::path(
    post,
    path = "/users/me",
    operation_id = "signUp",
    tag = "identities",
    responses(
        (status = 201, description = "A new user, the identity linked, the address verified", body = UserView),
        (status = 200, description = "The identity linked to the user with this address (the issuer is authoritative for its domain)", body = UserView),
        (status = 403, description = "The caller is not signing up", body = ErrorBody),
        (status = 409, description = "The address belongs to a user already (`email`), or the identity is linked (`identity`, `identities[0]`)", body = ErrorBody),
    ),
)]
pub async fn sign_up(State(store): State<Store>, signing_up: SigningUp) -> ApiResult {
    let by = Caller::operator(format!("signup:{}", signing_up.identity.issuer));
    if signing_up.link_by_email {
        // Only to a user whose verified primary address it is: an address
        // someone added to themselves decides nothing (the pre-hijack).
        if let Some(user) = store.user_by_verified_primary(&signing_up.email).await? {
            store
                .link_identity(&user.user_id, &signing_up.identity, &by)
                .await?;
            let user = store
                .user(&user.user_id)
                .await?
                .ok_or(ApiError::not_found(Resource::User))?;
            return Ok(resource(
                StatusCode::OK,
                Some(user.stamp.version),
                UserView::from(user),
            ));
        }
    }
    let new = NewUser {
        email: signing_up.email,
        phone: None,
        preferred_username: None,
        given_name: None,
        family_name: None,
        roles: Vec::new(),
        roles_expire_at: None,
        identities: vec![signing_up.identity],
        email_verified: true,
    };
    // An address that belongs to a user already is a 409 `email`: never
    // theirs on this issuer's word alone.
    let user = store.create_user(&new, &by).await?;
    Ok(resource(
        StatusCode::CREATED,
        Some(user.stamp.version),
        UserView::from(user),
    ))
}
