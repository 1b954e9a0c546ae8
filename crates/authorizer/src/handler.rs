//! The Lambda handler: REST API REQUEST authorizer events (IAM policy
//! responses) and HTTP API payload 2.0 events (simple responses), one JSON
//! log line and one EMF metrics line per decision, never the token.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use authz_core::runtime::metrics::{dimension, name, outcome};

use crate::answer::Answer;
use crate::decision::{Decision, Failure, Request, Trace};
use crate::event::{Event, Text};
use crate::jwks::JwksSource;
use crate::response::{simple_response, Response};
use crate::Authorizer;

/// What the Lambda returns: a response (shared with the answer cache), or
/// an error whose message API Gateway reads (`Unauthorized` is its 401;
/// anything else its 500).
pub type Outcome = Result<Response, Failure>;

/// Handles one invocation event (either shape) as the runtime received
/// it: its fields read in one pass ([`Event`]), no JSON value built.
pub async fn handle<S: JwksSource>(authorizer: &Authorizer<S>, event: &str) -> Outcome {
    let started = Instant::now();
    let mut trace = Trace::default();
    let e = match Event::read(event) {
        Ok(e) => e,
        Err(e) => return malformed(e, &trace, started),
    };
    let no_params = HashMap::new();
    let context = e.request_context.as_ref();
    let http = context.and_then(|c| c.http.as_ref());
    let rest_caller = context.and_then(|c| c.connection.as_ref());
    let authorization = e
        .headers
        .as_ref()
        .and_then(|h| h.get(authorizer.token_header()));
    let path_parameters = e.path_parameters.as_ref().unwrap_or(&no_params);
    let (result, method, resource) = if e.is_http_api() {
        // The route key is "METHOD /path/{param}", where METHOD is `ANY`
        // for an ANY route: the request's method is the context's.
        let route_key = text(&e.route_key);
        let resource = route_key.split_once(' ').map_or(route_key, |(_, r)| r);
        let method = http.map_or("", |h| text(&h.method));
        let request = Request {
            authorization,
            method,
            resource,
            path_parameters,
            method_arn: text(&e.route_arn),
            source_ip: http.map_or("", |h| text(&h.source_ip)),
            path: http.map_or("", |h| text(&h.path)),
        };
        let decided = authorizer.decide(&request, &mut trace).await;
        let response = decided.map(|d| {
            let response = simple_response(&d);
            Arc::new(Answer::uncached(d, response))
        });
        (response, method, resource)
    } else {
        let (method, resource) = (text(&e.http_method), text(&e.resource));
        let request = Request {
            authorization,
            method,
            resource,
            path_parameters,
            method_arn: text(&e.method_arn),
            source_ip: rest_caller.map_or("", |i| text(&i.source_ip)),
            path: text(&e.path),
        };
        let response = authorizer.answer_rest(&request, &mut trace).await;
        (response, method, resource)
    };
    report(result, method, resource, &trace, started)
}

/// An event's string, or empty when it has none.
fn text<'t>(t: &'t Option<Text<'_>>) -> &'t str {
    t.as_deref().unwrap_or_default()
}

/// [`handle`] for an event held as a JSON value, answering one: for the
/// tests and tools that build events (the Lambda reads and sends bytes).
pub async fn handle_value<S: JwksSource>(
    authorizer: &Authorizer<S>,
    event: &serde_json::Value,
) -> Result<serde_json::Value, Failure> {
    let response = handle(authorizer, &event.to_string()).await?;
    Ok(serde_json::from_str(response.get()).expect("a response is JSON"))
}

/// An event neither shape reads: `Unauthorized`, logged and counted. The
/// reason says where, not what: the value refused may be a header
/// carrying the token.
fn malformed(e: crate::event::Malformed, trace: &Trace, started: Instant) -> Outcome {
    let failure = Failure::Unauthorized(format!("event: not an authorizer event ({e})"));
    report(Err(failure), "", "", trace, started)
}

/// No determining policies.
static NO_POLICIES: Vec<authz_core::policy::cedar::Determining> = Vec::new();

/// Logs the decision (one line, never the token), records its metrics
/// (one EMF line when the invocation ends) and returns what API Gateway
/// receives.
fn report(
    result: Result<Arc<Answer>, Failure>,
    method: &str,
    resource: &str,
    trace: &Trace,
    started: Instant,
) -> Outcome {
    let latency_us = started.elapsed().as_micros() as u64;
    match result {
        Ok(answer) => {
            let (outcome, reason, user, tenant, policies) = match &answer.decision {
                Decision::Allow(a) => (
                    outcome::ALLOW,
                    "permitted",
                    a.user_id.to_string(),
                    a.tenant_id.map(|t| t.to_string()),
                    &a.policies,
                ),
                Decision::SignUp(s) => (
                    outcome::ALLOW,
                    "signing up",
                    format!("identity {}", s.identity_id),
                    s.tenant_id.map(|t| t.to_string()),
                    &NO_POLICIES,
                ),
                Decision::Directory(d) => (
                    outcome::ALLOW,
                    "a tenant's directory",
                    d.principal(),
                    Some(d.tenant_id.to_string()),
                    &NO_POLICIES,
                ),
                Decision::Deny {
                    user_id,
                    tenant_id,
                    reason,
                    policies,
                } => (
                    outcome::DENY,
                    *reason,
                    user_id.to_string(),
                    tenant_id.map(|t| t.to_string()),
                    policies,
                ),
            };
            // The determining policies, as `name (id)`.
            let policies = policies
                .iter()
                .map(|p| format!("{} ({})", p.name, p.policy_id))
                .collect::<Vec<_>>()
                .join(", ");
            tracing::info!(
                decision = outcome,
                reason,
                user_id = %user,
                tenant_id = tenant.as_deref().unwrap_or(""),
                route = %format!("{method} {resource}"),
                policies,
                token_cache_hit = trace.token_cached,
                inputs_cache_hit = trace.inputs_cached,
                answer_cache_hit = trace.answer_cached,
                latency_us,
                "decision"
            );
            record(outcome, latency_us, trace);
            Ok(answer.response.clone())
        }
        Err(failure) => {
            let (outcome, reason) = match &failure {
                Failure::Unauthorized(r) => (outcome::UNAUTHORIZED, r.as_str()),
                Failure::Dependency(r) => (outcome::ERROR, r.as_str()),
            };
            tracing::warn!(
                decision = outcome,
                reason,
                route = %format!("{method} {resource}"),
                token_cache_hit = trace.token_cached,
                latency_us,
                "decision"
            );
            record(outcome, latency_us, trace);
            Err(failure)
        }
    }
}

/// A decision's metrics, all with its outcome as a dimension so that one
/// decision is one EMF line.
fn record(outcome: &'static str, latency_us: u64, trace: &Trace) {
    let counted = |name: &'static str, yes: bool| {
        if yes {
            metrics::counter!(name, dimension::OUTCOME => outcome).increment(1);
        }
    };
    counted(name::DECISIONS, true);
    counted(name::TOKEN_CACHE_HITS, trace.token_cached);
    counted(name::INPUT_CACHE_HITS, trace.inputs_cached);
    counted(name::ANSWER_CACHE_HITS, trace.answer_cached);
    metrics::histogram!(name::DECISION_LATENCY, dimension::OUTCOME => outcome)
        .record(latency_us as f64);
}
