//! API Gateway's result caches after revocations, on every API the
//! authorizer protects: this stack's own stage (`REST_API_ID`,
//! `STAGE_NAME`) and each stage in `PROTECTED_STAGES` (REST API stages
//! `restapis/{apiId}/stages/{stage}`, flushed with
//! `FlushStageAuthorizersCache`; HTTP API stages
//! `apis/{apiId}/stages/{stage}`, with `ResetAuthorizersCache`; both
//! through [`crate::management`]).
//!
//! The revocations item's stream records say when each revocation was
//! recorded. A flush sent at `F` covers every revocation recorded before
//! `F - interval` (the interval: the authorizer's
//! `REVOCATION_CHECK_SECONDS` plus the replicas' lag, plus a quarter of a
//! second for a read and an answer in flight): by then every
//! instance has read it, so API Gateway, asking again, gets an answer that
//! knows it. Flushing sooner could let API Gateway cache an answer from an
//! instance that has not read it yet. Flushes coalesce: at most one per
//! interval, each covering all that is due, whatever the rate of
//! revocations and however many processes handle the stream (each claims
//! a flush in the revocations item before sending it: each flush empties a
//! stage's cache for every caller, and the account's API Gateway
//! management calls share a small quota).
//!
//! A flush that still fails after its retries is logged and counted
//! (`AuthorizerCacheFlushFailures`, alarmed), never a failed record: the
//! shard's other work (role fan-outs) goes on, and that stage's cache lets
//! go of what it holds within its TTL.

use std::sync::Arc;
use std::time::Duration;

use authz_core::model::items::REPLICA_LAG;
use authz_core::runtime::config::{self, ConfigError};
use authz_core::runtime::metrics::name;
use authz_core::store::FlushClaim;
use authz_core::Store;

use crate::management::{Api, Management};

/// What a flush waits beyond the last instance's read of a revocation:
/// that read, and an answer built just before it on its way to API
/// Gateway, take time, and an answer API Gateway caches after the flush
/// stays for the cache's TTL.
const IN_FLIGHT: Duration = Duration::from_millis(250);

/// Tries of one stage's flush before it is given up: throttling (the
/// account's management calls share a small quota), API Gateway's own
/// failures and no answer are tried again, a refusal is not.
const FLUSH_TRIES: u32 = 3;

/// The wait before the second try, doubled before each next one.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// A stage whose authorizer cache is flushed: `restapis/{api}/stages/{stage}`
/// for a REST API's, `apis/{api}/stages/{stage}` for an HTTP API's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// REST or HTTP API: which management API flushes it.
    pub kind: Api,
    /// The API's id.
    pub api: String,
    /// The stage's name.
    pub stage: String,
}

impl Stage {
    /// Reads `restapis/{api}/stages/{stage}` or `apis/{api}/stages/{stage}`
    /// (the stage's path in API Gateway's management API, as its IAM
    /// resource ARN ends).
    pub fn parse(text: &str) -> Option<Self> {
        let parts: Vec<&str> = text.trim().trim_matches('/').split('/').collect();
        let id = |s: &str| {
            !s.is_empty() && s.len() <= 64 && s.bytes().all(|b| b.is_ascii_alphanumeric())
        };
        let stage = |s: &str| {
            !s.is_empty()
                && s.len() <= 128
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_$".contains(&b))
        };
        let [collection, api, "stages", name] = parts.as_slice() else {
            return None;
        };
        let kind = [Api::Rest, Api::Http]
            .into_iter()
            .find(|kind| kind.collection() == *collection)?;
        (id(api) && stage(name)).then(|| Self {
            kind,
            api: api.to_string(),
            stage: name.to_string(),
        })
    }

    /// The stage's path in the management API (`restapis/…/stages/…`).
    pub fn path(&self) -> String {
        format!(
            "{}/{}/stages/{}",
            self.kind.collection(),
            self.api,
            self.stage
        )
    }
}

/// The stages to flush and the clients that flush them.
#[derive(Debug, Clone)]
pub struct CacheFlush {
    management: Management,
    stages: Vec<Stage>,
    /// How long after a revocation's time the flush is sent, and the least
    /// time between two flushes: the authorizer's
    /// `REVOCATION_CHECK_SECONDS` plus the replicas' lag.
    interval: Duration,
    /// When the last flush this consumer knows of was sent (milliseconds
    /// since the epoch; its own or another's it lost a claim to): shared
    /// by every batch the process handles (clones share it).
    last: Arc<tokio::sync::Mutex<u64>>,
}

impl CacheFlush {
    /// From `REST_API_ID` and `STAGE_NAME` (this stack's stage),
    /// `PROTECTED_STAGES` (comma-separated stage paths of the other APIs
    /// the authorizer protects) and `REVOCATION_CHECK_SECONDS` (1 to 5,
    /// default 1); `None` when there is no stage to flush.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        sdk: &aws_config::SdkConfig,
    ) -> Result<Option<Self>, ConfigError> {
        let set = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let mut stages = Vec::new();
        if let Some(api) = set("REST_API_ID") {
            let stage = set("STAGE_NAME")
                .ok_or_else(|| ConfigError::new("STAGE_NAME", "is required with REST_API_ID"))?;
            let own = format!("restapis/{}/stages/{}", api.trim(), stage.trim());
            stages.push(Stage::parse(&own).ok_or_else(|| {
                ConfigError::new(
                    "REST_API_ID",
                    "is not an API id and STAGE_NAME a stage name",
                )
            })?);
        }
        for entry in set("PROTECTED_STAGES")
            .unwrap_or_default()
            .split(',')
            .filter(|e| !e.trim().is_empty())
        {
            let stage = Stage::parse(entry).ok_or_else(|| {
                ConfigError::new(
                    "PROTECTED_STAGES",
                    format!("{entry:?} is not a stage: restapis/{{apiId}}/stages/{{stage}} (a REST API) or apis/{{apiId}}/stages/{{stage}} (an HTTP API)"),
                )
            })?;
            if !stages.contains(&stage) {
                stages.push(stage);
            }
        }
        if stages.is_empty() {
            return Ok(None);
        }
        let check = config::revocation_check(&lookup)?;
        Ok(Some(Self {
            management: Management::new(sdk),
            stages,
            interval: check + REPLICA_LAG + IN_FLIGHT,
            last: Arc::default(),
        }))
    }

    /// The stages it flushes.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// The flush a revocation recorded at `latest` (milliseconds since the
    /// epoch) needs, given that the last one was sent at `last`: `None`
    /// when that one covers it, else when to send the next one (no sooner
    /// than `latest` plus the interval, nor than `last` plus the interval).
    pub fn due(&self, latest: u64, last: u64) -> Option<u64> {
        let interval = self.interval.as_millis() as u64;
        let covered = last > 0 && last >= latest + interval;
        (!covered).then(|| (latest + interval).max(last + interval))
    }

    /// Flushes every stage once the revocations recorded up to `latest`
    /// are due, unless a flush already covers them: one this process sent,
    /// or one another consumer of the stream claimed in the table
    /// ([`Store::claim_flush`]), so that flushes coalesce across every
    /// process. Answers whether it sent one. Never fails: a stage whose
    /// flush fails is logged and counted, and covered by its TTL; a claim
    /// that cannot be made is logged and the flush sent anyway (the bound
    /// on revocations comes before the coalescing).
    pub async fn after(&self, store: &Store, latest: u64) -> bool {
        loop {
            // One batch of this process at a time decides and claims.
            let mut last = self.last.lock().await;
            let Some(due) = self.due(latest, *last) else {
                return false;
            };
            let now = authz_core::clock::now_millis();
            if due > now {
                drop(last);
                // Then look again: a flush sent meanwhile may cover it.
                tokio::time::sleep(Duration::from_millis(due - now)).await;
                continue;
            }
            match store.claim_flush(now, self.interval).await {
                Ok(FlushClaim::Claimed) => *last = now,
                Ok(FlushClaim::Taken(at)) => {
                    *last = (*last).max(at);
                    continue;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the flush could not be claimed; sending it anyway");
                    *last = now;
                }
            }
            break;
        }
        for (stage, result) in self.flush_now().await {
            if let Err(e) = result {
                metrics::counter!(name::AUTHORIZER_CACHE_FLUSH_FAILURES).increment(1);
                tracing::error!(stage = %stage.path(), error = %e, "API Gateway's authorizer cache was not flushed; its cached answers expire within its TTL");
            }
        }
        true
    }

    /// Flushes every stage now, concurrently: each one's outcome.
    pub async fn flush_now(&self) -> Vec<(&Stage, Result<(), String>)> {
        let results =
            futures::future::join_all(self.stages.iter().map(|stage| self.flush_stage(stage)))
                .await;
        self.stages.iter().zip(results).collect()
    }

    /// One stage's flush, tried again with backoff while what failed may
    /// pass.
    async fn flush_stage(&self, stage: &Stage) -> Result<(), String> {
        let (mut tries, mut backoff) = (0, FIRST_BACKOFF);
        loop {
            tries += 1;
            match self
                .management
                .flush(stage.kind, &stage.api, &stage.stage)
                .await
            {
                Ok(()) => {
                    metrics::counter!(name::AUTHORIZER_CACHE_FLUSHES).increment(1);
                    return Ok(());
                }
                Err(e) if tries >= FLUSH_TRIES || !e.is_retryable() => return Err(e.to_string()),
                Err(_) => {
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_read_as_their_management_paths() {
        assert_eq!(
            Stage::parse("restapis/a1b2c3/stages/prod"),
            Some(Stage {
                kind: Api::Rest,
                api: "a1b2c3".into(),
                stage: "prod".into()
            })
        );
        assert_eq!(
            Stage::parse(" apis/x9y8/stages/$default "),
            Some(Stage {
                kind: Api::Http,
                api: "x9y8".into(),
                stage: "$default".into()
            })
        );
        for bad in [
            "",
            "restapis/a1/stages",
            "restapis/a-1/stages/prod",
            "apis/a1/stages/pr od",
            "restapis/a1/stages/prod/cache/authorizers",
            "arn:aws:apigateway:us-east-1::/restapis/a1/stages/prod",
        ] {
            assert_eq!(Stage::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn flushes_coalesce_to_one_per_interval_each_covering_what_is_due() {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let lookup = |name: &str| {
            match name {
                "REST_API_ID" => Some("own1"),
                "STAGE_NAME" => Some("prod"),
                "PROTECTED_STAGES" => Some("restapis/t1/stages/prod, apis/h1/stages/$default"),
                _ => None,
            }
            .map(str::to_string)
        };
        let flush = CacheFlush::from_lookup(lookup, &sdk).unwrap().unwrap();
        assert_eq!(flush.stages().len(), 3);
        // The first revocation waits for the interval (2.25 s at the
        // defaults: the check, the replicas' lag, an answer in flight).
        assert_eq!(flush.due(10_000, 0), Some(12_250));
        // A flush sent at 12.25 s covers everything recorded before 10 s...
        assert_eq!(flush.due(10_000, 12_250), None);
        // ...and a revocation just after waits for the next interval, not
        // its own 2.25 s: at most one flush per interval.
        assert_eq!(flush.due(10_500, 12_250), Some(14_500));
        assert_eq!(flush.due(13_000, 12_250), Some(15_250));
        let bad =
            |v: &'static str| move |name: &str| (name == "PROTECTED_STAGES").then(|| v.to_string());
        assert_eq!(
            CacheFlush::from_lookup(bad("restapis/t1"), &sdk)
                .unwrap_err()
                .var,
            "PROTECTED_STAGES"
        );
        assert!(CacheFlush::from_lookup(|_| None, &sdk).unwrap().is_none());
    }
}
