//! Revocation latency with the template's default caches: the local stack
//! (its gateway caching results for 300 s, the authorizer caching decisions
//! for 60 s) started as `make demo` starts it, and each way of taking
//! access away measured `ROUNDS` times from the admin's 2xx to the member's
//! first refused request (`devtools::revocation`).

use std::time::Duration;

use devtools::revocation::{measure, Admin, Revocation, Through};
use devtools::scenario::ApiClient;
use devtools::stack::{Database, Stack, StackOptions};

use crate::report::{Row, Section};

/// Measurements of each kind.
const ROUNDS: usize = 3;

/// The bound the docs state for the default caches.
const GOAL: Duration = Duration::from_secs(5);

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn median(sorted: &[Duration]) -> Duration {
    sorted[sorted.len() / 2]
}

pub async fn revocation_latency() -> Result<Section, String> {
    let root = testkit::repo_root();
    let mut options = StackOptions::new(&root);
    options.state_dir = std::env::temp_dir().join(format!("authz-bench-{}", ulid::Ulid::new()));
    options.database = Database::Existing {
        endpoint: testkit::endpoint(),
    };
    options.table = format!(
        "authz-bench-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    options.gateway_port = 0;
    options.lambda_port = testkit::dynamodb_local::free_port();
    options.oidc_port = 0;
    options.tickets_port = 0;
    options.tickets_http_port = 0;
    options.result_ttl = None;
    options.decision_cache_seconds = 60;
    options.reload = false;
    let mut stack = Stack::start(&options, &mut |line| eprintln!("  · {line}")).await?;
    let api = ApiClient::new(&stack.api_url);
    let token = stack.sign_in(&stack.admin_login).await?;
    let admin = Admin {
        api: &api,
        token: &token,
        issuer: &stack.issuer,
    };
    let tickets = ApiClient::new(&stack.tickets_url);
    let tickets_http = ApiClient::new(&stack.tickets_http_url);
    let mut rows = Vec::new();
    let mut all = Vec::new();
    for how in Revocation::ALL {
        let mut took = Vec::with_capacity(3 * ROUNDS);
        for _ in 0..ROUNDS {
            took.push(measure(&admin, how, Through::Authz).await?);
            took.push(measure(&admin, how, Through::Tickets(&tickets)).await?);
            took.push(measure(&admin, how, Through::Tickets(&tickets_http)).await?);
        }
        took.sort();
        let worst = *took.last().expect("rounds");
        rows.push(
            Row::new(
                format!(
                    "  {}: median / worst of {} (the authz API, the example's REST and HTTP APIs)",
                    how.name(),
                    3 * ROUNDS
                ),
                format!("{} / {}", secs(median(&took)), secs(worst)),
            )
            .goal(format!("≤ {}", secs(GOAL)), worst <= GOAL),
        );
        all.extend(took);
    }
    all.sort();
    let worst = *all.last().expect("measurements");
    rows.insert(
        0,
        Row::new(
            format!(
                "admin's 2xx → member's first refusal, gateway cache 300 s, decision cache 60 s: median / worst of {}",
                all.len()
            ),
            format!("{} / {}", secs(median(&all)), secs(worst)),
        )
        .goal(format!("≤ {}", secs(GOAL)), worst <= GOAL),
    );
    // A tenant admin's storm of revoking writes, and what it does to
    // everyone else.
    let standing_reads = || {
        stack
            .proxy
            .stats()
            .operations
            .get(&("authorizer".to_string(), "BatchGetItem".to_string()))
            .copied()
            .unwrap_or(0)
    };
    let storm = devtools::revocation::storm(
        &admin,
        Duration::from_secs(30),
        || stack.gateway.flushes(),
        standing_reads,
        |token| stack.gateway.authorizer_calls_with(token),
    )
    .await?;
    let per_second = storm.flushes as f64 / storm.lasted.as_secs_f64();
    rows.push(Row::new(
        format!(
            "storm: a tenant admin loops revoking writes for {:.0} s: accepted / refused 429",
            storm.lasted.as_secs_f64()
        ),
        format!("{} / {}", storm.accepted, storm.limited),
    ));
    rows.push(
        Row::new(
            "  gateway cache flushes during the storm (at most one per 2.25 s)",
            format!("{} ({per_second:.2} per s)", storm.flushes),
        )
        .goal(
            "≤ one per 2.25 s (0.44 per s)",
            storm.flushes as f64 <= storm.lasted.as_secs_f64() / 2.25 + 1.0,
        ),
    );
    rows.push(Row::new(
        "  another tenant's member: requests answered 200 / API Gateway's calls of the authorizer for them / the authorizer's standing reads (anyone's)",
        format!(
            "{} / {} / {}",
            storm.bystander_requests, storm.bystander_authorizer_calls, storm.standing_reads
        ),
    ).goal(
        "≤ one call per flush",
        storm.bystander_authorizer_calls <= storm.flushes + 1,
    ));
    rows.push(
        Row::new(
            "  another tenant's member suspended mid-storm: refused after",
            secs(storm.suspended_refused_after),
        )
        .goal(
            format!("≤ {}", secs(GOAL)),
            storm.suspended_refused_after <= GOAL,
        ),
    );
    stack.shutdown();
    let _ = std::fs::remove_dir_all(&options.state_dir);
    Ok(Section {
        title: "Revocation latency (the local stack, every cache on)".into(),
        rows,
    })
}
