//! `POST /authorize` and `POST /authorize/batch` (up to 30 requests, the
//! limit Verified Permissions has): may this principal do this action on
//! this resource in this context? Decided by the authorizer's rule
//! (`cedar::Policies::judge`) over the same table: the user, the tenant
//! and the grant read in one request (`Store::standings`, as the
//! authorizer reads them), beside a consistent read of
//! the policy set's counts; the set itself is held across calls and read
//! again only when a policy write has moved the counts.
//!
//! A caller who may `authz:check` on the platform (decided as the route
//! would decide it: their roles, then the policies) asks about anyone,
//! with any context. Any other active caller (the rules' `"self":
//! "caller"`) asks about themselves only (403 naming `authz:check`
//! otherwise), with their own request's facts (now, from their address: a
//! context of their choosing is a 400), and learns the decision and its
//! reason, not the policies that determined it. A question about the
//! caller without a context is asked with their request's facts, whoever
//! asks.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;

use authz_core::model::values::{Invalid, Permission, TenantId, UserId};
use authz_core::policy::cedar::Facts;
use authz_core::store::PolicyCache;
use authz_core::{Error, Store};

use crate::bodies::{
    BatchRequest, CheckContext, CheckRequest, CheckResource, Question, BATCH_MAX, UNREAD_ADDRESS,
};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{Actor, JsonBody, SourceIp};
use crate::statement_rules::StatementRules;
use crate::views::{BatchView, DecisionView};

/// The permission that lets a caller ask about anyone, and see the
/// policies that determined each answer.
const CHECK: &str = "authz:check";

type ApiResult = Result<Response, ApiError>;

/// The answers to `questions` for `actor`, whose request came from
/// `source_ip`: every answer for a caller who may `authz:check` on the
/// platform; for anyone else, answers about themselves only, asked with
/// their own request's facts, without the policies behind them.
async fn answer_for(
    store: &Store,
    policies: &PolicyCache,
    actor: &Actor,
    source_ip: Option<&str>,
    mut questions: Vec<Question>,
) -> Result<Vec<DecisionView>, ApiError> {
    // A question about oneself without a context: from here, now.
    for q in questions.iter_mut().filter(|q| actor.is(&q.user)) {
        if let (None, Some(ip)) = (&q.context_given, source_ip) {
            q.facts.source_ip = ip.to_string();
            q.no_source_ip = None;
        }
    }
    if actor.holds_globally(CHECK) {
        return answer(store, policies, questions).await;
    }
    // Every question about the caller, from here and now (the console's):
    // whether they may see the policies is asked in the same read.
    let own_only = questions
        .iter()
        .all(|q| actor.is(&q.user) && q.context_given.is_none());
    if let (true, Some(user), Some(ip)) = (own_only, actor.user_id(), source_ip) {
        questions.push(check_question(user, Some(ip)));
        let mut answers = answer(store, policies, questions).await?;
        let may = answers.pop().is_some_and(|a| a.decision == "allow");
        return Ok(if may {
            answers
        } else {
            answers.into_iter().map(without_policies).collect()
        });
    }
    if may_check(store, policies, actor, source_ip).await? {
        return answer(store, policies, questions).await;
    }
    // Decided before anything is answered, so that nothing (not even a 400
    // naming what a policy reads) is learnt of what they may not ask.
    if questions.iter().any(|q| !actor.is(&q.user)) {
        return Err(Error::forbidden(CHECK).into());
    }
    if let Some(field) = questions.iter().find_map(|q| q.context_given.clone()) {
        return Err(Invalid::new(
            field,
            "only a caller who may check others (authz:check) sets the context: a check about yourself is asked with your own request's",
        )
        .into());
    }
    let answers = answer(store, policies, questions).await?;
    Ok(answers.into_iter().map(without_policies).collect())
}

/// Whether the caller, holding no `authz:check` by a global role, may
/// `authz:check` on the platform all the same: by a Cedar `permit`, decided
/// as the route would be (a read of its own, before questions about others
/// or with a posed context are answered).
async fn may_check(
    store: &Store,
    policies: &PolicyCache,
    actor: &Actor,
    source_ip: Option<&str>,
) -> Result<bool, ApiError> {
    let Some(user) = actor.user_id() else {
        return Ok(false);
    };
    // A policy on authz:check that reads an address the request lacks
    // counts as no.
    Ok(
        match answer(store, policies, vec![check_question(user, source_ip)]).await {
            Ok(answers) => answers[0].decision == "allow",
            Err(ApiError::Core(Error::Invalid { .. })) => false,
            Err(e) => return Err(e),
        },
    )
}

/// May `user` `authz:check` on the platform, asked from `source_ip` now?
fn check_question(user: UserId, source_ip: Option<&str>) -> Question {
    Question {
        context_given: None,
        user,
        action: Permission::parse(CHECK).expect("a permission"),
        tenant: None,
        no_source_ip: source_ip.is_none().then(|| "context.sourceIp".into()),
        no_shape: Vec::new(),
        undecided: None,
        facts: Facts {
            source_ip: source_ip.unwrap_or(UNREAD_ADDRESS).to_string(),
            time: Facts::time_now(),
            ..Facts::default()
        },
    }
}

/// An answer for a caller who asked about themselves without `authz:check`:
/// the decision and its reason, not which policies (nor Cedar's message,
/// which names them) determined it.
fn without_policies(mut view: DecisionView) -> DecisionView {
    view.determining_policies.clear();
    view.error = None;
    view.unknown_facts.clear();
    view
}

#[utoipa::path(
    post,
    path = "/authorize",
    operation_id = "authorize",
    tag = "authorize",
    request_body = CheckRequest,
    responses(
        (status = 200, description = "The decision and the policies that determined it (none named for a caller without `authz:check`, who may ask about themselves only)", body = DecisionView),
        (status = 400, description = "A field breaks a rule (`error.field` names it); a caller without `authz:check` set a `context`", body = ErrorBody),
        (status = 403, description = "The caller is not an active user (API Gateway, with the authorizer's refusal), or may not `authz:check` and asks about another user (`error.permission`: `authz:check`)", body = ErrorBody),
    ),
)]
pub async fn one(
    State(store): State<Store>,
    State(rules): State<StatementRules>,
    State(policies): State<PolicyCache>,
    actor: Actor,
    SourceIp(source_ip): SourceIp,
    JsonBody(request): JsonBody<CheckRequest>,
) -> ApiResult {
    let question = request.validate("", &rules)?;
    let mut answers = answer_for(
        &store,
        &policies,
        &actor,
        source_ip.as_deref(),
        vec![question],
    )
    .await?;
    Ok(Json(answers.remove(0)).into_response())
}

#[utoipa::path(
    post,
    path = "/authorize/batch",
    operation_id = "authorizeBatch",
    tag = "authorize",
    request_body = BatchRequest,
    responses(
        (status = 200, description = "One decision per request, in order (no policies named for a caller without `authz:check`, who may ask about themselves only)", body = BatchView),
        (status = 400, description = "A field breaks a rule (`error.field` names it); a caller without `authz:check` set a `context`", body = ErrorBody),
        (status = 403, description = "The caller is not an active user (API Gateway, with the authorizer's refusal), or may not `authz:check` and a request asks about another user (`error.permission`: `authz:check`)", body = ErrorBody),
    ),
)]
pub async fn batch(
    State(store): State<Store>,
    State(rules): State<StatementRules>,
    State(policies): State<PolicyCache>,
    actor: Actor,
    SourceIp(source_ip): SourceIp,
    JsonBody(request): JsonBody<BatchRequest>,
) -> ApiResult {
    if request.requests.is_empty() || request.requests.len() > BATCH_MAX {
        return Err(
            Invalid::new("requests", format!("must hold 1 to {BATCH_MAX} requests")).into(),
        );
    }
    let questions = request
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| r.validate(&format!("requests[{i}]."), &rules))
        .collect::<Result<Vec<_>, _>>()?;
    let results = answer_for(&store, &policies, &actor, source_ip.as_deref(), questions).await?;
    Ok(Json(BatchView { results }).into_response())
}

/// The decision for one member on `action` in their tenant, asked from
/// `source_ip` now (the explain endpoint's `?action=&sourceIp=`), with
/// errors naming the query parameters.
pub(super) async fn explain(
    store: &Store,
    rules: &StatementRules,
    policies: &PolicyCache,
    user: &UserId,
    tenant: &TenantId,
    action: &str,
    source_ip: Option<&str>,
) -> Result<DecisionView, ApiError> {
    let request = CheckRequest {
        principal: user.to_string(),
        action: action.to_string(),
        resource: Some(CheckResource {
            tenant_id: tenant.to_string(),
        }),
        context: CheckContext {
            source_ip: source_ip.map(str::to_string),
            ..Default::default()
        },
    };
    let mut question = request
        .validate("", rules)
        .map_err(|e| match e.field.as_str() {
            "context.sourceIp" => Invalid::new("sourceIp", e.reason),
            _ => e,
        })?;
    if question.no_source_ip.is_some() {
        question.no_source_ip = Some("sourceIp".into());
    }
    let mut answers = answer(store, policies, vec![question]).await?;
    Ok(answers.remove(0))
}

/// Reads what the questions rest on (`Store::standings`: at most 5 keys
/// each, the tenant's policy digest and, when not held, its set among
/// them, in one request up to 20 questions on distinct tenants) and the
/// global set's counts (the set is read too when they moved), then decides
/// each.
async fn answer(
    store: &Store,
    policies: &PolicyCache,
    questions: Vec<Question>,
) -> Result<Vec<DecisionView>, ApiError> {
    let callers: Vec<(Option<TenantId>, UserId)> =
        questions.iter().map(|q| (q.tenant, q.user)).collect();
    let at = std::time::Instant::now();
    let (read, counts) = tokio::join!(
        store.standings(&callers, &[], false, policies.tenant_sets()),
        store.policy_counts(true)
    );
    let (reads, _) = read?;
    let policies = policies.as_of(store, counts?.as_ref(), at).await?;
    for (q, read) in questions.iter().zip(&reads) {
        if q.undecided.is_some() {
            continue;
        }
        if let Some(field) = &q.no_source_ip {
            let own = read.standing(q.tenant.as_ref()).own;
            if policies
                .reads(q.tenant.as_ref(), own, q.action.as_str())
                .source_ip
            {
                return Err(Invalid::new(
                    field.clone(),
                    "is read by a Cedar policy that applies to this action here: send the address to decide for",
                )
                .into());
            }
        }
    }
    Ok(questions
        .into_iter()
        .zip(&reads)
        .map(|(q, read)| {
            if let Some(reason) = q.undecided {
                return DecisionView {
                    decision: "deny",
                    reason,
                    determining_policies: Vec::new(),
                    error: None,
                    unknown_facts: Vec::new(),
                };
            }
            let standing = read.standing(q.tenant.as_ref());
            let mut view =
                DecisionView::from(
                    policies.judge(&standing, q.action.as_str(), false, || q.facts.clone()),
                );
            if policies
                .reads(q.tenant.as_ref(), standing.own, q.action.as_str())
                .request_shape
            {
                view.unknown_facts = q.no_shape;
            }
            view
        })
        .collect())
}
