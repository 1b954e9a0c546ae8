//! Invitations: `/tenants/{tenantId}/invitations[/{invitationId}]`
//! for the tenant's admins, `/invitations/{invitationId}/accept|decline` for
//! the invitee, and a user's `/users/{userId}/invitations`. (A user's
//! details and the caller's own, `/users/me`, are in `me.rs`.)

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::{AnswerInvitation, CreateInvitation};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Actor, Id, Ids, JsonBody, PageQuery, QueryParams};
use crate::views::{GrantView, InvitationView, ListView};
use authz_core::model::items::Invitation;
use authz_core::model::values::{InvitationId, TenantId, UserId};
use authz_core::store::PolicyCache;
use authz_core::Resource;
use authz_core::{Caller, Error, Store};

type ApiResult = Result<Response, ApiError>;

/// The permission that lets a caller answer an invitation for another user.
const ACT_FOR: &str = "user:update";

/// 201 with the invitation: an address invited to the tenant with tenant
/// roles the caller holds there; 409 `email` while one is pending.
#[utoipa::path(
    post,
    path = "/tenants/{tenantId}/invitations",
    operation_id = "createInvitation",
    tag = "invitations",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
    ),
    request_body = CreateInvitation,
    responses(
        (status = 201, description = "The invitation", body = InvitationView),
        (status = 404, description = "No such tenant or role", body = ErrorBody),
        (status = 409, description = "An invitation to this address is pending", body = ErrorBody),
    ),
)]
pub async fn create(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Id(tenant_id): Id<TenantId>,
    actor: Actor,
    JsonBody(request): JsonBody<CreateInvitation>,
) -> ApiResult {
    let new = request.validate()?;
    let caller = actor
        .in_tenant(&tenant_id)
        .giving(&new, &store, &policies)
        .await?;
    let invitation = store.invite(&tenant_id, &new, &caller).await?;
    Ok((StatusCode::CREATED, Json(InvitationView::from(invitation))).into_response())
}

/// The tenant's pending invitations, by address, paged.
#[utoipa::path(
    get,
    path = "/tenants/{tenantId}/invitations",
    operation_id = "listInvitations",
    tag = "invitations",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        PageQuery,
    ),
    responses(
        (status = 200, description = "A page of the tenant's pending invitations", body = ListView<InvitationView>),
    ),
)]
pub async fn list(
    State(store): State<Store>,
    Id(tenant_id): Id<TenantId>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let asked = QueryParams::page_only(query.as_deref())?;
    let page = store.tenant_invitations(&tenant_id, &asked).await?;
    let view = ListView::<InvitationView>::from_page(page)
        .named(&store, crate::views::invitation_names)
        .await?;
    Ok(Json(view).into_response())
}

/// 204: the invitation is revoked (an expired one is gone already: 410).
#[utoipa::path(
    delete,
    path = "/tenants/{tenantId}/invitations/{invitationId}",
    operation_id = "revokeInvitation",
    tag = "invitations",
    params(
        ("tenantId" = String, Path, description = "The tenant id"),
        ("invitationId" = String, Path, description = "The invitation id"),
    ),
    responses(
        (status = 204, description = "The invitation is revoked"),
        (status = 404, description = "No such invitation", body = ErrorBody),
        (status = 410, description = "The invitation has expired", body = ErrorBody),
    ),
)]
pub async fn revoke(
    State(store): State<Store>,
    Ids(tenant_id, id): Ids<TenantId, InvitationId>,
) -> ApiResult {
    let invitation = store.invitation(&id).await?;
    if invitation.tenant_id != tenant_id {
        return Err(ApiError::not_found(Resource::Invitation));
    }
    store.delete_invitation(&invitation).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Who answers an invitation: the caller, whose verified addresses must
/// include the invited one, or the `userId` of the body when the caller
/// holds `user:update` everywhere and that user has the address.
async fn invitee(
    store: &Store,
    actor: &Actor,
    invitation: &Invitation,
    request: &AnswerInvitation,
) -> Result<UserId, ApiError> {
    let caller = actor.user_id().ok_or(ApiError::NotInvitee)?;
    let user_id = request.validate()?.unwrap_or(caller);
    let for_another = user_id != caller;
    if for_another && !actor.holds_globally(ACT_FOR) {
        return Err(Error::forbidden(ACT_FOR).into());
    }
    let has_address = store
        .user_emails(&user_id)
        .await?
        .iter()
        .any(|a| a.email == invitation.email && (a.is_verified || for_another));
    match (has_address, for_another) {
        (true, _) => Ok(user_id),
        (false, false) => Err(ApiError::NotInvitee),
        (false, true) => Err(Error::state_conflict(
            "userId",
            "the user has no address the invitation was sent to",
        )
        .into()),
    }
}

/// The invitation `id` and who answers it (see [`invitee`]); the body is
/// optional.
async fn answering(
    store: &Store,
    id: &InvitationId,
    actor: &Actor,
    body: Option<JsonBody<AnswerInvitation>>,
) -> Result<(Invitation, UserId), ApiError> {
    let invitation = store.invitation(id).await?;
    let request = body.map(|JsonBody(b)| b).unwrap_or_default();
    let user_id = invitee(store, actor, &invitation, &request).await?;
    Ok((invitation, user_id))
}

/// 201 with the grant it created (200 when the user's grant there gained
/// its roles); 410 once expired; 404 once accepted, declined or revoked.
#[utoipa::path(
    post,
    path = "/invitations/{invitationId}/accept",
    operation_id = "acceptInvitation",
    tag = "invitations",
    params(
        ("invitationId" = String, Path, description = "The invitation id"),
    ),
    request_body(content = AnswerInvitation, description = "Optional: send no body to answer for yourself"),
    responses(
        (status = 201, description = "The grant it created", body = GrantView),
        (status = 200, description = "The user's grant, with the invitation's roles added", body = GrantView),
        (status = 403, description = "The caller is not the invitee; or the inviter no longer holds a permission the invitation's roles give, or not for as long as the grant lasts (named, with `heldUntil`); or, accepting for another user, the caller does not hold it globally", body = ErrorBody),
        (status = 404, description = "No such invitation", body = ErrorBody),
        (status = 409, description = "The caller made the invitation (`invitedBy`), or the grant would hold more than 20 roles (`roles`), or the user named by `userId` has no address the invitation was sent to (`userId`)", body = ErrorBody),
        (status = 410, description = "The invitation has expired", body = ErrorBody),
    ),
)]
pub async fn accept(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Id(id): Id<InvitationId>,
    actor: Actor,
    body: Option<JsonBody<AnswerInvitation>>,
) -> ApiResult {
    let (invitation, user_id) = answering(&store, &id, &actor, body).await?;
    // An admin accepting for someone else gives the roles as much as the
    // inviter does: only what they may give themselves (globally: the
    // route is global).
    let by = if actor.is(&user_id) {
        Caller::operator(user_id.to_string())
    } else {
        actor.in_tenant(&invitation.tenant_id)
    };
    // The inviter's ceiling applies too: the permits are needed unless
    // neither ceiling limits anything.
    let by = if invitation.inviter.is_some() || !by.ceiling.covers_all() {
        by.with_permits(policies.role_keyed_permits(&store).await?)
    } else {
        by
    };
    let written = store.accept_invitation(&invitation, &user_id, &by).await?;
    Ok(super::grants::written_grant(written))
}

/// 204: the invitation is gone.
#[utoipa::path(
    post,
    path = "/invitations/{invitationId}/decline",
    operation_id = "declineInvitation",
    tag = "invitations",
    params(
        ("invitationId" = String, Path, description = "The invitation id"),
    ),
    request_body(content = AnswerInvitation, description = "Optional: send no body to answer for yourself"),
    responses(
        (status = 204, description = "The invitation is gone"),
        (status = 403, description = "The caller is not the invitee", body = ErrorBody),
        (status = 404, description = "No such invitation", body = ErrorBody),
        (status = 409, description = "The user named by `userId` has no address the invitation was sent to (`userId`)", body = ErrorBody),
        (status = 410, description = "The invitation has expired", body = ErrorBody),
    ),
)]
pub async fn decline(
    State(store): State<Store>,
    Id(id): Id<InvitationId>,
    actor: Actor,
    body: Option<JsonBody<AnswerInvitation>>,
) -> ApiResult {
    let (invitation, _) = answering(&store, &id, &actor, body).await?;
    store.delete_invitation(&invitation).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The pending invitations of every address of the user, across tenants.
#[utoipa::path(
    get,
    path = "/users/{userId}/invitations",
    operation_id = "listUserInvitations",
    tag = "invitations",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 200, description = "The pending invitations of the user's verified addresses", body = ListView<InvitationView>),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
)]
pub async fn for_user(State(store): State<Store>, Id(user_id): Id<UserId>) -> ApiResult {
    store
        .user(&user_id)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    let invitations = store.pending_invitations(&user_id).await?;
    let view = ListView::<InvitationView>::all(invitations)
        .named(&store, crate::views::invitation_names)
        .await?;
    Ok(Json(view).into_response())
}
