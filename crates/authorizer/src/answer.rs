//! The REST answers an instance keeps: the decision and the response API
//! Gateway receives, per (token, method, resource, method ARN, path
//! parameters, source IP, path), for as long as the inputs it was built
//! from (or the token, or the grant it rests on, if sooner), and only while
//! the key set the token was verified with is the one in hand.

use std::sync::Arc;
use std::time::{Duration, Instant};

use quick_cache::sync::{Cache, DefaultLifecycle};
use quick_cache::UnitWeighter;

use crate::decision::{Decision, Request};
use crate::inputs::Basis;
use crate::response::Response;

/// A REST answer: the decision and the response API Gateway receives,
/// cached per (token, method, resource, method ARN, path parameters) until
/// the inputs it was
/// built from expire (or the token does, if sooner).
#[derive(Debug)]
pub struct Answer {
    pub decision: Decision,
    pub response: Response,
    pub(crate) expires: Instant,
    /// What it was built from: used only while no revocation since names
    /// whom it concerns.
    pub(crate) basis: Basis,
    /// The issuer of its token, and the generation of that issuer's key
    /// set the token was verified with: served from the cache only while
    /// that set is in hand and not past its age.
    pub(crate) issuer: usize,
    pub(crate) key_generation: u64,
}

impl Answer {
    /// An answer that is not cached (HTTP API simple responses).
    pub fn uncached(decision: Decision, response: Response) -> Self {
        Self {
            decision,
            response,
            expires: Instant::now(),
            basis: Basis::nothing(),
            issuer: 0,
            key_generation: 0,
        }
    }
}

/// The answer cache's key: the token and every request field the answer
/// depends on, each length-prefixed so no two requests share a key. It is
/// compared in full on every hit, so the (fast, randomly seeded) hash only
/// picks the bucket and a collision can never return another caller's
/// answer. A SHA-256 of the same bytes alone costs more than the rest of a
/// warm decision (`make bench`). The entry holds the token for as long as
/// the inputs TTL, as API Gateway's result cache does with the header.
///
/// The bytes are hashed once, when the key is made: the map hashes only
/// that hash (a key holds the whole token, and hashing it again on every
/// lookup, insert, eviction and resize of the map cost more than the rest
/// of keeping an answer).
#[derive(Clone, PartialEq, Eq)]
pub struct AnswerKey {
    hash: u64,
    bytes: Vec<u8>,
}

impl std::hash::Hash for AnswerKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

fn answer_key(token: &str, request: &Request<'_>) -> Vec<u8> {
    let mut params: Vec<(&String, &String)> = request.path_parameters.iter().collect();
    params.sort();
    let fields = [
        token,
        request.method,
        request.resource,
        request.method_arn,
        request.source_ip,
        request.path,
    ]
    .into_iter()
    .chain(
        params
            .into_iter()
            .flat_map(|(k, v)| [k.as_str(), v.as_str()]),
    );
    let mut key = Vec::with_capacity(128);
    for field in fields {
        key.extend_from_slice(&(field.len() as u32).to_le_bytes());
        key.extend_from_slice(field.as_bytes());
    }
    key
}

/// Most REST answers kept per Lambda instance (a policy is up to 100 ARNs).
const ANSWER_CACHE_ENTRIES: usize = 5_000;

/// The answers kept, hashed by their key's own hash.
type AnswerCache = Cache<AnswerKey, Arc<Answer>, UnitWeighter, foldhash::fast::RandomState>;

/// The answer cache (none when the inputs are not cached either).
///
/// Its eviction is S3-FIFO's: a new answer is on probation, evicted first
/// unless asked again before its turn comes, so a caller sending a stream
/// of requests never asked before (an address each, say) evicts answers
/// on probation, its own, and not the answers other callers keep asking
/// for. An insert costs about what a hash map's does
/// (moka's admission, eviction and map upkeep cost a third of a request
/// not answered before, `make bench`).
pub struct Answers {
    cache: Option<AnswerCache>,
    /// What a key's bytes are hashed with (seeded at random per instance).
    seed: foldhash::quality::RandomState,
}

impl Answers {
    pub fn new(enabled: bool) -> Self {
        Self {
            cache: enabled.then(|| {
                // An answer lives as long as what it was built from: its
                // own end is checked on every hit, and the capacity evicts
                // what is no longer asked.
                Cache::with(
                    ANSWER_CACHE_ENTRIES,
                    ANSWER_CACHE_ENTRIES as u64,
                    UnitWeighter,
                    foldhash::fast::RandomState::default(),
                    DefaultLifecycle::default(),
                )
            }),
            seed: foldhash::quality::RandomState::default(),
        }
    }

    /// The key of `request` asked with `token`, if answers are kept and the
    /// token may be one (its size is checked before anything is hashed).
    pub fn key(&self, token: Option<&str>, request: &Request<'_>) -> Option<AnswerKey> {
        let token = token.filter(|t| !t.is_empty() && t.len() <= crate::token::MAX_TOKEN_BYTES)?;
        self.cache.as_ref()?;
        let bytes = answer_key(token, request);
        Some(AnswerKey {
            hash: std::hash::BuildHasher::hash_one(&self.seed, &bytes),
            bytes,
        })
    }

    /// The answer kept under `key`, if `current` says the key set it was
    /// built with (issuer, generation) is still the one to trust.
    pub fn get(
        &self,
        key: &AnswerKey,
        current: impl Fn(usize, u64) -> bool,
    ) -> Option<Arc<Answer>> {
        self.cache
            .as_ref()?
            .get(key)
            .filter(|hit| hit.expires > Instant::now() && current(hit.issuer, hit.key_generation))
    }

    pub fn insert(&self, key: AnswerKey, answer: Arc<Answer>) {
        if let Some(cache) = &self.cache {
            cache.insert(key, answer);
        }
    }
}

/// When an answer built from inputs good `until` expires: then, or sooner
/// at the token's own expiry (with the leeway verification allows), or at
/// the end of the grant or global roles an Allow rests on, to the
/// sub-second. (Saturating: a token may claim an `exp` far past what an
/// `Instant` can hold.)
pub(crate) fn expiry(decision: &Decision, token_expires_at: u64, until: Instant) -> Instant {
    let token_end = token_expires_at.saturating_add(crate::token::LEEWAY_SECONDS);
    let end = match decision {
        Decision::Allow(a) => a.ends_at().map_or(token_end, |e| e.min(token_end)),
        Decision::Deny { .. } | Decision::SignUp(_) | Decision::Directory(_) => token_end,
    };
    let since_epoch = authz_core::clock::now_since_epoch();
    let left = Duration::from_secs(end).saturating_sub(since_epoch);
    match Instant::now().checked_add(left) {
        Some(at) => until.min(at),
        None => until,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn request<'a>(
        method: &'a str,
        resource: &'a str,
        arn: &'a str,
        params: &'a HashMap<String, String>,
    ) -> Request<'a> {
        Request {
            authorization: None,
            method,
            resource,
            path_parameters: params,
            method_arn: arn,
            source_ip: "192.0.2.1",
            path: "/a",
        }
    }

    /// A caller sending a stream of requests never asked before (a new
    /// source address each, far more than the cache holds) does not evict
    /// the answer another caller keeps asking for.
    #[test]
    fn a_stream_of_new_requests_keeps_the_answers_asked_again() {
        let answers = Answers::new(true);
        let params = HashMap::new();
        let answer = || {
            let decision = Decision::Deny {
                user_id: authz_core::model::values::UserId::generate(),
                tenant_id: None,
                reason: "permission not held",
                policies: Vec::new(),
            };
            let response = crate::response::rest_response(&decision, "arn:a/GET/a");
            Arc::new(Answer {
                expires: Instant::now() + Duration::from_secs(3600),
                ..Answer::uncached(decision, response)
            })
        };
        let kept = request("GET", "/a", "arn/GET/a", &params);
        let kept_key = || answers.key(Some("kept-token"), &kept).unwrap();
        answers.insert(kept_key(), answer());
        let current = |_: usize, _: u64| true;
        assert!(answers.get(&kept_key(), current).is_some());
        let addresses: Vec<String> = (0..ANSWER_CACHE_ENTRIES * 10)
            .map(|i| std::net::Ipv4Addr::from(0x0a00_0000 + i as u32).to_string())
            .collect();
        for (i, address) in addresses.iter().enumerate() {
            let flood = Request {
                source_ip: address,
                ..request("GET", "/a", "arn/GET/a", &params)
            };
            answers.insert(answers.key(Some("flood-token"), &flood).unwrap(), answer());
            // The other caller asks again now and then.
            if i % 1_000 == 999 {
                assert!(
                    answers.get(&kept_key(), current).is_some(),
                    "evicted after {i}"
                );
            }
        }
        assert!(answers.get(&kept_key(), current).is_some());
        // The stream's own answers were kept too, as far as room allowed.
        let last = Request {
            source_ip: addresses.last().unwrap(),
            ..request("GET", "/a", "arn/GET/a", &params)
        };
        let last = answers.key(Some("flood-token"), &last).unwrap();
        assert!(answers.get(&last, current).is_some());
    }

    /// Fields are length-prefixed: moving bytes across a field boundary
    /// never yields the same key.
    #[test]
    fn answer_keys_keep_fields_apart() {
        let params = HashMap::new();
        let a = answer_key("tok", &request("GET", "/a", "arn/GET/a", &params));
        assert_eq!(
            a,
            answer_key("tok", &request("GET", "/a", "arn/GET/a", &params))
        );
        for other in [
            answer_key("to", &request("kGET", "/a", "arn/GET/a", &params)),
            answer_key("tok", &request("GE", "T/a", "arn/GET/a", &params)),
            answer_key("tok", &request("GET", "/a", "arn/GET/b", &params)),
            answer_key("tok2", &request("GET", "/a", "arn/GET/a", &params)),
        ] {
            assert_ne!(a, other);
        }
    }
}
