//! The functions' CloudWatch metrics: names, dimensions and units in one
//! place, recorded through the `metrics` facade and written as Embedded
//! Metric Format (EMF) lines in the function's log after each invocation,
//! which CloudWatch Logs turns into metrics. No `PutMetricData` call, so
//! nothing on a decision's path but counting and one line of JSON.
//!
//! Every metric carries the `Function` dimension (`authorizer`,
//! `provisioning`, `recompute`) and lives in the namespace `METRICS_NAMESPACE`
//! (the template sets `Authz/<stack name>`; default `Authz`). Labels are
//! dimensions, so they are only ever low-cardinality values (an outcome, a
//! route template, a status class), never a user or tenant id.

use std::sync::OnceLock;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use metrics::Unit;
use metrics_cloudwatch_embedded::Collector;

/// The variable that names the metrics' namespace.
pub const NAMESPACE_VAR: &str = "METRICS_NAMESPACE";
/// The namespace when `METRICS_NAMESPACE` is unset or empty.
pub const DEFAULT_NAMESPACE: &str = "Authz";

/// Dimension names.
pub mod dimension {
    /// The function that wrote the metric (every metric has it).
    pub const FUNCTION: &str = "Function";
    /// A decision's outcome: `allow`, `deny`, `unauthorized` or `error`.
    pub const OUTCOME: &str = "Outcome";
    /// An API route as its template: `PUT /tenants/{tenantId}`.
    pub const ROUTE: &str = "Route";
    /// An HTTP status class: `2xx`, `4xx`, `5xx`.
    pub const STATUS_CLASS: &str = "StatusClass";
}

/// Values of the `Outcome` dimension.
pub mod outcome {
    pub const ALLOW: &str = "allow";
    pub const DENY: &str = "deny";
    pub const UNAUTHORIZED: &str = "unauthorized";
    pub const ERROR: &str = "error";
}

/// Metric names, by function.
pub mod name {
    // authorizer, each with the `Outcome` dimension (one EMF line a decision).
    /// Decisions (Count).
    pub const DECISIONS: &str = "Decisions";
    /// Time from the event to the answer (Microseconds).
    pub const DECISION_LATENCY: &str = "DecisionLatency";
    /// Decisions whose token was already verified (Count).
    pub const TOKEN_CACHE_HITS: &str = "TokenCacheHits";
    /// Decisions whose user and grant came from the instance's cache (Count).
    pub const INPUT_CACHE_HITS: &str = "InputCacheHits";
    /// Decisions whose whole answer came from the instance's cache (Count).
    pub const ANSWER_CACHE_HITS: &str = "AnswerCacheHits";
    // authorizer, `Function` only.
    /// Fetches of the issuer's key set (Count).
    pub const JWKS_FETCHES: &str = "JwksFetches";

    /// Stored Cedar statements a load of the policy set could not use
    /// (Count): the instance keeps its last good set, or denies without one.
    pub const REJECTED_STATEMENTS: &str = "RejectedStatements";

    // every function, `Function` only.
    /// Requests sent to DynamoDB, each attempt counted (Count).
    pub const DYNAMODB_REQUESTS: &str = "DynamoDbRequests";

    // recompute, `Function` only (one EMF line a batch).
    /// Stream records handled without error (Count).
    pub const RECORDS_PROCESSED: &str = "RecordsProcessed";
    /// Stream records reported failed, for Lambda to retry (Count).
    pub const RECORDS_FAILED: &str = "RecordsFailed";
    /// Holders (users, grants) whose permissions were recomputed (Count).
    pub const HOLDERS_RECOMPUTED: &str = "HoldersRecomputed";
    /// Holders whose permissions were wrong and were rewritten (Count).
    pub const HOLDERS_WRITTEN: &str = "HoldersWritten";
    /// How long one role's fan-out took (Milliseconds).
    pub const FAN_OUT_DURATION: &str = "FanOutDuration";
    /// How many holders one role's fan-out recomputed (Count).
    pub const FAN_OUT_HOLDERS: &str = "FanOutHolders";

    // provisioning, with `Route` and `StatusClass` (one EMF line a request).
    /// Requests answered (Count).
    pub const REQUESTS: &str = "Requests";
    /// Requests refused because of a conflict: 409 or 412 (Count).
    pub const CONFLICTS: &str = "Conflicts";
    /// Requests answered 503: a retryable fault such as throttling (Count).
    pub const RETRYABLE_FAILURES: &str = "RetryableFailures";
    /// Revocations committed but not recorded in the revocations item
    /// (Count): the caches let go of them within their TTLs, not seconds.
    pub const REVOCATIONS_UNRECORDED: &str = "RevocationsUnrecorded";

    // recompute, `Function` only.
    /// Flushes of API Gateway's authorizer cache after revocations (Count).
    pub const AUTHORIZER_CACHE_FLUSHES: &str = "AuthorizerCacheFlushes";
    /// Flushes of a protected API's stage that failed after their retries
    /// (Count): that API's cache lets go of revoked answers within its TTL.
    pub const AUTHORIZER_CACHE_FLUSH_FAILURES: &str = "AuthorizerCacheFlushFailures";
}

/// Every metric with its unit.
pub const UNITS: &[(&str, Unit)] = &[
    (name::DECISIONS, Unit::Count),
    (name::DECISION_LATENCY, Unit::Microseconds),
    (name::TOKEN_CACHE_HITS, Unit::Count),
    (name::INPUT_CACHE_HITS, Unit::Count),
    (name::ANSWER_CACHE_HITS, Unit::Count),
    (name::JWKS_FETCHES, Unit::Count),
    (name::REJECTED_STATEMENTS, Unit::Count),
    (name::DYNAMODB_REQUESTS, Unit::Count),
    (name::RECORDS_PROCESSED, Unit::Count),
    (name::RECORDS_FAILED, Unit::Count),
    (name::HOLDERS_RECOMPUTED, Unit::Count),
    (name::HOLDERS_WRITTEN, Unit::Count),
    (name::FAN_OUT_DURATION, Unit::Milliseconds),
    (name::FAN_OUT_HOLDERS, Unit::Count),
    (name::REQUESTS, Unit::Count),
    (name::CONFLICTS, Unit::Count),
    (name::RETRYABLE_FAILURES, Unit::Count),
    (name::REVOCATIONS_UNRECORDED, Unit::Count),
    (name::AUTHORIZER_CACHE_FLUSHES, Unit::Count),
    (name::AUTHORIZER_CACHE_FLUSH_FAILURES, Unit::Count),
];

static COLLECTOR: OnceLock<&'static Collector> = OnceLock::new();

/// The namespace `METRICS_NAMESPACE` names, or [`DEFAULT_NAMESPACE`].
pub fn namespace_from(value: Option<&str>) -> String {
    match value.map(str::trim) {
        Some(v) if !v.is_empty() => v.to_string(),
        _ => DEFAULT_NAMESPACE.to_string(),
    }
}

/// Installs this process's recorder, once: metrics recorded before it (or
/// in a process that never calls it, such as most tests) go nowhere. A
/// second call keeps the first recorder.
pub fn init(function: &'static str) {
    COLLECTOR.get_or_init(|| {
        let namespace = namespace_from(std::env::var(NAMESPACE_VAR).ok().as_deref());
        let collector = metrics_cloudwatch_embedded::Builder::new()
            .cloudwatch_namespace(namespace)
            .with_dimension(dimension::FUNCTION, function)
            .init()
            .expect("the metrics recorder is installed once, here");
        for (name, unit) in UNITS {
            // The recorder keeps a metric's unit from its description.
            metrics::describe_counter!(*name, *unit, "");
        }
        collector
    });
}

/// Writes what was recorded since the last flush, one EMF line per set of
/// dimensions, to `out`; nothing if [`init`] was not called. The recorder
/// keeps at most 100 values of one histogram between flushes (and drops
/// the rest): code that records more in one invocation flushes on the way.
pub fn flush_to(out: impl std::io::Write) {
    if let Some(collector) = COLLECTOR.get() {
        if let Err(e) = collector.flush(out) {
            tracing::warn!(error = %e, "metrics not written");
        }
    }
}

/// Writes what was recorded since the last flush to stdout, the function's
/// log: called once at the end of each invocation.
pub fn flush() {
    flush_to(std::io::stdout().lock());
}

/// Counts every request a DynamoDB client sends as
/// [`name::DYNAMODB_REQUESTS`] (each attempt: retries are requests too).
#[derive(Debug, Clone, Copy, Default)]
pub struct CountRequests;

impl Intercept for CountRequests {
    fn name(&self) -> &'static str {
        "CountRequests"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        metrics::counter!(name::DYNAMODB_REQUESTS).increment(1);
        Ok(())
    }
}

/// The status class of an HTTP status: `2xx`, `4xx`...
pub fn status_class(status: u16) -> &'static str {
    match status {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_is_named_or_the_default() {
        assert_eq!(namespace_from(None), "Authz");
        assert_eq!(namespace_from(Some("  ")), "Authz");
        assert_eq!(namespace_from(Some(" Authz/prod ")), "Authz/prod");
    }

    #[test]
    fn status_classes() {
        assert_eq!(status_class(201), "2xx");
        assert_eq!(status_class(409), "4xx");
        assert_eq!(status_class(503), "5xx");
    }

    #[test]
    fn every_metric_has_one_unit() {
        let mut names: Vec<&str> = UNITS.iter().map(|(n, _)| *n).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), UNITS.len());
    }
}
