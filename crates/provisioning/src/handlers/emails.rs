//! A user's email addresses: `/users/{userId}/emails[/{emailId}[/verify|/code]]`
//! and `/users/{userId}/primary-email`.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::bodies::{AddEmail, SetPrimaryEmail, VerifyEmail};
use authz_core::model::values::{EmailId, UserId};
use authz_core::store::PolicyCache;
use authz_core::Resource;
use authz_core::{Error, Proof, Store};

use crate::error::{ApiError, ErrorBody};
use crate::extract::{optional_version, Actor, Id, Ids, JsonBody};
use crate::views::{resource, EmailView, EmailWithCodeView, ListView, UserView};

type ApiResult = Result<Response, ApiError>;

/// The permission that lets an admin vouch for an address without its code.
const VOUCH: &str = "user:update";

/// The permission to be shown an address's code, to deliver it to the
/// address (held everywhere: an admin, or the deployment's mailer, whose
/// role needs nothing else).
const CODE: &str = "email:code";

/// The user's addresses, primary first (at most
/// [`authz_core::EMAILS_PER_USER_MAX`], so one page).
#[utoipa::path(
    get,
    path = "/users/{userId}/emails",
    operation_id = "listEmails",
    tag = "emails",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    responses(
        (status = 200, description = "The user's addresses, primary first", body = ListView<EmailView>),
        (status = 404, description = "No such user", body = ErrorBody),
    ),
)]
pub async fn list(State(store): State<Store>, Id(user_id): Id<UserId>) -> ApiResult {
    store
        .user(&user_id)
        .await?
        .ok_or(ApiError::not_found(Resource::User))?;
    let mut addresses = store.user_emails(&user_id).await?;
    addresses.sort_by_key(|a| (!a.is_primary, a.stamp.created_at.clone()));
    Ok(Json(ListView::<EmailView>::all(addresses)).into_response())
}

/// 201 with the address, and its one-time code when the caller holds
/// `email:code` everywhere (who then delivers it to the address) and the
/// record is not their own. A user adding an address to their own record
/// (a self route) never sees the code: a code they were handed would prove
/// nothing about the address.
#[utoipa::path(
    post,
    path = "/users/{userId}/emails",
    operation_id = "addEmail",
    tag = "emails",
    params(
        ("userId" = String, Path, description = "The user id"),
    ),
    request_body = AddEmail,
    responses(
        (status = 201, description = "The address; with its one-time verification code only for a caller holding email:code everywhere", body = EmailWithCodeView),
        (status = 404, description = "No such user", body = ErrorBody),
        (status = 409, description = "The address is taken, or the user has the most addresses allowed; or a repeat of an applied request with its Idempotency-Key (`idempotency_answer_unavailable`: its code is never stored)", body = ErrorBody),
    ),
)]
pub async fn add(
    State(store): State<Store>,
    Id(user_id): Id<UserId>,
    actor: Actor,
    JsonBody(request): JsonBody<AddEmail>,
) -> ApiResult {
    let email = request.validate()?;
    let (address, code) = store.add_email(&user_id, &email).await?;
    // Never to the address's own holder: a mailer (or an admin) who could
    // verify addresses onto their own record could take any invitation.
    let code = (actor.holds_globally(CODE) && !actor.is(&user_id)).then_some(code);
    Ok((
        StatusCode::CREATED,
        Json(EmailWithCodeView::new(address, code)),
    )
        .into_response())
}

/// 201 with a new code for an unverified address (the old one stops
/// working), for a caller holding `email:code` everywhere to deliver: not
/// a self route (the route rules), refused to anyone else and for the
/// caller's own addresses.
#[utoipa::path(
    post,
    path = "/users/{userId}/emails/{emailId}/code",
    operation_id = "resendEmailCode",
    tag = "emails",
    params(
        ("userId" = String, Path, description = "The user id"),
        ("emailId" = String, Path, description = "The email id"),
    ),
    responses(
        (status = 201, description = "The address and a new one-time code", body = EmailWithCodeView),
        (status = 403, description = "The caller does not hold email:code everywhere, or the address is on their own record", body = ErrorBody),
        (status = 404, description = "No such address", body = ErrorBody),
        (status = 409, description = "The address is verified already; or a repeat of an applied request with its Idempotency-Key (`idempotency_answer_unavailable`)", body = ErrorBody),
    ),
)]
pub async fn code(
    State(store): State<Store>,
    Ids(user_id, email_id): Ids<UserId, EmailId>,
    actor: Actor,
) -> ApiResult {
    if !actor.holds_globally(CODE) {
        return Err(Error::forbidden(CODE).into());
    }
    if actor.is(&user_id) {
        return Err(Error::OwnAddress.into());
    }
    let (address, code) = store.issue_email_code(&user_id, &email_id).await?;
    Ok((
        StatusCode::CREATED,
        Json(EmailWithCodeView::new(address, Some(code))),
    )
        .into_response())
}

/// 200 with the verified address: by its code, or `verified: true` from a
/// caller who holds `user:update` everywhere, for another user's address
/// (403 for anyone else, and for their own).
#[utoipa::path(
    post,
    path = "/users/{userId}/emails/{emailId}/verify",
    operation_id = "verifyEmail",
    tag = "emails",
    params(
        ("userId" = String, Path, description = "The user id"),
        ("emailId" = String, Path, description = "The email id"),
    ),
    request_body = VerifyEmail,
    responses(
        (status = 200, description = "The verified address", body = EmailView),
        (status = 400, description = "The code is wrong, has expired, or none is pending (`code`)", body = ErrorBody),
        (status = 403, description = "Vouching (`verified: true`) without user:update everywhere (named), for an address on the caller's own record, or for one with a pending invitation offering what the caller does not hold (named)", body = ErrorBody),
        (status = 404, description = "No such address", body = ErrorBody),
        (status = 409, description = "A repeat of an applied request with its Idempotency-Key (`idempotency_answer_unavailable`)", body = ErrorBody),
    ),
)]
pub async fn verify(
    State(store): State<Store>,
    State(policies): State<PolicyCache>,
    Ids(user_id, email_id): Ids<UserId, EmailId>,
    actor: Actor,
    JsonBody(request): JsonBody<VerifyEmail>,
) -> ApiResult {
    let proof = request.validate()?;
    if proof == Proof::Vouched && !actor.holds_globally(VOUCH) {
        return Err(Error::forbidden(VOUCH).into());
    }
    if proof == Proof::Vouched && actor.is(&user_id) {
        return Err(Error::OwnAddress.into());
    }
    // A vouching admin must be able to give what the invitations pending
    // for the address offer (with what permits matching their roles give).
    let caller = match proof {
        Proof::Vouched => actor
            .global()
            .with_permits(policies.role_keyed_permits(&store).await?),
        Proof::Code(_) => actor.global(),
    };
    let address = store
        .verify_email(&user_id, &email_id, &proof, &caller)
        .await?;
    Ok(Json(EmailView::from(address)).into_response())
}

/// 200 with the user, whose `email` is now the chosen address; 409 naming
/// `isVerified` for an unverified one; 412 when the user (at the version
/// sent, if any) or an address changed meanwhile.
#[utoipa::path(
    put,
    path = "/users/{userId}/primary-email",
    operation_id = "setPrimaryEmail",
    tag = "emails",
    params(
        ("userId" = String, Path, description = "The user id"),
        ("If-Match" = Option<String>, Header, description = "The version the change expects, as its ETag (or `version` in the body)"),
    ),
    request_body = SetPrimaryEmail,
    responses(
        (status = 200, description = "The user, whose email is now this address", body = UserView),
        (status = 404, description = "No such user or address", body = ErrorBody),
        (status = 409, description = "The address is not verified (field isVerified)", body = ErrorBody),
        (status = 412, description = "The user or an address changed meanwhile", body = ErrorBody),
    ),
)]
pub async fn set_primary(
    State(store): State<Store>,
    Id(user_id): Id<UserId>,
    actor: Actor,
    headers: HeaderMap,
    JsonBody(request): JsonBody<SetPrimaryEmail>,
) -> ApiResult {
    let email_id = request.validate()?;
    let version = optional_version(&headers, request.version)?;
    let user = store
        .set_primary_email(&user_id, &email_id, version, actor.as_deref())
        .await?;
    Ok(resource(
        StatusCode::OK,
        Some(user.stamp.version),
        UserView::from(user),
    ))
}

/// 204; 409 naming `isPrimary` for the primary address.
#[utoipa::path(
    delete,
    path = "/users/{userId}/emails/{emailId}",
    operation_id = "deleteEmail",
    tag = "emails",
    params(
        ("userId" = String, Path, description = "The user id"),
        ("emailId" = String, Path, description = "The email id"),
    ),
    responses(
        (status = 204, description = "The address is removed"),
        (status = 404, description = "No such user, or no such address of theirs (a delete of what is gone is a 404, unlike a tenant's or a user's)", body = ErrorBody),
        (status = 409, description = "The address is the primary one", body = ErrorBody),
    ),
)]
pub async fn delete(
    State(store): State<Store>,
    Ids(user_id, email_id): Ids<UserId, EmailId>,
) -> ApiResult {
    store.remove_email(&user_id, &email_id).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
