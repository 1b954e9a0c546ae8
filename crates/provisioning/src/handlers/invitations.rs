//! Invitations: `/tenants/{tenantId}/invitations[/{invitationId}]`
//! for the tenant's admins, `/invitations/{invitationId}/accept|decline` for
//! the invitee, a user's `/users/{userId}/invitations` and
//! `/users/{userId}/details`, and the caller's own details, `/users/me`.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::{AnswerInvitation, CreateInvitation};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Actor, JsonBody, PageQuery, QueryParams, SigningUp};
use crate::views::{DetailsView, GrantView, InvitationView, ListView, MembershipView, UserView};
use authz_core::model::items::{Entity, Invitation, Tenant};
use authz_core::model::keys;
use authz_core::model::values::{InvitationId, TenantId, TenantStatus, UserId, UserStatus};
use authz_core::store::names::Named;
use authz_core::store::PolicyCache;
use authz_core::Resource;
use authz_core::{Caller, Error, PageRequest, Store};

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
    Path(tenant): Path<String>,
    actor: Actor,
    JsonBody(request): JsonBody<CreateInvitation>,
) -> ApiResult {
    let tenant_id = TenantId::parse(&tenant)?;
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
    Path(tenant): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult {
    let tenant_id = TenantId::parse(&tenant)?;
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
    Path((tenant, id)): Path<(String, String)>,
) -> ApiResult {
    let tenant_id = TenantId::parse(&tenant)?;
    let invitation = store.invitation(&InvitationId::parse(&id)?).await?;
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
    let caller = actor
        .as_deref()
        .and_then(|id| UserId::parse(id).ok())
        .ok_or(ApiError::NotInvitee)?;
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
    id: &str,
    actor: &Actor,
    body: Option<JsonBody<AnswerInvitation>>,
) -> Result<(Invitation, UserId), ApiError> {
    let invitation = store.invitation(&InvitationId::parse(id)?).await?;
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
        (status = 403, description = "The caller is not the invitee; or the inviter no longer holds a permission the invitation's roles confer, or not for as long as the grant lasts (named, with `heldUntil`); or, accepting for another user, the caller does not hold it globally", body = ErrorBody),
        (status = 404, description = "No such invitation", body = ErrorBody),
        (status = 409, description = "The caller made the invitation (`invitedBy`), or the grant would hold more than 20 roles (`roles`), or the user named by `userId` has no address the invitation was sent to (`userId`)", body = ErrorBody),
        (status = 410, description = "The invitation has expired", body = ErrorBody),
    ),
)]
pub async fn accept(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Path(id): Path<String>,
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
    Path(id): Path<String>,
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
pub async fn for_user(State(store): State<Store>, Path(user): Path<String>) -> ApiResult {
    let user_id = UserId::parse(&user)?;
    store
        .user(&user_id)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    let invitations = pending_for(&store, &user_id).await?;
    let view = ListView::<InvitationView>::all(invitations)
        .named(&store, crate::views::invitation_names)
        .await?;
    Ok(Json(view).into_response())
}

/// The pending invitations of a user's verified addresses (the caller has
/// found the user): an address anyone can add to their record unverified
/// shows nothing meant for its owner.
async fn pending_for(store: &Store, user_id: &UserId) -> Result<Vec<Invitation>, ApiError> {
    let emails: Vec<_> = store
        .user_emails(user_id)
        .await?
        .into_iter()
        .filter(|a| a.is_verified)
        .map(|a| a.email)
        .collect();
    Ok(store.invitations_for(&emails).await?)
}

/// The user's details: the user, their tenants with roles (and each
/// tenant's name), their pending invitations.
#[utoipa::path(
    get,
    path = "/users/{userId}/details",
    operation_id = "getUserDetails",
    tag = "invitations",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 200, description = "The user, their tenants with roles, their pending invitations", body = DetailsView),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
)]
pub async fn details(State(store): State<Store>, Path(user): Path<String>) -> ApiResult {
    details_of(&store, UserId::parse(&user)?).await
}

/// Who am I: the caller's own details, as `GET /users/{userId}/details`
/// answers them for the caller's user id (from the authorizer's context).
/// Any active caller may ask (the rule's `"self": "caller"`). A newcomer
/// who has just signed up asks with the sign-up answer API Gateway cached
/// for their token on this path, which names their identity: they are
/// the active user it is linked to, if any.
#[utoipa::path(
    get,
    path = "/users/me",
    operation_id = "getMe",
    tag = "invitations",
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
        return details_of(&store, user_id).await;
    }
    let signing_up = signing_up.ok_or(ApiError::not_found(Resource::User))?;
    let user = store
        .user_by_identity(&signing_up.identity.issuer, &signing_up.identity.subject)
        .await?
        .filter(|u| u.status == UserStatus::Active)
        .ok_or(ApiError::not_found(Resource::User))?;
    details_of(&store, user.user_id).await
}

/// The user's details (`details` and `me`): the user, their grants with
/// each active tenant's name, their pending invitations; 404 for no such
/// user.
async fn details_of(store: &Store, user_id: UserId) -> ApiResult {
    let user = store
        .user(&user_id)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    let mut grants = Vec::new();
    let mut page = PageRequest::with_limit(authz_core::store::page::MAX_LIMIT);
    loop {
        let found = store.user_grants(&user_id, &page).await?;
        grants.extend(found.items);
        match page.next(found.next_cursor) {
            Some(next) => page = next,
            None => break,
        }
    }
    let tenant_keys: Vec<_> = grants.iter().map(|g| keys::tenant(&g.tenant_id)).collect();
    let mut names = std::collections::HashMap::new();
    for chunk in tenant_keys.chunks(authz_core::store::BATCH_GET_KEYS) {
        for (_, item) in store.batch_get(chunk, false).await? {
            let tenant = Tenant::from_item(item)?;
            if tenant.status == TenantStatus::Active {
                names.insert(tenant.tenant_id, tenant.name.to_string());
            }
        }
    }
    let held_roles: Vec<_> = grants.iter().flat_map(|g| g.roles.clone()).collect();
    let tenants = grants
        .into_iter()
        .map(|g| MembershipView {
            name: names.get(&g.tenant_id).cloned(),
            tenant_id: g.tenant_id,
            tenant_grant_id: g.tenant_grant_id,
            roles: g.roles,
        })
        .collect();
    let invitations: Vec<_> = pending_for(store, &user_id)
        .await?
        .into_iter()
        .map(InvitationView::from)
        .collect();
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
