//! The measurements `authz-bench` runs besides the criterion bench (whose
//! estimates it reads), each a section of the table: cold starts, sizes,
//! DynamoDB cost per decision, fan-out, provisioning writes and revocation
//! latency.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cold_start::{median, spread, start_once};
use crate::delay::DelayProxy;
use crate::meter::Meter;
use crate::report::{self, mb, ms, us, Row, Section};
use crate::runtime_api::RuntimeApi;
use crate::world::{self, World};

/// What to run.
#[derive(Debug, Clone)]
pub struct Args {
    /// Starts of each binary for the cold-start medians.
    pub starts: usize,
    /// Holder counts for the fan-out runs.
    pub holders: Vec<usize>,
    /// Pages in flight during the fan-out.
    pub concurrency: usize,
    /// Only the DynamoDB costs (requests and capacity units per decision
    /// and per write): counts, not times, so any build measures them.
    pub costs_only: bool,
    /// Only the warm decisions and tenants' own policies at a platform's
    /// size.
    pub policies_only: bool,
    /// Only the revocation latency and the flush rate under a storm of
    /// revoking writes, through the local stack (its functions are debug
    /// builds, so any build of this runner measures them the same).
    pub revocation_only: bool,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            starts: 21,
            holders: vec![1_000, 10_000],
            concurrency: recompute::DEFAULT_CONCURRENCY,
            costs_only: false,
            policies_only: false,
            revocation_only: false,
        }
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| testkit::repo_root().join("target"))
}

fn size(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().map(|m| m.len())
}

/// Runs every measurement; the sections of the table in order.
pub async fn run(args: Args) -> Result<Vec<Section>, String> {
    if args.revocation_only {
        eprintln!("· revocation latency through the local stack");
        return Ok(vec![crate::revocation::revocation_latency().await?]);
    }
    let target = target_dir();
    let mut sections = Vec::new();
    eprintln!("· DynamoDB Local and the benchmark table");
    let world = World::new().await;
    let config = testkit::sdk_config().await;
    if args.policies_only {
        sections.push(warm(&target));
        sections.push(crate::tenant_policies::run(&world, &config).await?);
        return Ok(sections);
    }
    if args.costs_only {
        sections.push(decision_cost(&world, &config).await?);
        sections.push(write_cost(&world, &config).await?);
        return Ok(sections);
    }

    sections.push(warm(&target));
    eprintln!("· cold starts ({} of each, interleaved)", args.starts);
    sections.push(cold_starts(&target, &world, &config, args.starts).await?);
    sections.push(sizes(&target));
    eprintln!("· DynamoDB cost per decision");
    sections.push(decision_cost(&world, &config).await?);
    eprintln!("· tenants' own policies at a platform's size");
    sections.push(crate::tenant_policies::run(&world, &config).await?);
    for &n in &args.holders {
        eprintln!("· fan-out to {n} holders");
    }
    sections.push(fan_out(&world, &args).await?);
    eprintln!("· transaction conflicts");
    sections.push(conflicts(&world).await?);
    eprintln!("· provisioning writes");
    sections.push(write_cost(&world, &config).await?);
    eprintln!("· revocation latency through the local stack");
    sections.push(crate::revocation::revocation_latency().await?);
    Ok(sections)
}

fn warm(target: &Path) -> Section {
    let est = |id: &str| report::criterion_median_ns(target, id);
    let mut rows = Vec::new();
    match (
        est("warm_decision/authz"),
        est("warm_decision/casbin_cached"),
    ) {
        (Some(ours), Some(casbin)) => {
            rows.push(
                Row::new(
                    "warm decision: cached token, cached answer (match + policy)",
                    us(ours),
                )
                .peer(format!("casbin-rs CachedEnforcer::enforce {}", us(casbin)))
                .ratio(ours / casbin)
                .goal("≤ 1× casbin cached", ours <= casbin),
            );
            if let Some(handler) = est("warm_decision/authz_handler") {
                rows.push(
                    Row::new(
                        "  the same through the Lambda handler (event JSON in, response JSON out)",
                        us(handler),
                    )
                    .ratio(handler / casbin),
                );
            }
            if let Some(built) = est("warm_decision/authz_policy_built") {
                rows.push(
                    Row::new("  a request not answered before: cached token and inputs, match + policy built", us(built))
                        .ratio(built / casbin)
                        .goal("≤ 5× casbin cached", built <= 5.0 * casbin),
                );
            }
            if let Some(handler) = est("warm_decision/authz_handler_not_answered") {
                rows.push(
                    Row::new(
                        "  a request not answered before, through the Lambda handler",
                        us(handler),
                    )
                    .ratio(handler / casbin)
                    .goal("≤ 10× casbin cached", handler <= 10.0 * casbin),
                );
            }
        }
        _ => rows.push(Row::new(
            "warm decision",
            "not measured: run `cargo bench -p bench --bench warm_decision` first",
        )),
    }
    let casbin = est("warm_decision/casbin_cached");
    // The benchmark's policies name the route rules' actions in turn (see
    // `cedar_policies` in benches/warm_decision.rs), or all name the
    // request's action.
    let actions = crate::world::route_rule_permissions().len();
    for (name, what, goal) in [
        ("cedar_0", "no policies".to_string(), false),
        (
            "cedar_10",
            format!("10 policies over the {actions} actions of the route rules"),
            false,
        ),
        (
            "cedar_100",
            format!("100 policies over the {actions} actions of the route rules"),
            true,
        ),
        (
            "cedar_100_new_caller",
            format!(
                "100 policies over the {actions} actions, a caller the set has not decided before"
            ),
            false,
        ),
        (
            "cedar_100_one_action",
            "100 policies that all name the request's action, none for this caller (other users, roles, networks, methods)".to_string(),
            true,
        ),
        (
            "cedar_100_one_action_unless_office",
            "100 forbids of the request's action unless from the office the request comes from".to_string(),
            true,
        ),
        (
            "cedar_100_one_action_may_apply",
            "100 policies of the request's action that may all apply (Cedar evaluates each)".to_string(),
            false,
        ),
    ] {
        if let Some(ns) = est(&format!("policy_decision/{name}")) {
            let mut row = Row::new(
                format!("the decision rule (roles, then Cedar) with {what}"),
                us(ns),
            );
            if let Some(casbin) = casbin {
                row = row
                    .peer(format!("casbin-rs CachedEnforcer::enforce {}", us(casbin)))
                    .ratio(ns / casbin);
            }
            if goal {
                row = row.goal("≤ 20 µs", ns <= 20_000.0);
            }
            rows.push(row);
        }
    }
    if let Some(rs256) = est("rs256_verify") {
        rows.push(Row::new(
            "one RS256 verification (what the token cache saves)",
            us(rs256),
        ));
    }
    Section {
        title: "Warm decision, in process (criterion medians)".into(),
        rows,
    }
}

async fn cold_starts(
    target: &Path,
    world: &World,
    config: &aws_config::SdkConfig,
    starts: usize,
) -> Result<Section, String> {
    let authorizer = target.join("release/authorizer");
    let hello = target.join("release/hello");
    for b in [&authorizer, &hello] {
        if !b.exists() {
            return Err(format!(
                "{} is missing: `make bench` builds it",
                b.display()
            ));
        }
    }
    let api = RuntimeApi::start(world::JWKS).await;
    // The same, with the issuer and DynamoDB each 20 ms away.
    let far_api = RuntimeApi::start(world::JWKS).await;
    far_api.set_jwks_delay(DISTANCE);
    let far_dynamodb = DelayProxy::start(&testkit::endpoint(), DISTANCE).await?;
    let token = world::token(&world.user);
    let event = world::rest_event(&world.tenant, &token).to_string();
    let env_for = |api: &RuntimeApi, dynamodb: &str| -> Vec<(String, String)> {
        [
            ("TABLE_NAME", world.table.name.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "local".into()),
            ("AWS_SECRET_ACCESS_KEY", "local".into()),
            ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb.to_string()),
            ("JWT_ISSUER", world::ISSUER.into()),
            ("JWT_AUDIENCE", world::AUDIENCE.into()),
            ("JWKS_URL", api.jwks_url()),
            ("ROUTES_FILE", world::ROUTES_PATH.into()),
            ("CACHE_TTL_SECONDS", "60".into()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    };
    let env = env_for(&api, &testkit::endpoint());
    let far_env = env_for(&far_api, &far_dynamodb.endpoint);
    let allow = |t: &crate::runtime_api::Timeline| {
        !t.error && t.answer.as_deref().is_some_and(|a| a.contains("\"Allow\""))
    };
    // The same JSON back (key order aside: serde_json keeps insertion
    // order in this process, which links cedar-policy, and not in hello).
    let sent: serde_json::Value = serde_json::from_str(&event).expect("the event is JSON");
    let echo = |t: &crate::runtime_api::Timeline| {
        !t.error
            && t.answer
                .as_deref()
                .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
                .is_some_and(|a| a == sent)
    };
    let (mut a_poll, mut a_answer, mut a_after) = (vec![], vec![], vec![]);
    let (mut f_poll, mut f_after) = (vec![], vec![]);
    let (mut h_poll, mut h_answer) = (vec![], vec![]);
    let (mut a_cpu, mut h_cpu) = (vec![], vec![]);
    let variants = 3;
    for i in 0..starts {
        // Interleaved, each taking its turn to go first.
        for turn in 0..variants {
            match (i + turn) % variants {
                0 => {
                    let s = start_once(&api, &authorizer, &env, &event, allow).await?;
                    a_poll.push(s.first_poll);
                    a_answer.push(s.answered);
                    a_after.push(s.answered.saturating_sub(s.first_poll));
                    a_cpu.extend(s.cpu);
                }
                1 => {
                    let s = start_once(&far_api, &authorizer, &far_env, &event, allow).await?;
                    f_poll.push(s.first_poll);
                    f_after.push(s.answered.saturating_sub(s.first_poll));
                }
                _ => {
                    let s = start_once(&api, &hello, &[], &event, echo).await?;
                    h_poll.push(s.first_poll);
                    h_answer.push(s.answered);
                    h_cpu.extend(s.cpu);
                }
            }
        }
    }
    let (ap, aa, hp, ha) = (
        median(&a_poll),
        median(&a_answer),
        median(&h_poll),
        median(&h_answer),
    );

    // A warm loopback round trip to DynamoDB Local, for scale.
    let client = aws_sdk_dynamodb::Client::new(config);
    let mut trips = Vec::new();
    for _ in 0..51 {
        let started = Instant::now();
        client
            .get_item()
            .table_name(&world.table.name)
            .key(
                "PK",
                aws_sdk_dynamodb::types::AttributeValue::S("bench#none".into()),
            )
            .key(
                "SK",
                aws_sdk_dynamodb::types::AttributeValue::S("bench#none".into()),
            )
            .send()
            .await
            .map_err(|e| format!("{e:?}"))?;
        trips.push(started.elapsed());
    }
    let trip = median(&trips);
    let after_poll = median(&a_after);
    let trips_after_poll = after_poll.as_secs_f64() / trip.as_secs_f64().max(1e-9);
    let far_after = median(&f_after);
    let far_goal = DISTANCE + DISTANCE / 2;
    // What Lambda bills and a small function's share of a core slows
    // down: the CPU the first answer took, every thread counted.
    let cpu = (!a_cpu.is_empty() && !h_cpu.is_empty()).then(|| {
        Row::new(
            "  CPU time of all threads, process start → first answer (and the next poll)",
            spread(&a_cpu),
        )
        .peer(format!("hello's {}", spread(&h_cpu)))
        .ratio(median(&a_cpu).as_secs_f64() / median(&h_cpu).as_secs_f64())
    });
    Ok(Section {
        title: format!(
            "Cold start under a fake Runtime API (median and 10th-90th percentiles of {starts} starts each, interleaved)"
        ),
        rows: vec![
            Row::new("process start → first /next poll", spread(&a_poll))
                .peer(format!("bare lambda_runtime hello {}", spread(&h_poll)))
                .ratio(ap.as_secs_f64() / hp.as_secs_f64())
                .goal("≤ 1.5×", ap.as_secs_f64() <= 1.5 * hp.as_secs_f64()),
            Row::new(
                "process start → first answered decision (JWKS fetch, RS256, policy set, BatchGetItem)",
                spread(&a_answer),
            )
            .peer(format!("hello's first echo {}", spread(&h_answer)))
            .ratio(aa.as_secs_f64() / ha.as_secs_f64()),
            Row::new("  first answer − first poll", spread(&a_after))
                .peer(format!("one warm DynamoDB Local GetItem {}", ms(trip)))
                .ratio(trips_after_poll)
                .goal("≤ 2 round trips", trips_after_poll <= 2.0),
            Row::new(
                "  first answer − first poll, the issuer and DynamoDB 20 ms away",
                spread(&f_after),
            )
            .peer(format!(
                "one delay {}, both in turn {}; first poll {}",
                ms(DISTANCE),
                ms(DISTANCE * 2),
                spread(&f_poll)
            ))
            .ratio(far_after.as_secs_f64() / DISTANCE.as_secs_f64())
            .goal("≤ 30 ms (one delay and local work)", far_after <= far_goal),
        ]
        .into_iter()
        .chain(cpu)
        .chain([trust_roots(starts)])
        .collect(),
    })
}

/// Reading the trust roots of the first TLS connections, in process, three
/// ways: what the functions do (`authz_core::runtime::tls`: one bundle file), the
/// platform probe it replaced (a file and a directory of some 300 on
/// Debian), and roots compiled in (webpki-roots: the SDK's client takes
/// roots only as PEM, so they would be encoded and parsed again).
fn trust_roots(samples: usize) -> Row {
    let time = |read: &dyn Fn() -> usize| -> Vec<std::time::Duration> {
        (0..samples)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(read());
                started.elapsed()
            })
            .collect()
    };
    let chosen = authz_core::runtime::tls::TrustRoots::from_lookup(|_| None)
        .map(|r| r.source)
        .unwrap_or_default();
    let bundle = time(&|| {
        authz_core::runtime::tls::TrustRoots::from_lookup(|_| None)
            .map(|r| r.len())
            .unwrap_or(0)
    });
    let probe = time(&|| authz_core::runtime::tls::TrustRoots::platform_probe().len());
    let compiled = time(&|| {
        rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        }
        .len()
    });
    Row::new(
        format!("  the first connection's trust roots, read from {chosen}"),
        spread(&bundle),
    )
    .peer(format!(
        "the platform probe {}; compiled in (webpki-roots) {}",
        spread(&probe),
        us(median(&compiled).as_secs_f64() * 1e9)
    ))
    .ratio(median(&bundle).as_secs_f64() / median(&probe).as_secs_f64())
}

/// The network distance of the second cold-start run: to the issuer's key
/// set and to DynamoDB, each way round trip.
const DISTANCE: std::time::Duration = std::time::Duration::from_millis(20);

fn sizes(target: &Path) -> Section {
    let mut rows = Vec::new();
    let hello = size(&target.join("release/hello"));
    for name in ["authorizer", "provisioning", "recompute", "hello"] {
        let Some(bytes) = size(&target.join("release").join(name)) else {
            continue;
        };
        let mut row = Row::new(format!("{name} (x86_64 release)"), mb(bytes));
        if let (Some(h), true) = (hello, name != "hello") {
            row = row
                .peer(format!("hello {}", mb(h)))
                .ratio(bytes as f64 / h as f64);
        }
        if name == "authorizer" {
            // With Cedar in it (issue 17's bound; 6 MB before).
            row = row.goal("≤ 10 MB", bytes <= 10_000_000);
        }
        rows.push(row);
    }
    let sam = testkit::repo_root().join(".aws-sam/build");
    for (function, name) in [
        ("AuthorizerFunction", "authorizer"),
        ("ProvisioningFunction", "provisioning"),
        ("RecomputeFunction", "recompute"),
    ] {
        if let Some(bytes) = size(&sam.join(function).join("bootstrap")) {
            let mut row = Row::new(format!("{name} (arm64, `sam build`)"), mb(bytes));
            if name == "authorizer" {
                row = row.goal("≤ 10 MB", bytes <= 10_000_000);
            }
            rows.push(row);
        }
    }
    Section {
        title: "Release binary sizes (opt-level and LTO from [profile.release], stripped)".into(),
        rows,
    }
}

async fn decision_cost(world: &World, config: &aws_config::SdkConfig) -> Result<Section, String> {
    let meter = Meter::new();
    let metered = authz_core::Store::new(meter.client(config), world.table.name.clone());
    let costs = crate::cost::decisions(world, &meter, &metered).await?;
    let mut rows = Vec::new();
    let uncached = &costs[0].usage;
    for roles in [1, 3, 10] {
        let base = crate::cost::calculated_check(
            &world.table.client,
            &meter,
            &meter.client(config),
            roles,
        )
        .await?;
        let b = base.usage;
        rows.push(
            Row::new(
                format!("uncached decision vs {}", base.what),
                format!(
                    "{} request, {:.1} RCU",
                    uncached.requests, uncached.read_units
                ),
            )
            .peer(format!("{} requests, {:.1} RCU", b.requests, b.read_units))
            .ratio(uncached.requests as f64 / b.requests as f64)
            .goal(
                "1 request, ≤ 1 RCU",
                uncached.requests == 1 && uncached.read_units <= 1.0,
            ),
        );
    }
    let global = &costs[1].usage;
    rows.push(Row::new(
        costs[1].what.clone(),
        format!("{} request, {:.1} RCU", global.requests, global.read_units),
    ));
    let cached = &costs[2].usage;
    rows.push(
        Row::new(
            costs[2].what.clone(),
            format!("{} requests", cached.requests),
        )
        .goal("0 requests", cached.requests == 0),
    );
    for c in &costs[3..] {
        let row = Row::new(
            c.what.clone(),
            format!(
                "{} requests, {:.1} RCU",
                c.usage.requests, c.usage.read_units
            ),
        );
        rows.push(match c.goal {
            Some((goal, met)) => row.goal(goal, met),
            None => row,
        });
    }
    Ok(Section {
        title: "DynamoDB cost per decision (DynamoDB Local, ReturnConsumedCapacity)".into(),
        rows,
    })
}

/// A store for `function`'s code (through the proxy, under its policy),
/// metered.
async fn function_store(world: &World, meter: &Meter, function: &str) -> authz_core::Store {
    let config = testkit::function_config(function).await;
    authz_core::Store::new(meter.client(&config), world.table.name.clone())
}

async fn fan_out(world: &World, args: &Args) -> Result<Section, String> {
    let meter = Meter::new();
    let metered = function_store(world, &meter, "recompute").await;
    let mut rows = Vec::new();
    for &n in &args.holders {
        let f = crate::fanout::run(world, &meter, &metered, n, args.concurrency, true).await?;
        let sequential = f.sequential.expect("asked for");
        let speedup = sequential.as_secs_f64() / f.fan_out.as_secs_f64();
        let mut row = Row::new(
            format!(
                "role change → {n} holders (concurrency {}): {} requests, {:.0} WCU",
                f.concurrency, f.fan_out_requests, f.fan_out_write_units
            ),
            ms(f.fan_out),
        )
        .peer(format!("{n} sequential UpdateItems {}", ms(sequential)))
        .ratio(speedup);
        if n >= 10_000 {
            row = row.goal("≥ 8× faster", speedup >= 8.0);
        }
        rows.push(row);
        rows.push(
            Row::new(
                format!("  DynamoDB Local's write floor: {} plain items in BatchWriteItems, 8 in flight", 2 * n),
                ms(f.setup),
            )
            .peer(format!("{:.2} ms per item", f.setup.as_secs_f64() * 1e3 / (2 * n) as f64)),
        );
    }
    Ok(Section {
        title: "Fan-out (DynamoDB Local behind the IAM and conflict proxy; ratio = sequential time / fan-out time)".into(),
        rows,
    })
}

/// Conflicts DynamoDB would make (the harness's conflict layer, default
/// window): in a 1,000-holder fan-out at several concurrencies, and among
/// grants of one role written at once.
async fn conflicts(world: &World) -> Result<Section, String> {
    let meter = Meter::new();
    let recompute = function_store(world, &meter, "recompute").await;
    let provisioning = function_store(world, &meter, "provisioning").await;
    let mut rows = Vec::new();
    for concurrency in [1, 8, 32] {
        let f = crate::fanout::run(world, &meter, &recompute, 1_000, concurrency, false).await?;
        rows.push(
            Row::new(
                format!("role change → 1000 holders, {concurrency} page(s) in flight: conflicts met and retried"),
                format!("{} in {}", f.conflicts, ms(f.fan_out)),
            )
            .goal("no failed record", true),
        );
    }
    for writers in [10, 50] {
        let h = crate::fanout::grant_herd(&world.store, &provisioning, writers).await?;
        rows.push(Row::new(
            format!("{writers} grants of one role at once (each checks the role's version): conflicts met and retried"),
            format!("{} in {}", h.conflicts, ms(h.took)),
        ));
    }
    Ok(Section {
        title: format!(
            "Transaction conflicts (conflict window {} ms; every write succeeded)",
            testkit::conflict_window().as_millis()
        ),
        rows,
    })
}

async fn write_cost(world: &World, config: &aws_config::SdkConfig) -> Result<Section, String> {
    let meter = Meter::new();
    let metered = authz_core::Store::new(meter.client(config), world.table.name.clone());
    let costs = crate::cost::writes(world, &meter, &metered).await?;
    Ok(Section {
        title: "Provisioning writes (one TransactWriteItems each; transactional writes cost 2 WCU per item per KB)".into(),
        rows: costs
            .into_iter()
            .map(|c| {
                Row::new(
                    c.what,
                    format!(
                        "{} request{}, {:.1} RCU, {:.1} WCU",
                        c.usage.requests,
                        if c.usage.requests == 1 { "" } else { "s" },
                        c.usage.read_units,
                        c.usage.write_units
                    ),
                )
            })
            .collect(),
    })
}
