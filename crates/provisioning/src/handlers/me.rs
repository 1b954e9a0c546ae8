//! The caller's own room: who am I (`GET /users/me`), sign-up on first
//! sign-in (`POST /users/me`), and a user's details as they read them
//! about themselves (`GET /users/{userId}/details`): the user, their
//! tenants with roles, their pending invitations, and the names of what
//! those name.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::model::input::NewUser;
use authz_core::model::values::{TenantId, UserId, UserStatus};
use authz_core::store::details::Details;
use authz_core::store::names::Named;
use authz_core::{Caller, Resource, Store};

use crate::error::{ApiError, ErrorBody};
use crate::extract::{Actor, Id, SigningUp};
use crate::views::{resource, DetailsView, InvitationView, MembershipView, UserView};

type ApiResult = Result<Response, ApiError>;

/// Who am I: the caller's own details, as `GET /users/{userId}/details`
/// answers them for the caller's user id (from the authorizer's context).
/// Any active caller may ask (the rule's `"self": "caller"`). A newcomer
/// who has just signed up asks with the sign-up answer API Gateway cached
/// for their token on this path, which names their identity: they are
/// the active user it is linked to, if any; through an issuer bound to a
/// tenant, they are shown only what concerns that tenant (the issuer
/// speaks for nothing else, as the authorizer refuses it elsewhere).
#[utoipa::path(
    get,
    path = "/users/me",
    operation_id = "getMe",
    tag = "users",
    responses(
        (status = 200, description = "The caller, their tenants with roles, their pending invitations", body = DetailsView),
        (status = 404, description = "The caller is no user (deleted since the authorizer decided, or not yet signed up)", body = ErrorBody),
    ),
)]
pub async fn me(
    State(store): State<Store>,
    actor: Actor,
    signing_up: Option<SigningUp>,
) -> ApiResult {
    if let Some(user_id) = actor.user_id() {
        return details_of(&store, &user_id, None).await;
    }
    let signing_up = signing_up.ok_or(ApiError::not_found(Resource::User))?;
    let user = store
        .user_by_identity(&signing_up.identity.issuer, &signing_up.identity.subject)
        .await?
        .filter(|u| u.status == UserStatus::Active)
        .ok_or(ApiError::not_found(Resource::User))?;
    details_of(&store, &user.user_id, signing_up.tenant).await
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
    tag = "users",
    responses(
        (status = 201, description = "A new user, the identity linked, the address verified", body = UserView),
        (status = 200, description = "The identity linked to the user with this address (the issuer is authoritative for its domain)", body = UserView),
        (status = 403, description = "The caller is not signing up", body = ErrorBody),
        (status = 409, description = "The address belongs to a user already (`email`; through an issuer bound to a tenant, also when its user holds platform-wide roles), or the identity is linked (`identity`, `identities[0]`)", body = ErrorBody),
    ),
)]
pub async fn sign_up(State(store): State<Store>, signing_up: SigningUp) -> ApiResult {
    let by = Caller::operator(format!("signup:{}", signing_up.identity.issuer));
    if signing_up.link_by_email {
        // Only to a user whose verified primary address it is: an address
        // someone added to themselves decides nothing (the pre-hijack).
        if let Some(user) = store.user_by_verified_primary(&signing_up.email).await? {
            // A tenant's own IdP speaks for its tenant only: it never
            // takes on someone who holds platform-wide roles, whose word
            // would carry those roles into its tenant.
            let now = authz_core::clock::now_seconds();
            if signing_up.tenant.is_some() && !user.global_roles(now).is_empty() {
                return Err(authz_core::Error::StateConflict {
                    field: "email".into(),
                    reason: "belongs to a user who holds platform-wide roles: an issuer bound to one tenant does not link them by address; an administrator links the identity (POST /users/{userId}/identities)".into(),
                }
                .into());
            }
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

/// The user's details: the user, their tenants with roles (and each
/// tenant's name), their pending invitations.
#[utoipa::path(
    get,
    path = "/users/{userId}/details",
    operation_id = "getUserDetails",
    tag = "users",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 200, description = "The user, their tenants with roles, their pending invitations", body = DetailsView),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
)]
pub async fn details(State(store): State<Store>, Id(user): Id<UserId>) -> ApiResult {
    details_of(&store, &user, None).await
}

/// The user's details (`details` and `me`), with the names of the roles
/// held and of the invitations' tenants, senders and roles, or only what
/// concerns tenant `only`; 404 for no such user.
async fn details_of(store: &Store, user_id: &UserId, only: Option<TenantId>) -> ApiResult {
    let Details {
        user,
        mut memberships,
        mut invitations,
    } = store
        .details(user_id)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    if let Some(tenant) = only {
        memberships.retain(|m| m.grant.tenant_id == tenant);
        invitations.retain(|i| i.tenant_id == tenant);
    }
    let held_roles: Vec<_> = memberships
        .iter()
        .flat_map(|m| m.grant.roles.clone())
        .collect();
    let tenants = memberships
        .into_iter()
        .map(|m| MembershipView {
            name: m.tenant_name,
            tenant_id: m.grant.tenant_id,
            tenant_grant_id: m.grant.tenant_grant_id,
            roles: m.grant.roles,
        })
        .collect();
    let invitations: Vec<_> = invitations.into_iter().map(InvitationView::from).collect();
    let names = store
        .names(
            invitations
                .iter()
                .flat_map(crate::views::invitation_names)
                .chain(held_roles.into_iter().map(Named::Role)),
        )
        .await?;
    Ok(Json(DetailsView {
        user: UserView::from(user),
        tenants,
        invitations,
        names,
    })
    .into_response())
}
